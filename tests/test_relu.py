"""Specifications of `agf_lib.relu`: the weighted output, the smoothed surrogate and its limit ε → 0 (the
gradients and homogeneity of every activation are tests/test_activations.py's and tests/test_settings.py's),
the data-determined utility maximizers, and the orthogonal-data and XOR-like staircases."""

import math

import numpy as np
import pytest

import agf_lib
from agf_lib import relu


def _random_problem(seed, n=7, d=3, c=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, c))


NETWORKS = [
    lambda d, c: relu.ReLUNetwork(d, 5, c),
    lambda d, c: relu.ReLUNetwork(d, 5, c, bias=True),
    lambda d, c: relu.SmoothReLUNetwork(d, 5, c, eps=0.3),
    lambda d, c: relu.SmoothReLUNetwork(d, 5, c, eps=0.05, bias=True),
]


@pytest.mark.parametrize("make", NETWORKS)
def test_weighted_output_is_the_weighted_sum_of_neuron_outputs(make):
    X, _ = _random_problem(5)
    network = make(3, 2)
    theta = np.random.default_rng(6).normal(size=(5, network.num_params))
    weights = np.linspace(0.5, 2.0, 5)
    np.testing.assert_allclose(network.weighted_output(theta, X, weights),
                               np.einsum("h,hnc->nc", weights, network.neuron_outputs(theta, X)), rtol=1e-12)


@pytest.mark.parametrize("eps", [1e-1, 1e-3, 1e-6])
def test_smoothed_activation_lies_between_relu_and_relu_plus_eps_norm_log2(eps):
    X, _ = _random_problem(11, n=50)
    theta = np.random.default_rng(12).normal(size=(5, 4))
    gap = relu.SmoothReLUNetwork(3, 5, eps=eps).neuron_outputs(theta, X) - relu.ReLUNetwork(3, 5).neuron_outputs(theta, X)
    a, w_norm = theta[:, 3], np.linalg.norm(theta[:, :3], axis=1)
    scaled = gap[..., 0] / a[:, None]                               # σ_ε − relu, per neuron and sample
    assert np.all(scaled >= -1e-15)
    assert np.all(scaled <= eps * w_norm[:, None] * math.log(2) * (1 + 1e-12))


def test_initial_theta_follows_the_paper_and_is_seeded():
    network = relu.ReLUNetwork(3, 4000, 2, bias=True)
    theta = relu.initial_theta(network, alpha=1e-3, seed=1)
    assert theta.shape == (4000, 6)
    np.testing.assert_allclose(np.mean(np.sum(theta**2, axis=1)), 1e-6, rtol=0.03)
    np.testing.assert_allclose(np.var(theta[:, :4]), 1e-6 / 8, rtol=0.05)   # α²/(2(d+1))
    np.testing.assert_allclose(np.var(theta[:, 4:]), 1e-6 / 4, rtol=0.05)   # α²/(2c)
    np.testing.assert_array_equal(theta, network.initial_theta(alpha=1e-3, seed=1))
    assert not np.array_equal(theta, relu.initial_theta(network, alpha=1e-3, seed=2))
    with pytest.raises(TypeError, match="positional argument"):
        relu.initial_theta(network, 1e-3)                           # alpha is keyword-only


def test_orthogonal_staircase_levels_and_rescaled_jump_times_in_closed_form():
    staircase = relu.orthogonal_staircase([3.0, -2.0, 1.5, -1.0])
    np.testing.assert_allclose(staircase.losses, [16.25 / 8, 5 / 8, 0.0], rtol=1e-15)
    np.testing.assert_allclose(staircase.times, [0.0, 4 / math.hypot(3, 1.5), 4 / math.hypot(2, 1)], rtol=1e-15)
    assert staircase.order == [(1, (0, 2)), (-1, (1, 3))]
    # each level's outputs: the fitted samples' targets, zero elsewhere
    np.testing.assert_array_equal(np.hstack(staircase.predictors), [[0, 3, 3], [0, 0, -2], [0, 1.5, 1.5], [0, 0, -1]])


def test_xor_staircase_takes_one_sample_per_jump_at_the_maximizers_utility():
    magnitudes = [1.0, 0.8, 0.6, 0.4]
    X, y = relu.xor_data(magnitudes)
    np.testing.assert_array_equal(y, [1.0, -0.8, -0.6, 0.4])
    staircase = relu.xor_staircase(magnitudes)
    # the four best points of the utility, one per sample, each on a kink: values sqrt(2) m_k / 8
    best = relu.utility_maximizers(X, y)[:4]
    np.testing.assert_allclose([value for value, *_ in best], math.sqrt(2) * np.array(magnitudes) / 8, rtol=1e-14)
    np.testing.assert_allclose(staircase.times[1:], [1 / (2 * value) for value, *_ in best], rtol=1e-14)
    # level k: the samples not yet fitted, 0.5 E[y^2] over them
    levels = [np.sum(np.square(magnitudes[k:])) / 8 for k in range(5)]
    np.testing.assert_allclose(staircase.losses, levels, rtol=1e-15, atol=1e-17)
    assert staircase.order == [0, 1, 2, 3]
    np.testing.assert_array_equal(staircase.predictors[2].ravel(), [1.0, -0.8, 0.0, 0.0])
    # equal magnitudes: the chapter's XOR, four jumps at the same rescaled time 2 sqrt(2)
    equal = relu.xor_staircase()
    np.testing.assert_allclose(equal.times[1:], 2 * math.sqrt(2), rtol=1e-15)
    np.testing.assert_allclose(equal.losses, [0.5, 0.375, 0.25, 0.125, 0.0], rtol=1e-15)


def test_agf_on_orthogonal_data_matches_the_closed_form():
    X, y = relu.orthogonal_data([3.0, -2.0, 1.5, -1.0])
    network = relu.SmoothReLUNetwork(2, 8, eps=1e-4)
    alpha = 1e-12
    theta0 = network.initial_theta(alpha=alpha, seed=0)
    agf = agf_lib.alternating_gradient_flow(network, (X, y), theta0, method="LSODA", cost_tol=1e-6, max_jumps=2)
    limit = relu.orthogonal_staircase(y)
    np.testing.assert_allclose(agf.losses, limit.losses, atol=1e-9)
    # first jump: log(1/ν)/(2Ū*) for the activating neuron's initial norm ν, up to the alignment time
    nu = np.linalg.norm(theta0[agf.order[0]])
    np.testing.assert_allclose(agf.times[1], math.log(1 / nu) * limit.times[1], rtol=1e-3)
    np.testing.assert_allclose(agf.times / math.log(1 / alpha), limit.times, rtol=0.01)
    w = agf.states[1][agf.order[0], :2]
    cosine = w @ [3, 1.5] / np.linalg.norm(w) / math.hypot(3, 1.5)
    assert math.degrees(math.acos(min(cosine, 1.0))) < 1e-3      # a cosine may round to 1 + 2e-16


def test_region_maximum_matches_dense_search_on_the_circle():
    rng = np.random.default_rng(13)
    X, r = rng.normal(size=(6, 2)), rng.normal(size=6)
    phi = np.linspace(0, 2 * np.pi, 400001)
    W = np.stack([np.cos(phi), np.sin(phi)], axis=1)
    g = np.maximum(W @ X.T, 0) @ r / 6                             # E[r relu(wᵀx)] on the unit circle
    best = relu.utility_maximizers(X, r)[0]
    np.testing.assert_allclose(best[0], np.abs(g).max() / 2, rtol=1e-9)
    k = np.argmax(np.abs(g))
    w = best[1][:2] / np.linalg.norm(best[1][:2])
    assert np.arccos(min(1.0, abs(w @ W[k]))) < 2 * np.pi / 400000
    assert np.sign(best[1][2]) == np.sign(g[k])


def test_xor_maximizers_sit_on_kinks_with_utility_sqrt2_over_8():
    X, y = relu.xor_data()
    found = relu.utility_maximizers(X, y)
    top = [item for item in found if abs(item[0] - math.sqrt(2) / 8) < 1e-12]
    assert len(top) == 4
    for _, theta, _, sign in top:
        w = theta[:2]
        assert np.min(np.abs(X @ w)) < 1e-12                        # two samples exactly on the kink
        np.testing.assert_allclose(np.abs(w), 0.5, rtol=1e-12)
        assert sign == np.sign(w[0] * w[1])                         # a > 0 on the y = +1 diagonal


def test_region_vector_is_the_linear_piece_of_the_utility():
    X, r = _random_problem(14, n=9)
    r = r[:, 0]
    w = np.random.default_rng(15).normal(size=3)
    pattern = X @ w > 0
    np.testing.assert_allclose(w @ relu.region_vector(X, r, pattern), np.maximum(X @ w, 0) @ r / 9, rtol=1e-12)


def test_surrogate_approaches_relu_descent_as_eps_vanishes():
    """GF on the surrogate against small-step descent on the true ReLU network (XOR-like data, α = 1e-3):
    the first loss-crossing time and the first plateau's level converge as ε → 0."""
    X, y = relu.xor_data()
    theta0 = relu.initial_theta(relu.ReLUNetwork(2, 8), alpha=1e-3, seed=0)
    descent = agf_lib.gradient_descent(relu.ReLUNetwork(2, 8), (X, y), theta0, 30.0, eta=1e-3, num_samples=30000)

    def crossing(trajectory, level=0.4375):
        j = np.nonzero(trajectory.losses < level)[0][0]
        return np.interp(level, trajectory.losses[[j, j - 1]], trajectory.times[[j, j - 1]])

    errors, level_errors = [], []
    for eps in (1e-2, 1e-3, 1e-4):
        network = relu.SmoothReLUNetwork(2, 8, eps=eps)
        flow = agf_lib.gradient_flow(network, (X, y), theta0, 30.0, method="LSODA", times=descent.times)
        errors.append(abs(crossing(flow) / crossing(descent) - 1))
        plateau = crossing(flow) + 0.3 * (crossing(flow, 0.3125) - crossing(flow))   # on the level 0.375
        level_errors.append(abs(flow.loss_at(plateau) - descent.loss_at(plateau)))
    assert errors[0] > errors[1] and errors[2] < 2e-3
    assert level_errors[0] > level_errors[1] > level_errors[2]


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: relu.ReLUNetwork(0, 3), ValueError, "^d must be an integer >= 1, got 0"),
        (lambda: relu.ReLUNetwork(2, 3, bias=1), TypeError, "bias must be True or False"),
        (lambda: relu.SmoothReLUNetwork(2, 3, eps=0.0), ValueError, r"eps must be in \(0, 1\]"),
        (lambda: relu.SmoothReLUNetwork(2, 3, eps="x"), TypeError, "eps must be a real number"),
        (lambda: relu.initial_theta(agf_lib.FeedForwardNetwork(2, 3), alpha=1.0), TypeError, "network must be"),
        (lambda: relu.initial_theta(relu.ReLUNetwork(2, 3), alpha=-1.0), ValueError, "alpha must be"),
        (lambda: relu.orthogonal_data([1.0, 2.0, 3.0]), ValueError, "targets must be a 1-D array of even length"),
        (lambda: relu.orthogonal_data([1.0, np.nan]), ValueError, "targets contains NaN"),
        (lambda: relu.orthogonal_staircase([1.0, 2.0]), ValueError, "targets must not give both"),
        (lambda: relu.xor_data([1.0, 0.5, 0.0, 1.0]), ValueError, "magnitudes must be 4 positive numbers"),
        (lambda: relu.xor_staircase([1.0, 2.0]), ValueError, "magnitudes must be 4 positive numbers"),
        (lambda: relu.region_vector(np.eye(2), [1.0, 2.0, 3.0], [True, False]), ValueError, "residual must have"),
        (lambda: relu.region_vector(np.eye(2), [1.0, 2.0], [1, 0]), ValueError, "pattern must be a boolean"),
        (lambda: relu.region_maximum(np.eye(2), [1.0, 2.0], np.array([True, False]), sign=0), ValueError,
         "sign must be"),
        (lambda: relu.activation_patterns(np.ones(3)), ValueError, r"X must have shape \(n, d\)"),
        (lambda: relu.activation_patterns(np.eye(2), num_samples=0), ValueError, "num_samples must be"),
    ],
)
def test_bad_inputs_raise_named_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
