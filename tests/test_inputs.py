"""Specifications of the library's input checks: every bad argument raises a ValueError or TypeError whose
message names the argument."""

import inspect
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from conftest import not_a_count
import torch

from agf_lib import (GF_TIME, CostStepError, FeedForwardNetwork, Staircase, StaircaseComparison, Trajectory,
                     alternating_gradient_flow, attention, dft, diagonal, gradient_descent, gradient_flow, groups,
                     linear, loss, modular, plotting, problems, utility)

SOLVER_LIST = "DOP853, RK45, RK23, Radau, BDF, LSODA"


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    return X, X @ np.array([1.0, -0.5, 0.2])


@pytest.fixture
def network():
    return diagonal.DiagonalLinearNetwork(3)


@pytest.fixture
def theta0():
    return diagonal.initial_theta(3, alpha=1e-3)


ALPHA_CONSUMERS = {
    "diagonal.initial_theta": lambda alpha, X, y: diagonal.initial_theta(3, alpha=alpha),
    "DiagonalLinearNetwork.initial_theta":
        lambda alpha, X, y: diagonal.DiagonalLinearNetwork(3).initial_theta(alpha=alpha),
    "linear.initial_theta": lambda alpha, X, y: linear.initial_theta(3, 2, 1, alpha=alpha),
    "diagonal.activation_threshold": lambda alpha, X, y: diagonal.activation_threshold(alpha),
    "diagonal.beta_of_psi": lambda alpha, X, y: diagonal.beta_of_psi(0.5, alpha),
    "diagonal.agf_staircase": lambda alpha, X, y: diagonal.agf_staircase(X, y, alpha=alpha),
    "diagonal.exact_flow": lambda alpha, X, y: diagonal.exact_flow(X, y, 1.0, alpha=alpha),
    "FeedForwardNetwork.initial_theta": lambda alpha, X, y: FeedForwardNetwork(3, 2).initial_theta(alpha=alpha),
}


@pytest.mark.parametrize("consumer", ALPHA_CONSUMERS, ids=list(ALPHA_CONSUMERS))
@pytest.mark.parametrize("alpha", [-1e-3, 0.0, 0, math.nan, math.inf, -math.inf])
def test_non_positive_or_non_finite_alpha_is_a_value_error_naming_alpha(consumer, alpha, data):
    with pytest.raises(ValueError, match="alpha must be a finite positive number"):
        ALPHA_CONSUMERS[consumer](alpha, *data)


@pytest.mark.parametrize("consumer", ALPHA_CONSUMERS, ids=list(ALPHA_CONSUMERS))
@pytest.mark.parametrize("alpha", ["0.1", None, [0.1], True, 1j])
def test_alpha_that_is_not_a_real_number_is_a_type_error_naming_alpha(consumer, alpha, data):
    with pytest.raises(TypeError, match="alpha must be a real number"):
        ALPHA_CONSUMERS[consumer](alpha, *data)


def test_numpy_scalars_are_accepted_as_alpha(data):
    np.testing.assert_array_equal(diagonal.initial_theta(2, alpha=np.float64(0.1)),
                                  diagonal.initial_theta(2, alpha=0.1))
    assert diagonal.activation_threshold(np.float32(0.25)) == diagonal.activation_threshold(0.25)


@pytest.mark.parametrize("alpha", [1.0, 0.75, float(np.nextafter(1 / math.sqrt(2), 1.0))])
def test_diagonal_agf_refuses_alpha_at_or_above_one_over_root_two(alpha, data):
    with pytest.raises(ValueError, match="alpha must be below 1/√2"):
        diagonal.agf_staircase(*data, alpha=alpha)
    with pytest.raises(ValueError, match="alpha must be below 1/√2"):
        diagonal.activation_threshold(alpha)


# ---------------------------------------------------------------------------------------------
# Data


def every_data_consumer(network, theta0):
    return {
        "gradient_flow": lambda data: gradient_flow(network, data, theta0, 1.0),
        "alternating_gradient_flow": lambda data: alternating_gradient_flow(network, data, theta0),
        "gradient_descent": lambda data: gradient_descent(network, data, theta0, 1.0),
        "diagonal.agf_staircase": lambda data: diagonal.agf_staircase(*data, alpha=1e-3),
        "diagonal.limit_staircase": lambda data: diagonal.limit_staircase(*data),
        "diagonal.exact_flow": lambda data: diagonal.exact_flow(*data, 1.0, alpha=1e-3),
    }


CONSUMER_NAMES = list(every_data_consumer(None, None))


@pytest.mark.parametrize("consumer", CONSUMER_NAMES)
def test_x_and_y_with_different_numbers_of_rows_are_rejected_naming_y(consumer, network, theta0, data):
    X, y = data
    with pytest.raises(ValueError, match=r"y must have shape \(n,\) or \(n, c\) with n = 12"):
        every_data_consumer(network, theta0)[consumer]((X, y[:-1]))


@pytest.mark.parametrize("consumer", CONSUMER_NAMES)
@pytest.mark.parametrize("bad_value", [math.nan, math.inf])
@pytest.mark.parametrize("where", ["X", "y"])
def test_nan_or_inf_in_the_data_is_rejected_naming_the_array(consumer, where, bad_value, network, theta0, data):
    X, y = (array.copy() for array in data)
    (X if where == "X" else y)[3] = bad_value
    with pytest.raises(ValueError, match=f"{where} contains NaN or infinite values"):
        every_data_consumer(network, theta0)[consumer]((X, y))


@pytest.mark.parametrize("consumer", ["gradient_flow", "alternating_gradient_flow", "gradient_descent"])
@pytest.mark.parametrize("bad_data", [None, "data", (1.0,), ("X", "y", "z")], ids=["None", "str", "single", "triple"])
def test_data_that_is_not_a_pair_is_a_type_error(consumer, bad_data, network, theta0):
    with pytest.raises(TypeError, match=r"data must be a pair \(X, y\)"):
        every_data_consumer(network, theta0)[consumer](bad_data)


def test_data_shapes_and_types_are_checked_against_the_network(network, theta0, data):
    X, y = data
    with pytest.raises(ValueError, match="X must have 3 columns for this network, got 2"):
        gradient_flow(network, (X[:, :2], y), theta0, 1.0)
    with pytest.raises(ValueError, match="y must have 1 output coordinates for this network, got 2"):
        gradient_flow(network, (X, np.stack([y, y], axis=1)), theta0, 1.0)
    with pytest.raises(ValueError, match=r"X must have shape \(n, d\)"):
        diagonal.agf_staircase(X[:, 0], y, alpha=1e-3)
    with pytest.raises(TypeError, match="X must be a numpy array or torch tensor, got str"):
        gradient_flow(network, ("X", y), theta0, 1.0)
    with pytest.raises(TypeError, match="y must be a numpy array or torch tensor, got dict"):
        gradient_flow(network, (X, {}), theta0, 1.0)
    with pytest.raises(ValueError, match="y must have a single output coordinate for a diagonal network"):
        diagonal.limit_staircase(X, np.stack([y, y], axis=1))
    # torch tensors and lists are data too
    gradient_flow(network, (torch.as_tensor(X), y.tolist()), theta0, 1.0, num_samples=2)


# ---------------------------------------------------------------------------------------------
# Parameters


@pytest.mark.parametrize("engine", ["gradient_flow", "alternating_gradient_flow", "gradient_descent"])
def test_theta0_of_the_wrong_shape_or_type_is_rejected_naming_theta0(engine, network, theta0, data):
    run = {
        "gradient_flow": lambda theta: gradient_flow(network, data, theta, 1.0),
        "alternating_gradient_flow": lambda theta: alternating_gradient_flow(network, data, theta),
        "gradient_descent": lambda theta: gradient_descent(network, data, theta, 1.0),
    }[engine]
    with pytest.raises(ValueError, match=r"theta0 must have shape \(3, 2\) \(one row per neuron\), got \(2, 2\)"):
        run(theta0[:2])
    with pytest.raises(ValueError, match=r"theta0 must have shape \(3, 2\)"):
        run(theta0.T)
    nan_theta = theta0.copy()
    nan_theta[1, 1] = math.nan
    with pytest.raises(ValueError, match="theta0 contains NaN or infinite values"):
        run(nan_theta)
    with pytest.raises(TypeError, match="theta0 must be a numpy array or torch tensor, got list"):
        run(theta0.tolist())


@pytest.mark.parametrize("engine", ["gradient_flow", "alternating_gradient_flow"])
def test_a_zero_neuron_in_theta0_is_rejected_because_its_direction_is_undefined(engine, network, theta0, data):
    theta0 = theta0.copy()
    theta0[1] = 0.0
    with pytest.raises(ValueError, match="every neuron of theta0 must be nonzero"):
        if engine == "gradient_flow":
            gradient_flow(network, data, theta0, 1.0)
        else:
            alternating_gradient_flow(network, data, theta0)


@pytest.mark.parametrize("norm", [1.0, 1.5])
def test_alternating_gradient_flow_refuses_a_neuron_that_starts_active(norm, network, theta0, data):
    theta0 = theta0.copy()
    theta0[2] = [norm, 0.0]
    with pytest.raises(ValueError, match="theta0 must have every neuron inside the unit sphere"):
        alternating_gradient_flow(network, data, theta0)


# ---------------------------------------------------------------------------------------------
# Options


def test_unknown_solver_is_rejected_listing_the_valid_methods(network, theta0, data):
    expected = f"method must be one of {SOLVER_LIST}"
    with pytest.raises(ValueError, match=expected) as error:
        gradient_flow(network, data, theta0, 1.0, method="Euler")
    assert "'Euler'" in str(error.value)
    with pytest.raises(ValueError, match=expected):
        alternating_gradient_flow(network, data, theta0, method="Euler")
    with pytest.raises(ValueError, match=f"cost_{expected}"):
        alternating_gradient_flow(network, data, theta0, cost_method="rk4")
    with pytest.raises(ValueError, match=expected):
        diagonal.exact_flow(*data, 1.0, alpha=1e-3, method="euler")


@pytest.mark.parametrize("t_end", [0.0, -1.0, math.nan])
def test_non_positive_t_end_is_rejected_naming_t_end(t_end, network, theta0, data):
    with pytest.raises(ValueError, match="^t_end must be a (finite )?positive number"):
        gradient_flow(network, data, theta0, t_end)
    with pytest.raises(ValueError, match="^t_end must be a (finite )?positive number"):
        diagonal.exact_flow(*data, t_end, alpha=1e-3)
    with pytest.raises(ValueError, match="^t_end must be a (finite )?positive number"):
        gradient_descent(network, data, theta0, t_end)
    with pytest.raises(ValueError, match="^t_end must be a (finite )?positive number"):
        alternating_gradient_flow(network, data, theta0, t_end=t_end)


def test_t_end_and_eta_that_are_not_numbers_are_type_errors(network, theta0, data):
    with pytest.raises(TypeError, match="t_end must be a real number"):
        gradient_flow(network, data, theta0, "10")
    for run in (lambda t_end: gradient_flow(network, data, theta0, t_end),
                lambda t_end: gradient_descent(network, data, theta0, t_end),
                lambda t_end: diagonal.exact_flow(*data, t_end, alpha=1e-3),
                lambda t_end: alternating_gradient_flow(network, data, theta0, t_end=t_end)):
        with pytest.raises(TypeError, match="^t_end must be a real number, got str"):
            run("abc")
    with pytest.raises(TypeError, match="eta must be a real number"):
        gradient_flow(network, data, theta0, 1.0, eta=None)


def test_other_options_are_checked_naming_the_option(network, theta0, data):
    with pytest.raises(ValueError, match="^eta must be a finite positive number"):
        gradient_flow(network, data, theta0, 1.0, eta=0.0)
    with pytest.raises(ValueError, match="^eta must be a finite positive number"):
        alternating_gradient_flow(network, data, theta0, eta=-1.0)
    with pytest.raises(ValueError, match="num_samples must be an integer >= 2"):
        gradient_flow(network, data, theta0, 1.0, num_samples=1)
    for run in (lambda n: gradient_flow(network, data, theta0, 1.0, num_samples=n),
                lambda n: gradient_descent(network, data, theta0, 1.0, num_samples=n),
                lambda n: diagonal.exact_flow(*data, 1.0, alpha=1e-3, num_samples=n)):
        with pytest.raises(ValueError, match="^num_samples must be an integer >= 2, got 0"):
            run(0)
    with pytest.raises(ValueError, match="times must be a non-decreasing 1-D array within"):
        gradient_flow(network, data, theta0, 1.0, times=[0.0, 2.0])
    with pytest.raises(ValueError, match="times must be a non-decreasing 1-D array within"):
        gradient_flow(network, data, theta0, 1.0, times=[0.5, 0.2])
    with pytest.raises(ValueError, match="max_jumps must be None or a non-negative integer"):
        alternating_gradient_flow(network, data, theta0, max_jumps=-1)
    with pytest.raises(TypeError, match="^max_jumps must be None or a non-negative integer, got float"):
        diagonal.agf_staircase(*data, alpha=1e-3, max_jumps=1.5)
    with pytest.raises(TypeError, match="^max_jumps must be None or a non-negative integer, got bool"):
        diagonal.limit_staircase(*data, max_jumps=True)
    with pytest.raises(TypeError, match="^num_samples must be an integer, got float"):
        gradient_flow(network, data, theta0, 1.0, num_samples=10.0)
    with pytest.raises(ValueError, match="dormancy_threshold must be below one"):
        alternating_gradient_flow(network, data, theta0, dormancy_threshold=2.0)
    with pytest.raises(ValueError, match="^dormancy_threshold must be a finite positive number"):
        alternating_gradient_flow(network, data, theta0, dormancy_threshold=0.0)


def test_network_must_be_a_two_layer_network(theta0, data):
    with pytest.raises(TypeError, match="network must be an agf_lib TwoLayerNetwork, got function"):
        gradient_flow(lambda theta, X: X, data, theta0, 1.0)
    with pytest.raises(TypeError, match="network must be an agf_lib TwoLayerNetwork"):
        alternating_gradient_flow("diagonal", data, theta0)


# ---------------------------------------------------------------------------------------------
# Networks


def test_unknown_activation_is_rejected_listing_the_valid_ones():
    with pytest.raises(ValueError, match=r"activation must be one of \['linear', 'relu', 'square'\], got 'tanh'"):
        FeedForwardNetwork(d=3, H=2, activation="tanh")


@pytest.mark.parametrize("name, value", [("d", 0), ("H", -1), ("c", 1.5), ("d", True), ("H", "2")])
def test_network_sizes_must_be_positive_integers(name, value):
    sizes = {"d": 3, "H": 2, "c": 1, name: value}
    error, message = not_a_count(name, value)
    with pytest.raises(error, match=message):
        FeedForwardNetwork(**sizes)


@pytest.mark.parametrize("d", [0, -2, 2.0, None])
def test_diagonal_network_size_must_be_a_positive_integer(d):
    error, message = not_a_count("d", d)
    with pytest.raises(error, match=message):
        diagonal.DiagonalLinearNetwork(d)
    with pytest.raises(error, match=message):
        diagonal.initial_theta(d, alpha=0.1)


# The positional parameters (the data) of every public function of the two settings; the rest are keyword-only.
POSITIONAL = {
    diagonal.initial_theta: ("d",),
    diagonal.agf_staircase: ("X", "y"),
    diagonal.limit_staircase: ("X", "y"),
    diagonal.exact_flow: ("X", "y", "t_end"),
    diagonal.sign_constrained_least_squares: ("X", "y"),
    diagonal.DiagonalLinearNetwork.initial_theta: ("self",),
    linear.initial_theta: ("d", "H", "c"),
    linear.population_data: ("Sigma_xx", "Sigma_yx"),
    linear.population_loss: ("beta", "Sigma_xx", "Sigma_yx"),
    linear.reduced_rank_regression: ("Sigma_xx", "Sigma_yx"),
    linear.projected_singular_values: ("Sigma_xx", "Sigma_yx"),
    linear.limit_staircase: ("Sigma_xx", "Sigma_yx"),
    linear.matrix_flow: ("Sigma_xx", "Sigma_yx", "theta0", "t_end"),
}


@pytest.mark.parametrize("function", POSITIONAL, ids=[f.__qualname__ for f in POSITIONAL])
def test_setting_functions_take_their_options_keyword_only(function):
    parameters = inspect.signature(function).parameters.values()
    positional = tuple(p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD)
    assert positional == POSITIONAL[function]
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters)


def test_diagonal_initialization_is_deterministic_and_takes_alpha_by_keyword():
    np.testing.assert_array_equal(diagonal.DiagonalLinearNetwork(2).initial_theta(alpha=0.1, seed=7),
                                  [[math.sqrt(2) * 0.1, 0.0]] * 2)
    with pytest.raises(TypeError, match="positional argument"):
        diagonal.initial_theta(2, 0.1)


def test_loss_and_utility_check_their_arguments(network, theta0, data):
    X, y = data
    with pytest.raises(ValueError, match=r"theta must have shape \(3, 2\)"):
        loss(network, theta0[:1], X, y)
    with pytest.raises(ValueError, match="^residual contains NaN"):         # the argument's own name, not y
        utility(network, theta0, X, np.full_like(y, math.nan))


# ---------------------------------------------------------------------------------------------
# Closed forms of the diagonal network


@pytest.mark.parametrize("signs, error, match", [
    ([2, -5, 0], ValueError, r"^signs must hold only -1, 0 and \+1, got \[2.0, -5.0, 0.0\]"),
    ([0.5, 1, 1], ValueError, r"^signs must hold only -1, 0 and \+1, got \[0.5, 1.0, 1.0\]"),
    ([1, 1], ValueError, r"^signs must have shape \(d,\) = \(3,\), one entry per column of X, got \(2,\)"),
    (np.ones((3, 1)), ValueError, r"^signs must have shape \(d,\) = \(3,\)"),
    ("+-+", TypeError, "^signs must be an array of -1, 0 and \\+1, got str"),
    ([None, 1, 1], TypeError, "^signs must hold real numbers, got dtype object"),
])
def test_sign_constrained_least_squares_checks_the_signs(signs, error, match, data):
    with pytest.raises(error, match=match):
        diagonal.sign_constrained_least_squares(*data, signs=signs)


def test_sign_constrained_least_squares_checks_x_and_y(data):
    X, y = data
    with pytest.raises(ValueError, match=r"^X must have shape \(n, d\)"):
        diagonal.sign_constrained_least_squares(X[:, 0], y, signs=[1])
    with pytest.raises(ValueError, match=r"^y must have shape \(n,\) or \(n, c\) with n = 12"):
        diagonal.sign_constrained_least_squares(X, y[:-1], signs=[1, 1, 1])
    with pytest.raises(ValueError, match="^y must have a single output coordinate for a diagonal network, got 2"):
        diagonal.sign_constrained_least_squares(X, np.stack([y, y], axis=1), signs=[1, 1, 1])
    with pytest.raises(ValueError, match="^X contains NaN or infinite values"):
        diagonal.sign_constrained_least_squares(np.full_like(X, math.nan), y, signs=[1, 1, 1])


def test_log_cosh_and_beta_of_psi_refuse_what_is_not_real_numbers():
    with pytest.raises(TypeError, match="^x must be a real number or an array of real numbers, got str"):
        diagonal.log_cosh("abc")
    with pytest.raises(TypeError, match="^psi must hold real numbers, got dtype complex128"):
        diagonal.beta_of_psi(np.array([1j]), 0.1)


# ---------------------------------------------------------------------------------------------
# Modular addition


def test_harmonic_neurons_accepts_exactly_the_n_its_message_names():
    """The phases cancel every spurious mode when N divides none of 2, 3, 5, 7, 8, 10, 13, i.e. for
    N = 6, 9, 11, 12 and every N >= 14; the error message states that rule and N = 13 is refused."""
    x = dft.template(29, np.arange(14, 0, -1.0))
    accepted = []
    for N in range(1, 31):
        try:
            modular.harmonic_neurons(x, 1, N=N)
            accepted.append(N)
        except ValueError as error:
            assert str(error).startswith("N must divide none of 2, 3, 5, 7, 8, 10, 13")
            assert "(N = 6, 9, 11, 12 or N >= 14)" in str(error)
    assert accepted == [6, 9, 11, 12] + list(range(14, 31))
    with pytest.raises(ValueError, match="^N must divide none of .* got N = 13$"):
        modular.harmonic_neurons(x, 1, N=13)


# ---------------------------------------------------------------------------------------------
# Inputs that hung, returned a wrong answer or got someone else's error (issue 30)


@pytest.mark.parametrize("name, value, error, message", [
    ("rtol", math.nan, ValueError, "^rtol must be a finite positive number, got nan"),     # hung
    ("rtol", -1.0, ValueError, "^rtol must be a finite positive number, got -1.0"),     # was SciPy's atol error
    ("atol", -1.0, ValueError, "^atol must be a finite positive number, got -1.0"),
    ("atol", math.inf, ValueError, "^atol must be a finite positive number, got inf"),
    ("rtol", "1e-9", TypeError, "^rtol must be a real number, got str"),
    ("adaptive_rate", "no", TypeError, "^adaptive_rate must be True or False, got str"),   # ran as True
    ("record_params", 1, TypeError, "^record_params must be True or False, got int"),
    ("progress", "yes", TypeError, "^progress must be True, False or None, got str"),
    ("times", [], ValueError, r"^times must be a non-empty 1-D array, got shape \(0,\)"),   # was an IndexError
    ("times", [math.nan], ValueError, "^times contains NaN or infinite values"),
    ("times", "0.5", TypeError, "^times must be a 1-D array of real numbers, got str"),
])
def test_gradient_flow_checks_its_solver_options(name, value, error, message, network, theta0, data):
    with pytest.raises(error, match=message):
        gradient_flow(network, data, theta0, 1.0, **{name: value})


@pytest.mark.parametrize("name, value, error, message", [
    ("cost_tol", -1.0, ValueError, r"^cost_tol must be a number in \(0, 1\), got -1.0"),    # a wrong level
    ("cost_tol", 1.0, ValueError, r"^cost_tol must be a number in \(0, 1\), got 1.0"),
    ("cost_tol", math.nan, ValueError, r"^cost_tol must be a number in \(0, 1\), got nan"),
    ("utility_tol", math.nan, ValueError, "^utility_tol must be a finite positive number, got nan"),  # 0 jumps
    ("utility_tol", -1.0, ValueError, "^utility_tol must be a finite positive number, got -1.0"),
    ("rtol", -1.0, ValueError, "^rtol must be a finite positive number, got -1.0"),
    ("atol", -1.0, ValueError, "^atol must be a finite positive number, got -1.0"),
    ("max_cost_time", -5.0, ValueError, "^max_cost_time must be a finite positive number, got -5.0"),
    ("max_cost_time", "a", TypeError, "^max_cost_time must be a real number, got str"),
    ("adaptive_rate", "no", TypeError, "^adaptive_rate must be True or False, got str"),
])
def test_alternating_gradient_flow_checks_its_tolerances_and_flags(name, value, error, message, network, theta0,
                                                                   data):
    with pytest.raises(error, match=message):
        alternating_gradient_flow(network, data, theta0, **{name: value})


def test_cost_step_error_when_a_cost_step_cannot_converge_within_max_cost_time():
    """After the first jump of the commuting linear problem the active neuron needs a time of order
    1/σ₁ = 1/3 to settle; given 1e-3 of it, the step stops with its gradient still of the order of its
    initial size, and says so."""
    problem = problems.get("linear-commuting")
    with pytest.raises(CostStepError, match=r"did not converge within max_cost_time = 0\.001: the active neurons"):
        alternating_gradient_flow(problem.network, problem.data, problem.initial_theta(1e-4), max_cost_time=1e-3)


EMPTY_DATA = {"no rows": (np.zeros((0, 3)), np.zeros(0)), "no columns": (np.zeros((12, 0)), np.zeros(12))}


@pytest.mark.parametrize("consumer", CONSUMER_NAMES)
@pytest.mark.parametrize("empty", EMPTY_DATA, ids=list(EMPTY_DATA))
def test_data_with_no_rows_or_no_columns_is_rejected_naming_x(consumer, empty, network, theta0):
    """n = 0 made gradient flow hang and the others divide by zero or return NaN levels; d = 0 got NumPy's
    error about an empty reduction."""
    with pytest.raises(ValueError, match=r"^X must have at least one row \(sample\) and one column \(input\)"):
        every_data_consumer(network, theta0)[consumer](EMPTY_DATA[empty])


def test_diagonal_closed_forms_check_their_tolerance(data):
    for tol in (math.nan, -1.0, 1.0):
        with pytest.raises(ValueError, match=r"^tol must be a number in \(0, 1\)"):
            diagonal.agf_staircase(*data, alpha=1e-3, tol=tol)
        with pytest.raises(ValueError, match=r"^tol must be a number in \(0, 1\)"):
            diagonal.limit_staircase(*data, tol=tol)


@pytest.mark.parametrize("call, message", [
    (lambda bad: diagonal.log_cosh([0.0, bad]), "^x contains NaN or infinite values"),
    (lambda bad: diagonal.beta_of_psi(bad, 0.1), "^psi contains NaN or infinite values"),
    (lambda bad: linear.population_loss(np.full((2, 2), bad), np.eye(2), np.eye(2)),
     "^beta contains NaN or infinite values"),
    (lambda bad: linear.FullyConnectedLinearNetwork(2, 3, 1).theta_from_factors(np.full((3, 2), bad), np.ones((1, 3))),
     "^W contains NaN or infinite values"),
    (lambda bad: linear.FullyConnectedLinearNetwork(2, 3, 1).theta_from_factors(np.ones((3, 2)), np.full((1, 3), bad)),
     "^A contains NaN or infinite values"),
    (lambda bad: modular.output_power(modular.QuadraticModularNetwork(5, 2), np.ones((2, 15)), np.full((25, 10), bad)),
     "^X contains NaN or infinite values"),
    (lambda bad: dft.harmonic(7, 1, amplitude=bad), "^amplitude must be a finite real number"),
    (lambda bad: dft.harmonic(7, 1, phase=bad), "^phase must be a finite real number"),
    (lambda bad: dft.dominant_frequencies(dft.template(7, [3.0, 2.0, 1.0]), tol=bad),
     r"^tol must be a number in \[0, 1\)"),
], ids=["log_cosh", "beta_of_psi", "population_loss", "theta_from_factors W", "theta_from_factors A",
        "output_power", "harmonic amplitude", "harmonic phase", "dominant_frequencies tol"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_nan_and_infinity_are_refused_where_they_passed_through(call, message, bad):
    with pytest.raises(ValueError, match=message):
        call(bad)


def test_dominant_frequencies_refuses_a_negative_tolerance_which_kept_absent_frequencies():
    x = dft.template(9, [3.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(dft.dominant_frequencies(x), [1, 3])      # magnitudes 3 and 1; 2 and 4 absent
    with pytest.raises(ValueError, match=r"^tol must be a number in \[0, 1\), got -1.0"):
        dft.dominant_frequencies(x, tol=-1.0)


def test_output_power_checks_the_shapes_of_theta_and_x():
    network = modular.QuadraticModularNetwork(5, 2)
    X = modular.dataset(dft.template(5, [2.0, 1.0]))[0]
    with pytest.raises(ValueError, match=r"^X must have shape \(n, 2p\) = \(n, 10\) with n >= 1, got \(25, 9\)"):
        modular.output_power(network, np.ones((2, 15)), X[:, :9])
    with pytest.raises(ValueError, match=r"^theta must have shape \(H, 3p\) or \(T, H, 3p\), got \(15,\)"):
        modular.output_power(network, np.ones(15), X)
    with pytest.raises(TypeError, match="^X must be an"):
        modular.output_power(network, np.ones((2, 15)), "X")


# ---------------------------------------------------------------------------------------------
# Results


def test_staircase_refuses_nan_levels_and_infinite_times():
    with pytest.raises(ValueError, match="^losses contains NaN or infinite values"):
        Staircase([0.0, 1.0], [1.0, math.nan], [0])
    with pytest.raises(ValueError, match="^times contains NaN or infinite values"):
        Staircase([0.0, math.inf], [1.0, 0.5], [0])
    with pytest.raises(TypeError, match="^times must be a 1-D array of real numbers, got str"):
        Staircase("0", [1.0], [])
    with pytest.raises(ValueError, match=r"^states must have one entry per level \(2\), got 1"):
        Staircase([0.0, 1.0], [1.0, 0.5], [0], states=[None])
    with pytest.raises(ValueError, match=r"^active must have one entry per level \(2\), got 3"):
        Staircase([0.0, 1.0], [1.0, 0.5], [0], active=[(), (0,), (0,)])


@pytest.mark.parametrize("t, error, message", [
    (math.nan, ValueError, "^t must be a finite real number, got nan"),           # returned the last level
    (-5.0, ValueError, r"^t must be non-negative \(the staircase starts at 0\), got -5.0"),   # the first
    ([0.5, math.inf], ValueError, "^t contains NaN or infinite values"),
    ("1", TypeError, "^t must be a real number, got str"),
])
def test_level_at_refuses_times_before_the_start_or_not_finite(t, error, message):
    with pytest.raises(error, match=message):
        Staircase([0.0, 1.0], [1.0, 0.5], [0]).level_at(t)


def test_loss_at_refuses_times_outside_the_samples_where_it_would_extrapolate():
    trajectory = Trajectory([1.0, 2.0], [1.0, 0.5])
    assert trajectory.loss_at(1.5) == 0.75                           # the midpoint of a linear interpolation
    with pytest.raises(ValueError, match=r"^t must lie within the trajectory's times \[1, 2\], got 3.0"):
        trajectory.loss_at([1.5, 3.0])
    with pytest.raises(ValueError, match="^t must be a finite real number, got nan"):
        trajectory.loss_at(math.nan)


def test_gf_time_factor_still_checks_alpha():
    """GF time needs no α, but a scale of −5 is an error wherever it is given (it returned 1)."""
    assert GF_TIME.factor(0.5) == 1.0
    with pytest.raises(ValueError, match="^alpha must be a finite positive number, got -5.0"):
        GF_TIME.factor(-5)
    with pytest.raises(ValueError, match="^alpha must be a finite positive number, got nan"):
        GF_TIME.factor(math.nan)


def test_staircase_comparison_checks_its_arrays():
    ok = dict(jump_times=[1.0], trajectory_jump_times=[math.inf], time_errors=[math.inf], levels=[1.0, 0.5],
              plateau_losses=[1.0, math.nan], level_errors=[0.0, math.inf])
    comparison = StaircaseComparison(**ok)                  # a trajectory that never made the drop: allowed
    assert comparison.levels.dtype == float
    for name, value, message in [
        ("levels", [1.0], r"^levels must have shape \(2,\) for K = 1 jumps, got \(1,\)"),
        ("jump_times", [math.nan], "^jump_times contains NaN or infinite values"),
        ("time_errors", [math.nan], r"^time_errors contains NaN \(inf stands for a drop the trajectory never"),
        ("level_errors", [0.0, -1.0], "^level_errors must be non-negative, got -1.0"),
    ]:
        with pytest.raises(ValueError, match=message):
            StaircaseComparison(**{**ok, name: value})
    with pytest.raises(TypeError, match="^levels must be a 1-D array of real numbers, got str"):
        StaircaseComparison(**{**ok, "levels": "a"})


# ---------------------------------------------------------------------------------------------
# Plotting


def test_plot_losses_refuses_fewer_labels_or_colors_than_trajectories():
    """With one label for two trajectories the second curve was silently not drawn."""
    trajectory = Trajectory([0.0, 1.0], [1.0, 0.5])
    with pytest.raises(ValueError, match=r"^labels must have one entry per trajectory \(2\), got 1"):
        plotting.plot_losses([trajectory, trajectory], labels=["a"])
    with pytest.raises(ValueError, match=r"^colors must have one entry per trajectory \(2\), got 3"):
        plotting.plot_losses([trajectory, trajectory], colors=["r", "g", "b"])
    with pytest.raises(TypeError, match="^labels must be a sequence with one entry per trajectory, got str"):
        plotting.plot_losses([trajectory], labels="a")
    with pytest.raises(TypeError, match="^logy must be True or False, got str"):
        plotting.plot_losses([trajectory], logy="yes")
    with pytest.raises(ValueError, match="^t_end must be a finite positive number, got nan"):
        plotting.plot_losses([trajectory], t_end=math.nan)
    plt.close("all")


@pytest.mark.parametrize("alphas, error, message", [
    ([-1.0, 0.0], ValueError, r"^alphas must be positive \(initialization scales\), got -1.0"),   # NaN colours
    ([1e-3, math.nan], ValueError, "^alphas contains NaN or infinite values"),
    ([], ValueError, r"^alphas must be a non-empty 1-D array, got shape \(0,\)"),
    ("1e-3", TypeError, "^alphas must be a 1-D array of real numbers, got str"),
])
def test_alpha_colors_refuses_scales_that_have_no_logarithm(alphas, error, message):
    with pytest.raises(error, match=message):
        plotting.alpha_colors(alphas)
    with pytest.raises(ValueError, match="^cmap must be the name of a matplotlib colormap, got 'nope'"):
        plotting.alpha_colors([1e-3], cmap="nope")


def test_mark_jumps_refuses_times_that_are_not_finite_numbers():
    _, ax = plotting.figure()
    with pytest.raises(ValueError, match="^times contains NaN or infinite values"):
        plotting.mark_jumps(ax, [1.0, math.nan])
    with pytest.raises(TypeError, match="^ax must be a matplotlib Axes, got NoneType"):
        plotting.mark_jumps(None, [1.0])
    plotting.mark_jumps(ax, 2.0)
    assert len(ax.lines) == 1
    plt.close("all")


# ---------------------------------------------------------------------------------------------
# Checks at run time: what a library clips, caps or accepts from a solver


def test_exact_flow_raises_when_its_path_meets_the_cap_of_the_field():
    """A column of size 1e-140 with y = ±1 asks for β = 1e140 = e^322: past the cap e^300 of the field's
    velocity, which let the flow run on without limit; a column of 1e-100 (β = 1e100 = e^230) stays under it
    and reaches the exact fit, loss zero (within 1e-20 of the initial 0.5: at t_end the flow has had about
    2000 of its slowest relaxation times, 1/(Σ_xx dβ/dψ) = 5e99)."""
    y = np.array([1.0, -1.0])
    with pytest.raises(FloatingPointError, match=r"beyond the cap e\^300 of its velocity"):
        diagonal.exact_flow(np.array([[1e-140], [-1e-140]]), y, 3e142, alpha=1e-3, method="LSODA")
    fit = diagonal.exact_flow(np.array([[1e-100], [-1e-100]]), y, 1e103, alpha=1e-3, method="LSODA")
    assert fit.losses[0] == 0.5 and fit.losses[-1] < 1e-20


def test_population_data_refuses_to_clip_more_than_rounding(monkeypatch):
    """The joint second-moment matrix is positive semidefinite, and eigh's negatives of rounding size are
    clipped; a negative eigenvalue far beyond rounding (here one of −1e-3 put in by hand) is an error."""
    Sigma = np.diag([1.0, 0.5])
    Z, y = attention.population_data(Sigma, 3)          # a valid Sigma: its moments come back exactly
    Eyy, _, _ = attention.population_moments(Sigma, 3)
    assert abs(float(y[:, 0] @ y[:, 0]) / y.shape[0] - Eyy) < 1e-12 * Eyy
    EPhiPhi = attention.population_moments(Sigma, 3)[2]
    monkeypatch.setattr(attention, "population_moments",
                        lambda Sigma, N: (-1e-3, np.zeros((2, 2)), np.zeros_like(EPhiPhi)))
    with pytest.raises(FloatingPointError, match="negative beyond rounding"):
        attention.population_data(Sigma, 3)


def test_least_squares_fit_reads_the_solvers_status():
    """One neuron on D3's 2-d irrep from seed 3 has not converged within SciPy's default budget (1200
    evaluations for 12 parameters): without a budget of the caller's, that is an error, not a loss."""
    G = groups.dihedral(3)
    blocks = [np.zeros((1, 1)), np.zeros((1, 1)), np.array([[1.0, 0.3], [-0.2, 0.8]])]
    x = groups.inverse_fourier(blocks, G)
    with pytest.raises(RuntimeError, match=r"did not converge \(scipy least_squares, status 0"):
        groups.least_squares_fit(x, G, 1, seed=3)
    loss, theta = groups.least_squares_fit(x, G, 1, seed=3, max_nfev=20)        # a budget: the loss reached
    assert 0 < loss < 1 and theta.shape == (1, 18)
    # more parameters (3·4·13) than residuals (36·4): the trust-region method takes them, and fits
    loss, theta = groups.least_squares_fit(x, G, 13, max_nfev=200)
    assert loss < 1e-28 and theta.shape == (13, 18)
