"""The setting contract and the network of every standard problem, one property per test.

Driven by the registry (:mod:`agf_lib.problems`): a new problem is checked by every test here without
an edit. Each property is a known answer, not the code compared with itself:

* the closed-form utility gradient against torch autograd of the neuron's output, written here in torch
  from the paper's formula (:data:`TORCH_NEURONS`, one entry per network class);
* Euler's identity for a neuron homogeneous of degree κ: ``⟨θ_i, ∇U_i⟩ = κ U_i``, and outputs that scale
  like ``c^κ``;
* the levels of the α → 0 staircase are the losses of its predictors' outputs;
* every setting module's :class:`~agf_lib.setting.Setting` has the contract's names and argument
  orders, and refuses bad input naming the argument.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import agf_lib
from agf_lib import attention, deep_diagonal, diagonal, groups, linear, modular, problems, relu
from agf_lib.setting import Setting

NAMES = problems.names()
SETTING_MODULES = (diagonal, deep_diagonal, linear, attention, relu, modular, groups)


def _diagonal(theta, X, network):                 # neuron i: u_i v_i x_i
    return ((theta[:, 0] * theta[:, 1])[:, None] * X.T)[:, :, None]


def _deep_diagonal(theta, X, network):            # neuron i: (Π_l u_{i,l}) x_i
    return (theta.prod(1)[:, None] * X.T)[:, :, None]


def _rank_one(theta, X, network):                 # a_h (w_hᵀ x)
    d = network.input_dim
    return (theta[:, :d] @ X.T)[:, :, None] * theta[:, None, d:]


def _smooth_relu(theta, X, network):              # a ε‖w‖ softplus(wᵀx / (ε‖w‖))
    d = network.input_dim
    w, a = theta[:, :d], theta[:, d:]
    width = network.eps * torch.linalg.norm(w, dim=1, keepdim=True)
    return (width * torch.nn.functional.softplus((w @ X.T) / width))[:, :, None] * a[:, None, :]


def _attention_head(theta, X, network):           # V_h K_hᵀ Φ Q_h
    d = network.d
    Phi = X.reshape(-1, d, d)
    bilinear = torch.einsum("hi,nij,hj->hn", theta[:, 1 : 1 + d], Phi, theta[:, 1 + d :])
    return (theta[:, 0, None] * bilinear)[..., None]


def _power(theta, X, network):                    # w (Σ_j ⟨u^(j), x_j⟩)^k
    k, m = network.kappa - 1, network.input_dim
    return ((theta[:, :m] @ X.T) ** k)[:, :, None] * theta[:, None, m:]


TORCH_NEURONS = {
    "DiagonalLinearNetwork": _diagonal,
    "DeepDiagonalNetwork": _deep_diagonal,
    "FullyConnectedLinearNetwork": _rank_one,
    "SmoothReLUNetwork": _smooth_relu,
    "LinearAttentionNetwork": _attention_head,
    "QuadraticModularNetwork": _power,
    "CompositionNetwork": _power,
}


def _random_state(name, seed=0):
    """A problem's network, data, random parameters of order one and a residual away from zero."""
    problem = problems.get(name)
    network, (X, y) = problem.network, problem.data
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(network.num_neurons, network.num_params)) / np.sqrt(network.num_params)
    residual = y - 0.5 * network(theta, X) + 0.1 * rng.normal(size=y.shape)
    return network, X, theta, residual


@pytest.mark.parametrize("name", NAMES)
def test_closed_form_utility_gradient_is_autograds_of_the_papers_neuron(name):
    network, X, theta, residual = _random_state(name)
    neuron = TORCH_NEURONS[type(network).__name__]
    theta_t = torch.tensor(theta, requires_grad=True)
    outputs = neuron(theta_t, torch.tensor(X), network)
    U_ref = torch.einsum("hnc,nc->h", outputs, torch.tensor(residual)) / X.shape[0]
    (grad_ref,) = torch.autograd.grad(U_ref.sum(), theta_t)
    U, grad = network.utility_gradient(theta, X, residual)
    U_ref, grad_ref = U_ref.detach().numpy(), grad_ref.numpy()
    # the same sums in another order: a few ulps of the largest term
    np.testing.assert_allclose(outputs.detach().numpy(), network.neuron_outputs(theta, X), rtol=1e-12,
                               atol=1e-12 * np.abs(outputs.detach().numpy()).max())
    np.testing.assert_allclose(U, U_ref, rtol=1e-11, atol=1e-12 * np.abs(U_ref).max())
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-11, atol=1e-12 * np.abs(grad_ref).max())
    np.testing.assert_allclose(agf_lib.utility(network, theta, X, residual), U_ref, rtol=1e-11,
                               atol=1e-12 * np.abs(U_ref).max())


@pytest.mark.parametrize("name", NAMES)
def test_every_neuron_is_homogeneous_of_degree_kappa(name):
    network, X, theta, residual = _random_state(name, seed=1)
    kappa, scales = network.kappa, np.linspace(0.3, 2.1, network.num_neurons)
    outputs = network.neuron_outputs(theta, X)
    scaled = network.neuron_outputs(theta * scales[:, None], X)
    np.testing.assert_allclose(scaled, outputs * scales[:, None, None] ** kappa, rtol=1e-11,
                               atol=1e-12 * np.abs(scaled).max())
    U, grad = network.utility_gradient(theta, X, residual)          # Euler: ⟨θ_i, ∇U_i⟩ = κ U_i
    np.testing.assert_allclose((theta * grad).sum(1), kappa * U, rtol=1e-11, atol=1e-12 * np.abs(U).max())


@pytest.mark.parametrize("name", NAMES)
def test_the_limit_levels_are_the_losses_of_their_predictors(name):
    problem = problems.get(name)
    X, y = problem.data
    limit = problem.limit
    assert limit.predictors is not None and limit.states is None
    for predictor, level in zip(limit.predictors, limit.losses):
        outputs = problem.level_outputs(predictor)
        assert outputs.shape == y.shape
        np.testing.assert_allclose(0.5 * np.mean(np.sum((y - outputs) ** 2, axis=1)), level, rtol=1e-9,
                                   atol=1e-12 * limit.losses[0])


def _settings():
    """Every setting module's Setting subclasses."""
    return {module.__name__: [value for value in vars(module).values()
                              if isinstance(value, type) and issubclass(value, Setting) and value is not Setting
                              and value.__module__ == module.__name__]
            for module in SETTING_MODULES}


CONTRACT = ("data", "initial_theta", "agf_staircase", "limit_staircase", "level_outputs")


def test_every_setting_module_has_one_setting_with_the_contracts_signatures():
    for module, classes in _settings().items():
        assert len(classes) == 1, f"{module} defines {len(classes)} Setting subclasses"
        (cls,) = classes
        assert cls.__name__ in vars(__import__(module, fromlist=["__all__"])).get("__all__", ())
        for method in CONTRACT:
            ours, base = inspect.signature(getattr(cls, method)), inspect.signature(getattr(Setting, method))
            assert list(ours.parameters.values()) == list(base.parameters.values()), (module, method)


@pytest.mark.parametrize("name", NAMES)
def test_the_problem_is_its_settings(name):
    problem = problems.get(name)
    setting = problem.setting
    assert problem.network is setting.network and problem.options is setting.options
    X, y = setting.data()
    assert X.dtype == y.dtype == np.float64 and X.ndim == y.ndim == 2 and X.shape[0] == y.shape[0]
    assert y.shape[1] == setting.network.output_dim
    theta = setting.initial_theta(alpha=1e-3, seed=0)
    assert theta.shape == (setting.network.num_neurons, setting.network.num_params)
    np.testing.assert_array_equal(theta, problem.initial_theta(1e-3))
    large, small = problem.alphas
    assert 0 < small < large < 1
    if setting.has_closed_form:
        staircase = setting.agf_staircase(alpha=small)
        assert str(staircase.time_unit) == "t" and staircase.predictors is not None
        np.testing.assert_array_equal(staircase.times, problem.closed_form(small).times)
    else:
        assert problem.closed_form is None
        with pytest.raises(NotImplementedError, match="no closed-form staircase"):
            setting.agf_staircase(alpha=small)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("arguments,error,message", [
    ({}, TypeError, "exactly one of alpha and initial_norms"),
    ({"alpha": 1e-3, "initial_norms": 1e-3}, TypeError, "exactly one of alpha and initial_norms"),
    ({"alpha": -1e-3}, ValueError, "alpha"),
    ({"alpha": "small"}, TypeError, "alpha"),
    ({"initial_norms": [1e-3, -1e-3]}, ValueError, "initial_norms"),
    ({"initial_norms": "small"}, TypeError, "initial_norms"),
])
def test_agf_staircase_refuses_bad_input_naming_it(name, arguments, error, message):
    setting = problems.get(name).setting
    if not setting.has_closed_form and len(arguments) == 1:
        error, message = NotImplementedError, "no closed-form staircase"
    with pytest.raises(error, match=message):
        setting.agf_staircase(**arguments)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("arguments,error,message", [
    ({"alpha": 0.0}, ValueError, "alpha"),
    ({"alpha": float("nan")}, ValueError, "alpha"),
    ({"alpha": "small"}, TypeError, "alpha"),
    ({"alpha": 1e-3, "seed": -1}, ValueError, "seed"),
    ({"alpha": 1e-3, "seed": 1.5}, TypeError, "seed"),
])
def test_initial_theta_refuses_bad_input_naming_it(name, arguments, error, message):
    with pytest.raises(error, match=message):
        problems.get(name).setting.initial_theta(**arguments)
