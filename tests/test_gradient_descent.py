"""Specifications of `agf_lib.gradient_descent`: fixed-step gradient descent ``Θ ← Θ − η∇L(Θ)``, with
heavy-ball momentum ``v ← βv + g, Θ ← Θ − ηv`` and minibatch or online sampling, step k at GF time
``kη/(1 − β)``.

Known answers: a balanced linear neuron ``f = a w x`` with ``E[x²] = 1`` and ``y = s x`` keeps ``a = w``,
so its product ``b = a w`` follows the exact discrete map ``b ← b (1 + η(s − b))²`` and, as η → 0, the
logistic gradient flow ``ḃ = 2b(s − b)``; gradient descent is Euler's method for gradient flow, so
its error is first order in η. On a quadratic loss, heavy ball is a linear recursion solved in closed
form by the roots of ``r² − (1 + β − ηλ)r + β = 0`` for each eigenvalue λ of the Hessian; its deviation
from gradient flow at the mapped time is first order in η. Minibatch and online gradients are unbiased,
so their jumps approach gradient flow's as the batch grows.
"""

import math

import numpy as np
import pytest

from agf_lib import GF_TIME, FeedForwardNetwork, TwoLayerNetwork, diagonal, gradient_descent, gradient_flow, problems

UNIT_SECOND_MOMENT_X = np.array([[1.0], [-1.0]])
SLOPE, B0 = 2.0, 1e-4  # target slope s and initial product b(0) = a(0) w(0)


def balanced_neuron_descent(eta, t_end):
    network = FeedForwardNetwork(d=1, H=1, c=1, activation="linear")
    data = (UNIT_SECOND_MOMENT_X, SLOPE * UNIT_SECOND_MOMENT_X[:, 0])
    return gradient_descent(network, data, np.full((1, 2), math.sqrt(B0)), t_end, eta=eta, num_samples=10**6,
                            record_params=True)


def logistic_flow(t):
    """``b(t)`` of ``ḃ = 2b(s − b)`` from ``b(0) = B0``."""
    growth = np.exp(2.0 * SLOPE * t)
    return SLOPE * B0 * growth / (SLOPE + B0 * (growth - 1.0))


def test_gradient_descent_on_a_balanced_linear_neuron_is_the_exact_discrete_map():
    """Every step: ``a = w`` and ``b = a w`` as the map gives it, loss ``½(s − b)²`` (measured 7e-15)."""
    eta = 0.01
    trajectory = balanced_neuron_descent(eta, 6.0)
    w, a = trajectory.params[:, 0, 0], trajectory.params[:, 0, 1]
    np.testing.assert_array_equal(w, a)
    b = [B0]
    for _ in range(trajectory.times.size - 1):
        b.append(b[-1] * (1.0 + eta * (SLOPE - b[-1])) ** 2)
    b = np.array(b)
    np.testing.assert_allclose(trajectory.times, eta * np.arange(b.size), rtol=1e-15, atol=0)
    np.testing.assert_allclose(w * a, b, rtol=1e-13)
    np.testing.assert_allclose(trajectory.losses, 0.5 * (SLOPE - b) ** 2, rtol=0, atol=1e-14)
    assert SLOPE - b[-1] < 1e-5 * SLOPE  # the run spans the whole drop, from b = 1e-4 to within 1e-5 of s


def test_gradient_descent_approaches_the_logistic_gradient_flow_at_first_order_in_eta():
    """Halving η halves the largest deviation from the logistic flow over the whole drop (measured
    ratios 1.9986, 1.9999, 2.0000 for η = 0.02 … 0.0025; deviation 0.0098 at η = 0.0025 on b ∈ [1e-4, 2])."""
    etas = [0.02, 0.01, 0.005, 0.0025]
    errors = []
    for eta in etas:
        trajectory = balanced_neuron_descent(eta, 6.0)
        b = trajectory.params[:, 0, 0] * trajectory.params[:, 0, 1]
        errors.append(float(np.max(np.abs(b - logistic_flow(trajectory.times)))))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    np.testing.assert_allclose(ratios, 2.0, rtol=5e-3)
    assert errors[-1] < 0.01


def test_gradient_descent_on_a_diagonal_network_agrees_with_exact_gradient_flow_at_first_order(regression_problem):
    """The book's regression with five jumps, α = 1e-3, up to t = 60: the largest loss difference from the exact
    ψ-coordinate gradient flow halves with η (measured ratios 1.9974, 1.9988, 1.9994; 6.6e-4 at η = 0.005)."""
    X, y = regression_problem
    alpha = 1e-3
    network, theta0 = diagonal.DiagonalLinearNetwork(5), diagonal.initial_theta(5, alpha=alpha)
    errors = []
    for eta in [0.04, 0.02, 0.01, 0.005]:
        descent = gradient_descent(network, (X, y), theta0, 60.0, eta=eta, num_samples=10**6)
        flow = diagonal.exact_flow(X, y, descent.times[-1], alpha=alpha, times=descent.times)
        errors.append(float(np.max(np.abs(descent.losses - flow.losses))))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    np.testing.assert_allclose(ratios, 2.0, rtol=5e-3)
    assert errors[-1] < 1e-3


def test_gradient_descent_on_a_diagonal_network_matches_a_plain_numpy_loop(regression_problem):
    """The same iteration written directly in (u, v): ``∂L/∂u = −v E[x r]``, ``∂L/∂v = −u E[x r]``."""
    X, y = regression_problem
    eta, num_steps = 0.05, 400
    theta0 = diagonal.initial_theta(5, alpha=0.1)
    descent = gradient_descent(diagonal.DiagonalLinearNetwork(5), (X, y), theta0, eta * num_steps, eta=eta,
                               num_samples=num_steps, record_params=True)
    u, v = theta0[:, 0].copy(), theta0[:, 1].copy()
    losses, params = [], []
    for step in range(num_steps + 1):
        residual = y - X @ (u * v)
        losses.append(0.5 * float(np.mean(residual**2)))
        params.append(np.stack([u, v], axis=1))
        minus_grad = X.T @ residual / X.shape[0]
        u, v = u + eta * v * minus_grad, v + eta * u * minus_grad
    np.testing.assert_allclose(descent.times, eta * np.arange(num_steps + 1), rtol=1e-14, atol=0)
    np.testing.assert_allclose(descent.losses, losses, rtol=1e-12)
    np.testing.assert_allclose(descent.params, params, rtol=1e-12, atol=1e-15)


def test_gradient_descent_that_diverges_raises_naming_eta():
    network = FeedForwardNetwork(d=1, H=1, c=1, activation="linear")
    data = (UNIT_SECOND_MOMENT_X, SLOPE * UNIT_SECOND_MOMENT_X[:, 0])
    with pytest.raises(FloatingPointError, match="gradient descent diverged at step .* with eta = 5.0"):
        gradient_descent(network, data, np.ones((1, 2)), 500.0, eta=5.0)


# ---------------------------------------------------------------------------------------------
# heavy-ball momentum


def test_momentum_descent_approaches_gradient_flow_at_the_mapped_time_at_first_order_in_eta():
    """The book's diagonal regression, α = 1e-3, up to t = 60 (two jumps), β = 0.9 as in the paper's
    modular notebook: the largest loss difference from gradient flow at ``t = kη/(1 − β)`` halves with η
    (measured 0.052, 0.028, 0.014 at η = 0.002, 0.001, 0.0005; ratios 1.888, 1.953).

    Its first-order term is known: heavy ball follows the modified flow of plain descent at the step
    ``η(1 + β)/(1 − β)²``, that is ``(1 + β)/(1 − β)`` times the first-order error of plain descent at the
    same step ``ε = η/(1 − β)``, started late by ``δ = βη/(1 − β)²`` (the velocity's build-up from zero).
    What remains after that prediction is second order: a quarter per halving of η (measured 0.0143,
    0.0039, 0.0010; ratios 3.70, 3.86)."""
    problem, alpha, beta = problems.get("diagonal"), 1e-3, 0.9
    network, data, theta0 = problem.network, problem.data, problem.initial_theta(alpha)
    errors, residuals = [], []
    for eta in [0.002, 0.001, 0.0005]:
        step, delay = eta / (1.0 - beta), eta * beta / (1.0 - beta) ** 2
        heavy_ball = gradient_descent(network, data, theta0, 60.0, eta=eta, momentum=beta, num_samples=10**6)
        times = heavy_ball.times
        np.testing.assert_allclose(np.diff(times), step, rtol=1e-12)
        plain = gradient_descent(network, data, theta0, 60.0, eta=step, num_samples=10**6)
        np.testing.assert_allclose(plain.times, times, rtol=1e-12)
        flow = gradient_flow(network, data, theta0, times[-1], times=times).losses
        errors.append(float(np.max(np.abs(heavy_ball.losses - flow))))
        late = times >= delay
        delayed_flow = gradient_flow(network, data, theta0, times[-1], times=times[late] - delay).losses
        predicted = (1.0 + beta) / (1.0 - beta) * (plain.losses - flow)[late] + (delayed_flow - flow[late])
        residuals.append(float(np.max(np.abs((heavy_ball.losses - flow)[late] - predicted))))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    residual_ratios = np.array(residuals[:-1]) / np.array(residuals[1:])
    # first order: the ratio per halving tends to 2, its O(η) shortfall halving with η (a second-order term)
    assert np.all((ratios > 1.8) & (ratios < 2.05)), ratios
    assert 2.0 - ratios[1] < (2.0 - ratios[0]) / 1.5, ratios
    # second order once the first-order term is predicted: the ratio tends to 4, from below by O(η)
    assert np.all((residual_ratios > 3.6) & (residual_ratios < 4.1)), residual_ratios


class LinearNeuron(TwoLayerNetwork):
    """One neuron ``f(x; θ) = θᵀx`` (κ = 1): the loss ``½E[(y − θᵀx)²]`` is exactly quadratic in θ."""

    kappa, num_neurons, output_dim = 1.0, 1, 1

    def __init__(self, d):
        self.input_dim = self.num_params = d

    def neuron_outputs(self, theta, X):
        return (X @ theta.T).T[:, :, None]

    def utility_gradient(self, theta, X, residual):
        grad = np.broadcast_to(X.T @ residual[:, 0] / X.shape[0], theta.shape).copy()
        return np.einsum("hp,hp->h", theta, grad), grad


def heavy_ball_closed_form(X, y, theta0, eta, beta, num_steps):
    """``θ_k`` and ``L(θ_k)`` of heavy ball on ``½E[(y − θᵀx)²]``, from the roots of each eigenmode.

    With ``Σ = XᵀX/n``, ``θ* = Σ⁻¹ E[xy]`` and ``e = θ − θ*``, a mode of eigenvalue λ follows
    ``e_{k+1} = (1 + β − ηλ) e_k − β e_{k−1}`` from ``e_1 = (1 − ηλ) e_0`` (``v_1 = λ e_0``), so
    ``e_k = A r₁^k + B r₂^k`` with ``r`` the roots of ``r² − (1 + β − ηλ) r + β = 0``.
    """
    n = X.shape[0]
    Sigma, b = X.T @ X / n, X.T @ y / n
    optimum = np.linalg.solve(Sigma, b)
    lam, V = np.linalg.eigh(Sigma)
    trace = 1.0 + beta - eta * lam
    sqrt_disc = np.sqrt((trace**2 - 4.0 * beta).astype(complex))
    r1, r2 = (trace + sqrt_disc) / 2.0, (trace - sqrt_disc) / 2.0
    e0 = V.T @ (theta0[0] - optimum)
    e1 = (1.0 - eta * lam) * e0
    A = (e1 - r2 * e0) / (r1 - r2)
    k = np.arange(num_steps + 1)[:, None]
    modes = (A * r1**k + (e0 - A) * r2**k).real
    theta = optimum + modes @ V.T
    losses = 0.5 * np.mean((y - theta @ X.T) ** 2, axis=1)
    return theta, losses


@pytest.mark.parametrize("beta", [0.0, 0.5, 0.9])
def test_momentum_descent_on_a_quadratic_loss_is_the_closed_form_linear_recursion(beta):
    """Every iterate and loss of 200 steps against the roots' closed form (the iteration and the closed
    form round differently; 1e-12 of the initial distance covers 200 steps of 1e-16 rounding)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3)) * np.array([1.0, 0.6, 0.3])
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=12)
    theta0, eta, num_steps = np.array([[0.4, 0.1, -0.3]]), 0.3, 200
    descent = gradient_descent(LinearNeuron(3), (X, y), theta0, eta * num_steps / (1.0 - beta), eta=eta,
                               momentum=beta, num_samples=10**6, record_params=True)
    theta, losses = heavy_ball_closed_form(X, y, theta0, eta, beta, num_steps)
    assert descent.times.size == num_steps + 1
    np.testing.assert_allclose(descent.times, eta / (1.0 - beta) * np.arange(num_steps + 1), rtol=1e-12)
    scale = float(np.linalg.norm(theta0[0] - theta[-1]))
    np.testing.assert_allclose(descent.params[:, 0], theta, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(descent.losses, losses, rtol=1e-13)


def test_momentum_descent_is_pytorchs_sgd_with_momentum():
    """The iterates of ``torch.optim.SGD(lr=η, momentum=β)``, the paper's modular notebook's optimizer, on a
    network of square neurons written in torch and differentiated by autograd (1e-12: rounding)."""
    import torch

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(10, 3)), rng.normal(size=(10, 2))
    network = FeedForwardNetwork(d=3, H=4, c=2, activation="square")
    theta0 = 0.5 * rng.normal(size=(4, 5))
    eta, beta, num_steps = 0.02, 0.9, 100
    descent = gradient_descent(network, (X, y), theta0, num_steps * eta / (1.0 - beta), eta=eta, momentum=beta,
                               num_samples=10**6, record_params=True)
    assert descent.times.size == num_steps + 1
    theta = torch.tensor(theta0, requires_grad=True)
    optimizer = torch.optim.SGD([theta], lr=eta, momentum=beta)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    for step in range(num_steps + 1):
        np.testing.assert_allclose(descent.params[step], theta.detach().numpy(), rtol=0, atol=1e-12)
        optimizer.zero_grad()
        outputs = (Xt @ theta[:, :3].T) ** 2 @ theta[:, 3:]
        loss = 0.5 * ((yt - outputs) ** 2).sum(1).mean()
        loss.backward()
        optimizer.step()


# ---------------------------------------------------------------------------------------------
# minibatch and online descent


def test_minibatch_descent_with_all_rows_is_full_batch_descent_bit_for_bit(regression_problem):
    X, y = regression_problem
    network, theta0 = diagonal.DiagonalLinearNetwork(5), diagonal.initial_theta(5, alpha=0.1)
    for momentum in [0.0, 0.9]:
        full = gradient_descent(network, (X, y), theta0, 20.0, eta=0.01, momentum=momentum, record_params=True)
        batch = gradient_descent(network, (X, y), theta0, 20.0, eta=0.01, momentum=momentum, batch_size=X.shape[0],
                                 seed=7, record_params=True)
        np.testing.assert_array_equal(batch.times, full.times)
        np.testing.assert_array_equal(batch.losses, full.losses)
        np.testing.assert_array_equal(batch.params, full.params)


def test_minibatch_descent_is_seeded_and_records_the_full_data_loss(regression_problem):
    """Same seed, same run; another seed, another run. The recorded loss is the full-data loss of the
    recorded parameters, whatever the batches."""
    X, y = regression_problem
    network, theta0 = diagonal.DiagonalLinearNetwork(5), diagonal.initial_theta(5, alpha=0.1)

    def run(seed):
        return gradient_descent(network, (X, y), theta0, 20.0, eta=0.01, momentum=0.5, batch_size=6, seed=seed,
                                num_samples=100, record_params=True)

    first, again, other = run(1), run(1), run(2)
    np.testing.assert_array_equal(again.params, first.params)
    np.testing.assert_array_equal(again.losses, first.losses)
    assert np.all(np.abs(other.losses[1:] - first.losses[1:]) > 0)
    beta = first.params[:, :, 0] * first.params[:, :, 1]
    np.testing.assert_allclose(first.losses, 0.5 * np.mean((y - beta @ X.T) ** 2, axis=1), rtol=1e-12)


class RowRecorder(FeedForwardNetwork):
    """A linear network ``f = a w x`` (d = 1) that records the inputs of every gradient it is asked for."""

    def __init__(self):
        super().__init__(d=1, H=1, c=1, activation="linear")
        self.batches = []

    def chart_residual_gradient(self, phi, X, y, weights):
        self.batches.append(X[:, 0].copy())
        return super().chart_residual_gradient(phi, X, y, weights)


def test_minibatches_use_every_row_once_per_epoch_the_last_batch_smaller():
    """n = 10 rows in batches of 4: each epoch is batches of 4, 4 and 2 rows that together hold every
    row once (a fresh permutation per epoch, as torch's DataLoader with shuffle=True)."""
    rows = np.arange(1.0, 11.0)
    network = RowRecorder()
    gradient_descent(network, (rows[:, None], 0.1 * rows), np.full((1, 2), 0.1), 12 * 1e-3, eta=1e-3, batch_size=4,
                     seed=0)
    assert [batch.size for batch in network.batches] == [4, 4, 2] * 4
    epochs = [np.concatenate(network.batches[i:i + 3]) for i in range(0, 12, 3)]
    for epoch in epochs:
        np.testing.assert_array_equal(np.sort(epoch), rows)
    assert len({tuple(epoch) for epoch in epochs}) == 4  # every epoch its own order


def gaussian_sampler(Sigma_xx, B):
    """Fresh rows ``x ~ N(0, Σ_xx)``, ``y = Bx``, as the paper's linear notebook draws them."""
    factor = np.linalg.cholesky(Sigma_xx)

    def sampler(rng, batch_size):
        X = rng.standard_normal((batch_size, factor.shape[0])) @ factor.T
        return X, X @ B.T

    return sampler


def test_online_descent_jump_times_approach_gradient_flows_as_the_batch_grows():
    """Chapter 04's commuting linear problem at α = 1e-3, online descent with fresh Gaussian batches
    (η = 0.002), the loss recorded on the population data (the population loss): the root-mean-square
    error of its first two jump times (midpoint crossings, at t = 2.64 and 3.72), over four seeds,
    against gradient flow's falls as the batch grows (measured 0.064, 0.023, 0.013 for batches of 4, 32,
    256; the floor is full-batch descent's own O(η) lag, 0.007)."""
    problem, alpha, eta, t_end = problems.get("linear-commuting"), 1e-3, 0.002, 4.5
    X, y = problem.data
    Sigma_xx = X.T @ X / X.shape[0]
    B = np.linalg.solve(X, y).T  # population_data has n = d rows and y = X Bᵀ exactly
    theta0, staircase = problem.initial_theta(alpha), problem.limit.in_units(GF_TIME, alpha)
    flow = gradient_flow(problem.network, problem.data, theta0, t_end)
    flow_jumps = staircase.compare(flow).trajectory_jump_times[:2]
    assert np.all(flow_jumps < t_end)
    errors = []
    for batch_size in [4, 32, 256]:
        squared = []
        for seed in range(4):
            online = gradient_descent(problem.network, problem.data, theta0, t_end, eta=eta, batch_size=batch_size,
                                      sampler=gaussian_sampler(Sigma_xx, B), seed=seed, num_samples=10**6)
            squared.append((staircase.compare(online).trajectory_jump_times[:2] - flow_jumps) ** 2)
        errors.append(math.sqrt(np.mean(squared)))
    assert errors[0] > errors[1] > errors[2], errors


def test_online_descent_is_seeded():
    network = FeedForwardNetwork(d=2, H=2, c=1)
    sampler = gaussian_sampler(np.eye(2), np.array([[1.0, -0.5]]))
    data = (np.sqrt(2.0) * np.eye(2), np.sqrt(2.0) * np.array([1.0, -0.5]))

    def run(seed):
        return gradient_descent(network, data, network.initial_theta(alpha=0.1), 2.0, eta=0.01, batch_size=8,
                                sampler=sampler, seed=seed, record_params=True)

    first, again, other = run(0), run(0), run(1)
    np.testing.assert_array_equal(again.params, first.params)
    assert np.all(other.params[1:] != first.params[1:])


# ---------------------------------------------------------------------------------------------
# bad input


def _small_run(**options):
    network = FeedForwardNetwork(d=2, H=1, c=1)
    data = (np.eye(2), np.array([1.0, 2.0]))
    return gradient_descent(network, data, np.full((1, 3), 0.1), 0.1, eta=0.01, **options)


def _sampler_returning(batch):
    return lambda rng, batch_size: batch


@pytest.mark.parametrize("options, error, message", [
    ({"momentum": "0.9"}, TypeError, r"^momentum must be a real number in \[0, 1\), got str"),
    ({"momentum": True}, TypeError, r"^momentum must be a real number in \[0, 1\), got bool"),
    ({"momentum": 1.0}, ValueError, r"^momentum must be in \[0, 1\), got 1.0"),
    ({"momentum": -0.1}, ValueError, r"^momentum must be in \[0, 1\), got -0.1"),
    ({"momentum": math.nan}, ValueError, r"^momentum must be in \[0, 1\), got nan"),
    ({"batch_size": 0}, ValueError, r"^batch_size must be an integer >= 1, got 0"),
    ({"batch_size": 1.5}, TypeError, r"^batch_size must be an integer, got float"),
    ({"batch_size": 3}, ValueError, r"^batch_size must be at most the number of rows of the data, n = 2, got 3"),
    ({"seed": -1}, ValueError, r"^seed must be an integer >= 0, got -1"),
    ({"seed": 0.5}, TypeError, r"^seed must be an integer, got float"),
    ({"sampler": "gaussian", "batch_size": 2}, TypeError, r"^sampler must be callable as sampler\(rng, batch_size\)"),
    ({"sampler": _sampler_returning(None)}, ValueError, r"^batch_size must be given with a sampler"),
    ({"sampler": _sampler_returning(np.ones((4, 3))), "batch_size": 4}, TypeError,
     r"^sampler must return a pair \(X, y\), got ndarray"),
    ({"sampler": _sampler_returning((np.ones((3, 2)), np.ones(3))), "batch_size": 4}, ValueError,
     r"^sampler must return batch_size = 4 rows, got 3"),
    ({"sampler": _sampler_returning((np.ones((4, 3)), np.ones(4))), "batch_size": 4}, ValueError,
     r"^sampler returned a bad batch: X must have 2 columns for this network, got 3"),
    ({"sampler": _sampler_returning((np.ones((4, 2)), np.full(4, np.nan))), "batch_size": 4}, ValueError,
     r"^sampler returned a bad batch: y contains NaN or infinite values"),
    ({"sampler": _sampler_returning(([[1.0, 2.0]], "y")), "batch_size": 1}, TypeError,
     r"^sampler returned a bad batch: y must be a numpy array or torch tensor, got str"),
])
def test_gradient_descent_rejects_bad_sampling_options_naming_them(options, error, message):
    with pytest.raises(error, match=message):
        _small_run(**options)


def test_online_descent_accepts_batches_larger_than_the_evaluation_set():
    sampler = gaussian_sampler(np.eye(2), np.array([[1.0, 2.0]]))
    trajectory = _small_run(sampler=sampler, batch_size=64, num_samples=5)
    assert trajectory.times.size == 6 and np.all(np.isfinite(trajectory.losses))
