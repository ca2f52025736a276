"""agf_lib.escape (the κ-dependent escape of a dormant neuron) against an independent solve of the norm's
ODE, SymPy's limit of the rescaled escape time (tests/independent.py) and the closed forms of chapter 02
(TimeUnit itself is tested in test_results.py)."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from agf_lib import GF_TIME
from agf_lib.escape import escape_times, jump_times, threshold
from independent import rescaled_escape_limit


def time_to_norm_one(kappa, nu, utility, eta, adaptive_rate):
    """When dρ/dt = κηŪρ^{κ−1} (or κηŪρ with the adaptive rate) takes ρ from ν to 1, by solve_ivp in log ρ."""
    power = 0 if adaptive_rate else kappa - 2
    grow = lambda t, log_rho: [kappa * eta * utility * math.exp(power * log_rho[0])]
    reach_one = lambda t, log_rho: log_rho[0]
    reach_one.terminal, reach_one.direction = True, 1
    sol = solve_ivp(grow, (0.0, 1e9), [math.log(nu)], events=reach_one, rtol=1e-12, atol=1e-14, method="DOP853")
    return sol.t_events[0][0]


@pytest.mark.parametrize("kappa", [2, 3, 4, 5])
@pytest.mark.parametrize("adaptive_rate", [False, True])
@pytest.mark.parametrize("nu, utility, eta", [(1e-3, 0.7, 1.0), (0.2, 2.5, 0.3)])
def test_escape_time_is_when_the_norm_ode_reaches_one(kappa, adaptive_rate, nu, utility, eta):
    times, unit = escape_times([utility], kappa=kappa, initial_norm=nu, eta=eta, adaptive_rate=adaptive_rate)
    assert unit == GF_TIME and times.shape == (1,)
    np.testing.assert_allclose(times[0], time_to_norm_one(kappa, nu, utility, eta, adaptive_rate), rtol=1e-9)


def test_thresholds_are_chapter_02s_closed_forms():
    nu = 0.01
    assert threshold(nu, kappa=2) == (pytest.approx(math.log(100), rel=1e-15), GF_TIME)
    assert threshold(nu, kappa=3)[0] == pytest.approx(99.0, rel=1e-14)
    assert threshold(nu, kappa=4)[0] == pytest.approx((1e4 - 1) / 2, rel=1e-14)
    for kappa in (3, 4, 7):
        assert threshold(nu, kappa=kappa, adaptive_rate=True)[0] == pytest.approx(math.log(100), rel=1e-15)
    # c(ν) → log(1/ν) as κ → 2 (chapter 02), seen through κ = 3, 4, 5 at ν close to one
    nu = 1 - 1e-6
    for kappa in (3, 4, 5):
        np.testing.assert_allclose(threshold(nu, kappa=kappa)[0], -math.log(nu), rtol=1e-5)


@pytest.mark.parametrize("kappa, adaptive_rate", [(2, False), (3, True), (3, False), (5, False), (5, True)])
def test_the_limit_is_sympys_limit_of_the_rescaled_escape_time(kappa, adaptive_rate):
    """The α → 0 limit and its unit against SymPy, which integrates the norm law from ν to one and finds the one
    rescaling (t·ν^{κ−2} or t/log(1/ν)) with a finite positive limit."""
    utility, eta = np.array([0.5, 0.2]), 0.7
    unit, limit = rescaled_escape_limit(kappa, adaptive_rate)
    times, time_unit = escape_times(utility, kappa=kappa, eta=eta, adaptive_rate=adaptive_rate)
    assert time_unit == unit
    np.testing.assert_allclose(times, [limit(u, eta) for u in utility], rtol=1e-14)   # two roundings apart
    assert threshold(None, kappa=kappa, adaptive_rate=adaptive_rate) == (pytest.approx(kappa * limit(1.0, 1.0),
                                                                                     rel=1e-15), unit)


def test_escape_times_refuse_bad_input_naming_it():
    with pytest.raises(ValueError, match="^utility must be finite and positive"):
        escape_times([0.3, 0.0], kappa=3)
    with pytest.raises(ValueError, match="^kappa must be an integer >= 2, got 1"):
        threshold(0.1, kappa=1)
    with pytest.raises(TypeError, match="^kappa must be an integer, got float"):
        threshold(0.1, kappa=2.5)
    with pytest.raises(TypeError, match="^adaptive_rate must be True or False, got str"):
        threshold(0.1, kappa=3, adaptive_rate="yes")
    with pytest.raises(ValueError, match="^initial_norm must be below one"):
        threshold(1.0, kappa=3)
    with pytest.raises(ValueError, match="^initial_norm = 1e-100 gives jump times beyond float range for κ = 6"):
        threshold(1e-100, kappa=6)
    with pytest.raises(ValueError, match="^eta must be a finite positive number, got 0.0"):
        escape_times([1.0], kappa=2, eta=0.0)


def test_jump_times_recursion_adds_each_escape_from_the_previous_dormant_norm():
    utility, mu = np.array([0.6, 0.3, 0.1]), [1e-3, 2e-3]
    times, unit = jump_times(utility, kappa=3, initial_norm=mu)
    steps = [time_to_norm_one(3, m, u, 1.0, False) for m, u in zip(mu, utility)]
    assert unit == GF_TIME and times.shape == (2,)
    np.testing.assert_allclose(times, np.cumsum(steps), rtol=1e-9)
    aligned, _ = jump_times(utility, kappa=3, initial_norm=1e-3)
    np.testing.assert_allclose(aligned, [time_to_norm_one(3, 1e-3, u, 1.0, False) for u in utility], rtol=1e-9)
    with pytest.raises(ValueError, match="^initial_norm must hold one dormant norm per jump, at most 3"):
        jump_times(utility, kappa=3, initial_norm=[0.1, 0.1, 0.1, 0.1])
