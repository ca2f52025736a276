"""Specifications of `agf_lib.gradient_descent`: fixed-step gradient descent ``Θ ← Θ − η∇L(Θ)``.

Known answers: a balanced linear neuron ``f = a w x`` with ``E[x²] = 1`` and ``y = s x`` keeps ``a = w``,
so its product ``b = a w`` follows the exact discrete map ``b ← b (1 + η(s − b))²`` and, as η → 0, the
logistic gradient flow ``ḃ = 2b(s − b)``; gradient descent is Euler's method for gradient flow, so
its error is first order in η.
"""

import math

import numpy as np
import pytest

from agf_lib import FeedForwardNetwork, diagonal, gradient_descent

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
