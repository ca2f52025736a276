"""Specifications of the library's input checks: every bad argument raises a ValueError or TypeError whose
message names the argument."""

import inspect
import math

import numpy as np
import pytest

from conftest import not_a_count
import torch

from agf_lib import (FeedForwardNetwork, alternating_gradient_flow, dft, diagonal, gradient_descent, gradient_flow,
                     linear, loss, modular, utility)

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
    with pytest.raises(ValueError, match=expected):
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
    with pytest.raises(ValueError, match="max_jumps must be None or a non-negative integer"):
        diagonal.agf_staircase(*data, alpha=1e-3, max_jumps=1.5)
    with pytest.raises(ValueError, match="max_jumps must be None or a non-negative integer"):
        diagonal.limit_staircase(*data, max_jumps=True)
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
    with pytest.raises(ValueError, match="y contains NaN"):
        utility(network, theta0, X, np.full_like(y, math.nan))


# ---------------------------------------------------------------------------------------------
# Closed forms of the diagonal network


@pytest.mark.parametrize("signs, error, match", [
    ([2, -5, 0], ValueError, r"^signs must hold only -1, 0 and \+1, got \[2, -5, 0\]"),
    ([0.5, 1, 1], ValueError, r"^signs must hold only -1, 0 and \+1, got \[0.5, 1.0, 1.0\]"),
    ([1, 1], ValueError, r"^signs must have shape \(d,\) = \(3,\), one entry per column of X, got \(2,\)"),
    (np.ones((3, 1)), ValueError, r"^signs must have shape \(d,\) = \(3,\)"),
    ("+-+", TypeError, "^signs must be an array of -1, 0 and \\+1, got str"),
    ([None, 1, 1], TypeError, "^signs must be an array of -1, 0 and \\+1, got dtype object"),
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
    with pytest.raises(TypeError, match="^psi must be a real number or an array of real numbers, got dtype complex128"):
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
