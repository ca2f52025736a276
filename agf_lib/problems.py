"""The standard problems of the AGF book and its tests, by name.

A :class:`Problem` bundles what a run needs and what it should produce: a network, its data, the
initialization ``initial_theta(alpha)``, and the closed-form staircase of its setting, at finite α in
GF time where the setting has one (:attr:`Problem.closed_form`) and its α → 0 limit in the rescaled
time ``t / log(1/α)`` (:attr:`Problem.limit`). One conformance test (``tests/test_conformance.py``)
runs both engines, :func:`agf_lib.gradient_flow` and :func:`agf_lib.alternating_gradient_flow`, on
every problem and compares them with these closed forms.

>>> from agf_lib import problems
>>> problem = problems.get("diagonal")
>>> staircase = problem.closed_form(1e-6)        # AGF in closed form, GF time
>>> staircase.num_jumps
5

Names: :func:`names`; an unknown name raises a ValueError that lists them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from . import attention, diagonal, dft, groups, linear, modular, relu
from .network import TwoLayerNetwork
from .results import GF_TIME, Staircase

__all__ = ["Problem", "get", "names"]

_NONE = MappingProxyType({})
_ADAPTIVE = MappingProxyType({"adaptive_rate": True})
# With few neurons per feature the cost step's loss approaches its infimum like 1/t (chapter 06); the
# rule "loss settled to cost_tol² of its fall" then ends it, at cost_tol = 1e-3 within seconds.
_LOOSE_COST = MappingProxyType({"cost_tol": 1e-3})


@dataclass(frozen=True)
class Problem:
    """A named standard problem: a network, its data, its initialization and its closed forms.

    Attributes
    ----------
    name : str
        The key of :func:`get`.
    description : str
        One line: what the problem is and what its staircase shows.
    chapter : str
        The chapter that defines the setting (``"03"`` for diagonal networks, ...).
    network : TwoLayerNetwork
    data : tuple
        ``(X, y)``: inputs of shape ``(n, d)`` and targets of shape ``(n, c)``, float64.
    initial_theta : callable
        ``initial_theta(alpha)``: the setting's initialization at scale α, seeded (shape ``(H, P)``).
    closed_form : callable or None
        ``closed_form(alpha)``: the setting's closed-form staircase at finite α, in GF time ``t``.
        With ``exact`` it is AGF itself (diagonal networks); otherwise it is the staircase of neurons
        aligned with their target from the start, with norm ``ν`` the largest initial norm, whose first
        jump is a lower bound on the first jump of both engines. None where the setting has no closed
        form at finite α (fully connected linear networks: the jump times depend on the random
        initialization).
    exact : bool
        Whether ``closed_form(alpha)`` is AGF at that α exactly.
    limit : Staircase or None
        The α → 0 staircase in the rescaled time ``t / log(1/α)``.
    options : mapping
        Options both engines take on this problem (``adaptive_rate=True`` for κ = 3, the paper's
        Appendix B.5 rate under which κ = 3 jump times scale like ``log(1/α)``).
    agf_options : mapping
        Further options of :func:`agf_lib.alternating_gradient_flow` on this problem (a looser
        ``cost_tol`` where a cost step's loss approaches an infimum that no finite weights attain).
    jumps_reproduced : int
        How many of the closed form's jumps are compared (and :meth:`t_end` covers) at this problem's
        width: all of them, except where too few neurons commit to the first feature for a second one
        to follow within a few times the predicted time (the modular and group problems, where gradient
        flow, too, learns only the first feature whole within that time). Gradient flow reproduces
        each of them, and so does :func:`agf_lib.alternating_gradient_flow` on every problem but
        ``linear-noncommuting``: there the neuron-wise engine reaches every level, but its later jumps
        move away from gradient flow as α shrinks; the paper's AGF for that network runs on basis
        vectors, :func:`agf_lib.linear.basis_agf`, which follows gradient flow.
    level_outputs : callable
        ``level_outputs(state)``: the network's outputs on ``X`` (shape ``(n, c)``) when it computes the
        function of a closed-form level, ``state`` being that level's ``Staircase.states[k]``.
    """

    name: str
    description: str
    chapter: str
    network: TwoLayerNetwork = field(repr=False)
    data: tuple = field(repr=False)
    initial_theta: Callable[[float], np.ndarray] = field(repr=False)
    closed_form: Callable[[float], Staircase] | None = field(repr=False)
    exact: bool
    limit: Staircase | None = field(repr=False)
    options: Mapping[str, Any] = field(repr=False)
    agf_options: Mapping[str, Any] = field(repr=False)
    jumps_reproduced: int
    level_outputs: Callable[[Any], np.ndarray] = field(repr=False)

    def time_scale(self, alpha):
        """GF time per unit of the rescaled time of :attr:`limit` at initialization scale ``alpha``.

        ``log(1/α)`` for ``t/log(1/α)``.
        """
        return 1.0 / self.limit.time_unit.factor(alpha)

    def rescaled(self, result, alpha):
        """``result`` in the unit of :attr:`limit`.

        Parameters
        ----------
        result : Trajectory or Staircase
            A result in GF time (or any convertible unit).
        alpha : float
            The initialization scale, in ``(0, 1)``.
        """
        return result.in_units(self.limit.time_unit, alpha)

    def t_end(self, alpha):
        """A GF time by which the reproduced jumps at ``alpha`` are over.

        A quarter past the last of them in the exact closed form, or twice the limit's times
        ``log(1/α)`` (at finite α the jumps come later than the limit says, by a fraction of order
        ``1/log(1/α)``).
        """
        if self.exact:
            return 1.25 * float(self.closed_form(alpha).times[self.jumps_reproduced])
        return 2.0 * float(self.limit.times[self.jumps_reproduced]) * self.time_scale(alpha)


# ---------------------------------------------------------------------------------------------
# diagonal linear networks (chapter 03)


def _diagonal(name, description, X, y):
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)[:, None]
    d = X.shape[1]
    limit = diagonal.limit_staircase(X, y)
    return Problem(
        name=name, description=description, chapter="03",
        network=diagonal.DiagonalLinearNetwork(d), data=(X, y),
        initial_theta=lambda alpha: diagonal.initial_theta(d, alpha=alpha),
        closed_form=lambda alpha: diagonal.agf_staircase(X, y, alpha=alpha), exact=True,
        limit=limit, options=_NONE, agf_options=_NONE,
        jumps_reproduced=limit.num_jumps, level_outputs=lambda beta: (X @ beta)[:, None])


def _diagonal_regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5)) * np.array([1.0, 0.7, 0.5, 0.35, 0.25])
    y = X @ rng.normal(size=5) + 0.1 * rng.normal(size=20)
    return _diagonal("diagonal", "the book's diagonal regression: n = 20, d = 5, columns scaled by (1, .7, .5, .35, "
                     ".25), beta ~ N(0, I), noise 0.1 (seed 0); five jumps, no return to dormancy", X, y)


def _diagonal_dormancy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) @ np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.7, 0.7, 0.3]]).T
    y = X @ np.array([1.0, 1.0, 0.0]) + 0.05 * rng.normal(size=30)
    return _diagonal("diagonal-dormancy", "a diagonal regression with a return to dormancy: x_3 ~ 0.7(x_1 + x_2) "
                     "activates first and is dropped once x_1 and x_2 are active (order 2, 0, 1, 2)", X, y)


def _diagonal_sign_reversal():
    Sigma_xx, Sigma_xy = np.array([[1.0, 0.8], [0.8, 1.0]]), np.array([1.0, 0.3])
    X = math.sqrt(2.0) * np.linalg.cholesky(Sigma_xx).T
    y = np.linalg.solve(X.T, 2.0 * Sigma_xy)
    return _diagonal("diagonal-sign-reversal", "two coordinates, Sigma_xx = [[1, .8], [.8, 1]], Sigma_xy = (1, .3): "
                     "the dormant coordinate's gradient reverses and it activates with a negative sign", X, y)


# ---------------------------------------------------------------------------------------------
# fully connected linear networks (chapter 04)


def _linear(commuting):
    rng = np.random.default_rng(4)
    U, V, Q = (np.linalg.qr(rng.normal(size=(4, 4)))[0] for _ in range(3))
    Sigma_yx = U @ np.diag([3.0, 2.0, 1.0, 0.5]) @ V.T
    if commuting:
        Sigma_xx = V @ np.diag([1.2, 1.0, 0.7, 0.4]) @ V.T
    else:
        Sigma_xx = Q @ np.diag([0.25, 0.5, 1.0, 2.0]) @ Q.T
    X, y = linear.population_data(Sigma_xx, Sigma_yx)
    network = linear.FullyConnectedLinearNetwork(d=4, H=5, c=4)
    kind = "commuting" if commuting else "non-commuting"
    times = "jumps at 1/sigma_k" if commuting else "jumps before 1/sigma_k"
    return Problem(
        name=f"linear-{kind.replace('-', '')}",
        description=f"chapter 04's {kind} population problem: d = c = 4, H = 5, Sigma_yx with singular values "
                    f"(3, 2, 1, .5); greedy low-rank learning, {times}",
        chapter="04", network=network, data=(X, y),
        initial_theta=lambda alpha: linear.initial_theta(4, 5, 4, alpha=alpha, seed=0),
        closed_form=None, exact=False, limit=linear.limit_staircase(Sigma_xx, Sigma_yx),
        options=_NONE, agf_options=_NONE, jumps_reproduced=4, level_outputs=lambda beta: X @ beta.T)


# ---------------------------------------------------------------------------------------------
# ReLU networks (chapter 08), on the smoothed surrogate that lets the engines pass kinks

# LSODA crosses the surrogate's stiff layer at a kink in a few steps; an explicit method stalls there.
# The cost step's gradient falls to 1e-6 in a fraction of a second; cost_tol = 1e-9 only adds time.
_RELU_AGF = MappingProxyType({"method": "LSODA", "cost_tol": 1e-6})


def _relu(name, description, X, y, limit):
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)[:, None]
    network = relu.SmoothReLUNetwork(X.shape[1], 8, eps=1e-4)
    init = lambda alpha: network.initial_theta(alpha=alpha, seed=0)  # noqa: E731
    return Problem(
        name=name, description=description, chapter="08", network=network, data=(X, y), initial_theta=init,
        closed_form=lambda alpha: limit.in_units(GF_TIME, _largest_norm(init(alpha))),
        exact=False, limit=limit, options=_NONE, agf_options=_RELU_AGF, jumps_reproduced=limit.num_jumps,
        level_outputs=lambda outputs: outputs)


def _relu_orthogonal():
    targets = [3.0, -2.0, 1.5, -1.0]
    X, y = relu.orthogonal_data(targets)
    return _relu("relu-orthogonal", "chapter 08's orthogonal data: inputs +-e_1, +-e_2 with targets (3, -2, 1.5, -1), "
                 "H = 8 smoothed ReLU neurons (eps = 1e-4); one neuron per output sign, aligned then grown",
                 X, y, relu.orthogonal_staircase(targets))


def _relu_xor():
    magnitudes = (1.0, 0.8, 0.6, 0.4)
    X, y = relu.xor_data(magnitudes)
    return _relu("relu-xor", "XOR-like data: x in {+-1}^2, y = m_k x_1 x_2 with m = (1, .8, .6, .4), H = 8 smoothed "
                 "ReLU neurons (eps = 1e-4); every maximizer on a kink, one sample per jump", X, y,
                 relu.xor_staircase(magnitudes))


# ---------------------------------------------------------------------------------------------
# κ = 3: attention (chapter 05), modular addition (chapter 06), composition over a group (chapter 09)


def _composed(dataset, template, y):
    """The targets of the task for ``template`` (zero for the zero template, which the task rejects)."""
    return dataset(template)[1] if np.any(template) else np.zeros_like(y)


def _largest_norm(theta):
    return float(np.sqrt((theta**2).sum(1)).max())


def _adaptive_kappa3(module, args, *, network, data, agf_options, jumps_reproduced, level_outputs, **about):
    """A κ = 3 problem run with the adaptive rate, predicted by ``module.agf_staircase(*args, ...)`` from the
    largest initial norm and by ``module.limit_staircase(*args, ...)`` as α → 0."""
    init = lambda alpha: network.initial_theta(alpha=alpha, seed=0)  # noqa: E731
    return Problem(
        **about, network=network, data=data, initial_theta=init,
        closed_form=lambda alpha: module.agf_staircase(*args, initial_norm=_largest_norm(init(alpha)),
                                                       adaptive_rate=True),
        exact=False, limit=module.limit_staircase(*args, adaptive_rate=True), options=_ADAPTIVE,
        agf_options=agf_options, jumps_reproduced=jumps_reproduced, level_outputs=level_outputs)


def _attention():
    d, N, H = 4, 20, 5
    rotation = np.linalg.qr(np.random.default_rng(0).standard_normal((d, d)))[0]
    Sigma = (rotation * np.array([1.0, 0.75, 0.5, 0.25])) @ rotation.T
    X, y = attention.population_data(Sigma, N)
    return _adaptive_kappa3(
        attention, (Sigma, N), name="attention",
        description="chapter 05's in-context regression: d = 4, N = 20, eigenvalues of Sigma (1, .75, .5, .25), "
                    "H = 5 heads, adaptive rate; principal components one head at a time",
        chapter="05", network=attention.LinearAttentionNetwork(d, H), data=(X, y), agf_options=_NONE,
        jumps_reproduced=4, level_outputs=lambda M: X @ M.reshape(-1, 1))


def _modular():
    p, H = 7, 10
    magnitudes = np.zeros((p - 1) // 2)
    magnitudes[[0, 1]] = [1.0, 0.8]
    x = dft.template(p, magnitudes, seed=1)
    x = x / np.linalg.norm(x)
    X, y = modular.dataset(x)
    return _adaptive_kappa3(
        modular, (x,), name="modular",
        description="modular addition mod 7 with frequencies 1 and 2 (|x_hat| in ratio 1 : .8, no resonance: "
                    "3 is not in the template), H = 10 quadratic neurons, adaptive rate",
        chapter="06", network=modular.QuadraticModularNetwork(p, H), data=(X, y), agf_options=_LOOSE_COST,
        jumps_reproduced=1, level_outputs=lambda x_k: _composed(modular.dataset, x_k, y))


def _groups_d3():
    G = groups.dihedral(3)
    c, s = 0.6, 0.8
    block = 0.7 * np.array([[c, -s], [s, c]])          # 0.7 times a rotation: more power than A2, less utility
    x = groups.inverse_fourier([np.zeros((1, 1)), np.full((1, 1), 1.0), block], G)
    X, y = groups.dataset(x, G)
    network = groups.CompositionNetwork(G, 8)
    init = lambda alpha: network.initial_theta(alpha=alpha, seed=0)  # noqa: E731
    return Problem(
        name="groups-d3",
        description="composition of two elements of D3: the sign irrep (x_hat 1.0, fitted by two neurons) before "
                    "the 2-d irrep (0.7 times a rotation, twice the power; 9 neurons fit it, H = 8 only partly), "
                    "adaptive rate",
        chapter="09", network=network, data=(X, y), initial_theta=init,
        closed_form=lambda alpha: groups.agf_staircase(x, G, initial_norm=_largest_norm(init(alpha)),
                                                       adaptive_rate=True, whole_classes=True),
        exact=False, limit=groups.limit_staircase(x, G, adaptive_rate=True, whole_classes=True),
        options=_ADAPTIVE, agf_options=_LOOSE_COST, jumps_reproduced=1,
        level_outputs=lambda x_k: _composed(lambda t: groups.dataset(t, G), x_k, y))


_BUILDERS = {
    "diagonal": _diagonal_regression,
    "diagonal-dormancy": _diagonal_dormancy,
    "diagonal-sign-reversal": _diagonal_sign_reversal,
    "linear-commuting": lambda: _linear(commuting=True),
    "linear-noncommuting": lambda: _linear(commuting=False),
    "relu-orthogonal": _relu_orthogonal,
    "relu-xor": _relu_xor,
    "attention": _attention,
    "modular": _modular,
    "groups-d3": _groups_d3,
}
_CACHE = {}


def names():
    """The names of the standard problems, in the order of the book's chapters."""
    return tuple(_BUILDERS)


def get(name):
    """The standard problem called ``name`` (one of :func:`names`); built once, then shared.

    Returns
    -------
    Problem

    Raises
    ------
    ValueError
        If ``name`` is unknown; the message lists the names.
    TypeError
        If ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name not in _BUILDERS:
        raise ValueError(f"unknown problem {name!r}; the standard problems are {', '.join(_BUILDERS)}")
    if name not in _CACHE:
        _CACHE[name] = _BUILDERS[name]()
    return _CACHE[name]
