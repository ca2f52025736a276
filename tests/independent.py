"""Reference computations the setting tests compare the library with, written without the library's formulas.

* :func:`time_to_norm_one`: the gradient flow of one neuron's utility, ``dθ/dt = η‖θ‖^{ε(2−κ)}∇U(θ)``
  (ε = 1 with the adaptive rate of the paper's Appendix B.5, else 0), solved by ``solve_ivp`` until
  ``‖θ‖ = 1``. The caller supplies ``∇U``; nothing of :mod:`agf_lib.escape` is used.
* :func:`rescaled_escape_limit`: SymPy integrates the norm law of an aligned neuron (the paper's Eq. 4 at
  constant utility, ``dρ/dt = κηŪρ^{κ−1}``, times ``ρ^{2−κ}`` with the adaptive rate) from ``ν`` to one, and
  finds which rescaling of that time (``t·ν^{κ−2}`` or ``t/log(1/ν)``) has a finite positive limit as
  ``ν → 0``, and the limit.
* :func:`check_times_against_ode`: a setting's ``agf_staircase`` and ``limit_staircase`` against both.
"""

import functools
import math

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

from agf_lib.results import GF_TIME, LOG_TIME, TimeUnit

__all__ = ["time_to_norm_one", "rescaled_escape_limit", "check_times_against_ode"]


def time_to_norm_one(gradient, theta0, *, kappa, eta, adaptive_rate, t_max=1e12):
    """When the flow ``dθ/dt = η‖θ‖^{ε(2−κ)} gradient(θ)`` started at ``theta0`` reaches norm one (DOP853,
    rtol 1e-12, a terminal event). ``gradient`` maps a flat parameter vector to ``∇U`` of the same shape."""
    power = (2 - kappa) if adaptive_rate else 0

    def rhs(t, theta):
        return eta * np.linalg.norm(theta) ** power * gradient(theta)

    def unit_norm(t, theta):
        return np.linalg.norm(theta) - 1.0
    unit_norm.terminal, unit_norm.direction = True, 1
    solution = solve_ivp(rhs, (0, t_max), theta0, method="DOP853", rtol=1e-12, atol=1e-14 * np.linalg.norm(theta0),
                         events=unit_norm)
    if solution.t_events[0].size != 1:
        raise RuntimeError(f"the neuron did not reach norm one before t = {t_max:g}: {solution.message}")
    return float(solution.t_events[0][0])


@functools.lru_cache(maxsize=None)
def rescaled_escape_limit(kappa, adaptive_rate):
    """``(unit, limit)``: the rescaled unit in which the escape time ``T(ν)`` of an aligned neuron has a finite
    positive limit as ``ν → 0``, and that limit as a function ``limit(utility, eta)``.

    ``T(ν) = ∫_ν^1 dρ / (κηŪρ^{κ−1}·ρ^{ε(2−κ)})`` by SymPy; the candidates are ``T·ν^{κ−2}`` (the unit
    ``t·α^{κ−2}``) and ``T/log(1/ν)`` (the unit ``t/log(1/α)``); exactly one of them must have a finite
    positive limit, the other tending to zero or infinity.
    """
    rho, nu, U, eta = sp.symbols("rho nu U eta", positive=True)
    rate = kappa * eta * U * rho ** (kappa - 1) * (rho ** (2 - kappa) if adaptive_rate else 1)
    T = sp.integrate(1 / rate, (rho, nu, 1))
    candidates = {LOG_TIME: T / sp.log(1 / nu)}
    if kappa > 2:
        candidates[TimeUnit.alpha_power(kappa - 2)] = T * nu ** (kappa - 2)
    limits = {unit: sp.simplify(sp.limit(expression, nu, 0, "+")) for unit, expression in candidates.items()}
    finite = [unit for unit, value in limits.items() if value.is_positive and value.is_finite]
    others = [value for unit, value in limits.items() if unit not in finite]
    if len(finite) != 1 or not all(value == 0 or value == sp.oo for value in others):
        raise RuntimeError(f"no single rescaling of the escape time has a finite limit: {limits}")
    unit = finite[0]
    return unit, sp.lambdify((U, eta), limits[unit])


def check_times_against_ode(agf_staircase, limit, gradient_on, levels, *, kappa, eta, adaptive_rate):
    """A setting's staircases against :func:`time_to_norm_one` and :func:`rescaled_escape_limit`.

    ``levels[k-1] = (residual, direction, loss)``: on level ``k − 1``, the residual, a unit maximizer of the
    utility there and the loss ``½ E‖residual‖²``; ``gradient_on(residual)`` returns ``θ ↦ ∇U(θ)`` for one
    neuron against that residual (a flat vector). Checked:

    * ``agf_staircase(initial_norm=ν)``, ν = 1e-2: ``times[k]`` is when the maximizer of level ``k − 1``,
      started at norm ν, reaches norm one (rtol 1e-8: the solver's rtol 1e-12 accumulated over the blow-up);
    * the recursion from ``μ^(0..2) = 1e-2, 0.05, 0.2``: step ``k`` is the same wait from ``μ^(k−1)``;
    * ``limit``: its unit and ``times[k]`` are SymPy's limit of the rescaled escape time at the utility the
      maximizer has against the data (rtol 1e-10: that utility is a mean over samples, to rounding);
    * both staircases' levels are the data's ``½ E‖residual‖²`` on each level (rtol 1e-12, rounding of the
      sums).
    """
    nu, norms = 1e-2, [1e-2, 0.05, 0.2]
    aligned, recursion = agf_staircase(initial_norm=nu), agf_staircase(initial_norm=norms)
    unit, limit_time = rescaled_escape_limit(kappa, adaptive_rate)
    assert aligned.time_unit == recursion.time_unit == GF_TIME
    assert limit.time_unit == unit
    for k, (residual, direction, loss) in enumerate(levels, 1):
        gradient = gradient_on(residual)
        np.testing.assert_allclose(np.linalg.norm(direction), 1.0, rtol=1e-14)
        solve = functools.partial(time_to_norm_one, gradient, kappa=kappa, eta=eta, adaptive_rate=adaptive_rate)
        np.testing.assert_allclose(aligned.times[k], solve(nu * direction), rtol=1e-8)
        if k <= len(norms):
            np.testing.assert_allclose(recursion.times[k] - recursion.times[k - 1], solve(norms[k - 1] * direction),
                                       rtol=1e-8)
        utility = float(direction @ gradient(direction)) / kappa      # Euler: θ·∇U = κU for a κ-homogeneous U
        np.testing.assert_allclose(limit.times[k], limit_time(utility, eta), rtol=1e-10)
        np.testing.assert_allclose([aligned.losses[k - 1], limit.losses[k - 1]], loss, rtol=1e-12)
    assert math.isfinite(aligned.times[-1])
