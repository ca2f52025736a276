"""In-context linear regression with an attention-only linear transformer: the paper's Section 5 and Appendix E.

A prompt holds ``N`` context tokens ``(x_n, y_n)`` with ``x_n ~ N(0, Σ)`` in ``R^d`` and ``y_n = βᵀx_n``,
``β ~ N(0, I_d)`` drawn afresh for every prompt, and a query ``x_q``; the target is ``y = βᵀx_q``.
With the initialization of Zhang et al. only one slice of each head is nonzero, a value ``V_h ∈ R``,
a key ``K_h ∈ R^d`` and a query ``Q_h ∈ R^d`` (rank ``R = 1``), and the prediction is

    ŷ = Σ_h V_h (Σ_n y_n x_n)ᵀ K_h Q_hᵀ x_q = Σ_h V_h K_hᵀ Φ Q_h,      Φ = S β x_qᵀ,  S = Σ_n x_n x_nᵀ.

Each head is homogeneous of degree κ = 3 in ``θ_h = (V_h, K_h, Q_h)``, and the network depends on the
heads only through ``M = Σ_h V_h K_h Q_hᵀ``: ``ŷ = ⟨M, Φ⟩``. The population loss is quadratic in ``M``
and involves the moments (Isserlis' theorem for the Gaussian ``x_n``, and ``E[ββᵀ] = I``)

    E[y²] = tr Σ,    E[yΦ] = NΣ²,    E[Φ_ij Φ_kl] = E[S²]_ik Σ_jl,    E[S²] = N(N+1)Σ² + N tr(Σ) Σ,

so ``L(M) = ½ tr Σ − N⟨M, Σ²⟩ + ½ tr(Mᵀ E[S²] M Σ)``. :func:`population_data` builds ``d² + 1``
"samples" of ``(vec Φ, y)`` with exactly these moments: the library's engines, which average over
samples, then integrate the population flow with no sampling.

AGF's α → 0 picture (Appendix E): the utility of a dormant head after ``k`` heads have learned the
top ``k`` eigenvectors ``v_1, …, v_k`` of ``Σ`` (eigenvalues ``λ_1 ≥ … ≥ λ_d > 0``) is
``U = N V Kᵀ(Σ² − Σ_{h≤k} λ_h² v_h v_hᵀ) Q``, maximized on the unit sphere by ``V = ±1/√3``,
``K, Q = ±v_{k+1}/√3`` at ``Ū* = N λ_{k+1}²/(3√3)``; the new head fits ``A_{k+1} v_{k+1} v_{k+1}ᵀ`` with
``A = 1/(tr Σ + (N+1)λ)``, and the loss steps down by ``½ N λ²/(tr Σ + (N+1)λ)``: principal component
regression, one component per jump.

Contract of the setting (as in every setting module): :class:`LinearAttentionNetwork`,
:func:`initial_theta`, :func:`population_data`, :func:`agf_staircase` (AGF at finite α, GF time) and
:func:`limit_staircase` (its α → 0 limit in the rescaled time ``t·α``, or ``t/log(1/α)`` with the adaptive rate).
"""

from __future__ import annotations

import math

import numpy as np

from .escape import jump_times
from .network import TwoLayerNetwork
from .results import Staircase
from .setting import Setting, rate_options
from .validation import check_bool, check_int, check_positive, real_array
from .validation import check_covariance as _check_covariance

__all__ = ["AttentionSetting",
           "LinearAttentionNetwork", "check_covariance", "population_moments", "population_data", "population_loss",
           "optimal_map", "sample_prompts", "agf_staircase", "limit_staircase", "initial_theta"]


def check_covariance(Sigma, *, name="Sigma"):
    """Validate a symmetric positive definite ``d × d`` covariance (:func:`agf_lib.validation.check_covariance`)."""
    return _check_covariance(Sigma, name)


def _check_context(N):
    return check_int(N, "N")


def _context_second_moment(Sigma, N):
    """``E[S²] = N(N+1)Σ² + N tr(Σ) Σ`` for ``S = Σ_n x_n x_nᵀ`` with ``N`` Gaussian tokens (Isserlis)."""
    return N * (N + 1) * Sigma @ Sigma + N * np.trace(Sigma) * Sigma


class LinearAttentionNetwork(TwoLayerNetwork):
    """``ŷ = Σ_h V_h K_hᵀ Φ Q_h``: ``H`` rank-one linear attention heads acting on ``Φ = Sβx_qᵀ`` (κ = 3).

    ``theta`` has shape ``(H, 1 + 2d)``, rows ``(V_h, K_h, Q_h)``; inputs ``X`` have shape ``(n, d²)``,
    row ``n`` the flattened ``Φ_n`` (row-major, ``Φ[i, j]`` at ``i·d + j``); one output. Outputs and
    utility gradients are closed forms: with ``k_hn = Φ_n Q_h`` and ``q_hn = Φ_nᵀ K_h``,
    ``U_h = V_h E_n[r_n K_hᵀ Φ_n Q_h]``, ``∇_V = E_n[r_n K_hᵀΦ_nQ_h]``, ``∇_K = V_h E_n[r_n Φ_n Q_h]``,
    ``∇_Q = V_h E_n[r_n Φ_nᵀ K_h]``.
    """

    kappa = 3
    neurons_share_inputs = True

    def __init__(self, d, H):
        self.d = check_int(d, "d")
        self.num_neurons = check_int(H, "H")
        self.input_dim, self.output_dim, self.num_params = self.d * self.d, 1, 1 + 2 * self.d

    def _split(self, theta):
        d = self.d
        return theta[:, 0], theta[:, 1 : 1 + d], theta[:, 1 + d :]

    def neuron_outputs(self, theta, X):
        V, K, Q = self._split(theta)
        Phi = X.reshape(-1, self.d, self.d)
        bilinear = np.einsum("hi,nij,hj->hn", K, Phi, Q, optimize=True)
        return (V[:, None] * bilinear)[:, :, None]

    def weighted_output(self, phi, X, weights):
        # Σ_h w_h V_h K_hᵀ Φ_n Q_h = ⟨Φ_n, M⟩ with M = Σ_h w_h V_h K_h Q_hᵀ: one (d, d) map, then one product
        V, K, Q = self._split(phi)
        M = ((weights * V)[:, None] * K).T @ Q
        return (X @ M.ravel())[:, None]

    def utility_gradient(self, theta, X, residual):
        V, K, Q = self._split(theta)
        n = X.shape[0]
        # the residual-weighted mean of Φ is all the data the utility needs: G = E_n[r_n Φ_n]
        G = (residual[:, 0] @ X).reshape(self.d, self.d) / n
        GQ, GK = Q @ G.T, K @ G                          # rows G Q_h and Gᵀ K_h
        bilinear = (K * GQ).sum(1)
        return V * bilinear, np.concatenate([bilinear[:, None], V[:, None] * GQ, V[:, None] * GK], axis=1)

    def product(self, theta):
        """The map ``M = Σ_h V_h K_h Q_hᵀ`` (shape ``(d, d)``), or a stack for a stack of snapshots."""
        theta = real_array(theta, "theta")
        if theta.shape[-2:] != (self.num_neurons, self.num_params):
            raise ValueError(f"theta must have shape (..., {self.num_neurons}, {self.num_params}), got {theta.shape}")
        d = self.d
        return np.einsum("...h,...hi,...hj->...ij", theta[..., 0], theta[..., 1 : 1 + d], theta[..., 1 + d :])

    def initial_theta(self, *, alpha, seed=0):
        """See :func:`initial_theta`."""
        return initial_theta(self.d, self.num_neurons, alpha=alpha, seed=seed)

    def __repr__(self):
        return f"LinearAttentionNetwork(d={self.d}, H={self.num_neurons})"


def initial_theta(d, H, *, alpha, seed=0):
    """Small random heads, seeded: every entry of ``(V_h, K_h, Q_h)`` is ``N(0, α²/(1 + 2d))``, so
    ``E‖θ_h‖² = α²``. Returns an array of shape ``(H, 1 + 2d)``."""
    d, H, alpha = check_int(d, "d"), check_int(H, "H"), check_positive(alpha, "alpha")
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    return rng.standard_normal((H, 1 + 2 * d)) * (alpha / math.sqrt(1 + 2 * d))


def population_moments(Sigma, N):
    """``(E[y²], E[yΦ], E[vec Φ vec Φᵀ])`` for context length ``N`` (see the module docstring).

    Shapes ``()``, ``(d, d)`` and ``(d², d²)``; ``vec`` is row-major, as in :class:`LinearAttentionNetwork`.
    """
    Sigma, N = check_covariance(Sigma), _check_context(N)
    return float(np.trace(Sigma)), N * Sigma @ Sigma, np.kron(_context_second_moment(Sigma, N), Sigma)


def population_data(Sigma, N):
    """``n = d² + 1`` rows ``(X, y)`` whose empirical moments are the population moments exactly.

    The joint second-moment matrix ``C`` of ``(vec Φ, y)`` is positive semidefinite; with its symmetric
    square root, ``Z = √n C^{1/2}`` has ``ZᵀZ/n = C``. ``X`` is the first ``d²`` columns of ``Z`` and
    ``y`` the last. The mean-over-rows loss of :class:`LinearAttentionNetwork` on ``(X, y)`` is then
    the population loss ``E[½(y − ŷ)²]``, since that loss involves second moments of ``(Φ, y)`` only.
    """
    Eyy, EyPhi, EPhiPhi = population_moments(Sigma, N)
    m = EPhiPhi.shape[0]
    C = np.empty((m + 1, m + 1))
    C[:m, :m], C[:m, m], C[m, :m], C[m, m] = EPhiPhi, EyPhi.ravel(), EyPhi.ravel(), Eyy
    eigenvalues, vectors = np.linalg.eigh(C)
    # C is positive semidefinite, and eigh's eigenvalues are within about (m + 1)·ε·‖C‖ of C's (LAPACK's
    # backward error): only negatives of that size are rounding, and clipped; a larger one is an error
    rounding = 8 * (m + 1) * np.finfo(float).eps * max(float(np.abs(eigenvalues).max()), np.finfo(float).tiny)
    if eigenvalues[0] < -rounding:
        raise FloatingPointError(f"the second-moment matrix of (vec Φ, y) has an eigenvalue {eigenvalues[0]:.3g}, "
                                 f"negative beyond rounding ({rounding:.3g}); Sigma is too ill-conditioned")
    root = (vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))) @ vectors.T
    Z = math.sqrt(m + 1) * root
    return Z[:, :m], Z[:, m:]


def population_loss(M, Sigma, N):
    """``L(M) = ½ tr Σ − N⟨M, Σ²⟩ + ½ tr(Mᵀ E[S²] M Σ)`` for a map ``M`` (shape (d, d) or (..., d, d))."""
    Sigma, N = check_covariance(Sigma), _check_context(N)
    M = real_array(M, "M")
    d = Sigma.shape[0]
    if M.shape[-2:] != (d, d):
        raise ValueError(f"M must have shape (..., {d}, {d}), got {M.shape}")
    quadratic = np.einsum("...ij,ik,...kl,jl->...", M, _context_second_moment(Sigma, N), M, Sigma)
    return 0.5 * np.trace(Sigma) - N * np.einsum("...ij,ij->...", M, Sigma @ Sigma) + 0.5 * quadratic


def optimal_map(Sigma, N):
    """The minimizer of :func:`population_loss` over all ``M``: ``M* = (tr Σ · I + (N+1)Σ)⁻¹``."""
    Sigma, N = check_covariance(Sigma), _check_context(N)
    return np.linalg.inv(np.trace(Sigma) * np.eye(Sigma.shape[0]) + (N + 1) * Sigma)


def sample_prompts(Sigma, N, num_prompts, *, seed=0):
    """Monte Carlo prompts, for checking the population formulas: ``(X, y)`` with rows ``vec Φ`` and ``y``.

    Draws ``β ~ N(0, I)``, ``x_1..x_N, x_q ~ N(0, Σ)`` per prompt and returns ``X`` of shape
    ``(num_prompts, d²)`` (``Φ = (Σ_n y_n x_n) x_qᵀ``) and ``y`` of shape ``(num_prompts, 1)``.
    """
    Sigma, N = check_covariance(Sigma), _check_context(N)
    num_prompts = check_int(num_prompts, "num_prompts")
    d = Sigma.shape[0]
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    root = np.linalg.cholesky(Sigma)
    beta = rng.standard_normal((num_prompts, d))
    x = rng.standard_normal((num_prompts, N + 1, d)) @ root.T
    context, query = x[:, :N], x[:, N]
    y_context = np.einsum("pnd,pd->pn", context, beta)
    s_beta = np.einsum("pn,pnd->pd", y_context, context)               # Σ_n y_n x_n = S β
    Phi = s_beta[:, :, None] * query[:, None, :]
    return Phi.reshape(num_prompts, d * d), np.einsum("pd,pd->p", beta, query)[:, None]


def _pcr(Sigma, N, initial_norm, eta, adaptive_rate):
    Sigma, N = check_covariance(Sigma), _check_context(N)
    eta = check_positive(eta, "eta")
    eigenvalues, vectors = np.linalg.eigh(Sigma)
    eigenvalues, vectors = eigenvalues[::-1], vectors[:, ::-1]
    trace = float(np.trace(Sigma))
    gains = 0.5 * N * eigenvalues**2 / (trace + (N + 1) * eigenvalues)
    losses = 0.5 * trace - np.concatenate([[0.0], np.cumsum(gains)])
    times, unit = jump_times(N * eigenvalues**2 / (3.0 * math.sqrt(3.0)), kappa=3, initial_norm=initial_norm, eta=eta,
                             adaptive_rate=adaptive_rate, unit_name="head")
    states, M = [np.zeros((Sigma.shape[0],) * 2)], np.zeros((Sigma.shape[0],) * 2)
    for lam, v in zip(eigenvalues, vectors.T):
        M = M + np.outer(v, v) / (trace + (N + 1) * lam)
        states.append(M.copy())
    K = times.size
    return Staircase(np.concatenate([[0.0], times]), losses[: K + 1], list(range(K)),
                     predictors=states[: K + 1], time_unit=unit)


def agf_staircase(Sigma, N, *, initial_norm, eta=1.0, adaptive_rate=False):
    """AGF's staircase for in-context linear regression at finite α, in GF time (the paper's Eq. 7).

    Principal component regression, one component per jump: the k-th jump learns the k-th
    eigenvector ``v_k`` of ``Σ`` (eigenvalues in decreasing order; equal eigenvalues are learned in
    the order :func:`numpy.linalg.eigh` returns them, reversed).

    Parameters
    ----------
    Sigma : (d, d) array
        Covariance of the inputs.
    N : int
        Number of examples in a prompt.
    initial_norm : float or sequence
        A number ``ν``: ``times[k]`` is when a head of initial norm ``ν`` aligned with ``v_k`` from
        the start, at utility ``Ū*_k = N λ_k²/(3√3)``, reaches norm one: ``(1/ν − 1)/(3ηŪ*_k)``
        (κ = 3), or ``log(1/ν)/(3ηŪ*_k)`` (adaptive rate ``η‖θ‖^{−1}``, Appendix B.5).
        A sequence ``μ^(0), …, μ^(m−1)`` (``m ≤ d``), the largest norm of a dormant head at each
        earlier jump: the paper's recursion ``τ^(k) = τ^(k−1) + (1/μ^(k−1) − 1)/(3ηŪ*_k)`` (or
        ``log(1/μ^(k−1))/(3ηŪ*_k)``) for the first ``m`` jumps. Each step is a lower bound on the
        wait from ``τ^(k−1)``, since no unit head has utility above ``Ū*_k`` on that level
        (Appendix E.3); with the norms of heads aligned from the start it gives the aligned times
        again. For ``k = 1`` both are a lower bound on the first jump from heads of norm at most
        ``ν = μ^(0)``.
    eta : float, default 1.0
        Learning rate.
    adaptive_rate : bool, default False
        Whether the per-neuron rate ``η‖θ‖^{2−κ}`` is used.

    Returns
    -------
    Staircase
        In GF time, with ``order[k-1] = k-1``,
        ``losses[k] = ½(tr Σ − Σ_{l≤k} N λ_l²/(tr Σ + (N+1)λ_l))`` and in ``predictors[k]`` the map
        ``M_k = Σ_{l≤k} v_l v_lᵀ/(tr Σ + (N+1)λ_l)``.
    """
    if initial_norm is None:
        raise TypeError("initial_norm must be a number or a sequence of dormant norms; "
                        "attention.limit_staircase is the α → 0 limit")
    return _pcr(Sigma, N, initial_norm, eta, adaptive_rate)


def limit_staircase(Sigma, N, *, eta=1.0, adaptive_rate=False):
    """The α → 0 limit of :func:`agf_staircase` from aligned heads (principal component regression, Eq. 7):
    the same levels, order and maps, and ``times[k] = 1/(3ηŪ*_k)`` in the rescaled unit ``t·α`` (κ = 3), or
    ``t/log(1/α)`` with the adaptive rate (:func:`agf_lib.escape.threshold`)."""
    return _pcr(Sigma, N, None, eta, adaptive_rate)


class AttentionSetting(Setting):
    """In-context linear regression with ``H`` linear attention heads (chapter 05), as a
    :class:`~agf_lib.setting.Setting`.

    The data are :func:`population_data` of ``(Σ, N)``; the closed forms are :func:`agf_staircase` (from the
    largest initial norm) and :func:`limit_staircase` (principal component regression, one component
    per jump). A level's predictor is the map ``M`` of shape ``(d, d)``, and its outputs are
    ``X vec(M)``.

    Parameters
    ----------
    Sigma : (d, d) array
        The covariance of the inputs, symmetric positive definite.
    N : int
        The context length.
    H : int
        Number of heads.
    adaptive_rate : bool, default False
        Run both engines, and time the closed forms, at the paper's adaptive rate (Appendix B.5).
    """

    def __init__(self, Sigma, N, H, *, adaptive_rate=False):
        self._Sigma = check_covariance(Sigma)
        self._N = _check_context(N)
        self._adaptive_rate = check_bool(adaptive_rate, "adaptive_rate")
        self._X, self._y = population_data(self._Sigma, self._N)
        self.network = LinearAttentionNetwork(self._Sigma.shape[0], H)
        self.options = rate_options(self._adaptive_rate)

    def data(self):
        return self._X, self._y

    def finite_staircase(self, initial_norms):
        return agf_staircase(self._Sigma, self._N, initial_norm=initial_norms, adaptive_rate=self._adaptive_rate)

    def limit_staircase(self):
        return limit_staircase(self._Sigma, self._N, adaptive_rate=self._adaptive_rate)

    def level_outputs(self, predictor):
        return self._X @ np.asarray(predictor, dtype=float).reshape(-1, 1)
