"""Specifications of `agf_lib.alternating_gradient_flow`, the numerical AGF engine (Algorithm 1).

It is checked against the closed-form AGF of the diagonal network (`agf_lib.diagonal.agf_staircase`) and against
single neurons whose utility flow keeps its direction, for which the jump time is explicit:
``𝒮 = κŪ t`` reaches ``c = −log‖θ(0)‖`` (κ = 2) or ``c = ‖θ(0)‖^{2−κ} − 1`` (κ = 3).
"""

import math
import signal

import numpy as np
import pytest
from conftest import make_regression

from agf_lib import FeedForwardNetwork, alternating_gradient_flow, diagonal, modular, problems

UNIT_SECOND_MOMENT_X = np.array([[1.0], [-1.0]])


def generic_diagonal_agf(X, y, alpha, **options):
    d = X.shape[1]
    return alternating_gradient_flow(diagonal.DiagonalLinearNetwork(d), (X, y), diagonal.initial_theta(d, alpha=alpha),
                                     **options)


@pytest.fixture
def three_coordinate_problem():
    """n = 20, d = 3, independent columns (seed 1): three jumps, none returns to dormancy."""
    return make_regression(1, 20, 3)


@pytest.mark.parametrize("alpha", [1e-6, 1e-10])
@pytest.mark.parametrize("problem", ["regression_problem", "three_coordinate_problem"])
def test_generic_agf_matches_closed_form_diagonal_agf(problem, alpha, request):
    """Measured: times agree to 2e-9 and levels to 1e-15 on both problems; for dormant coordinates that
    reverse sign and for returns to dormancy, see the tests below."""
    X, y = request.getfixturevalue(problem)
    exact = diagonal.agf_staircase(X, y, alpha=alpha)
    assert not any(exact.deactivated)
    staircase = generic_diagonal_agf(X, y, alpha)
    assert staircase.order == exact.order
    assert staircase.active == exact.active
    np.testing.assert_allclose(staircase.times, exact.times, rtol=1e-6)
    np.testing.assert_allclose(staircase.losses, exact.losses, rtol=1e-10)
    # the cost step lands on the sign-constrained least squares: β = u v of the active neurons on every level
    for theta, beta, active in zip(staircase.states, exact.states, exact.active):
        active = list(active)
        np.testing.assert_allclose((theta[:, 0] * theta[:, 1])[active], beta[active], rtol=1e-6)


@pytest.mark.parametrize("alpha", [1e-4, 1e-10])
def test_generic_agf_returns_the_redundant_coordinate_to_dormancy(deactivation_problem, alpha):
    """Coordinate 2 returns to dormancy and comes back with the other sign. Restored at norm one, its
    direction must still hold u² − v² = 2α²: in plain coordinates the last jump was off by 1.6e-3 at
    α = 1e-6; in the diagonal network's chart, measured 1.3e-7 at 1e-4 and 5e-8 at 1e-10."""
    X, y = deactivation_problem
    exact = diagonal.agf_staircase(X, y, alpha=alpha)
    staircase = generic_diagonal_agf(X, y, alpha)
    assert staircase.order == exact.order == [2, 0, 1, 2]
    assert staircase.deactivated == exact.deactivated == [(), (), (2,), ()]
    assert staircase.active == exact.active
    np.testing.assert_allclose(staircase.times, exact.times, rtol=1e-6)
    np.testing.assert_allclose(staircase.losses, exact.losses, rtol=1e-8)


@pytest.mark.parametrize("alpha", [1e-30, 1e-80, 1e-90, 1e-100])
def test_generic_agf_times_a_return_to_dormancy_to_the_engines_stated_accuracy(deactivation_problem, alpha):
    """The engine's docstring states returns to dormancy are timed to 1e-7 down to α = 1e-100: coordinate 2
    activates, is dropped at the third jump and comes back with the other sign. Measured largest relative
    time error 1.1e-8 at every α (below 1e-85 it once failed: a direction component of 1e-163 was squared
    to zero in the closed-form utility phase, and the cost step's solver then saw an exact zero)."""
    X, y = deactivation_problem
    exact = diagonal.agf_staircase(X, y, alpha=alpha)
    staircase = generic_diagonal_agf(X, y, alpha)
    assert staircase.order == exact.order == [2, 0, 1, 2]
    assert staircase.deactivated == exact.deactivated == [(), (), (2,), ()]
    np.testing.assert_allclose(staircase.times, exact.times, rtol=1e-7)
    np.testing.assert_allclose(staircase.losses, exact.losses, rtol=1e-8)


@pytest.mark.parametrize("alpha", [1e-10, 1e-30, 1e-100])
def test_generic_agf_times_a_sign_reversal_of_a_dormant_coordinate(sign_reversal_problem, alpha):
    """Coordinate 2 climbs to ψ = 0.3 ψ*(α) while coordinate 1 activates, then must cross back to −ψ*(α).
    In plain (u, v) coordinates this failed (3e-2 at α = 1e-30, 0.24 at 1e-100): the direction cannot hold
    u² − v² = 2α² at |ψ| ≳ 18. In the diagonal network's chart it is a coordinate of its own; measured
    error 6e-10 at every α."""
    X, y = sign_reversal_problem
    exact = diagonal.agf_staircase(X, y, alpha=alpha)
    np.testing.assert_allclose(exact.times, diagonal.activation_threshold(alpha) * np.array([0.0, 1.0, 3.6]),
                               rtol=1e-12)
    staircase = generic_diagonal_agf(X, y, alpha)
    assert staircase.order == [0, 1]
    np.testing.assert_allclose(staircase.times, exact.times, rtol=1e-7)


# ---------------------------------------------------------------------------------------------
# Single neurons with explicit jump times


@pytest.mark.parametrize("b0", [1e-4, 1e-40])
def test_balanced_linear_neuron_jumps_when_its_log_norm_reaches_zero(b0):
    """``f = a w x``, E[x²] = 1, y = s x, ``w = a = √b0``: the direction stays (1, 1)/√2 with
    ``κŪ = s``, so the neuron activates at ``τ = −log‖θ(0)‖ / s = −log(2 b0) / (2s)`` and the cost step
    fits y exactly."""
    s = 2.0
    network = FeedForwardNetwork(d=1, H=1, c=1, activation="linear")
    theta0 = np.full((1, 2), math.sqrt(b0))
    staircase = alternating_gradient_flow(network, (UNIT_SECOND_MOMENT_X, s * UNIT_SECOND_MOMENT_X[:, 0]), theta0)
    assert staircase.order == [0]
    np.testing.assert_allclose(staircase.times, [0.0, -math.log(2 * b0) / (2 * s)], rtol=1e-8)
    np.testing.assert_allclose(staircase.losses, [s**2 / 2, 0.0], rtol=1e-10, atol=1e-12 * s**2)
    w, a = staircase.states[-1][0]
    np.testing.assert_allclose(w * a, s, rtol=1e-6)


@pytest.mark.parametrize("adaptive_rate", [False, True])
def test_balanced_square_neuron_jump_time_follows_the_kappa_three_cost_of_escape(adaptive_rate):
    """``f = a (w x)²`` with x = ±1 and y = s: on the balanced line ``w = √2 a`` (kept by the conserved
    ``w² − 2a²``) the direction is fixed and ``κŪ = 2s/√3``. From ‖θ(0)‖ = r0 the neuron activates at
    ``τ = (1/r0 − 1)·√3/(2s)``; with the adaptive rate ``η‖θ‖^{2−κ}`` (Appendix B.5) at ``τ = −log r0·√3/(2s)``."""
    s, r0 = 1.5, 1e-3
    network = FeedForwardNetwork(d=1, H=1, c=1, activation="square")
    theta0 = r0 * np.array([[math.sqrt(2.0), 1.0]]) / math.sqrt(3.0)
    staircase = alternating_gradient_flow(network, (UNIT_SECOND_MOMENT_X, np.full(2, s)), theta0,
                                          adaptive_rate=adaptive_rate)
    cost_of_escape = -math.log(r0) if adaptive_rate else 1.0 / r0 - 1.0
    np.testing.assert_allclose(staircase.times, [0.0, cost_of_escape * math.sqrt(3.0) / (2 * s)], rtol=1e-8)
    np.testing.assert_allclose(staircase.losses, [s**2 / 2, 0.0], rtol=1e-10, atol=1e-12 * s**2)


# ---------------------------------------------------------------------------------------------
# Options


def test_generic_agf_stops_after_max_jumps_and_before_t_end(regression_problem):
    X, y = regression_problem
    alpha = 1e-6
    exact = diagonal.agf_staircase(X, y, alpha=alpha)
    first_two = generic_diagonal_agf(X, y, alpha, max_jumps=2)
    assert first_two.order == exact.order[:2]
    np.testing.assert_allclose(first_two.times, exact.times[:3], rtol=1e-6)
    before_third = generic_diagonal_agf(X, y, alpha, t_end=0.5 * (exact.times[2] + exact.times[3]))
    assert before_third.order == exact.order[:2]
    np.testing.assert_allclose(before_third.losses, exact.losses[:3], rtol=1e-6)
    assert generic_diagonal_agf(X, y, alpha, max_jumps=0).num_jumps == 0


def test_generic_agf_twice_gives_identical_staircases(sign_reversal_problem):
    X, y = sign_reversal_problem
    first, second = (generic_diagonal_agf(X, y, 1e-3) for _ in range(2))
    np.testing.assert_array_equal(first.times, second.times)
    np.testing.assert_array_equal(first.losses, second.losses)
    np.testing.assert_array_equal(np.array(first.states), np.array(second.states))


def test_where_a_cost_step_ends_does_not_depend_on_the_solver():
    """Incomplete groups of the modular network approach an infimum, and their cost steps end by the loss-
    settling rule during a slow drift. The rules are read at fixed times from the solver's interpolant, so
    that four different solvers end every step at the same state: jump times agree to 1e-3 and levels to
    1e-5 over ten jumps (read at the step ends the solvers chose, they differed by 25-30% in time)."""
    p, H = 11, 24
    x = np.random.default_rng(3).normal(size=p)
    x -= x.mean()
    X, Y = modular.dataset(x)
    network = modular.QuadraticModularNetwork(p, H)
    theta0 = network.initial_theta(alpha=1e-4, seed=0)
    runs = {method: alternating_gradient_flow(network, (X, Y), theta0, adaptive_rate=True, cost_tol=3e-2,
                                              max_jumps=10, rtol=1e-8, atol=1e-10, cost_method=method,
                                              cost_rtol=1e-7)
            for method in ("RK23", "RK45", "DOP853", "LSODA")}
    reference = runs["RK45"]
    for method, run in runs.items():
        assert run.order == reference.order, method
        np.testing.assert_allclose(run.times, reference.times, rtol=1e-3, err_msg=method)
        np.testing.assert_allclose(run.losses, reference.losses, rtol=1e-5, err_msg=method)


def test_a_solver_stalled_below_the_resolution_of_t_raises_instead_of_stepping_in_place():
    """On chapter 08's orthogonal ReLU problem from α = 1e-12 the data are fit after two jumps; the leftover
    residual grows one more neuron by t ≈ 1.6e8, and the next one meets the surrogate's kink at t ≈ 5e11, where
    LSODA's steps fall below the spacing of float64 times and it would step in place for ever."""
    problem = problems.get("relu-orthogonal")
    options = {**problem.options, **problem.agf_options}
    theta0 = problem.initial_theta(1e-12)
    real = alternating_gradient_flow(problem.network, problem.data, theta0, max_jumps=2, **options)
    assert real.losses[-1] < 1e-12 * real.losses[0]
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the run stepped in place"))
    signal.alarm(120)
    try:
        with pytest.raises(RuntimeError, match=r"utility maximization stalled at t = 5\.\d+e\+11: its steps"):
            alternating_gradient_flow(problem.network, problem.data, theta0, max_jumps=4, **options)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
