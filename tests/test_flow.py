"""Specifications of `agf_lib.gradient_flow`: closed forms, conservation laws, the exact diagonal flow,
the scaling symmetry of the utility flow, and determinism."""

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

import agf_lib
from agf_lib import FeedForwardNetwork, TwoLayerNetwork, diagonal, gradient_flow, problems
from agf_lib._polar import PolarField, pack, to_polar
from agf_lib._engine import integrate


@pytest.fixture
def feedforward_problem():
    """n = 30 inputs in R³ and a target with a linear and a quadratic part (seed 1)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = 0.5 * (X @ np.array([1.0, -0.5, 0.3])) ** 2 + X[:, 0]
    return X, y


# ---------------------------------------------------------------------------------------------
# A single neuron in closed form


@pytest.mark.parametrize("b0", [1e-6, 1e-60])
def test_balanced_single_linear_neuron_follows_the_logistic_closed_form(b0):
    """``f = a w x`` with E[x²] = 1 and y = s x: L = ½(s − β)² with β = wa, and from the balanced
    ``w = a = √b0`` gradient flow keeps ``a² + w² = 2β``, so ``dβ/dt = 2β(s − β)`` and
    ``β(t) = s / (1 + (s/b0 − 1) e^{−2st})``."""
    s = 1.5
    X = np.array([[1.0], [-1.0]])
    network = FeedForwardNetwork(d=1, H=1, c=1, activation="linear")
    theta0 = np.full((1, 2), math.sqrt(b0))
    t_end = 1.5 * math.log(s / b0) / (2 * s) + 5.0
    times = np.linspace(0.0, t_end, 300)
    trajectory = gradient_flow(network, (X, s * X[:, 0]), theta0, t_end, times=times, record_params=True)
    beta = s / (1.0 + (s / b0 - 1.0) * np.exp(-2.0 * s * times))
    w, a = trajectory.params[:, 0, 0], trajectory.params[:, 0, 1]
    np.testing.assert_allclose(w * a, beta, rtol=1e-7)
    np.testing.assert_allclose(trajectory.log_norms[:, 0], 0.5 * np.log(2 * beta), rtol=0, atol=1e-7)
    np.testing.assert_allclose(trajectory.losses, 0.5 * (s - beta) ** 2, rtol=0, atol=1e-7 * s**2)
    np.testing.assert_allclose(w, a, rtol=1e-9)
    np.testing.assert_array_equal(trajectory.times, times)


# ---------------------------------------------------------------------------------------------
# Conserved quantities


def test_diagonal_network_keeps_u_squared_minus_v_squared_at_two_alpha_squared(regression_problem):
    alpha = 0.1
    trajectory = gradient_flow(diagonal.DiagonalLinearNetwork(5), regression_problem, diagonal.initial_theta(5, alpha=alpha),
                               60.0, num_samples=200, record_params=True)
    u, v = trajectory.params[..., 0], trajectory.params[..., 1]
    np.testing.assert_allclose(u**2 - v**2, 2 * alpha**2, rtol=1e-6)
    assert np.max(u**2 + v**2) > 50 * 2 * alpha**2  # the neurons grew far off their initial norm


@pytest.mark.parametrize("activation", ["square", "linear"])
def test_feedforward_neurons_conserve_kappa_minus_one_times_a_squared_minus_w_squared(feedforward_problem, activation):
    """The rescaling ``w → λw``, ``a → λ^{1−κ}a`` leaves each neuron's output unchanged, so
    ``(κ − 1)‖a_i‖² − ‖w_i‖²`` is conserved neuron by neuron (κ = 3 for "square", 2 for "linear")."""
    network = FeedForwardNetwork(d=3, H=4, c=1, activation=activation)
    theta0 = network.initial_theta(alpha=0.3, seed=2)
    trajectory = gradient_flow(network, feedforward_problem, theta0, 40.0, num_samples=100, record_params=True)
    w, a = trajectory.params[..., :3], trajectory.params[..., 3:]
    conserved = (network.kappa - 1) * (a**2).sum(-1) - (w**2).sum(-1)
    np.testing.assert_allclose(conserved, np.broadcast_to(conserved[0], conserved.shape), rtol=1e-6)
    assert trajectory.losses[-1] < 0.5 * trajectory.losses[0]
    assert np.max((trajectory.params**2).sum(-1)) > 5 * np.max((theta0**2).sum(-1))  # far from the start


# ---------------------------------------------------------------------------------------------
# The generic flow against the exact ψ flow of the diagonal network


def test_generic_gradient_flow_matches_exact_diagonal_flow_at_alpha_1e_12(regression_problem):
    X, y = regression_problem
    alpha = 1e-12
    t_end = 1.2 * diagonal.agf_staircase(X, y, alpha=alpha).times[-1]
    grid = np.linspace(0.0, t_end, 1500)
    generic = gradient_flow(diagonal.DiagonalLinearNetwork(5), (X, y), diagonal.initial_theta(5, alpha=alpha), t_end,
                            times=grid)
    exact = diagonal.exact_flow(X, y, t_end, alpha=alpha, rtol=1e-12, atol=1e-14, times=grid)
    # measured: 4e-9 over the whole run, drops included
    assert np.max(np.abs(generic.losses - exact.losses) / exact.losses) <= 1e-6
    # the run crossed every level of the staircase
    assert diagonal.agf_staircase(X, y, alpha=alpha).compare(generic).time_errors.max() < 5e-2


@pytest.mark.parametrize("name", [name for name in problems.names() if problems.get(name).network.sign_preserving_chart])
def test_the_log_chart_velocity_is_the_chart_velocity_over_the_coordinate_whatever_its_sign(name):
    """log_gradient_function(s), what gradient flow integrates for a sign-preserving chart, against
    ∇_φU(φ; r)/φ at φ = ±e^s from chart_residual_gradient, for random signs."""
    problem = problems.get(name)
    network, (X, y) = problem.network, problem.data
    rng = np.random.default_rng(5)
    s = rng.normal(size=(network.num_neurons, network.num_params))
    phi = rng.choice([-1.0, 1.0], size=s.shape) * np.exp(s)
    expected = network.chart_residual_gradient(phi, X, y, np.ones(network.num_neurons))[1] / phi
    np.testing.assert_allclose(network.log_gradient_function(X, y)(s), expected, rtol=1e-12, atol=1e-14)


def test_a_zero_chart_coordinate_takes_the_polar_coordinates_and_is_the_limit_of_tiny_ones(regression_problem,
                                                                                            monkeypatch):
    """u = v puts the diagonal chart's q = (u − v)/√2 at zero, where it stays (dq/dt = −ηgq) and has no
    logarithm: that start is integrated in polar coordinates. A start with q/p ≈ 1e-12 goes through the log
    chart, and the two flows differ by O((q/p)²), far below the tolerance."""
    used = []

    class Recorded(agf_lib.flow.LogChartField):
        def __init__(self, *args, **kwargs):
            used.append(True)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(agf_lib.flow, "LogChartField", Recorded)
    network = diagonal.DiagonalLinearNetwork(5)
    on_axis = np.full((5, 2), 1e-6)
    off_axis = on_axis * np.array([1.0, 1.0 - 2.0**-40])
    grid = np.linspace(0.0, 60.0, 200)
    polar = gradient_flow(network, regression_problem, on_axis, 60.0, times=grid)
    assert not used
    log_chart = gradient_flow(network, regression_problem, off_axis, 60.0, times=grid)
    assert used
    assert polar.losses[-1] < 0.5 * polar.losses[0]       # the flow went somewhere
    np.testing.assert_allclose(log_chart.losses, polar.losses, rtol=1e-7)


def test_generic_gradient_flow_at_alpha_1e_100_is_finite_and_descends_the_staircase(regression_problem, recwarn):
    """At α = 1e-100 (α² = 1e-200) the polar coordinates stay of order one. The run covers the first
    four jumps."""
    X, y = regression_problem
    alpha = 1e-100
    staircase = diagonal.agf_staircase(X, y, alpha=alpha)
    t_end = 1.2 * staircase.times[4]
    generic = gradient_flow(diagonal.DiagonalLinearNetwork(5), (X, y), diagonal.initial_theta(5, alpha=alpha), t_end,
                            num_samples=500)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert np.all(np.isfinite(generic.losses))
    comparison = staircase.compare(generic)
    assert np.all(comparison.time_errors[:4] < 2e-3)
    np.testing.assert_allclose(comparison.plateau_losses[:5], staircase.losses[:5], rtol=1e-10)
    exact = diagonal.exact_flow(X, y, t_end, alpha=alpha, rtol=1e-12, atol=1e-14, times=generic.times)
    np.testing.assert_allclose(generic.losses, exact.losses, rtol=1e-6)


def sign_reversal_times(X, y, alpha):
    """Second drop of the generic and of the exact flow on the sign-reversal problem."""
    staircase = diagonal.agf_staircase(X, y, alpha=alpha)
    t_end = 1.05 * staircase.times[-1]
    generic = gradient_flow(diagonal.DiagonalLinearNetwork(2), (X, y), diagonal.initial_theta(2, alpha=alpha), t_end)
    exact = diagonal.exact_flow(X, y, t_end, alpha=alpha, rtol=1e-12, atol=1e-14)
    return staircase.compare(generic).trajectory_jump_times[1], staircase.compare(exact).trajectory_jump_times[1]


def test_generic_gradient_flow_reverses_a_coordinate_sign_on_time_at_alpha_1e_12(sign_reversal_problem):
    generic, exact = sign_reversal_times(*sign_reversal_problem, 1e-12)
    np.testing.assert_allclose(generic, exact, rtol=1e-5)


def test_generic_gradient_flow_reverses_a_coordinate_sign_on_time_at_alpha_1e_100(sign_reversal_problem):
    """In plain (u, v) coordinates this drop came at t ≈ 642 instead of ≈ 830: a direction at norm one cannot
    hold u² − v² = 2·1e-200. In the logarithms of the diagonal network's chart it is log|p| + log|q|; measured
    relative error 3e-9."""
    generic, exact = sign_reversal_times(*sign_reversal_problem, 1e-100)
    np.testing.assert_allclose(generic, exact, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Scaling symmetry of the utility flow (Theorem B.2)


def utility_flow(network, X, y, theta0, times):
    """Polar states (directions, log-norms) of the utility flow with the residual frozen at ``y``."""
    dirs, logn = to_polar(np.asarray(theta0, dtype=float))
    field = PolarField(network, X, y, dirs)
    sol = solve_ivp(lambda t, state: field(state, None, y), (0.0, times[-1]), pack(dirs, logn), method="DOP853",
                    rtol=1e-12, atol=1e-13, t_eval=times)
    assert sol.success
    H = network.num_neurons
    directions = sol.y[:-H].T.reshape(len(times), H, -1)
    return directions / np.linalg.norm(directions, axis=-1, keepdims=True), sol.y[-H:].T


@pytest.mark.parametrize("activation", ["square", "linear"])
@pytest.mark.parametrize("alpha", [1e-3, 1e-40])
def test_utility_flow_from_alpha_theta_is_alpha_times_the_flow_at_rescaled_time(feedforward_problem, activation, alpha):
    """θ_α(t) = α θ_1(α^{κ−2} t): the directions agree at matching times and the log-norms differ by log α."""
    network = FeedForwardNetwork(d=3, H=4, c=1, activation=activation)
    X, y = network.check_data(*feedforward_problem)
    theta0 = network.initial_theta(alpha=0.3, seed=2)
    # until just before the first neuron reaches norm one (κ = 3: the utility flow blows up in finite time)
    t_end = {"square": 3.0, "linear": 1.0}[activation]
    times = np.linspace(0.0, t_end, 40)
    dirs_1, logn_1 = utility_flow(network, X, y, theta0, times)
    dirs_alpha, logn_alpha = utility_flow(network, X, y, alpha * theta0, times * alpha ** (2 - network.kappa))
    assert logn_1[-1].max() > logn_1[0].max() + 0.4  # the flow went somewhere
    np.testing.assert_allclose(dirs_alpha, dirs_1, rtol=0, atol=1e-8)
    np.testing.assert_allclose(logn_alpha - math.log(alpha), logn_1, rtol=0, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# Determinism


def test_gradient_flow_twice_gives_identical_arrays(feedforward_problem):
    network = FeedForwardNetwork(d=3, H=4, c=1, activation="square")
    theta0 = network.initial_theta(alpha=0.1, seed=3)
    first = gradient_flow(network, feedforward_problem, theta0, 20.0, num_samples=200, record_params=True)
    second = gradient_flow(network, feedforward_problem, theta0, 20.0, num_samples=200, record_params=True)
    for name in ("times", "losses", "params", "log_norms"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))


def test_initial_theta_is_seeded_and_scaled_like_the_paper():
    network = FeedForwardNetwork(d=40, H=500, c=10)
    alpha = 1e-3
    theta = network.initial_theta(alpha=alpha, seed=7)
    np.testing.assert_array_equal(theta, network.initial_theta(alpha=alpha, seed=7))
    assert not np.array_equal(theta, network.initial_theta(alpha=alpha, seed=8))
    # a_i ~ N(0, α²/(2c) I), w_i ~ N(0, α²/(2d) I): E‖w_i‖² = E‖a_i‖² = α²/2 (20000 and 5000 draws)
    np.testing.assert_allclose(np.mean(theta[:, :40] ** 2) * 40, alpha**2 / 2, rtol=3e-2)
    np.testing.assert_allclose(np.mean(theta[:, 40:] ** 2) * 10, alpha**2 / 2, rtol=6e-2)
    np.testing.assert_array_equal(diagonal.initial_theta(3, alpha=alpha), [[math.sqrt(2) * alpha, 0.0]] * 3)


def test_network_loss_and_utility_follow_the_paper_conventions(feedforward_problem):
    X, y = feedforward_problem
    network = FeedForwardNetwork(d=3, H=2, c=1, activation="relu")
    theta = np.array([[1.0, -0.5, 0.2, 0.7], [0.3, 0.1, -1.0, -1.2]])
    outputs = [theta[i, 3] * np.maximum(X @ theta[i, :3], 0.0) for i in range(2)]
    np.testing.assert_allclose(agf_lib.loss(network, theta, X, y), 0.5 * np.mean((y - sum(outputs)) ** 2),
                               rtol=1e-14)
    np.testing.assert_allclose(agf_lib.utility(network, theta, X, y), [np.mean(o * y) for o in outputs], rtol=1e-14)


class AutogradFeedForward(FeedForwardNetwork):
    """The same network through the torch-autograd fallback: only :meth:`torch_outputs` is given."""

    neuron_outputs = agf_lib.TwoLayerNetwork.neuron_outputs
    utility_gradient = agf_lib.TwoLayerNetwork.utility_gradient
    weighted_output = agf_lib.TwoLayerNetwork.weighted_output
    chart_residual_gradient = agf_lib.TwoLayerNetwork.chart_residual_gradient
    batched_weighted_output = agf_lib.TwoLayerNetwork.batched_weighted_output

    def torch_outputs(self, theta, X):
        w, a = theta[:, : self.input_dim], theta[:, self.input_dim :]
        z = w @ X.T
        sigma = {"linear": lambda z: z, "relu": torch.relu, "square": lambda z: z * z}[self.activation]
        return sigma(z)[:, :, None] * a[:, None, :]


@pytest.mark.parametrize("activation", ["linear", "relu", "square"])
def test_closed_form_utility_gradient_matches_the_autograd_fallback(feedforward_problem, activation):
    closed = FeedForwardNetwork(d=3, H=5, c=2, activation=activation)
    fallback = AutogradFeedForward(d=3, H=5, c=2, activation=activation)
    rng = np.random.default_rng(4)
    theta, X, residual = rng.normal(size=(5, 5)), rng.normal(size=(30, 3)), rng.normal(size=(30, 2))
    U, grad = closed.utility_gradient(theta, X, residual)
    U_ref, grad_ref = fallback.utility_gradient(theta, X, residual)
    np.testing.assert_allclose(U, U_ref, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(closed.neuron_outputs(theta, X), fallback.neuron_outputs(theta, X), rtol=1e-14)
    np.testing.assert_allclose(closed.weighted_output(theta, X, np.arange(5.0)),
                               fallback.weighted_output(theta, X, np.arange(5.0)), rtol=1e-13, atol=1e-14)


def test_a_network_with_neither_closed_forms_nor_torch_outputs_says_what_to_implement():
    class Bare(agf_lib.TwoLayerNetwork):
        kappa, num_neurons, num_params, input_dim, output_dim = 2, 1, 2, 1, 1

    with pytest.raises(NotImplementedError, match="neuron_outputs and utility_gradient .* or torch_outputs"):
        Bare().utility_gradient(np.ones((1, 2)), np.ones((3, 1)), np.ones((3, 1)))


def test_both_engines_agree_through_the_autograd_fallback(feedforward_problem):
    network, fallback = (cls(d=3, H=3, c=1, activation="square") for cls in (FeedForwardNetwork, AutogradFeedForward))
    theta0 = network.initial_theta(alpha=0.05, seed=1)
    times = np.linspace(0.0, 30.0, 31)
    fast = gradient_flow(network, feedforward_problem, theta0, 30.0, times=times)
    slow = gradient_flow(fallback, feedforward_problem, theta0, 30.0, times=times)
    assert fast.losses[-1] < 0.5 * fast.losses[0]  # through the drop
    np.testing.assert_allclose(slow.losses, fast.losses, rtol=1e-12)  # measured 5e-14


def test_the_autograd_fallback_runs_torch_on_one_thread_and_restores_the_callers_setting(feedforward_problem):
    seen = []
    network = AutogradFeedForward(d=3, H=2, c=1, activation="linear")
    original = network.torch_outputs

    def spy(*args):
        seen.append(torch.get_num_threads())
        return original(*args)

    network.torch_outputs = spy
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        gradient_flow(network, feedforward_problem, network.initial_theta(alpha=1e-3), 1.0, num_samples=10)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("name", problems.names())
def test_every_networks_fused_and_summed_evaluations_agree_with_its_neuron_outputs(name):
    """weighted_output, batched_weighted_output, chart_residual_gradient and gradient_function, which the engines
    call, against the plain definitions: the weighted sum of chart_outputs (of each snapshot of a stack), and
    weighted_output followed by chart_utility_gradient (from the data's moments for linear and diagonal networks)."""
    problem = problems.get(name)
    network, (X, y) = problem.network, problem.data
    rng = np.random.default_rng(3)
    phi = rng.normal(size=(network.num_neurons, network.num_params))
    weights = rng.uniform(0.5, 2.0, network.num_neurons)
    summed = np.einsum("h,hnc->nc", weights, network.chart_outputs(phi, X))
    np.testing.assert_allclose(network.weighted_output(phi, X, weights), summed, rtol=1e-12, atol=1e-14)
    residual, grad = network.chart_residual_gradient(phi, X, y, weights)
    np.testing.assert_allclose(residual, y - summed, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad, network.chart_utility_gradient(phi, X, y - summed)[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(network.gradient_function(X, y)(phi, weights), grad, rtol=1e-12, atol=1e-13)
    stack, stack_weights = rng.normal(size=(3,) + phi.shape), rng.uniform(0.5, 2.0, (3, network.num_neurons))
    one_by_one = [np.einsum("h,hnc->nc", w, network.chart_outputs(p, X)) for p, w in zip(stack, stack_weights)]
    np.testing.assert_allclose(network.batched_weighted_output(stack, X, stack_weights), one_by_one, rtol=1e-12,
                               atol=1e-13)


class DiagonalWithoutMoments(diagonal.DiagonalLinearNetwork):
    """The diagonal network with the base class's gradient_function (whole-network evaluation of a subset)."""
    gradient_function = TwoLayerNetwork.gradient_function


@pytest.mark.parametrize("name", problems.names() + ("diagonal, base gradient_function",))
def test_the_gradient_of_a_subset_of_neurons_is_the_whole_networks_with_the_others_weighted_zero(name):
    """gradient_function(X, y, index), what an AGF cost step calls, against the whole network's gradient with the
    other neurons weighted zero; where neurons_share_inputs says so (it lets the engines evaluate only the neurons
    they need), a subset's outputs too are those of the whole network."""
    problem = problems.get(name.split(",")[0])
    network, (X, y) = problem.network, problem.data
    if name.endswith("base gradient_function"):
        network = DiagonalWithoutMoments(network.num_neurons)
    rng = np.random.default_rng(4)
    phi = rng.normal(size=(network.num_neurons, network.num_params))
    weights = rng.uniform(0.5, 2.0, network.num_neurons)
    index = np.arange(0, network.num_neurons, 2)
    zeroed = np.zeros_like(weights)
    zeroed[index] = weights[index]
    whole = network.gradient_function(X, y)(phi, zeroed)[index]
    subset = network.gradient_function(X, y, index)
    np.testing.assert_allclose(subset(phi[index], weights[index]), whole, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(subset(phi[index], weights[index]), whole, rtol=1e-12, atol=1e-14)  # reusable
    if network.neurons_share_inputs:
        np.testing.assert_allclose(network.weighted_output(phi[index], X, weights[index]),
                                   network.weighted_output(phi, X, zeroed), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", problems.names())
def test_sampled_losses_are_the_same_batched_and_one_sample_at_a_time(name):
    problem = problems.get(name)
    network, (X, y) = problem.network, problem.data
    dirs, logn = to_polar(network.to_chart(problem.initial_theta(0.3)))
    field = PolarField(network, X, y, dirs)
    states = pack(dirs, logn)[:, None] + 0.1 * np.random.default_rng(1).normal(size=(dirs.size + len(logn), 50))
    batched = field.losses(states)
    one_by_one = [field.loss(*field.split(states[:, k], len(logn))) for k in range(50)]
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-13)


def test_integrate_builds_interpolants_only_where_the_given_times_fall():
    """With sample times given, the values are those of the interpolant on every step (same steps, same
    interpolants), duplicates included, for fewer evaluations: DOP853 spends three on each interpolant."""
    calls = [0]

    def rhs(t, y):
        calls[0] += 1
        return np.array([y[1], -np.sin(y[0]) - 0.1 * y[1]])

    y0, t_end = np.array([2.0, 0.0]), 60.0
    times = np.array([0.0, 1.5, 1.5, 30.0, 59.0, 60.0])
    dense = solve_ivp(rhs, (0.0, t_end), y0, method="DOP853", rtol=1e-9, atol=1e-12, dense_output=True)
    dense_calls, calls[0] = calls[0], 0
    sampled_times, states = integrate(rhs, y0, t_end, method="DOP853", rtol=1e-9, atol=1e-12, num_samples=10,
                                      times=times)
    np.testing.assert_array_equal(sampled_times, times)
    np.testing.assert_allclose(states, dense.sol(times), rtol=1e-14, atol=1e-15)
    steps = dense.t.size - 1
    assert dense_calls - calls[0] >= 3 * (steps - times.size)


# ---------------------------------------------------------------------------------------------
# Progress bars (issue 32, item 5)


def quick_run(feedforward_problem, **options):
    network = FeedForwardNetwork(d=3, H=2, c=1, activation="square")
    return gradient_flow(network, feedforward_problem, network.initial_theta(alpha=0.1, seed=3), 5.0,
                         num_samples=50, **options)


def test_progress_true_writes_a_bar_that_reaches_t_end_and_false_writes_nothing(feedforward_problem, capsys):
    shown = quick_run(feedforward_problem, progress=True)
    bar = capsys.readouterr().err
    assert bar.startswith("\rgradient flow:") and "100%" in bar and "t = 5 of 5" in bar
    hidden = quick_run(feedforward_problem, progress=False)
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(shown.losses, hidden.losses)        # the bar does not touch the run


def test_progress_true_follows_the_rounding_checks_rerun_too(feedforward_problem, capsys):
    quick_run(feedforward_problem, progress=True, check_rounding=True)
    bar = capsys.readouterr().err
    assert "gradient flow:" in bar and "gradient flow, rounding check:" in bar


@pytest.mark.parametrize("watching", [False, True])
def test_automatic_progress_shows_a_bar_only_where_someone_watches(feedforward_problem, capsys, monkeypatch, watching):
    """``progress=None`` waits ``PROGRESS_DELAY`` seconds (zero here) and asks ``watched()``; with standard
    error captured (capsys: not a terminal, and no Jupyter kernel), nobody is watching."""
    from agf_lib import _engine

    assert not _engine.watched()
    monkeypatch.setattr(_engine, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(_engine, "watched", lambda: watching)
    quick_run(feedforward_problem)
    assert ("100%" in capsys.readouterr().err) == watching


@pytest.mark.parametrize("value", ["yes", 1, 0.0])
def test_progress_must_be_true_false_or_none(feedforward_problem, value):
    with pytest.raises(TypeError, match=f"^progress must be True, False or None, got {type(value).__name__}$"):
        quick_run(feedforward_problem, progress=value)


def test_watched_means_a_terminal_in_the_main_process_and_never_in_a_worker(monkeypatch):
    from agf_lib import _engine

    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", Terminal())
    assert _engine.watched()
    monkeypatch.setattr("multiprocessing.parent_process", lambda: object())      # as in a joblib worker
    assert not _engine.watched()
