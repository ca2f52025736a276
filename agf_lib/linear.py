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

At finite α, :func:`basis_agf` runs the paper's AGF itself on basis vectors: the dormant basis follows
its utility flow, a linear flow solved exactly, and each cost step is a reduced-rank regression. The
neuron-wise engine :func:`agf_lib.alternating_gradient_flow` does not apply here: it activates neurons,
and on non-commuting covariances its jump times move away from gradient flow as α shrinks.

The setting (:class:`LinearSetting`, the contract of :class:`agf_lib.setting.Setting`) is built from
:class:`FullyConnectedLinearNetwork`;
:func:`initial_theta`; the data :func:`population_data`; :func:`basis_agf`, AGF at finite α in GF time;
:func:`limit_staircase`, the α → 0 staircase in ``t/log(1/α)``; and :func:`matrix_flow`, the setting's
own fast flow. There is no closed form at finite α: the jump times then depend on the random
initialization.

**Length.** Besides its closed forms the setting has two engines of its own, the matrix flow and AGF on basis
vectors, which share the graded (log-scaled) arithmetic that keeps tiny α in range; they stay beside the
closed forms they are checked against.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from ._engine import check_solver, integrate
from .network import FeedForwardNetwork
from .results import LOG_TIME, Staircase, Trajectory
from .setting import Setting
from .validation import (as_float_array, check_covariance, check_int, check_max_jumps, check_num_samples, check_positive,
                         real_array)

__all__ = ["LinearSetting", "FullyConnectedLinearNetwork", "initial_theta", "population_data", "population_loss", "loss_gradient",
           "regression_modes", "reduced_rank_regression", "projected_singular_values", "limit_staircase",
           "basis_agf", "matrix_flow"]

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
    Sigma_xx, Sigma_yx = check_covariance(Sigma_xx, "Sigma_xx"), _as_matrix(Sigma_yx, "Sigma_yx")
    if 0 in Sigma_yx.shape:
        raise ValueError(f"Sigma_yx must have at least one row and one column, got shape {Sigma_yx.shape}")
    d = Sigma_xx.shape[0]
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
        of ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ`` added at jump k), ``predictors[k] = β*_k``, ``active[k]`` the
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
    return Staircase(np.array(times), np.array(levels), list(range(jumps)), predictors=states,
                     active=[tuple(range(k)) for k in range(jumps + 1)], time_unit=LOG_TIME)


# ---------------------------------------------------------------------------------------------
# AGF on basis vectors at finite α

# A dormant basis vector more than this factor below the largest entry of the graded matrix whose singular
# values give the dormant norms (see basis_agf) is near the end of float64's exponent range: its entries
# are subnormal or zero, and its norm and direction are no longer resolved.
_GRADED_FLOOR = 1e-280


def _dilation_modes(G, eta):
    """Rates ``ηλ_j`` (decreasing) and eigenvectors ``p_j`` (columns, shape (d + c, d + c)) of ``ηM(G)``,
    ``M(G) = [[0, Gᵀ], [G, 0]]``: the utility flow ``θ̇ = ηMθ`` of a row ``θ = (w, a)``."""
    c, d = G.shape
    M = np.zeros((d + c, d + c))
    M[:d, d:], M[d:, :d] = G.T, G
    lam, V = np.linalg.eigh(M)
    return eta * lam[::-1], V[:, ::-1]


def _graded(log_norms, C, exponents):
    """``diag(e^ℓ) C diag(e^x) = e^top Z`` with ``max |Z_ij| = 1``: every entry is a product, so that none
    loses relative accuracy however far apart ``ℓ`` and ``x`` spread. Returns ``(top, Z)``."""
    with np.errstate(divide="ignore"):
        E = log_norms[:, None] + np.log(np.abs(C)) + exponents[None, :]
    top = float(E.max())
    return top, np.sign(C) * np.exp(E - top)


def _log_top_norm(log_norms, C, exponents):
    """``log σ_max(diag(e^ℓ) C diag(e^x))``: the log-norm of the largest dormant basis vector."""
    top, Z = _graded(log_norms, C, exponents)
    return top + math.log(float(np.linalg.norm(Z, 2)))


def _activation_wait(log_norms, C, rates, growing):
    """The time until the largest dormant basis vector reaches norm one, or ``inf`` if none can.

    ``f(u) = log σ_max(diag(e^ℓ) C diag(e^{ru}))`` is convex (a maximum over unit x of the log-sum-exp
    ``log ‖xᵀdiag(e^ℓ)C diag(e^{ru})‖``), with ``f(0) = max ℓ < 0`` (C has orthonormal rows), and no smaller
    than any single entry ``ℓ_i + log|C_ij| + r_j u``: its one root lies below the first time an entry
    reaches one."""
    if log_norms.max() >= 0:
        return 0.0
    with np.errstate(divide="ignore"):
        bounds = (-log_norms[:, None] - np.log(np.abs(C[:, growing]))) / rates[growing]
    t_high = float(bounds.min()) if bounds.size else math.inf
    if not math.isfinite(t_high):
        return math.inf
    def f(u):
        return _log_top_norm(log_norms, C, rates * u)

    while f(t_high) < 0:  # the bound is exact up to rounding
        t_high *= 1.0 + 1e-9
    return brentq(f, 0.0, t_high, xtol=1e-300, rtol=1e-15)


def basis_agf(Sigma_xx, Sigma_yx, theta0, *, t_end=None, Sigma_yy=None, eta=1.0, max_jumps=None, tol=1e-12):
    """The paper's AGF for the fully connected linear network, on basis vectors, at finite α, in GF time.

    Dormant and active *basis vectors* (Section 4; chapter 04's Definition) replace the neurons, which
    the ``GL_H`` symmetry of ``f = AWx`` makes meaningless: a learned feature is spread over every
    neuron. Utility maximization moves the dormant basis as a whole; cost minimization is reduced-rank
    regression (Eq. 43). As α → 0 the staircase tends to :func:`limit_staircase` (Conjecture 4.1,
    when the dormant basis keeps its order); at finite α it follows gradient flow up to a delay of order
    one in GF time at each jump.

    Parameters
    ----------
    Sigma_xx : (d, d) array
        Input covariance, symmetric positive definite.
    Sigma_yx : (c, d) array
        Output-input cross-covariance.
    theta0 : (H, d + c) array
        Initial parameters, rows ``(w_h, a_h)`` (e.g. :func:`initial_theta`); every basis vector of
        norm below one.
    t_end : float, optional
        Stop before a jump that would come after this GF time; by default none.
    Sigma_yy : (c, c) array, optional
        Output covariance, for the levels; by default that of the noise-free target.
    eta : float, default 1.0
        Learning rate η of the flow ``Θ̇ = −η∇L``.
    max_jumps : int, optional
        Stop after this many jumps.
    tol : float, default 1e-12
        No basis vector gains utility once ``−∇_βL = P⊥_{U_k}Σ_yx`` has fallen below ``tol`` times
        ``‖Σ_yx‖₂``, nor along a mode of rate below that.

    Returns
    -------
    Staircase
        In GF time: ``times[k]`` the k-th jump, ``losses[k] = ½ Σ_{i>k} μ_i`` (plus the noise floor
        ``½(tr Σ_yy − Σ_i μ_i)``), the loss of the reduced-rank regression ``predictors[k] = β*_k``
        (:func:`reduced_rank_regression`), ``order[k−1] = k − 1`` (the eigenvector of
        ``Σ_yx Σ_xx⁻¹ Σ_yxᵀ`` added at jump k), ``active[k] = (0, …, k − 1)``, and ``stop_reason``:
        ``"no utility"`` (the gradient has vanished, ``k = rank Σ_yx``, or no dormant vector has a
        component on a growing mode), ``"all active"`` (no dormant basis vector left: ``H`` jumps),
        ``"max_jumps"`` or ``"t_end"``.

    Raises
    ------
    ValueError
        If an argument is out of range: covariances as in :func:`limit_staircase`, ``theta0`` not of
        shape ``(H, d + c)``, zero, or with a basis vector of norm one or more (not a dormant start: use
        a smaller α), ``t_end``, ``eta`` or ``tol`` not positive, ``max_jumps`` negative.
    TypeError
        If an argument has the wrong type.
    FloatingPointError
        If a dormant basis vector falls more than 1e-280 below the one that activates, beyond float64's
        exponent range (on problems of order one, about α = 1e-250).

    Notes
    -----
    *The flow in the hidden space.* With ``R = Σ_yx − AWΣ_xx``, gradient flow moves neuron
    ``θ_h = (w_h, a_h)`` by ``ẇ_h = ηRᵀa_h``, ``ȧ_h = ηRw_h``: ``Θ̇ = ηΘM(R)``, with the symmetric
    ``M(G) = [[0, Gᵀ], [G, 0]]`` whose eigenvalues are ``±σ_i(G)`` (and ``|c − d|`` zeros). A unit
    vector ``θ̃ = (w̃, ã)`` has utility ``ãᵀGw̃ = ½θ̃ᵀMθ̃`` for ``G = −∇_βL(β_𝒜)`` (Section 4; Eq. 1 with
    ``f = ãw̃ᵀx``).

    *The dormant basis.* For ``theta0`` it is the singular value decomposition
    ``Θ_0 = Σ_i s_i q_i θ̃_iᵀ`` (:meth:`FullyConnectedLinearNetwork.basis`): basis vector i has hidden
    direction ``q_i``, norm ``s_i`` and direction ``θ̃_i``, and at ``t = 0`` all are dormant (those
    with ``s_i`` below the SVD's rank tolerance, ``(d + c)ε s_1``, are zero and never move).

    *Utility maximization.* The dormant part ``Θ_𝒟`` (hidden directions orthogonal to the active ones)
    maximizes its total utility ``½ tr(Θ_𝒟 M Θ_𝒟ᵀ)`` (Appendix D, over the Stiefel manifold) by its
    gradient flow ``Θ̇_𝒟 = ηΘ_𝒟M``; between jumps ``G`` is constant and
    ``Θ_𝒟(τ_k + u) = Θ_𝒟(τ_k) e^{ηMu}``. This is gradient flow itself, linearized at the saddle: the
    product ``AW = Θ_aᵀΘ_w`` has no cross terms between parts with orthogonal hidden directions. The
    dormant basis vectors are the singular components of ``Θ_𝒟(t)``: with ``M = Σ_j λ_j p_j p_jᵀ`` and
    ``C_ij = θ̃_i·p_j``, the largest has norm ``σ_max(diag(s) C diag(e^{ηλu}))``, whose logarithm is
    convex in ``u``. The next jump is its one root of ``log σ_max = 0``: the first basis vector to reach
    norm one, the paper's condition that the accumulated utility ``∫2ηŪ dt`` reaches ``−log s`` (κ = 2).
    The initial norms enter only through ``Θ_0``: ``Θ_0 e^{ηMu}p_1 = e^{ησ_1u} Θ_0p_1`` gives
    ``τ^(1) ≤ log(1/‖Θ_0p_1‖)/(ησ_1(Σ_yx))`` with ``‖Θ_0p_1‖² = Σ_i s_i²(θ̃_i·p_1)²``, which is
    ``log(1/α)/(ησ_1) + O(1)``: the norm along the top mode, ``p_1 = (v_1, u_1)/√2``, is what counts.

    *The jump.* At ``τ^(k+1)`` the top singular component of ``Θ_𝒟`` (norm one) becomes active. The
    others keep their norms and directions: they are the remaining singular components, with hidden
    directions orthogonal to the one that left, which the flow therefore does not couple to them.

    *Cost minimization.* The ``k + 1`` active basis vectors minimize the loss over maps of rank
    ``k + 1``: the reduced-rank regression ``β*_{k+1}`` at loss ``½ Σ_{i>k+1} μ_i``, reached in no time
    (Algorithm 1), with next gradient ``−∇_βL(β*_{k+1}) = P⊥_{U_{k+1}}Σ_yx`` (Eq. 44). The dormant basis
    does not move during it.

    *Precision.* The dormant basis is kept as log-norms and orthonormal directions; its singular value
    decomposition after each wait is taken of ``diag(e^ℓ) C diag(e^{ηλu})`` divided by its largest entry,
    whose entries are products (no cancellation) graded along rows and columns, and removing the vector
    that activates drops a component instead of subtracting it. A dormant vector many orders of
    magnitude below the one that activates thus keeps its relative accuracy, and there is no floor of
    float64's relative resolution (1e-16): at α = 1e-100, ``Θ_𝒟`` written out in 400-digit arithmetic
    (``tests/test_linear.py``) has its largest basis vector at norm one, to 1e-12 in the logarithm, at
    every jump time found here. What remains is float64's exponent range (``FloatingPointError`` above).
    """
    Sigma_xx, Sigma_yx = _check_covariances(Sigma_xx, Sigma_yx)
    c, d = Sigma_yx.shape
    theta0 = _as_matrix(theta0, "theta0")
    if theta0.shape[1] != d + c:
        raise ValueError(f"theta0 must have shape (H, d + c) = (H, {d + c}), got {theta0.shape}")
    t_end = math.inf if t_end is None else check_positive(t_end, "t_end")
    eta, tol = check_positive(eta, "eta"), check_positive(tol, "tol")
    check_max_jumps(max_jumps)
    largest = float(np.abs(theta0).max())
    if largest == 0:
        raise ValueError("theta0 must be nonzero (the origin is a critical point)")
    _, norms, directions = np.linalg.svd(theta0 / largest, full_matrices=False)
    if math.log(norms[0]) + math.log(largest) >= 0:
        raise ValueError(f"theta0 must be a dormant start, every basis vector of norm below one; its largest has "
                         f"norm {norms[0] * largest:.6g} (use a smaller alpha)")
    keep = norms > (d + c) * np.finfo(float).eps * norms[0]
    log_norms, directions = np.log(norms[keep]) + math.log(largest), directions[keep]

    mu, U = regression_modes(Sigma_xx, Sigma_yx)
    offset = _noise_offset(Sigma_yy, mu, c)
    B = _target(Sigma_xx, Sigma_yx)
    floor = tol * float(np.linalg.norm(Sigma_yx, 2))
    times, t, stop_reason = [0.0], 0.0, "no utility"
    for k in range(min(c, d) + 1):
        if log_norms.size == 0:
            stop_reason = "all active"
            break
        if max_jumps is not None and k >= max_jumps:
            stop_reason = "max_jumps"
            break
        complement = U[:, k:]
        G = complement @ (complement.T @ Sigma_yx)  # −∇_βL(β*_k) = P⊥_{U_k} Σ_yx
        if k == min(c, d) or np.linalg.norm(G, 2) <= floor:
            break
        rates, modes = _dilation_modes(G, eta)
        C = directions @ modes
        wait = _activation_wait(log_norms, C, rates, rates > eta * floor)
        if not math.isfinite(wait):
            break
        if t + wait > t_end:
            stop_reason = "t_end"
            break
        t += wait
        top, Z = _graded(log_norms, C, rates * wait)
        _, s, rows = np.linalg.svd(Z, full_matrices=False)
        if s.size > 1 and s[-1] < _GRADED_FLOOR * s[0]:
            ratio = f"{s[-1] / s[0]:.1e} times" if s[-1] > 0 else "a zero (underflowed) multiple of"
            raise FloatingPointError(
                f"at the jump at t = {t:.6g} a dormant basis vector is {ratio} the one that activates, beyond "
                "float64's exponent range: its norm and direction are not resolved; use a larger alpha")
        log_norms, directions = top + np.log(s[1:]), rows[1:] @ modes.T
        times.append(t)
    jumps = len(times) - 1
    levels = [offset + 0.5 * float(np.sum(mu[k:])) for k in range(jumps + 1)]
    states = [U[:, :k] @ (U[:, :k].T @ B) for k in range(jumps + 1)]
    return Staircase(np.array(times), np.array(levels), list(range(jumps)), predictors=states,
                     active=[tuple(range(k)) for k in range(jumps + 1)], stop_reason=stop_reason)


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


class LinearSetting(Setting):
    """Fully connected linear networks on population covariances (chapter 04), as a
    :class:`~agf_lib.setting.Setting`.

    The data are :func:`population_data` of ``(Σ_xx, Σ_yx)``; the network has ``H`` hidden neurons. There
    is no closed form at finite α (the jump times depend on the random initialization;
    :func:`basis_agf` runs the paper's AGF on basis vectors numerically); ``limit_staircase`` is
    greedy low-rank learning (:func:`limit_staircase`). A level's predictor is the product map β of
    shape ``(c, d)``, and its outputs are ``X βᵀ``.

    Parameters
    ----------
    Sigma_xx : (d, d) array
    Sigma_yx : (c, d) array
    H : int
        Number of hidden neurons.
    """

    has_closed_form = False

    def __init__(self, Sigma_xx, Sigma_yx, H):
        self._X, self._y = population_data(Sigma_xx, Sigma_yx)
        self._covariances = _check_covariances(Sigma_xx, Sigma_yx)
        c, d = self._covariances[1].shape
        self.network = FullyConnectedLinearNetwork(d=d, H=H, c=c)

    def data(self):
        return self._X, self._y

    def limit_staircase(self):
        return limit_staircase(*self._covariances)

    def level_outputs(self, predictor):
        return self._X @ np.asarray(predictor, dtype=float).T
