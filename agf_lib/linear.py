"""Fully connected two-layer linear networks ``f(x) = AWx``: the setting of the paper's Section 4 and Appendix D.

The network has ``W ∈ R^{H×d}`` and ``A ∈ R^{c×H}``; neuron ``h`` is the rank-one map ``a_h w_hᵀ``, with
``θ_h = (w_h, a_h)`` as in :class:`agf_lib.FeedForwardNetwork`. With Gaussian inputs
``x ~ N(0, Σ_xx)`` and a linear target ``y = Bx`` (so ``Σ_yx = BΣ_xx``), the loss depends on the
parameters only through the product ``β = AW``::

    L(β) = ½ tr((B − β) Σ_xx (B − β)ᵀ),   −∇_β L(β) = Σ_yx − β Σ_xx.

The loss is invariant under ``(W, A) ↦ (GW, AG⁻¹)`` for every ``G ∈ GL_H``, so AGF is run on
orthonormal basis vectors of the hidden space rather than on neurons (Section 4). Its α → 0 limit:

- utility maximization aligns the dormant basis with the singular modes of ``−∇_β L``; a basis
  vector on the i-th mode has utility ``σ_i/2`` and its log-norm grows at rate ``σ_i``;
- cost minimization is reduced-rank regression (Izenman 1975): the best rank-k map is
  ``β*_k = P_{U_k} Σ_yx Σ_xx⁻¹``, with ``U_k`` the top k eigenvectors of ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ``
  (eigenvalues ``μ_1 ≥ μ_2 ≥ ...``), at loss ``½ Σ_{i>k} μ_i``; the next gradient is
  ``−∇_β L(β*_k) = P⊥_{U_k} Σ_yx``.

Together they give greedy low-rank learning (Li et al. 2021) and the paper's Conjecture 4.1, computed
by :func:`limit_staircase`. :func:`population_data` builds ``n = d`` points whose second moments are
``Σ_xx`` and ``Σ_yx`` exactly, so :func:`agf_lib.gradient_flow` integrates the population flow with no
sampling; :func:`matrix_flow` integrates the same flow directly in matrix form, much faster.

The setting's roles (the contract of every setting module): :class:`FullyConnectedLinearNetwork`;
:func:`initial_theta`; the data :func:`population_data`; :func:`limit_staircase`, the α → 0 staircase in
``t/log(1/α)``; and :func:`matrix_flow`, the setting's own fast flow. There is no closed form at finite
α: the jump times then depend on the random initialization.
"""

from __future__ import annotations

import math

import numpy as np

from .flow import check_solver, integrate
from .network import FeedForwardNetwork
from .results import LOG_TIME, Staircase, Trajectory
from .validation import as_float_array, check_int, check_num_samples, check_positive, real_array

__all__ = ["FullyConnectedLinearNetwork", "initial_theta", "population_data", "population_loss", "loss_gradient",
           "regression_modes", "reduced_rank_regression", "projected_singular_values", "limit_staircase",
           "matrix_flow"]

# e^x is a float64 only for x below this: log‖Θ‖ beyond half of it puts β = AW out of range
_LOG_FLOAT_MAX = math.log(np.finfo(float).max)


class FullyConnectedLinearNetwork(FeedForwardNetwork):
    """``f(x; Θ) = AWx = Σ_h a_h w_hᵀ x``: ``H`` linear neurons ``θ_h = (w_h, a_h) ∈ R^{d+c}``, κ = 2.

    Rows of ``theta`` (shape ``(H, d + c)``) are ``(w_h, a_h)``: row h of ``W`` then column h of ``A``.
    :meth:`initial_theta` is the paper's ``a_h ~ N(0, α²/(2c) I)``, ``w_h ~ N(0, α²/(2d) I)``.
    The utility of a neuron, ``U_h = a_hᵀ E[r xᵀ] w_h`` (Eq. 1 with ``f_h = a_h w_hᵀ x``), and its
    gradient are computed in closed form.
    """

    def __init__(self, d, H, c):
        super().__init__(d, H, c, activation="linear")

    def utility_gradient(self, theta, X, residual):
        C = residual.T @ X / X.shape[0]  # E[r xᵀ], shape (c, d)
        w, a = theta[:, : self.input_dim], theta[:, self.input_dim :]
        Cw = w @ C.T  # row h: C w_h
        return (Cw * a).sum(1), np.concatenate([a @ C, Cw], axis=1)

    def gradient_function(self, X, y, index=None):
        """The moments suffice: with ``C = E[y xᵀ] − β E[x xᵀ]`` (``β = Σ_h weights_h a_h w_hᵀ``) the gradients are
        ``∇_w U_h = Cᵀa_h`` and ``∇_a U_h = C w_h``, at ``O((c + H) d²)`` a call whatever ``n``. The neurons share
        their inputs, so the map of a subset ``index`` is the same map on fewer rows."""
        d, n = self.input_dim, X.shape[0]
        xx, yx = X.T @ X / n, y.T @ X / n

        def gradient(phi, weights):
            w, a = phi[:, :d], phi[:, d:]
            C = yx - (a.T * weights) @ (w @ xx)
            return np.concatenate((a @ C, w @ C.T), axis=1)
        return gradient

    def factors(self, theta):
        """``(W, A)`` of shapes ``(H, d)`` and ``(c, H)`` from ``theta`` of shape ``(H, d + c)``."""
        theta = as_float_array(theta, "theta")
        if theta.shape != (self.num_neurons, self.num_params):
            raise ValueError(f"theta must have shape {(self.num_neurons, self.num_params)}, got {theta.shape}")
        return theta[:, : self.input_dim].copy(), theta[:, self.input_dim :].T.copy()

    def theta_from_factors(self, W, A):
        """The parameters ``theta`` (shape ``(H, d + c)``) of the factors ``W`` (H, d) and ``A`` (c, H)."""
        W, A = real_array(W, "W", "an (H, d) array"), real_array(A, "A", "a (c, H) array")
        H, d, c = self.num_neurons, self.input_dim, self.output_dim
        if W.shape != (H, d) or A.shape != (c, H):
            raise ValueError(f"W must have shape {(H, d)} and A shape {(c, H)}, got {W.shape} and {A.shape}")
        return np.concatenate([W, A.T], axis=1)

    def product(self, theta):
        """The end-to-end map ``β = AW = Σ_h a_h w_hᵀ`` (shape ``(c, d)``) of ``theta`` of shape ``(H, d + c)``,
        or of every snapshot of a stack of shape ``(T, H, d + c)`` (e.g. ``Trajectory.params``): ``(T, c, d)``."""
        theta = as_float_array(theta, "theta")
        if theta.shape[-2:] != (self.num_neurons, self.num_params) or theta.ndim not in (2, 3):
            raise ValueError(f"theta must have shape {(self.num_neurons, self.num_params)} or "
                             f"(T, {self.num_neurons}, {self.num_params}), got {theta.shape}")
        d = self.input_dim
        return np.einsum("...hc,...hd->...cd", theta[..., d:], theta[..., :d])

    def basis(self, theta):
        """The network's orthogonal basis vectors (Section 4): ``Θ = Σ_k s_k q_k θ̃_kᵀ``, the SVD of the
        ``(H, d + c)`` matrix whose rows are the neurons.

        The hidden directions ``q_k`` are orthonormal, so ``AW = Σ_k s_k² ã_k w̃_kᵀ`` with
        ``θ̃_k = (w̃_k, ã_k)`` a unit vector: the k-th basis vector has norm ``s_k`` and computes the rank-one
        map ``s_k² ã_k w̃_kᵀ``. Unlike the neurons (rows), ``s_k`` and ``θ̃_k`` do not change when the hidden
        space is rotated, ``Θ ↦ QΘ``. Returns ``(norms, directions)``: ``norms`` of shape ``(..., m)``
        (decreasing, ``m = min(H, d + c)``) and ``directions`` of shape ``(..., m, d + c)``; ``theta`` may
        be a stack ``(T, H, d + c)``.
        """
        theta = as_float_array(theta, "theta")
        if theta.shape[-2:] != (self.num_neurons, self.num_params) or theta.ndim not in (2, 3):
            raise ValueError(f"theta must have shape {(self.num_neurons, self.num_params)} or "
                             f"(T, {self.num_neurons}, {self.num_params}), got {theta.shape}")
        _, norms, directions = np.linalg.svd(theta, full_matrices=False)
        return norms, directions

    def __repr__(self):
        return f"FullyConnectedLinearNetwork(d={self.input_dim}, H={self.num_neurons}, c={self.output_dim})"


def initial_theta(d, H, c, *, alpha, seed=0):
    """The paper's initialization (Section 2) of ``FullyConnectedLinearNetwork(d, H, c)``, seeded:
    rows ``(w_h, a_h)`` with ``w_h ~ N(0, α²/(2d) I)`` and ``a_h ~ N(0, α²/(2c) I)``; shape ``(H, d + c)``."""
    return FullyConnectedLinearNetwork(d, H, c).initial_theta(alpha=alpha, seed=seed)


# ---------------------------------------------------------------------------------------------
# input checks


def _as_matrix(value, name):
    array = real_array(value, name, expected="a 2-D numpy array (or nested list)")
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array of shape {array.shape}")
    return array


def _check_covariances(Sigma_xx, Sigma_yx):
    """Validate ``Σ_xx`` (d, d), symmetric positive definite, and ``Σ_yx`` (c, d); return float arrays."""
    Sigma_xx, Sigma_yx = _as_matrix(Sigma_xx, "Sigma_xx"), _as_matrix(Sigma_yx, "Sigma_yx")
    d = Sigma_xx.shape[0]
    if Sigma_xx.shape != (d, d):
        raise ValueError(f"Sigma_xx must be a square (d, d) covariance matrix, got shape {Sigma_xx.shape}")
    scale = max(float(np.abs(Sigma_xx).max()), np.finfo(float).tiny)
    if np.abs(Sigma_xx - Sigma_xx.T).max() > 1e-10 * scale:
        raise ValueError("Sigma_xx must be symmetric")
    Sigma_xx = 0.5 * (Sigma_xx + Sigma_xx.T)
    if np.linalg.eigvalsh(Sigma_xx)[0] <= 1e-14 * scale:
        raise ValueError("Sigma_xx must be positive definite (full-rank input covariance)")
    if Sigma_yx.shape[1] != d:
        raise ValueError(f"Sigma_yx must have shape (c, d) with d = {d} columns like Sigma_xx, got {Sigma_yx.shape}")
    return Sigma_xx, Sigma_yx


def _check_rank(rank, c, d):
    top = min(c, d)
    if rank is None:
        return top
    rank = check_int(rank, "rank", minimum=0)
    if rank > top:
        raise ValueError(f"rank must be at most min(c, d) = {top}, got {rank}")
    return rank


def _noise_offset(Sigma_yy, mu, c):
    """``½(tr Σ_yy − Σ_i μ_i)``: the loss no linear map can remove (zero for a noise-free target)."""
    if Sigma_yy is None:
        return 0.0
    Sigma_yy = _as_matrix(Sigma_yy, "Sigma_yy")
    if Sigma_yy.shape != (c, c):
        raise ValueError(f"Sigma_yy must have shape (c, c) = {(c, c)}, got {Sigma_yy.shape}")
    offset = 0.5 * (float(np.trace(Sigma_yy)) - float(np.sum(mu)))
    if offset < -1e-10 * max(float(np.trace(Sigma_yy)), 1.0):
        raise ValueError("Sigma_yy is inconsistent with Sigma_xx and Sigma_yx: tr Σ_yy must be at least "
                         "tr(Σ_yx Σ_xx⁻¹ Σ_xy) (the joint covariance of (x, y) is positive semidefinite)")
    return max(offset, 0.0)


# ---------------------------------------------------------------------------------------------
# population loss and data


def _target(Sigma_xx, Sigma_yx):
    """The least-squares map ``B = Σ_yx Σ_xx⁻¹`` (shape (c, d))."""
    return np.linalg.solve(Sigma_xx, Sigma_yx.T).T


def population_data(Sigma_xx, Sigma_yx):
    """``n = d`` points ``(X, y)`` whose empirical moments are exactly ``Σ_xx`` and ``Σ_yx``.

    ``X = √d Σ_xx^{1/2}`` (symmetric square root) and ``y = X Bᵀ`` with ``B = Σ_yx Σ_xx⁻¹``, so that
    ``XᵀX/n = Σ_xx``, ``yᵀX/n = Σ_yx`` and the mean-over-samples loss of any network equals the
    population loss ``E_x[½‖Bx − AWx‖²]`` for ``x ~ N(0, Σ_xx)``: the loss is quadratic in x, and only
    second moments enter it. Use it with :func:`agf_lib.gradient_flow` and friends.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    eigenvalues, vectors = np.linalg.eigh(Sigma_xx)
    X = math.sqrt(Sigma_xx.shape[0]) * (vectors * np.sqrt(eigenvalues)) @ vectors.T
    return X, X @ _target(Sigma_xx, Sigma_yx).T


def population_loss(beta, Sigma_xx, Sigma_yx, *, Sigma_yy=None):
    """``L(β) = E[½‖y − βx‖²] = ½ tr((B − β) Σ_xx (B − β)ᵀ) + ½(tr Σ_yy − tr(B Σ_xx Bᵀ))``.

    ``beta`` has shape (c, d), or (..., c, d) for several maps at once. ``Sigma_yy`` defaults to the
    noise-free target ``y = Bx`` (``Σ_yy = B Σ_xx Bᵀ``), for which the second term vanishes.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    beta = real_array(beta, "beta", "a (c, d) array")
    if beta.shape[-2:] != Sigma_yx.shape:
        raise ValueError(f"beta must have shape (..., c, d) = (..., {Sigma_yx.shape[0]}, {Sigma_yx.shape[1]}), "
                         f"got {beta.shape}")
    mu = regression_modes(Sigma_xx, Sigma_yx)[0]
    offset = _noise_offset(Sigma_yy, mu, Sigma_yx.shape[0])
    error = _target(Sigma_xx, Sigma_yx) - beta
    return 0.5 * np.einsum("...ij,jk,...ik->...", error, Sigma_xx, error) + offset


def loss_gradient(beta, Sigma_xx, Sigma_yx):
    """``∇_β L(β) = β Σ_xx − Σ_yx`` (shape (c, d)), the paper's gradient in Section 4.

    Its negative is ``E[r xᵀ]`` for the residual ``r = y − βx``.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    beta = np.asarray(beta, dtype=float)
    if beta.shape != Sigma_yx.shape:
        raise ValueError(f"beta must have shape (c, d) = {Sigma_yx.shape}, got {beta.shape}")
    return beta @ Sigma_xx - Sigma_yx


# ---------------------------------------------------------------------------------------------
# reduced-rank regression and greedy low-rank learning


def regression_modes(Sigma_xx, Sigma_yx):
    """``(μ, U)``: eigenvalues (decreasing, shape (c,)) and eigenvectors (columns of U, (c, c)) of
    ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ``, the matrix whose top eigenvectors reduced-rank regression keeps.

    Computed as the SVD of the whitened map ``Σ_yx L⁻ᵀ`` with ``Σ_xx = LLᵀ`` (Cholesky), so ``μ`` comes
    out as squared singular values, nonnegative and accurate.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    cholesky = np.linalg.cholesky(Sigma_xx)
    whitened = np.linalg.solve(cholesky, Sigma_yx.T).T  # Σ_yx L⁻ᵀ, shape (c, d)
    U, s, _ = np.linalg.svd(whitened)
    mu = np.zeros(Sigma_yx.shape[0])
    mu[: s.size] = s**2
    return mu, U


def reduced_rank_regression(Sigma_xx, Sigma_yx, *, rank):
    """The best rank-``rank`` linear map (Izenman 1975; the paper's cost step, Eq. 43).

        β*_k = argmin_{rank β ≤ k} L(β) = P_{U_k} Σ_yx Σ_xx⁻¹,   P_{U_k} = U_k U_kᵀ,

    with ``U_k`` the top k eigenvectors of ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ``; ``L(β*_k) = ½ Σ_{i>k} μ_i`` for a
    noise-free target. The minimizer is unique when ``μ_k > μ_{k+1}``.

    Parameters
    ----------
    Sigma_xx : (d, d) array
        Input covariance, symmetric positive definite.
    Sigma_yx : (c, d) array
        Output-input cross-covariance.
    rank : int
        The rank ``k``.

    Returns
    -------
    (c, d) array
        ``β*_k``.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    rank = _check_rank(rank, *Sigma_yx.shape)
    U_k = regression_modes(Sigma_xx, Sigma_yx)[1][:, :rank]
    return U_k @ (U_k.T @ _target(Sigma_xx, Sigma_yx))


def projected_singular_values(Sigma_xx, Sigma_yx, *, rank=None):
    """``σ^{(l)}_i``: the singular values (decreasing) of ``P⊥_{U_l} Σ_yx = −∇_β L(β*_l)`` for
    ``l = 0, ..., rank − 1``, as an array of shape ``(rank, min(c, d))`` (row l, column i − 1).

    Row 0 holds the singular values of ``Σ_yx``. By Poincaré's separation theorem the rows interlace:
    ``σ^{(0)}_{i+l} ≤ σ^{(l)}_i ≤ σ^{(0)}_i``.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    c, d = Sigma_yx.shape
    rank = _check_rank(rank, c, d)
    U = regression_modes(Sigma_xx, Sigma_yx)[1]
    values = np.zeros((rank, min(c, d)))
    for l in range(rank):
        complement = U[:, l:]  # P⊥_{U_l} = U_{>l} U_{>l}ᵀ
        values[l] = np.linalg.svd(complement @ (complement.T @ Sigma_yx), compute_uv=False)[: min(c, d)]
    return values


def limit_staircase(Sigma_xx, Sigma_yx, *, rank=None, Sigma_yy=None, tol=1e-12):
    """The paper's Conjecture 4.1: the α → 0 staircase of a two-layer linear network, in ``t / log(1/α)``.

    AGF on orthonormal basis vectors is greedy low-rank learning (Li et al. 2021). Levels:
    ``ℓ^{(k)} = ½ Σ_{i>k} μ_i`` (plus ``½(tr Σ_yy − Σ_i μ_i)`` for a noisy target), the loss of the
    reduced-rank regression ``β*_k`` (:func:`reduced_rank_regression`), with ``μ_i`` the eigenvalues
    of ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ``.

    Jump times (Appendix D, Eqs. 45–46): in phase l (between jumps l and l + 1) the basis vector that
    activates at jump k sits on the (k − l)-th singular mode of ``P⊥_{U_l} Σ_yx``, so its accumulated
    utility grows at rate ``σ^{(l)}_{k−l}`` (:func:`projected_singular_values`); it activates when
    that reaches one:

        Σ_{l=0}^{k−1} σ^{(l)}_{k−l} (τ^{(l+1)} − τ^{(l)}) = 1,   i.e.

        τ^{(k)} = τ^{(k−1)} + (1 − Σ_{l=0}^{k−2} σ^{(l)}_{k−l} (τ^{(l+1)} − τ^{(l)})) / σ^{(k−1)}_1.

    When Σ_xx commutes with Σ_yxᵀΣ_yx this gives ``τ^{(k)} = 1/σ_k`` (Gidel et al. 2019).

    Parameters
    ----------
    Sigma_xx : (d, d) array
        Input covariance, symmetric positive definite.
    Sigma_yx : (c, d) array
        Output-input cross-covariance.
    rank : int, optional
        Stop after this many jumps; default ``min(c, d)`` (a network of width H learns at most
        ``min(H, c, d)``).
    Sigma_yy : (c, c) array, optional
        Output covariance; by default that of the noise-free target ``y = Bx``.
    tol : float, default 1e-12
        Stop when ``P⊥_{U_k} Σ_yx`` vanishes, below ``tol`` times ``‖Σ_yx‖₂``.

    Returns
    -------
    Staircase
        In :data:`~agf_lib.results.LOG_TIME`: ``order[k−1] = k − 1`` (the index of the eigenvector
        of ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ`` added at jump k), ``states[k] = β*_k``, ``active[k]`` the
        eigenvector indices spanning the active subspace.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    c, d = Sigma_yx.shape
    rank = _check_rank(rank, c, d)
    tol = check_positive(tol, "tol")
    mu, U = regression_modes(Sigma_xx, Sigma_yx)
    offset = _noise_offset(Sigma_yy, mu, c)
    sigma = projected_singular_values(Sigma_xx, Sigma_yx, rank=rank)
    B = _target(Sigma_xx, Sigma_yx)
    times, increments = [0.0], []
    top = sigma[0, 0] if rank else 0.0
    for k in range(1, rank + 1):
        rate = sigma[k - 1, 0]
        if rate <= tol * top:
            break
        accumulated = sum(sigma[l, k - 1 - l] * increments[l] for l in range(k - 1))
        increments.append(max(1.0 - accumulated, 0.0) / rate)
        times.append(times[-1] + increments[-1])
    jumps = len(increments)
    levels = [offset + 0.5 * float(np.sum(mu[k:])) for k in range(jumps + 1)]
    states = [U[:, :k] @ (U[:, :k].T @ B) for k in range(jumps + 1)]
    return Staircase(np.array(times), np.array(levels), list(range(jumps)), states=states,
                     active=[tuple(range(k)) for k in range(jumps + 1)], time_unit=LOG_TIME)


# ---------------------------------------------------------------------------------------------
# gradient flow in matrix form


def matrix_flow(Sigma_xx, Sigma_yx, theta0, t_end, *, Sigma_yy=None, method="DOP853", rtol=1e-10, atol=1e-12,
                num_samples=2000, times=None, record_params=False):
    """Population gradient flow ``dW/dt = AᵀR``, ``dA/dt = RWᵀ`` with ``R = Σ_yx − AWΣ_xx`` (``η = 1``).

    The same flow as :func:`agf_lib.gradient_flow` on :func:`population_data` with a
    :class:`FullyConnectedLinearNetwork`, written with matrices instead of neurons. The state is the
    log of the Frobenius norm of Θ and its direction, so that α down to 1e-100 neither underflows
    nor overflows; the float64 limit stated in :mod:`agf_lib.flow` still applies (a dormant
    direction smaller than about ``rtol`` relative to an active one is resolved only to that
    accuracy).

    Parameters
    ----------
    Sigma_xx : (d, d) array
        Input covariance, symmetric positive definite.
    Sigma_yx : (c, d) array
        Output-input cross-covariance.
    theta0 : (H, d + c) array
        Initial parameters, rows ``(w_h, a_h)`` (e.g. :func:`initial_theta`).
    t_end : float
        Final GF time.
    Sigma_yy : (c, c) array, optional
        Output covariance, for the loss; by default that of the noise-free target.
    method, rtol, atol, num_samples, times, record_params
        Solver and sampling options, as for :func:`agf_lib.gradient_flow`.

    Returns
    -------
    Trajectory
        In GF time ``t``, with the population loss :func:`population_loss`; with
        ``record_params``, ``params[k]`` is Θ at ``times[k]`` and ``log_norms[k]`` the neurons'
        log-norms.
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    c, d = Sigma_yx.shape
    theta0 = _as_matrix(theta0, "theta0")
    if theta0.shape[1] != d + c:
        raise ValueError(f"theta0 must have shape (H, d + c) = (H, {d + c}), got {theta0.shape}")
    t_end = check_positive(t_end, "t_end")
    check_solver(method)
    check_num_samples(num_samples)
    largest = float(np.abs(theta0).max())
    if largest == 0:
        raise ValueError("theta0 must be nonzero (the origin is a critical point)")
    log_norm0 = math.log(largest) + math.log(float(np.linalg.norm(theta0 / largest)))  # no overflow in ‖θ‖²
    if 2.0 * log_norm0 > _LOG_FLOAT_MAX:
        raise ValueError(f"theta0 is too large: its squared norm e^{2.0 * log_norm0:.6g} exceeds the largest float64")
    norm0 = math.exp(log_norm0)
    mu = regression_modes(Sigma_xx, Sigma_yx)[0]
    offset = _noise_offset(Sigma_yy, mu, c)
    B = _target(Sigma_xx, Sigma_yx)
    H = theta0.shape[0]

    P = d + c

    def rhs(t, state):
        z = state[1:].reshape(H, P) / math.sqrt(float(state[1:] @ state[1:]))
        W, At = z[:, :d], z[:, d:]
        if 2.0 * state[0] > _LOG_FLOAT_MAX:
            # β = e^{2ρ}ÂŴ beyond float64: a trial step of the solver, never a solution (the loss only
            # decreases along the flow, which bounds β); a NaN velocity makes the solver reject the step
            return np.full_like(state, np.nan)
        R = Sigma_yx - math.exp(2.0 * state[0]) * (At.T @ (W @ Sigma_xx))
        out = np.empty_like(state)
        velocity = out[1:].reshape(H, P)
        np.matmul(At, R, out=velocity[:, :d])  # AᵀR at the unit direction
        np.matmul(W, R.T, out=velocity[:, d:])  # (RWᵀ)ᵀ
        radial = float(np.vdot(velocity, z))
        velocity -= radial * z
        out[0] = radial
        return out

    state0 = np.concatenate([[log_norm0], (theta0 / norm0).ravel()])
    times, states = integrate(rhs, state0, t_end, method=method, rtol=rtol, atol=atol, num_samples=num_samples,
                              times=times)
    log_norm = states[0]
    z = states[1:].T.reshape(times.size, H, d + c)
    z = z / np.linalg.norm(z, axis=(1, 2))[:, None, None]
    if np.any(2.0 * log_norm > _LOG_FLOAT_MAX):
        k = int(np.argmax(log_norm))
        raise RuntimeError(f"gradient flow left the float64 range: log‖Θ‖ = {log_norm[k]:.6g} at t = {times[k]:.6g}")
    scale = np.exp(2.0 * log_norm)[:, None, None]  # β = e^{2ρ} Â Ŵ
    beta = scale * np.einsum("thc,thd->tcd", z[:, :, d:], z[:, :, :d])
    error = B[None] - beta
    losses = 0.5 * np.einsum("tij,jk,tik->t", error, Sigma_xx, error) + offset
    params = log_norms = None
    if record_params:
        params = np.exp(log_norm)[:, None, None] * z
        log_norms = log_norm[:, None] + np.log(np.linalg.norm(z, axis=2))
    return Trajectory(times, losses, params=params, log_norms=log_norms)
