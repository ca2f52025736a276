"""Specifications of the activation registry of `agf_lib.network` and the one closed-form gradient of the
neuron a·σ(w, x̃) that `FeedForwardNetwork` (and the ReLU networks built on it) computes for all of them.

Known answers: torch autograd of each activation written out here (not the library's), Euler's identity
⟨θ_i, ∇U_i⟩ = κ U_i of a homogeneous neuron, explicit powers (wᵀx)^k, and the bias as an appended input 1.
Everything in float64 with fixed seeds."""

import math

import numpy as np
import pytest
import torch

from agf_lib import FeedForwardNetwork, relu
from agf_lib.activations import ACTIVATIONS, Activation, lifted_inputs, power, smooth_relu


def _torch_sigma(activation):
    """σ(w, x̃) of each activation, written in torch from its definition: (H, k) and (n, k) to (H, n)."""
    if activation.name == "relu":
        return lambda w, Xt: torch.relu(w @ Xt.T)
    if activation.name == "smooth_relu":
        def smooth(w, Xt):
            width = activation.eps * torch.linalg.norm(w, dim=1, keepdim=True)
            return width * torch.logaddexp(torch.zeros(()), (w @ Xt.T) / width)
        return smooth
    return lambda w, Xt: (w @ Xt.T) ** activation.k


# every kind of entry: the registry's names, the power family beyond it, and the smoothed ReLU at two widths
CASES = [("linear", 2), ("relu", 2), ("square", 3), (power(3), 4), (power(5), 6), ("power4", 5),
         (smooth_relu(0.3), 2), (smooth_relu(0.05), 2)]
IDS = ["linear", "relu", "square", "power3", "power5", "power4-named", "smooth0.3", "smooth0.05"]


def _problem(activation, bias, c, seed, d=3, H=5, n=11):
    network = FeedForwardNetwork(d, H, c, activation=activation, bias=bias)
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(H, network.num_params))
    return network, theta, rng.normal(size=(n, d)), rng.normal(size=(n, c))


def _torch_outputs(network, theta, X):
    """Every neuron's output a_i σ(w_i, x̃_n) in torch, shape (H, n, c)."""
    sigma = _torch_sigma(network.activation_function)
    Xt = torch.from_numpy(lifted_inputs(X, network.bias))
    k = network.weight_dim
    return sigma(theta[:, :k], Xt)[:, :, None] * theta[:, None, k:]


@pytest.mark.parametrize("activation, kappa", CASES, ids=IDS)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("c", [1, 2])
def test_utility_gradient_matches_torch_autograd_of_the_written_out_activation(activation, kappa, bias, c):
    network, theta, X, residual = _problem(activation, bias, c, seed=1)
    U, grad = network.utility_gradient(theta, X, residual)
    theta_t = torch.tensor(theta, requires_grad=True)
    U_ref = torch.einsum("hnc,nc->h", _torch_outputs(network, theta_t, X), torch.from_numpy(residual)) / X.shape[0]
    (grad_ref,) = torch.autograd.grad(U_ref.sum(), theta_t)
    np.testing.assert_allclose(U, U_ref.detach().numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grad, grad_ref.numpy(), rtol=1e-12, atol=1e-15)
    # the engines' path: the residual and the gradient at it, in one evaluation
    weights = np.linspace(0.5, 2.0, network.num_neurons)
    y = np.random.default_rng(2).normal(size=(X.shape[0], c))
    with torch.no_grad():
        output_ref = torch.einsum("h,hnc->nc", torch.from_numpy(weights),
                                  _torch_outputs(network, torch.from_numpy(theta), X)).numpy()
    r, grad_at_r = network.chart_residual_gradient(theta, X, y, weights)
    np.testing.assert_allclose(r, y - output_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad_at_r, network.utility_gradient(theta, X, y - output_ref)[1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("activation, kappa", CASES, ids=IDS)
@pytest.mark.parametrize("bias", [False, True])
def test_every_neuron_satisfies_eulers_identity_of_degree_kappa(activation, kappa, bias):
    """⟨θ_i, ∇U_i(θ_i)⟩ = κ U_i(θ_i) for a utility homogeneous of degree κ, to rounding of the sum."""
    network, theta, X, residual = _problem(activation, bias, 2, seed=3)
    assert network.kappa == kappa
    U, grad = network.utility_gradient(theta, X, residual)
    terms = theta * grad
    np.testing.assert_allclose(terms.sum(1), kappa * U, rtol=0, atol=1e-13 * np.abs(terms).sum(1).max())
    # and the outputs scale by s^κ
    for s in (1e-3, 7.0):
        np.testing.assert_allclose(network.neuron_outputs(s * theta, X), s**kappa * network.neuron_outputs(theta, X),
                                   rtol=1e-12, atol=0)


@pytest.mark.parametrize("activation, kappa", CASES, ids=IDS)
def test_activation_gradient_coefficients_give_torch_autograds_gradient_in_w(activation, kappa):
    """evaluate(w, x̃) = (σ, A, B) with ∇_w σ(w_i, x̃_n) = A_in x̃_n + B_in w_i, sample by sample."""
    network = FeedForwardNetwork(3, 4, activation=activation)
    rng = np.random.default_rng(5)
    w, Xt = rng.normal(size=(4, 3)), rng.normal(size=(6, 3))
    values, along_x, along_w = network.activation_function.evaluate(w, Xt)
    sigma = _torch_sigma(network.activation_function)
    w_t = torch.tensor(w, requires_grad=True)
    reference = sigma(w_t, torch.from_numpy(Xt))
    np.testing.assert_allclose(values, reference.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(network.activation_function.values(w, Xt), values, rtol=1e-13)
    for n in range(Xt.shape[0]):
        (grad_w,) = torch.autograd.grad(reference[:, n].sum(), w_t, retain_graph=True)
        closed = along_x[:, n, None] * Xt[n] + (0.0 if along_w is None else along_w[:, n, None] * w)
        np.testing.assert_allclose(closed, grad_w.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_power_k_outputs_are_explicit_powers_of_the_preactivation(k):
    rng = np.random.default_rng(k)
    network = FeedForwardNetwork(4, 3, 2, activation=power(k))
    theta, X = rng.normal(size=(3, 6)), rng.normal(size=(9, 4))
    explicit = np.stack([np.power(X @ theta[i, :4], k)[:, None] * theta[i, 4:] for i in range(3)])
    np.testing.assert_allclose(network.neuron_outputs(theta, X), explicit, rtol=1e-13)
    np.testing.assert_allclose(network(theta, X), explicit.sum(0), rtol=1e-13)
    weights = np.array([0.5, 1.0, 3.0])
    np.testing.assert_allclose(network.weighted_output(theta, X, weights), np.einsum("h,hnc->nc", weights, explicit),
                               rtol=1e-13)
    stack = np.stack([theta, 2 * theta])
    np.testing.assert_allclose(network.batched_weighted_output(stack, X, np.stack([weights, weights])),
                               np.stack([np.einsum("h,hnc->nc", weights, explicit * s ** (k + 1)) for s in (1, 2)]),
                               rtol=1e-13)
    assert network.kappa == k + 1


def test_power_spellings_and_the_registry():
    assert sorted(ACTIVATIONS) == ["linear", "relu", "square"]
    assert all(isinstance(a, Activation) for a in ACTIVATIONS.values())
    assert power(1) == ACTIVATIONS["linear"] and power(2) == ACTIVATIONS["square"]
    network = FeedForwardNetwork(3, 2, activation="power3")
    assert network.activation_function == power(3) and network.activation == "power3" and network.kappa == 4
    assert repr(network) == "FeedForwardNetwork(d=3, H=2, c=1, activation='power3')"
    assert FeedForwardNetwork(3, 2, activation=power(2)).activation == "square"
    assert repr(FeedForwardNetwork(2, 1, activation=smooth_relu(0.01), bias=True)) == \
        "FeedForwardNetwork(d=2, H=1, c=1, activation=smooth_relu(eps=0.01), bias=True)"
    assert hash(power(3)) == hash(power(3))
    with pytest.raises(AttributeError):
        power(3).k = 4                                              # frozen: a network's activation cannot change


@pytest.mark.parametrize("activation, kappa", CASES, ids=IDS)
def test_bias_is_a_constant_input_appended_to_x(activation, kappa):
    network, theta, X, residual = _problem(activation, True, 2, seed=7)
    lifted = FeedForwardNetwork(4, 5, 2, activation=activation)     # d + 1 inputs, the last one 1
    Xt = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
    np.testing.assert_array_equal(network.neuron_outputs(theta, X), lifted.neuron_outputs(theta, Xt))
    for ours, theirs in zip(network.utility_gradient(theta, X, residual), lifted.utility_gradient(theta, Xt, residual)):
        np.testing.assert_array_equal(ours, theirs)
    assert network.weight_dim == 4 and network.num_params == 6


def test_smooth_relu_is_zero_with_a_finite_gradient_at_zero_weights():
    w, Xt = np.zeros((2, 3)), np.random.default_rng(8).normal(size=(5, 3))
    values, along_x, along_w = smooth_relu(0.1).evaluate(w, Xt)
    np.testing.assert_array_equal(values, 0.0)
    assert np.all(np.isfinite(along_x)) and np.all(np.isfinite(along_w))


def test_relu_networks_are_feedforward_networks_with_the_registry_activations():
    assert relu.ReLUNetwork(3, 2, bias=True).activation_function == ACTIVATIONS["relu"]
    smooth = relu.SmoothReLUNetwork(3, 2, eps=1e-3)
    assert isinstance(smooth, FeedForwardNetwork) and smooth.activation_function == smooth_relu(1e-3)
    assert smooth.eps == 1e-3 and smooth.kappa == 2
    assert repr(smooth) == "SmoothReLUNetwork(d=3, H=2, c=1, eps=0.001, bias=False)"


@pytest.mark.parametrize("make, error, message", [
    (lambda: FeedForwardNetwork(3, 2, activation="tanh"), ValueError,
     r"^activation must be one of \['linear', 'relu', 'square'\], got 'tanh' \(or 'power<k>'"),
    (lambda: FeedForwardNetwork(3, 2, activation="power0"), ValueError, "^activation must be one of"),
    (lambda: FeedForwardNetwork(3, 2, activation="power2.5"), ValueError, "^activation must be one of"),
    (lambda: FeedForwardNetwork(3, 2, activation=3), TypeError, "^activation must be a name or an Activation"),
    (lambda: FeedForwardNetwork(3, 2, bias=1), TypeError, "^bias must be True or False"),
    (lambda: power(0), ValueError, "^k must be an integer >= 1, got 0"),
    (lambda: power(2.0), TypeError, "^k must be an integer, got float"),
    (lambda: smooth_relu(0.0), ValueError, r"^eps must be in \(0, 1\]"),
    (lambda: smooth_relu(math.nan), ValueError, r"^eps must be in \(0, 1\]"),
    (lambda: smooth_relu("x"), TypeError, "^eps must be a real number"),
])
def test_bad_activations_raise_errors_naming_the_argument(make, error, message):
    with pytest.raises(error, match=message):
        make()
