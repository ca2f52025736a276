"""Specifications of the structured population loss (`agf_lib.structured_loss`).

On the full dataset of a template the modular and group-composition networks evaluate the loss, the
utilities at its residual and their gradients from functions on the group alone. Every check compares them
with the dense closed forms of the same networks (`structured=False`, the reference, itself checked against
finite differences and Fourier-domain sample means in `test_groups.py` and `test_modular.py`), evaluated
over all |G|^k rows: on random parameters and weights, for cyclic groups of odd and even order, a dihedral
group, A4 and the quaternions, k = 2 and 3, generic templates (every irrep present) and sparse ones (a few
frequencies or irreps, where the evaluation works in the smaller spaces they span); then whole gradient-flow
runs both ways, the recognition of the dataset, and the memory an evaluation takes.
"""

import tracemalloc

import numpy as np
import pytest

from agf_lib import dft, gradient_flow, groups, modular, structured_loss
from agf_lib.network import utility

RTOL = 1e-12

GROUPS = {
    "Z7": lambda: groups.cyclic(7),
    "Z8": lambda: groups.cyclic(8),
    "D5": lambda: groups.dihedral(5),
    "A4": groups.alternating4,
    "Q8": groups.quaternion,
}


def generic_template(G, seed=0):
    x = np.random.default_rng(seed).normal(size=G.order)
    return x - x.mean()


def sparse_template(G, seed=0):
    """A centred template on one or two irrep classes only (the last ones): a small span of translates."""
    classes = list(range(G.num_classes))[-2:] if G.num_classes > 2 else [G.num_classes - 1]
    return groups.class_component(generic_template(G, seed), G, classes)


def dense_reference(network, theta, X, y, weights):
    """Loss, utilities at its residual and their gradients of ``Σ_i weights_i f_i``, over every row, by the
    dense closed forms of ``network`` (built with ``structured=False``)."""
    assert network.structured is False
    residual = y - network.weighted_output(theta, X, weights)
    utilities, gradients = network.utility_gradient(theta, X, residual)
    assert_relative(utilities, utility(network, theta, X, residual), 1e-13)
    return 0.5 * float((residual**2).sum()) / X.shape[0], utilities, gradients


def assert_relative(value, reference, rtol=RTOL):
    value, reference = np.asarray(value), np.asarray(reference)
    scale = np.abs(reference).max()
    assert np.abs(value - reference).max() <= rtol * scale


@pytest.mark.parametrize("name", sorted(GROUPS))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("template", ["generic", "sparse"])
def test_structured_evaluation_equals_the_dense_one(name, k, template):
    G = GROUPS[name]()
    x = (generic_template if template == "generic" else sparse_template)(G, seed=k)
    X, y = groups.dataset(x, G, k=k)
    network = groups.CompositionNetwork(G, 5, k=k)
    rng = np.random.default_rng(11)
    theta = rng.normal(size=(5, network.num_params))
    weights = rng.uniform(0.2, 2.0, 5)
    structured = network.structured_evaluation(theta, X, y, weights)
    dense = groups.CompositionNetwork(G, 5, k=k, structured=False)
    for value, reference in zip(structured, dense_reference(dense, theta, X, y, weights)):
        assert_relative(value, reference)


@pytest.mark.parametrize("p", [7, 8, 13])
@pytest.mark.parametrize("template", ["generic", "sparse"])
def test_modular_network_structured_equals_dense(p, template):
    if template == "generic":
        x = generic_template(groups.cyclic(p), seed=p)
    else:
        magnitudes = np.zeros(p // 2)
        magnitudes[[0, p // 2 - 1]] = [1.0, 0.6]                  # frequency 1 and the last (p/2 for even p)
        x = dft.template(p, magnitudes, seed=1)
    X, y = modular.dataset(x)
    network = modular.QuadraticModularNetwork(p, 6)
    rng = np.random.default_rng(p)
    theta = rng.normal(size=(6, 3 * p))
    weights = rng.uniform(0.2, 2.0, 6)
    dense = modular.QuadraticModularNetwork(p, 6, structured=False)
    structured = network.structured_evaluation(theta, X, y, weights)
    for value, reference in zip(structured, dense_reference(dense, theta, X, y, weights)):
        assert_relative(value, reference)
    # the map the engines call, also on a subset of the neurons (an AGF cost step), and the sampled losses
    network.structured = True
    for index in (None, np.array([1, 4])):
        rows = slice(None) if index is None else index
        gradient = network.gradient_function(X, y, index)(theta[rows], weights[rows])
        subset = modular.QuadraticModularNetwork(p, len(theta[rows]), structured=False)
        assert_relative(gradient, dense_reference(subset, theta[rows], X, y, weights[rows])[2])
    stack = np.stack([theta, 0.5 * theta]), np.stack([weights, weights[::-1]])
    losses = network.structured_losses(X, y, *stack)
    assert_relative(losses, [dense_reference(dense, t, X, y, w)[0] for t, w in zip(*stack)])


@pytest.mark.parametrize("case", ["Z23", "Z24", "D6"])
def test_output_form_equals_the_dense_one(case):
    """With many neurons on a template of small span (k = 2) the evaluation goes through the network's output
    on the pair's functions instead of H × H Gram matrices (``3D < 2H``): the same numbers."""
    rng = np.random.default_rng(5)
    if case == "D6":
        G = groups.dihedral(6)
        x = groups.class_component(rng.normal(size=12), G, [1, 3])
    else:
        p = int(case[1:])
        G = groups.cyclic(p)
        magnitudes = np.zeros(p // 2)
        magnitudes[[1, p // 2 - 1]] = [1.0, 0.8]
        x = dft.template(p, magnitudes, seed=0)
    H = 60
    X, y = groups.dataset(x, G)
    structure = structured_loss._structure_of(X, y, G.table, 2, G.irreps)
    assert 3 * structure.pair_gram.shape[0] < 2 * H                     # the output form is the one taken
    theta, weights = rng.normal(size=(H, 3 * G.order)), rng.uniform(0.2, 2.0, H)
    structured = groups.CompositionNetwork(G, H).structured_evaluation(theta, X, y, weights)
    dense = groups.CompositionNetwork(G, H, structured=False)
    for value, reference in zip(structured, dense_reference(dense, theta, X, y, weights)):
        assert_relative(value, reference)


def test_structured_path_is_taken_only_on_the_full_dataset():
    p = 7
    x = generic_template(groups.cyclic(p))
    X, y = modular.dataset(x)
    network = modular.QuadraticModularNetwork(p, 3, structured=True)
    theta = np.random.default_rng(0).normal(size=(3, 3 * p))
    assert network.structured_losses(X, y, theta[None], np.ones((1, 3))) is not None
    noisy = y.copy()
    noisy[5, 2] += 1e-9
    rows = np.random.default_rng(1).permutation(p * p)
    for data in ((X, noisy), (X[rows], y[rows]), (X[:-1], y[:-1]), (X[:, ::-1].copy(), y)):
        assert network.structured_losses(*data, theta[None], np.ones((1, 3))) is None
        with pytest.raises(ValueError, match="full dataset"):
            network.structured_evaluation(theta, *data)
    # defaults: dense below STRUCTURED_MIN_ROWS rows, structured from it on; never with structured=False
    assert modular.QuadraticModularNetwork(p, 3).structured_losses(X, y, theta[None], np.ones((1, 3))) is None
    q = 47
    assert q * q >= groups.STRUCTURED_MIN_ROWS > 44 * 44
    Xq, yq = modular.dataset(generic_template(groups.cyclic(q)))
    theta_q = np.random.default_rng(2).normal(size=(2, 3 * q))
    assert modular.QuadraticModularNetwork(q, 2).structured_losses(Xq, yq, theta_q[None], np.ones((1, 2))) \
        is not None
    dense = modular.QuadraticModularNetwork(q, 2, structured=False)
    assert dense.structured_losses(Xq, yq, theta_q[None], np.ones((1, 2))) is None
    for bad in (1, "yes"):
        with pytest.raises(TypeError, match="structured"):
            modular.QuadraticModularNetwork(p, 3, structured=bad)
        with pytest.raises(TypeError, match="structured"):
            groups.CompositionNetwork(groups.cyclic(p), 3, structured=bad)


@pytest.mark.parametrize("setting", ["modular", "D5, k = 3"])
def test_gradient_flow_losses_agree_both_ways(setting):
    """A whole staircase run (adaptive rate) with the structured and the dense evaluation: the same losses."""
    if setting == "modular":
        p = 9
        magnitudes = np.zeros(p // 2)
        magnitudes[[1, 3]] = [1.0, 0.7]
        x = dft.template(p, magnitudes, seed=3)
        x /= np.linalg.norm(x)
        make = lambda structured: modular.QuadraticModularNetwork(p, 8, structured=structured)  # noqa: E731
        X, y = modular.dataset(x)
        t_end = 1.2 * modular.agf_staircase(x, initial_norm=1e-3, adaptive_rate=True).times[-1]
    else:
        G = groups.dihedral(5)
        x = generic_template(G, seed=4)
        x /= np.linalg.norm(x)
        make = lambda structured: groups.CompositionNetwork(G, 6, k=3, structured=structured)  # noqa: E731
        X, y = groups.dataset(x, G, k=3)
        t_end = 1.3 * groups.agf_staircase(x, G, k=3, initial_norm=1e-3, adaptive_rate=True).times[2]
    theta0 = make(True).initial_theta(alpha=1e-3, seed=0)
    times = np.linspace(0.0, t_end, 101)
    runs = [gradient_flow(make(structured), (X, y), theta0, t_end, adaptive_rate=True, times=times)
            for structured in (True, False)]
    assert runs[0].losses[-1] < 0.97 * runs[0].losses[0]             # the run learned something
    assert np.abs(runs[0].losses - runs[1].losses).max() <= 1e-8 * runs[1].losses[0]


def test_memory_of_an_evaluation_is_quadratic_in_p():
    """At p = 97, H = 3p the structured gradient allocates O(H² + Hp) floats (measured peak 1.4e6, under the
    bound 20 H² + 20 Hp = 2.3e6), where one dense evaluation holds several (H, p²) arrays (2.7e6 floats each)."""
    p, H = 97, 291
    magnitudes = np.zeros(p // 2)
    magnitudes[[1, 8, 19]] = [1.0, 0.8, 0.6]
    X, y = modular.dataset(dft.template(p, magnitudes, seed=0))
    network = modular.QuadraticModularNetwork(p, H)
    rng = np.random.default_rng(0)
    theta, weights = rng.normal(size=(H, 3 * p)), rng.uniform(0.0, 1.0, H)
    gradient = network.gradient_function(X, y)
    gradient(theta, weights)
    tracemalloc.start()
    try:
        gradient(theta, weights)
        peak = tracemalloc.get_traced_memory()[1] / 8
    finally:
        tracemalloc.stop()
    assert peak <= 20 * H * H + 20 * H * p < H * p * p
