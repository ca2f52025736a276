"""Diagonal linear networks ``f(x) = Σ_i u_i v_i x_i``: the setting of the paper's Section 3 and Appendix C.

With ``β_i = u_i v_i`` the loss is the least-squares loss ``L(β) = E[½(y − xᵀβ)²]`` with gradient
``∇L(β) = Σ_xx β − Σ_xy``. From the paper's initialization ``u_i = √2 α``, ``v_i = 0``, the
conserved ``u_i² − v_i² = 2α²`` puts every neuron on a hyperbola, parametrized as
``u_i = √2 α cosh ψ_i``, ``v_i = √2 α sinh ψ_i``. Then gradient flow is exactly::

    dψ_i/dt = −∇_{β_i} L(β),   β_i = α² sinh(2ψ_i),   ‖θ_i‖² = 2α² cosh(2ψ_i).

In AGF the dormant coordinates see a constant gradient between jumps, so ψ_i is piecewise linear in
time; the paper's accumulated utility and sign are ``𝒮_i = log cosh(2ψ_i) / (2η_α)`` with
``η_α = −log(√2 α)`` and ``ρ_i = sgn ψ_i`` (Theorem C.4). A coordinate activates when its norm
reaches one, ``𝒮_i = 1``, i.e. ``|ψ_i| = ψ*(α) = ½ arccosh(1/(2α²))`` (Corollary C.5), and the cost
step is least squares with the signs of the active coordinates fixed (Section C.2).

The setting (:class:`DiagonalSetting`, the contract of :class:`agf_lib.setting.Setting`) is built from
:class:`DiagonalLinearNetwork`;
:func:`initial_theta`; data ``(X, y)`` given by the caller; :func:`agf_staircase`, AGF in closed form at
finite α in GF time; :func:`limit_staircase`, its α → 0 limit (Pesme–Flammarion) in ``t/log(1/α)``; and
:func:`exact_flow`, gradient flow integrated exactly in the coordinates ψ.

**Length.** The setting has three independent computations of the same staircase (the closed form, the exact
flow in ψ, the generic engines through the network and its chart), which the chapters compare; they share the
log-space helpers that keep α down to 1e-100 in range, so they stay together.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import lsq_linear

from ._engine import check_solver, integrate
from .network import TwoLayerNetwork, as_data
from .results import GF_TIME, LOG_TIME, Staircase, Trajectory
from .setting import Setting
from .validation import (check_bool, check_fraction, check_int, check_max_jumps, check_num_samples, check_positive,
                         real_array)

__all__ = ["DiagonalSetting", "DiagonalLinearNetwork", "initial_theta", "agf_staircase", "limit_staircase", "exact_flow",
           "activation_threshold", "sign_constrained_least_squares", "beta_of_psi", "log_cosh"]


_CHART_SIGNS = np.array([1.0, -1.0])           # ∇_φ of β = ½(p² − q²) is (p, −q)


def _beta(phi):
    """``β = ½(p − q)(p + q)`` in the chart, factored so that ``β`` keeps its relative accuracy when ``p ≈ q``."""
    p, q = phi[..., 0], phi[..., 1]
    return 0.5 * (p - q) * (p + q)


def _half_moments(X, y):
    """``(½E[xxᵀ], E[xy])`` of checked data (y of shape (n, 1)): −∇_β L = E[xy] − ½E[xxᵀ](2β)."""
    return 0.5 * (X.T @ X / X.shape[0]), X.T @ y[:, 0] / X.shape[0]


class DiagonalLinearNetwork(TwoLayerNetwork):
    """``f(x; Θ) = Σ_i u_i v_i x_i`` with ``θ_i = (u_i, v_i)``: ``d`` neurons, ``P = 2``, ``c = 1``, ``κ = 2``."""

    kappa = 2
    num_params = 2
    output_dim = 1
    quadratic_utility = True

    def __init__(self, d):
        self.input_dim = self.num_neurons = check_int(d, "d")

    def neuron_outputs(self, theta, X):
        return ((theta[:, 0] * theta[:, 1])[:, None] * X.T)[:, :, None]

    def utility_gradient(self, theta, X, residual):
        # U_i = −u_i v_i ∇_{β_i}L with −∇_{β_i}L = E[x_i r]: closed form, no autograd needed.
        minus_grad = X.T @ residual[:, 0] / X.shape[0]
        u, v = theta[:, 0], theta[:, 1]
        return u * v * minus_grad, np.stack([v * minus_grad, u * minus_grad], axis=1)

    # The chart (p, q) = (u + v, u − v)/√2, in which u² − v² = 2pq and β = uv = (p − q)(p + q)/2.
    has_chart = True
    sign_preserving_chart = True           # dp/dt = η p (−∇_β L), dq/dt = −η q (−∇_β L)

    def to_chart(self, theta):
        u, v = theta[:, 0], theta[:, 1]
        return np.stack([u + v, u - v], axis=1) / math.sqrt(2.0)

    def from_chart(self, phi):
        p, q = phi[:, 0], phi[:, 1]
        return np.stack([p + q, p - q], axis=1) / math.sqrt(2.0)

    def chart_outputs(self, phi, X):
        return (_beta(phi)[:, None] * X.T)[:, :, None]

    def chart_utility_gradient(self, phi, X, residual):
        minus_grad = (residual[:, 0] @ X) * (1.0 / X.shape[0])
        grad = phi * (minus_grad[:, None] * _CHART_SIGNS)
        return _beta(phi) * minus_grad, grad

    def weighted_output(self, phi, X, weights):
        return (X @ (weights * _beta(phi)))[:, None]

    def chart_residual_gradient(self, phi, X, y, weights):
        residual = y - (X @ (weights * _beta(phi)))[:, None]
        minus_grad = (residual[:, 0] @ X) * (1.0 / X.shape[0])
        return residual, phi * (minus_grad[:, None] * _CHART_SIGNS)

    def gradient_function(self, X, y, index=None):
        # −∇_β L = E[x y] − E[x xᵀ](weights·β): the moments suffice; β's ½ is folded into E[x xᵀ] (exactly). The
        # neurons in index alone see their own coordinates: the moments of those columns.
        half_xx, xy = _half_moments(X if index is None else X[:, index], y)

        def gradient(phi, weights):
            p, q = phi[:, 0], phi[:, 1]
            minus_grad = xy - half_xx @ (weights * (p - q) * (p + q))
            return phi * (minus_grad[:, None] * _CHART_SIGNS)
        return gradient

    def log_gradient_function(self, X, y, index=None):
        # ∂U/∂p / p = −∇_β L and ∂U/∂q / q = ∇_β L, with 2β = p² − q² = e^{2s_p} − e^{2s_q}
        half_xx, xy = _half_moments(X if index is None else X[:, index], y)

        def gradient(s):
            squares = np.exp(2.0 * s)
            minus_grad = xy - half_xx @ (squares[:, 0] - squares[:, 1])
            return minus_grad[:, None] * _CHART_SIGNS
        return gradient

    def batched_weighted_output(self, phi, X, weights):
        return ((weights * _beta(phi)) @ X.T)[..., None]

    def initial_theta(self, *, alpha, seed=0):
        """See :func:`initial_theta` (``seed`` is checked for the contract and unused: no randomness)."""
        check_int(seed, "seed", 0)
        return initial_theta(self.input_dim, alpha=alpha)

    def __repr__(self):
        return f"DiagonalLinearNetwork(d={self.input_dim})"


def initial_theta(d, *, alpha):
    """The paper's initialization for diagonal networks (Section 3): ``u = √2 α``, ``v = 0``; shape ``(d, 2)``.

    Deterministic, so it takes no seed: every neuron starts at the same point, on the hyperbola
    ``u² − v² = 2α²`` at ``ψ = 0``.
    """
    alpha = check_positive(alpha, "alpha")
    theta = np.zeros((check_int(d, "d"), 2))
    theta[:, 0] = math.sqrt(2.0) * alpha
    return theta


def activation_threshold(alpha):
    """``ψ*(α) = ½ arccosh(1/(2α²))``: the |ψ| at which ``‖θ_i‖ = 1`` (computed in logs, no overflow).

    With ``x = −log(2α²)``, ``arccosh(eˣ) = x + log(1 + √(1 − e^{−2x}))``. As α → 0,
    ``ψ*(α) = log(1/α) + o(1)``.
    """
    alpha = check_positive(alpha, "alpha")
    x = -math.log(2.0) - 2.0 * math.log(alpha)
    if x <= 0:
        raise ValueError(f"alpha must be below 1/√2 (initial neurons inside the unit sphere), got {alpha!r}")
    return 0.5 * (x + math.log1p(math.sqrt(-math.expm1(-2.0 * x))))


def log_cosh(x):
    """``log cosh x`` without overflow: ``|x| + log1p(e^{−2|x|}) − log 2`` (``x`` finite)."""
    x = np.abs(real_array(x, "x", "a real number or an array", scalar_ok=True))
    return x + np.log1p(np.exp(-2.0 * x)) - math.log(2.0)


# β = α² sinh 2ψ is a float64 only while its log, 2 log α + 2|ψ| − log 2, stays below this
_LOG_FLOAT_MAX = math.log(np.finfo(float).max)
_LOG_SATURATE = 300.0


def _log_abs_beta(psi, log_alpha):
    """``log(α² e^{2|ψ|}/2)``, so that ``|β| = α² |sinh 2ψ| = e^{this} (1 − e^{−4|ψ|})``."""
    return 2.0 * log_alpha + 2.0 * np.abs(psi) - math.log(2.0)


def _beta_from_log(psi, exponent):
    return np.sign(psi) * np.exp(exponent) * -np.expm1(-4.0 * np.abs(psi))


def beta_of_psi(psi, alpha):
    """``β = α² sinh(2ψ)``, evaluated in logs so that α down to 1e-100 neither overflows nor underflows early.

    Raises
    ------
    OverflowError
        Where ``|β|`` exceeds the largest float64 (``2 log α + 2|ψ| − log 2 > 709.78``).
    ValueError
        If ``psi`` holds NaN or ±inf, or ``alpha`` is not a finite positive number.
    """
    alpha = check_positive(alpha, "alpha")
    psi = real_array(psi, "psi", "a real number or an array", scalar_ok=True)
    exponent = _log_abs_beta(psi, math.log(alpha))
    if np.any(exponent > _LOG_FLOAT_MAX):
        raise OverflowError(f"beta = alpha² sinh(2 psi) exceeds the largest float64 at alpha = {alpha!r}, "
                            f"|psi| = {float(np.abs(psi).max())!r}")
    return _beta_from_log(psi, exponent)


def _psi_field(Sigma_xx, Sigma_xy, log_alpha):
    """The right-hand side ``−∇L(β(ψ))`` of :func:`exact_flow` and its Jacobian ``−Σ_xx diag(2α² cosh 2ψ)``."""

    def rhs(t, psi):
        # |β| beyond e^300 only on a solver's trial step, never on a solution (its loss only decreases):
        # saturated there, the velocity is huge but finite, and every method rejects the step and retries a
        # shorter one (a NaN would do for the Runge-Kutta methods, but LSODA accepts it)
        exponent = np.minimum(_log_abs_beta(psi, log_alpha), _LOG_SATURATE)
        return Sigma_xy - Sigma_xx @ _beta_from_log(psi, exponent)

    def jacobian(t, psi):
        # dβ_i/dψ_i = 2α² cosh 2ψ_i = e^{2 log α + log(e^{2ψ_i} + e^{−2ψ_i})}, in logs like β itself
        exponent = np.minimum(2.0 * log_alpha + np.logaddexp(2.0 * psi, -2.0 * psi), _LOG_SATURATE)
        return -Sigma_xx * np.exp(exponent)[None, :]

    return rhs, jacobian


def exact_flow(X, y, t_end, *, alpha, method="DOP853", rtol=1e-10, atol=1e-12, num_samples=2000,
               times=None, record_params=False):
    """Exact gradient flow of the diagonal network from ``u = √2α, v = 0``, integrated in ψ coordinates.

    ``dψ/dt = −∇L(β)`` with ``β = α² sinh(2ψ)`` (module docstring). The conserved
    ``u² − v² = 2α²`` holds by construction, which a float64 state ``(u, v)`` of order one cannot
    resolve once α² is below the solver's tolerance; this is the reference for such small α, and
    for the generic :func:`agf_lib.gradient_flow`.

    Parameters
    ----------
    X : (n, d) array
        Inputs.
    y : (n,) or (n, 1) array
        Targets.
    t_end : float
        Final GF time.
    alpha : float
        Initialization scale, in ``(0, 1/√2)``.
    method, rtol, atol, num_samples, times
        Solver and sampling options, as for :func:`agf_lib.gradient_flow`. The implicit methods
        (``"LSODA"``, ``"BDF"``, ``"Radau"``) get the exact Jacobian ``−Σ_xx diag(2α² cosh 2ψ)``.
        Once the data are nearly interpolated the flow is stiff (the fitted directions relax at
        rates of order ``α² e^{2|ψ|}`` while the rest drifts slowly), and for long runs past the last
        jump ``method="LSODA"`` takes far fewer evaluations.
    record_params : bool, default False
        Also record the parameters and log-norms.

    Returns
    -------
    Trajectory
        In GF time; with ``record_params`` its ``params[k]`` holds ``(u_i, v_i)`` and
        ``log_norms`` holds ``log‖θ_i‖``.

    Raises
    ------
    ValueError
        If an argument is out of range (as for :func:`agf_lib.gradient_flow`).
    FloatingPointError
        If the flow itself (not a rejected trial step) reaches ``2α² cosh 2ψ_i = e^300`` (about
        ``|β_i| = e^300``), where the field is capped: the data ask for coefficients beyond float64's
        comfortable range (rescale ``X``).
    """
    alpha = check_positive(alpha, "alpha")
    t_end = check_positive(t_end, "t_end")
    check_solver(method)
    check_num_samples(num_samples)
    record_params = check_bool(record_params, "record_params")
    X, y, Sigma_xx, Sigma_xy = _moments(X, y)
    rhs, jacobian = _psi_field(Sigma_xx, Sigma_xy, math.log(alpha))
    times, psi = integrate(rhs, np.zeros(X.shape[1]), t_end, method=method, rtol=rtol, atol=atol,
                           num_samples=num_samples, times=times, jac=jacobian)
    psi = psi.T
    # The samples hold every accepted step (or, with times given, the flow at those times): the caps of
    # _psi_field must have been met only by rejected trial steps, never on the path itself. The Jacobian's
    # exponent, log(2α² cosh 2ψ), bounds β's, log|α² sinh 2ψ|, so one check covers both caps.
    reached = float((2.0 * math.log(alpha) + np.logaddexp(2.0 * psi, -2.0 * psi)).max())
    if reached >= _LOG_SATURATE:
        raise FloatingPointError(f"the flow reached 2 alpha² cosh(2 psi) = e^{reached:.4g}, beyond the cap "
                                 f"e^{_LOG_SATURATE:g} of its velocity: the data ask for coefficients too large "
                                 "for float64 (rescale X)")
    residual = y[None, :] - beta_of_psi(psi, alpha) @ X.T
    losses = 0.5 * np.mean(residual**2, axis=1)
    params = log_norms = None
    if record_params:
        log_scale = math.log(math.sqrt(2.0) * alpha)
        params = np.stack([np.exp(log_scale + log_cosh(psi)), np.sign(psi) * np.exp(log_scale + log_cosh(psi))
                           * -np.expm1(-2.0 * np.abs(psi)) / (1.0 + np.exp(-2.0 * np.abs(psi)))], axis=-1)
        log_norms = log_scale + 0.5 * log_cosh(2.0 * psi)
    return Trajectory(times, losses, params=params, log_norms=log_norms)


def _data(X, y):
    X, y = as_data(X, y)
    if y.shape[1] != 1:
        raise ValueError(f"y must have a single output coordinate for a diagonal network, got {y.shape[1]}")
    return X, y[:, 0]


def _moments(X, y):
    X, y = _data(X, y)
    n = X.shape[0]
    Sigma_xx = X.T @ X / n
    # a nonzero column whose second moment underflows has no gradient to speak of in float64: the closed forms
    # would activate it and drop it again at the same instant, for ever
    if np.any((np.diag(Sigma_xx) < np.finfo(float).tiny) & np.any(X != 0, axis=0)):
        raise ValueError("X has a nonzero column whose second moment E[x_i²] underflows float64 (below 2.2e-308); "
                         "rescale X")
    return X, y, Sigma_xx, X.T @ y / n


ZERO_TOL = 1e-12
"""A coefficient of the cost step counts as zero when its part of the fit is this small: ``|β_i|·‖x_i‖ ≤
ZERO_TOL·‖y‖`` (``x_i`` the i-th column of X). Such a coefficient is set to exactly zero, and in
:func:`agf_staircase` its coordinate returns to dormancy; a coefficient of the wrong sign beyond it is an error."""


def _check_signs(signs, d):
    signs = real_array(signs, "signs", expected="an array of -1, 0 and +1")
    if signs.shape != (d,):
        raise ValueError(f"signs must have shape (d,) = ({d},), one entry per column of X, got {signs.shape}")
    if not np.all(np.isin(signs, (-1, 0, 1))):
        raise ValueError(f"signs must hold only -1, 0 and +1, got {signs.tolist()}")
    return signs.astype(int)


def sign_constrained_least_squares(X, y, *, signs):
    """Least squares with prescribed signs: the AGF cost step of the paper's Section C.2.

    Minimizes ``E[½(y − xᵀβ)²]`` subject to ``ρ_i β_i ≥ 0`` where ``ρ_i = signs[i] ∈ {−1, +1}``,
    and ``β_i = 0`` where ``signs[i] == 0``, by bounded least squares
    (:func:`scipy.optimize.lsq_linear`, BVLS).

    Parameters
    ----------
    X : (n, d) array
        Inputs.
    y : (n,) array
        Targets.
    signs : (d,) array
        Entries −1, 0 or +1.

    Returns
    -------
    (d,) array
        β; coefficients below ``ZERO_TOL`` of the fit are returned as exact zeros.

    Raises
    ------
    ValueError
        If ``signs`` has the wrong shape or other entries than −1, 0 and +1.
    RuntimeError
        If the solver reports no convergence, or returns a coefficient of the wrong sign beyond
        that tolerance.
    """
    X, y = _data(X, y)
    return _sign_constrained_fit(X, y, _check_signs(signs, X.shape[1]))


def _sign_constrained_fit(X, y, signs):
    beta = np.zeros(X.shape[1])
    free = np.nonzero(signs)[0]
    if free.size == 0:
        return beta
    lower = np.where(signs[free] > 0, 0.0, -np.inf)
    upper = np.where(signs[free] > 0, np.inf, 0.0)
    scale = 1.0 / math.sqrt(X.shape[0])
    result = lsq_linear(X[:, free] * scale, y * scale, bounds=(lower, upper), method="bvls", tol=1e-14)
    if result.status <= 0:
        raise RuntimeError(f"sign-constrained least squares on coordinates {free.tolist()} did not converge "
                           f"(scipy lsq_linear, BVLS, status {result.status}): {result.message}")
    coef = np.array(result.x, dtype=float)
    negligible = np.abs(coef) * np.linalg.norm(X[:, free], axis=0) <= ZERO_TOL * np.linalg.norm(y)
    wrong_sign = (signs[free] * coef < 0) & ~negligible
    if wrong_sign.any() or not np.all(np.isfinite(coef)):
        raise RuntimeError(f"sign-constrained least squares returned coefficients {coef.tolist()} for coordinates "
                           f"{free.tolist()}, outside the imposed signs {signs[free].tolist()} beyond ZERO_TOL")
    coef[negligible] = 0.0
    beta[free] = coef
    return beta


def _saddle_to_saddle(X, y, threshold, max_jumps, tol):
    """Shared loop of :func:`agf_staircase` and :func:`limit_staircase`.

    ``psi`` holds ψ_i (AGF) or ψ_i·(1/ψ*) scaled to the threshold (PF's s_i when threshold = 1).
    """
    X, y, Sigma_xx, Sigma_xy = _moments(X, y)
    d = X.shape[1]
    psi = np.zeros(d)
    signs = np.zeros(d, dtype=int)  # ρ_i for active coordinates, 0 for dormant ones
    beta = np.zeros(d)
    scale = max(np.abs(Sigma_xy).max(), np.finfo(float).tiny)
    loss = lambda b: 0.5 * float(np.mean((y - X @ b) ** 2))
    times, losses, order, states, active, deactivated = [0.0], [loss(beta)], [], [beta.copy()], [()], []
    t = 0.0
    while max_jumps is None or len(order) < max_jumps:
        grad = Sigma_xx @ beta - Sigma_xy
        dormant = np.nonzero((signs == 0) & (np.abs(grad) > tol * scale))[0]
        if dormant.size == 0:
            break
        # ψ_i moves at speed −∇_i L towards ±threshold; time for each dormant coordinate to get there
        speed = -grad[dormant]
        wait = (threshold * np.sign(speed) - psi[dormant]) / speed
        j = int(np.argmin(wait))
        i, dt = int(dormant[j]), float(wait[j])
        dormant_all = signs == 0
        psi[dormant_all] -= grad[dormant_all] * dt
        t += dt
        psi[i] = threshold * np.sign(speed[j])
        signs[i] = int(np.sign(speed[j]))
        beta = _sign_constrained_fit(X, y, signs)
        # the fit returns exact zeros for coefficients within ZERO_TOL of the fit: those return to dormancy
        dropped = tuple(int(k) for k in np.nonzero((signs != 0) & (beta == 0))[0])
        if i in dropped:       # in exact arithmetic a coordinate with a gradient gets a coefficient of its sign
            raise FloatingPointError(f"coordinate {i} activated at t = {t:.6g} and the cost step set it to zero at "
                                     "once: its gradient is rounding (rescale X, or raise tol)")
        signs[list(dropped)] = 0  # back to dormancy with 𝒮_i at the threshold (ψ_i = ±ψ*)
        times.append(t)
        losses.append(loss(beta))
        order.append(i)
        states.append(beta.copy())
        active.append(tuple(int(k) for k in np.nonzero(signs)[0]))
        deactivated.append(dropped)
    return times, losses, order, states, active, deactivated


def agf_staircase(X, y, *, alpha, max_jumps=None, tol=1e-10):
    """AGF for a diagonal linear network at finite α, in closed form (Corollary C.5), in GF time.

    Between jumps each dormant ψ_i moves linearly at speed ``−∇_{β_i}L(β)``; the next coordinate to
    activate is the first to reach ``|ψ_i| = ψ*(α)`` (norm one, accumulated utility 𝒮_i = 1), with
    sign ``ρ_i = sgn ψ_i``. The cost step is sign-constrained least squares; coordinates it sets to
    zero (within ``ZERO_TOL`` of the fit) return to dormancy with ``ψ_i = ±ψ*(α)``.

    Parameters
    ----------
    X : (n, d) array
        Inputs.
    y : (n,) or (n, 1) array
        Targets.
    alpha : float
        Initialization scale, in ``(0, 1/√2)``.
    max_jumps : int, optional
        Stop after this many jumps.
    tol : float, default 1e-10
        Stop when every dormant coordinate has zero gradient, relative to ``tol·max|Σ_xy|``; in
        ``(0, 1)``.

    Returns
    -------
    Staircase
        In :data:`~agf_lib.results.GF_TIME`; ``predictors[k]`` is β on level ``k``, ``active[k]`` its
        support, ``deactivated[k-1]`` the coordinates that returned to dormancy at jump ``k``.
    """
    threshold = activation_threshold(alpha)
    check_max_jumps(max_jumps)
    tol = check_fraction(tol, "tol")
    times, losses, order, states, active, deactivated = _saddle_to_saddle(X, y, threshold, max_jumps, tol)
    return Staircase(np.array(times), np.array(losses), order, predictors=states, active=active, time_unit=GF_TIME,
                     deactivated=deactivated)


def limit_staircase(X, y, *, max_jumps=None, tol=1e-10):
    """The α → 0 limit of gradient flow on a diagonal network, in rescaled time ``t / log(1/α)``.

    This is Pesme & Flammarion's algorithm (2023; Algorithm 2 of the paper's Appendix C):
    ``agf_staircase(X, y, alpha=α).in_units(LOG_TIME, α)`` tends to it as α → 0 (Theorem 3.1). The
    integrals ``s_i(t̃) = −∫∇_{β_i}L(β(s)) ds`` move linearly between jumps; a coordinate activates
    when ``|s_i|`` reaches one, and β is the least-squares fit with the signs ``sgn s_i`` of the
    active coordinates imposed.

    Parameters
    ----------
    X : (n, d) array
        Inputs.
    y : (n,) or (n, 1) array
        Targets.
    max_jumps : int, optional
        Stop after this many jumps.
    tol : float, default 1e-10
        Stop when every inactive coordinate has zero gradient, relative to ``tol·max|Σ_xy|``; in
        ``(0, 1)``.

    Returns
    -------
    Staircase
        In :data:`~agf_lib.results.LOG_TIME`, with β on each level in ``predictors`` and the supports
        in ``active``.
    """
    check_max_jumps(max_jumps)
    tol = check_fraction(tol, "tol")
    times, losses, order, states, active, deactivated = _saddle_to_saddle(X, y, 1.0, max_jumps, tol)
    return Staircase(np.array(times), np.array(losses), order, predictors=states, active=active,
                     time_unit=LOG_TIME, deactivated=deactivated)


class DiagonalSetting(Setting):
    """Diagonal linear networks on data ``(X, y)`` (chapter 03), as a :class:`~agf_lib.setting.Setting`.

    ``agf_staircase`` is AGF itself at that α (:func:`agf_staircase`); ``limit_staircase`` is
    :func:`limit_staircase`; a level's predictor is β, and its outputs are ``X β``. The initialization is
    deterministic (:func:`initial_theta`): ``seed`` is accepted and unused, and a dormant norm ``ν`` is
    ``√2 α``.

    Parameters
    ----------
    X : (n, d) array
    y : (n,) or (n, 1) array
    """

    exact = True

    def __init__(self, X, y):
        self._X, self._y = _data(X, y)
        self.network = DiagonalLinearNetwork(self._X.shape[1])

    def data(self):
        return self._X, self._y[:, None]

    def finite_staircase(self, initial_norms):
        norms = np.unique(initial_norms)                   # ν = √2 α for every coordinate
        if norms.size != 1:
            raise ValueError("initial_norms must be one norm for a diagonal network (all coordinates start "
                             f"at the same point), got {norms.size} different ones")
        return agf_staircase(self._X, self._y, alpha=float(norms[0]) / math.sqrt(2.0))

    def finite_staircase_at(self, alpha, seed):
        return agf_staircase(self._X, self._y, alpha=alpha)

    def limit_staircase(self):
        return limit_staircase(self._X, self._y)

    def level_outputs(self, predictor):
        return (self._X @ np.asarray(predictor, dtype=float))[:, None]
