"""Specifications of `agf_lib.diagonal`: the closed forms for diagonal linear networks.

The library runs AGF and Pesme–Flammarion in one loop over ψ_i (``β_i = α² sinh 2ψ_i``) with a
bounded least-squares cost step. The references below are written independently, in other variables
and with other solvers:

* Pesme–Flammarion (the paper's Algorithm 2) in rescaled time, tracking ``s_i = −∫∇_iL`` with jumps at
  ``|s_i| = 1``; the sign-constrained cost step as non-negative least squares on the columns ``ρ_i x_i``
  (:func:`scipy.optimize.nnls`).
* AGF at finite α in the paper's variables: the accumulated utility 𝒮_i and sign ρ_i. With
  ``η_α = −log(√2 α)``, ``𝒮 = log cosh(2ψ)/(2η_α)`` and ``ρ = sgn ψ``, and ψ moving at the constant
  speed ``−g_i = −∇_iL`` between jumps, so that

      𝒮_i(τ + t) = log cosh(ρ_i arccosh(e^{2η_α 𝒮_i(τ)}) − 2 g_i t) / (2η_α);

  a coordinate activates when ``𝒮_i = 1``, a jump time found here by root bracketing (Brent), and the
  cost step is solved by enumerating supports.
"""

import itertools
import math

import mpmath
import numpy as np
import pytest
from conftest import make_regression
from scipy.optimize import OptimizeResult, brentq, nnls

from agf_lib import diagonal
from agf_lib.results import LOG_TIME

# (seed, n, d, correlation) of the random problems; seeds 3 and 4 send coordinates back to dormancy.
RANDOM_PROBLEMS = [(1, 20, 3, 0.0), (2, 30, 5, 0.5), (3, 12, 8, 0.8), (4, 8, 8, 0.3), (5, 50, 6, 0.9),
                   (7, 40, 7, -0.6)]
PROBLEM_IDS = [f"seed{s}-n{n}-d{d}-corr{c}" for s, n, d, c in RANDOM_PROBLEMS]
STOP_TOL = 1e-10  # dormant coordinates with |∇_iL| below this times max|Σ_xy| never activate
# the fixtures of conftest.py and the random problems
PROJECT_PROBLEMS = ["regression_problem", "deactivation_problem", "sign_reversal_problem"] + RANDOM_PROBLEMS
PROJECT_PROBLEM_IDS = PROJECT_PROBLEMS[:3] + PROBLEM_IDS


def project_problem(problem, request):
    return request.getfixturevalue(problem) if isinstance(problem, str) else make_regression(*problem)


def half_mse(X, y, beta):
    return 0.5 * float(np.mean((y - X @ beta) ** 2))


def moments(X, y):
    n = X.shape[0]
    return X.T @ X / n, X.T @ y / n


# ---------------------------------------------------------------------------------------------
# Reference 1: Pesme–Flammarion's Algorithm 2, cost step by NNLS


def reference_pesme_flammarion(X, y):
    """Rescaled-time saddle-to-saddle algorithm; returns (times, losses, order, deactivated, states).

    Shares nothing with the library's loop: the event times come from ``s_i`` in [−1, 1] (not ψ at a
    threshold), the cost step is NNLS on sign-flipped columns (not bounded least squares), and a
    coordinate is dropped where NNLS leaves it at exactly zero (its active-set method does)."""
    Sigma_xx, Sigma_xy = moments(X, y)
    d = X.shape[1]
    s = np.zeros(d)
    on_boundary = np.zeros(d, dtype=bool)  # |s_i| = 1 and β_i free to take the sign of s_i
    beta = np.zeros(d)
    t = 0.0
    times, losses, order, deactivated, states = [0.0], [half_mse(X, y, beta)], [], [], [beta]
    for _ in range(10 * d):
        minus_grad = Sigma_xy - Sigma_xx @ beta
        moving = ~on_boundary & (np.abs(minus_grad) > STOP_TOL * np.abs(Sigma_xy).max())
        if not moving.any():
            break
        # s_i(t + τ) = s_i(t) + τ (−∇_iL) hits ±1 on the side it moves towards
        wait = np.full(d, np.inf)
        wait[moving] = (np.sign(minus_grad[moving]) - s[moving]) / minus_grad[moving]
        i = int(np.argmin(wait))
        s[~on_boundary] += wait[i] * minus_grad[~on_boundary]
        s[i] = np.sign(minus_grad[i])
        on_boundary[i] = True
        t += wait[i]
        # min ‖y − Σ_j s_j b_j x_j‖² over b ≥ 0 is the least squares with sgn β_j = s_j imposed
        cols = np.flatnonzero(on_boundary)
        b, _ = nnls(X[:, cols] * s[cols], y)
        beta = np.zeros(d)
        beta[cols] = s[cols] * b
        dropped = cols[b == 0]
        on_boundary[dropped] = False  # s_i stays at ±1 and leaves the boundary from there
        times.append(t)
        losses.append(half_mse(X, y, beta))
        order.append(i)
        deactivated.append(tuple(int(k) for k in dropped))
        states.append(beta)
    return np.array(times), np.array(losses), order, deactivated, states


# ---------------------------------------------------------------------------------------------
# Reference 2: AGF at finite α in (𝒮, ρ), cost step by enumerating supports


def sign_constrained_fit(X, y, signs, candidates):
    """Least squares over β supported in ``candidates`` with ``sgn β_i = signs[i]``: the best fit among the
    unconstrained least-squares fits on every sub-support whose coefficients all have the imposed signs."""
    beta_best = np.zeros(X.shape[1])
    loss_best = half_mse(X, y, beta_best)
    for size in range(1, len(candidates) + 1):
        for support in itertools.combinations(candidates, size):
            cols = list(support)
            coef = np.linalg.lstsq(X[:, cols], y, rcond=None)[0]
            if np.all(signs[cols] * coef > 0):
                beta = np.zeros(X.shape[1])
                beta[cols] = coef
                loss = half_mse(X, y, beta)
                if loss < loss_best - 1e-13 * max(loss_best, 1e-300):
                    beta_best, loss_best = beta, loss
    return beta_best


def reference_agf(X, y, alpha):
    """AGF for the diagonal network at finite α in the paper's (𝒮, ρ) variables, GF time."""
    Sigma_xx, Sigma_xy = moments(X, y)
    d = X.shape[1]
    eta_alpha = -math.log(math.sqrt(2.0) * alpha)
    arg_at_threshold = math.acosh(math.exp(2.0 * eta_alpha))  # |ρ arccosh(e^{2η𝒮})| at 𝒮 = 1

    def evolve(S, rho, grad, t):
        z = rho * np.arccosh(np.exp(2.0 * eta_alpha * S)) - 2.0 * grad * t
        return np.log(np.cosh(z)) / (2.0 * eta_alpha), np.sign(z)

    def activation_wait(S, rho, grad):
        z0 = rho * math.acosh(math.exp(2.0 * eta_alpha * S))
        # |z| grows from the time z crosses zero (now, if it already moves outwards) onwards
        start = max(0.0, z0 / (2.0 * grad))
        stop = start + arg_at_threshold / abs(grad)
        return brentq(lambda t: evolve(S, rho, grad, t)[0] - 1.0, start, stop, xtol=1e-14 * stop, rtol=1e-15)

    S, rho = np.zeros(d), np.zeros(d)
    active = np.zeros(d, dtype=bool)
    beta = np.zeros(d)
    t = 0.0
    times, losses, order, deactivated = [0.0], [half_mse(X, y, beta)], [], []
    for _ in range(10 * d):
        grad = Sigma_xx @ beta - Sigma_xy
        moving = ~active & (np.abs(grad) > STOP_TOL * np.abs(Sigma_xy).max())
        if not moving.any():
            break
        candidates = np.flatnonzero(moving)
        waits = [activation_wait(S[j], rho[j], grad[j]) for j in candidates]
        i, dt = int(candidates[int(np.argmin(waits))]), float(min(waits))
        dormant = ~active
        S[dormant], rho[dormant] = evolve(S[dormant], rho[dormant], grad[dormant], dt)
        S[i], rho[i] = 1.0, -np.sign(grad[i])
        active[i] = True
        t += dt
        beta = sign_constrained_fit(X, y, rho, list(np.flatnonzero(active)))
        dropped = np.flatnonzero(active & (beta == 0))
        active[dropped] = False  # back to dormancy with 𝒮_i = 1 and its sign ρ_i
        times.append(t)
        losses.append(half_mse(X, y, beta))
        order.append(i)
        deactivated.append(tuple(int(k) for k in dropped))
    return np.array(times), np.array(losses), order, deactivated


def assert_same_staircase(staircase, reference, rtol):
    times, losses, order, deactivated = reference[:4]
    assert staircase.order == order
    assert staircase.deactivated == deactivated
    np.testing.assert_allclose(staircase.times, times, rtol=rtol, atol=0)
    # an exact fit (n = d) ends on a level that is zero up to rounding
    np.testing.assert_allclose(staircase.losses, losses, rtol=rtol, atol=1e-12 * losses[0])


# ---------------------------------------------------------------------------------------------
# The closed forms against the independent references


@pytest.mark.parametrize("problem", PROJECT_PROBLEMS, ids=PROJECT_PROBLEM_IDS)
def test_pesme_flammarion_matches_an_independent_nnls_implementation(problem, request):
    X, y = project_problem(problem, request)
    assert_same_staircase(diagonal.limit_staircase(X, y), reference_pesme_flammarion(X, y), rtol=1e-6)


@pytest.mark.parametrize("alpha", [1e-2, 1e-6, 1e-12])
@pytest.mark.parametrize("problem", RANDOM_PROBLEMS, ids=PROBLEM_IDS)
def test_diagonal_agf_matches_accumulated_utility_formulation(problem, alpha):
    X, y = make_regression(*problem)
    assert_same_staircase(diagonal.agf_staircase(X, y, alpha=alpha), reference_agf(X, y, alpha), rtol=1e-6)


def test_the_random_problems_include_returns_to_dormancy():
    dropped = [any(diagonal.limit_staircase(*make_regression(*p)).deactivated) for p in RANDOM_PROBLEMS]
    assert sum(dropped) >= 2


def test_pesme_flammarion_sends_the_redundant_coordinate_back_to_dormancy(deactivation_problem):
    X, y = deactivation_problem
    staircase = diagonal.limit_staircase(X, y)
    assert staircase.order == [2, 0, 1, 2]
    assert staircase.deactivated == [(), (), (2,), ()]
    assert staircase.active == [(), (2,), (0, 2), (0, 1), (0, 1, 2)]
    assert_same_staircase(staircase, reference_pesme_flammarion(X, y), rtol=1e-6)
    # the returning coordinate comes back with the opposite sign
    assert staircase.predictors[1][2] > 0 and staircase.predictors[-1][2] < 0


@pytest.mark.parametrize("alpha", [1e-2, 1e-4, 1e-8])
def test_diagonal_agf_returns_coordinates_to_dormancy_like_the_reference(deactivation_problem, alpha):
    X, y = deactivation_problem
    assert_same_staircase(diagonal.agf_staircase(X, y, alpha=alpha), reference_agf(X, y, alpha), rtol=1e-6)


def test_pesme_flammarion_on_the_sign_reversal_problem_has_the_hand_computed_staircase(sign_reversal_problem):
    X, y = sign_reversal_problem
    staircase = diagonal.limit_staircase(X, y)
    assert staircase.order == [0, 1]
    np.testing.assert_allclose(staircase.times, [0.0, 1.0, 3.6], rtol=1e-12)
    # ℓ0 = ½E[y²], ℓ1 = ℓ0 − ½Σ_xy,1² (β_1 = 1), ℓ2 = 0 (exact fit)
    ell0 = 0.5 * float(np.mean(y**2))
    np.testing.assert_allclose(staircase.losses, [ell0, ell0 - 0.5, 0.0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(staircase.predictors[-1], np.linalg.solve([[1, 0.8], [0.8, 1]], [1, 0.3]), rtol=1e-12)


def test_pesme_flammarion_final_level_is_ordinary_least_squares_when_signs_allow(regression_problem):
    X, y = regression_problem
    staircase = diagonal.limit_staircase(X, y)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(staircase.predictors[-1], ols, rtol=1e-10)
    np.testing.assert_allclose(staircase.losses[-1], half_mse(X, y, ols), rtol=1e-12)
    assert np.all(np.diff(staircase.losses) < 0)


# ---------------------------------------------------------------------------------------------
# AGF at finite α and its α → 0 limit


@pytest.mark.parametrize("problem", PROJECT_PROBLEMS, ids=PROJECT_PROBLEM_IDS)
def test_diagonal_agf_is_pesme_flammarion_at_psi_star_times_its_times(problem, request):
    """Corollary C.5 against Algorithm 2, computed independently (the NNLS reference above): at every
    α < 1/√2 the closed-form AGF visits PF's coordinates in PF's order, on PF's levels and states, with
    the same returns to dormancy, at times ψ*(α)·τ_PF, since ψ_i = ψ*(α)·s_i between jumps. Measured:
    times within 1.6e-13, levels within 6e-17·ℓ0, states within 1.5e-15·max|β|, on every problem and α."""
    X, y = project_problem(problem, request)
    times, losses, order, deactivated, states = reference_pesme_flammarion(X, y)
    for alpha in [0.3, 1e-3, 1e-12, 1e-100]:
        staircase = diagonal.agf_staircase(X, y, alpha=alpha)
        assert staircase.order == order
        assert staircase.deactivated == deactivated
        np.testing.assert_allclose(staircase.times, diagonal.activation_threshold(alpha) * times, rtol=1e-11, atol=0)
        np.testing.assert_allclose(staircase.losses, losses, rtol=0, atol=1e-14 * losses[0])
        np.testing.assert_allclose(np.array(staircase.predictors), np.array(states), rtol=0,
                                   atol=1e-13 * np.abs(states[-1]).max())


def test_agf_times_are_psi_star_times_pf_times_by_construction_of_the_implementation(regression_problem):
    """An identity of the code, not a check of Theorem 3.1: :func:`diagonal.agf_staircase` and
    :func:`diagonal.limit_staircase` (Pesme–Flammarion) run the same loop with the threshold ψ*(α) or 1, and every wait
    scales with the threshold. The check is the test above, against an independent Algorithm 2."""
    X, y = regression_problem
    pf = diagonal.limit_staircase(X, y)
    for alpha in [0.3, 1e-3, 1e-12, 1e-100]:
        staircase = diagonal.agf_staircase(X, y, alpha=alpha)
        np.testing.assert_allclose(staircase.times, diagonal.activation_threshold(alpha) * pf.times, rtol=1e-14)


@pytest.mark.parametrize("problem", ["regression_problem", "deactivation_problem"])
def test_diagonal_agf_matches_pesme_flammarion_as_alpha_vanishes(problem, request):
    """In rescaled time t / log(1/α) the AGF jump times differ from those of the independent Algorithm 2 by
    the factor ψ*(α)/log(1/α) = 1 − α⁴/(2 log(1/α)) + O(α⁸): the error falls monotonically, follows that
    formula to 2%, and is at the two implementations' rounding level from α = 1e-4 on (measured 1.5e-13)."""
    X, y = request.getfixturevalue(problem)
    pf_times, pf_losses, pf_order = reference_pesme_flammarion(X, y)[:3]

    def rescaled_error(alpha):
        staircase = diagonal.agf_staircase(X, y, alpha=alpha)
        assert staircase.order == pf_order
        np.testing.assert_allclose(staircase.losses, pf_losses, rtol=0, atol=1e-14 * pf_losses[0])
        rescaled = staircase.in_units(LOG_TIME, alpha)
        return float(np.max(np.abs(rescaled.times[1:] - pf_times[1:]) / pf_times[1:]))

    errors = [rescaled_error(alpha) for alpha in [0.3, 0.1, 0.03, 0.01]]
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), errors
    for alpha, error in zip([0.3, 0.1, 0.03, 0.01], errors):
        np.testing.assert_allclose(error, alpha**4 / (2 * math.log(1 / alpha)), rtol=2e-2)
    for alpha in [1e-4, 1e-8, 1e-16, 1e-64]:
        assert rescaled_error(alpha) < 1e-12


def test_activation_threshold_is_half_arccosh_of_one_over_two_alpha_squared():
    for alpha in [0.5, 0.1, 1e-3, 1e-8]:
        np.testing.assert_allclose(diagonal.activation_threshold(alpha), 0.5 * math.acosh(1 / (2 * alpha**2)),
                                   rtol=1e-14)
    with mpmath.workdps(60):
        for alpha in ["1e-100", "1e-150", "0.7"]:
            exact = 0.5 * mpmath.acosh(1 / (2 * mpmath.mpf(alpha) ** 2))
            np.testing.assert_allclose(diagonal.activation_threshold(float(alpha)), float(exact), rtol=1e-14)


def test_activation_threshold_approaches_log_one_over_alpha_to_order_alpha_to_the_fourth():
    # ½ arccosh(1/(2α²)) = log(1/α) − α⁴/2 + O(α⁸)
    psi_star = diagonal.activation_threshold(1e-100)
    assert math.isfinite(psi_star)
    np.testing.assert_allclose(psi_star, 100 * math.log(10), rtol=1e-15)
    alpha = 0.05
    np.testing.assert_allclose(math.log(1 / alpha) - diagonal.activation_threshold(alpha), alpha**4 / 2, rtol=1e-4)


def test_activation_threshold_is_where_the_neuron_norm_reaches_one():
    for alpha in [0.3, 1e-2, 1e-6]:
        psi_star = diagonal.activation_threshold(alpha)
        np.testing.assert_allclose(2 * alpha**2 * math.cosh(2 * psi_star), 1.0, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# ψ coordinates


def test_beta_of_psi_is_alpha_squared_sinh_two_psi_without_overflow():
    psi = np.array([-3.0, -0.1, 0.0, 1e-9, 0.5, 7.0])
    np.testing.assert_allclose(diagonal.beta_of_psi(psi, 0.2), 0.04 * np.sinh(2 * psi), rtol=1e-13, atol=0)
    # α = 1e-100 at the threshold: β = α² sinh(2ψ*) = √(1 − 4α⁴)/2 ≈ ½, though α² underflows to 1e-200
    psi_star = diagonal.activation_threshold(1e-100)
    np.testing.assert_allclose(diagonal.beta_of_psi(np.array([psi_star, -psi_star]), 1e-100), [0.5, -0.5], rtol=1e-13)


def test_log_cosh_matches_numpy_and_is_finite_for_huge_arguments():
    x = np.array([-20.0, -1.0, 0.0, 0.3, 15.0])
    np.testing.assert_allclose(diagonal.log_cosh(x), np.log(np.cosh(x)), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(diagonal.log_cosh(np.array([1e4, -1e6])), [1e4 - math.log(2), 1e6 - math.log(2)],
                               rtol=1e-15)


def test_exact_gradient_flow_keeps_the_hyperbola_and_norm_formula(regression_problem):
    X, y = regression_problem
    alpha = 0.1
    trajectory = diagonal.exact_flow(X, y, 50.0, alpha=alpha, num_samples=50, record_params=True)
    u, v = trajectory.params[..., 0], trajectory.params[..., 1]
    np.testing.assert_allclose(u**2 - v**2, 2 * alpha**2, rtol=1e-12)
    np.testing.assert_allclose(trajectory.log_norms, 0.5 * np.log(u**2 + v**2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(trajectory.losses, [half_mse(X, y, b) for b in u * v], rtol=1e-12)


def test_exact_flow_jacobian_is_the_derivative_of_its_right_hand_side():
    rng = np.random.default_rng(11)
    A = rng.normal(size=(5, 5))
    Sigma_xx, Sigma_xy = A @ A.T, rng.normal(size=5)
    # at α = 1e-40, ψ near the activation threshold ψ* ≈ log(1/α) ≈ 92, where |β| is of order one
    for log_alpha, size in ((math.log(0.3), rng.uniform(0, 1, 5)), (math.log(1e-40), rng.uniform(88, 92, 5))):
        rhs, jacobian = diagonal._psi_field(Sigma_xx, Sigma_xy, log_alpha)
        psi = rng.choice([-1.0, 1.0], 5) * size
        step = 1e-6
        columns = [(rhs(0.0, psi + step * e) - rhs(0.0, psi - step * e)) / (2 * step) for e in np.eye(5)]
        exact = jacobian(0.0, psi)
        # central differences err by about step² × the third derivative, plus rounding of order 1e-16 / step
        np.testing.assert_allclose(exact, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8 * np.abs(exact).max())


@pytest.mark.parametrize("method", ["LSODA", "BDF", "Radau"])
def test_exact_flow_with_implicit_methods_matches_the_explicit_one_past_interpolation(method):
    """More coordinates than samples: the loss falls to zero and the flow turns stiff, the case the
    Jacobian is for. The implicit runs agree with DOP853 at tight tolerances, plateaus and tail alike."""
    X, y = make_regression(n=6, d=10, seed=4)
    alpha, t_end = 1e-6, 60 * math.log(1e6)
    grid = np.linspace(0, t_end, 300)
    reference = diagonal.exact_flow(X, y, t_end, alpha=alpha, rtol=1e-12, atol=1e-14, times=grid)
    implicit = diagonal.exact_flow(X, y, t_end, alpha=alpha, method=method, rtol=1e-10, atol=1e-14, times=grid)
    assert reference.losses[-1] < 1e-4 * reference.losses[0]
    np.testing.assert_allclose(implicit.losses, reference.losses, rtol=1e-6, atol=1e-12 * reference.losses[0])


def test_exact_gradient_flow_rescaled_jump_times_approach_pesme_flammarion(regression_problem):
    """Gradient flow itself, unlike AGF, lags behind PF in rescaled time by O(1/log(1/α)): the largest
    relative jump-time error times log(1/α) stays at ≈ 0.72 on this problem while log(1/α) grows 16-fold."""
    X, y = regression_problem
    pf = diagonal.limit_staircase(X, y)
    alphas = [1e-4, 1e-8, 1e-16, 1e-64]
    time_errors, level_errors = [], []
    for alpha in alphas:
        scale = math.log(1 / alpha)
        trajectory = diagonal.exact_flow(X, y, 1.2 * pf.times[-1] * scale, alpha=alpha, rtol=1e-11, atol=1e-12)
        comparison = pf.compare(trajectory.in_units(pf.time_unit, alpha))
        time_errors.append(float(comparison.time_errors.max()))
        level_errors.append(float(comparison.level_errors.max()))
    assert all(later < earlier for earlier, later in zip(time_errors, time_errors[1:])), time_errors
    assert all(later < earlier for earlier, later in zip(level_errors[:3], level_errors[1:3])), level_errors
    assert time_errors[-1] < 1e-2 and level_errors[-1] < 1e-10
    scaled = np.array(time_errors) * np.log(1 / np.array(alphas))
    np.testing.assert_allclose(scaled, scaled[-1], rtol=2e-2)


def test_diagonal_chart_is_an_isometry_that_computes_the_same_network():
    """The engines integrate (p, q) = (u + v, u − v)/√2; outputs, utilities and gradients must be those of
    (u, v), with the gradient rotated the same way (the chart is its own inverse)."""
    rng = np.random.default_rng(3)
    network = diagonal.DiagonalLinearNetwork(4)
    theta, X, residual = rng.normal(size=(4, 2)), rng.normal(size=(7, 4)), rng.normal(size=(7, 1))
    phi = network.to_chart(theta)
    np.testing.assert_allclose(network.from_chart(phi), theta, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(phi, axis=1), np.linalg.norm(theta, axis=1), rtol=1e-15)
    np.testing.assert_allclose(network.chart_outputs(phi, X), network.neuron_outputs(theta, X), rtol=1e-14)
    weights = rng.uniform(size=4)
    np.testing.assert_allclose(network.weighted_output(phi, X, weights),
                               np.einsum("h,hnc->nc", weights, network.neuron_outputs(theta, X)), rtol=1e-13)
    U_chart, grad_chart = network.chart_utility_gradient(phi, X, residual)
    U, grad = network.utility_gradient(theta, X, residual)
    np.testing.assert_allclose(U_chart, U, rtol=1e-14)
    np.testing.assert_allclose(grad_chart, network.to_chart(grad), rtol=1e-14, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# The cost step and ψ coordinates fail loudly


def orthogonal_design():
    """Columns orthogonal (a 4 × 3 Hadamard slice, scaled): the sign-constrained fit is coordinatewise,
    ``β_i = x_iᵀy/‖x_i‖²`` where that has the imposed sign and 0 otherwise."""
    H = np.array([[1, 1, 1], [1, -1, 1], [1, 1, -1], [1, -1, -1]], dtype=float) * np.array([1.0, 0.5, 2.0])
    y = np.array([1.0, -2.0, 0.5, 3.0])
    return H, y, H.T @ y / np.sum(H**2, axis=0)


@pytest.mark.parametrize("signs", [[1, 1, 1], [-1, -1, -1], [1, -1, 0], [0, 0, 0], [-1, 1, 1]])
def test_sign_constrained_least_squares_on_an_orthogonal_design_is_the_clipped_ols(signs):
    X, y, ols = orthogonal_design()
    signs = np.array(signs)
    expected = np.where(signs * ols > 0, ols, 0.0)
    np.testing.assert_allclose(diagonal.sign_constrained_least_squares(X, y, signs=signs), expected, rtol=1e-13, atol=0)


def test_sign_constrained_least_squares_raises_when_the_solver_reports_no_convergence(monkeypatch):
    X, y, _ = orthogonal_design()
    monkeypatch.setattr(diagonal, "lsq_linear", lambda *args, **kwargs: OptimizeResult(
        x=np.zeros(3), status=0, message="The maximum number of iterations is exceeded."))
    with pytest.raises(RuntimeError, match=r"did not converge \(scipy lsq_linear, BVLS, status 0\)"):
        diagonal.sign_constrained_least_squares(X, y, signs=[1, 1, 1])


def test_sign_constrained_least_squares_refuses_a_coefficient_of_the_wrong_sign(monkeypatch):
    """A solver answer outside the imposed signs is an error beyond ZERO_TOL of the fit, and an exact zero
    (the coordinate returns to dormancy) within it: nothing is clipped silently."""
    X, y, _ = orthogonal_design()
    tiny = 0.1 * diagonal.ZERO_TOL * np.linalg.norm(y) / np.linalg.norm(X[:, 1])
    answers = iter([np.array([0.2, -1e-3, 0.1]), np.array([0.2, -tiny, 0.1])])
    monkeypatch.setattr(diagonal, "lsq_linear", lambda *args, **kwargs: OptimizeResult(
        x=next(answers), status=1, message="ok"))
    with pytest.raises(RuntimeError, match="outside the imposed signs"):
        diagonal.sign_constrained_least_squares(X, y, signs=[1, 1, 1])
    beta = diagonal.sign_constrained_least_squares(X, y, signs=[1, 1, 1])
    assert beta[1] == 0.0 and beta[0] == 0.2 and beta[2] == 0.1


def test_beta_of_psi_is_exact_up_to_the_float64_limit_and_raises_beyond_it():
    """``α² sinh 2ψ`` at α = 1e-100 is representable until 2 log α + 2ψ − log 2 reaches log(max float64)
    ≈ 709.78; there it matches 50-digit arithmetic, and beyond it raises instead of capping."""
    alpha, psi = 1e-100, 585.0
    with mpmath.workdps(50):
        exact = float(mpmath.mpf("1e-100") ** 2 * mpmath.sinh(2 * mpmath.mpf(psi)))
    np.testing.assert_allclose(diagonal.beta_of_psi([psi, -psi], alpha), [exact, -exact], rtol=1e-13)
    with pytest.raises(OverflowError, match=r"beta = alpha² sinh\(2 psi\) exceeds the largest float64"):
        diagonal.beta_of_psi([0.0, 586.0], alpha)
