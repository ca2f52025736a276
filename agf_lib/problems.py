"""The standard problems of the AGF book and its tests, by name.

A :class:`Problem` is a :class:`~agf_lib.setting.Setting` with one choice of its data, named and
described, with the two values of α at which the tests run it: the setting brings the network, its
data, the initialization ``initial_theta(alpha)``, and its closed-form staircase, at finite α in GF time
where it has one (:attr:`Problem.closed_form`) and its α → 0 limit in the rescaled time
``t / log(1/α)`` (``Problem.limit``). One conformance test (``tests/test_conformance.py``) runs
both engines, :func:`agf_lib.gradient_flow` and :func:`agf_lib.alternating_gradient_flow`, on every
problem and compares them with these closed forms; ``tests/test_settings.py`` checks the network's
gradient, its homogeneity and the setting's contract on every problem.

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

import numpy as np

from . import attention, deep_diagonal, diagonal, dft, groups, linear, modular, relu
from .results import Staircase
from .setting import Setting

__all__ = ["Problem", "get", "names"]

@dataclass(frozen=True)
class Problem:
    """A named standard problem: a setting on one choice of data, and the α its tests run it at.

    Attributes
    ----------
    name : str
        The key of :func:`get`.
    description : str
        One line: what the problem is and what its staircase shows.
    chapter : str
        The chapter that defines the setting (``"03"`` for diagonal networks, ...).
    setting : Setting
        The setting on this problem's data (:class:`agf_lib.setting.Setting`).
    alphas : tuple of two floats
        The initialization scales the tests run it at, larger first. In each pair ``log(1/α)`` doubles,
        so an error of order ``1/log(1/α)`` halves (κ = 2 problems at 1e-4 and 1e-8, κ = 3 problems with
        the adaptive rate at 1e-3 and 1e-6, unless the problem says otherwise).
    jumps_reproduced : int
        How many of the closed form's jumps are compared (and :meth:`t_end` covers) at this problem's
        width: all of them, except where too few neurons commit to the first feature for a second one
        to follow within a few times the predicted time (the modular and group problems, where gradient
        flow, too, learns only the first feature whole within that time). Gradient flow reproduces
        each of them, and so does :func:`agf_lib.alternating_gradient_flow` on every problem but
        ``linear-noncommuting``: there the neuron-wise engine reaches every level, but its later jumps
        move away from gradient flow as α shrinks; the paper's AGF for that network runs on basis
        vectors, :func:`agf_lib.linear.basis_agf`, which follows gradient flow.
    network, data, limit, exact, options, agf_options
        The setting's (``data`` is ``setting.data()``, ``limit`` its ``limit_staircase()``, computed once).
    """

    name: str
    description: str
    chapter: str
    setting: Setting = field(repr=False)
    alphas: tuple
    jumps_reproduced: int
    limit: Staircase = field(init=False, repr=False)
    data: tuple = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "limit", self.setting.limit_staircase())
        object.__setattr__(self, "data", self.setting.data())

    @property
    def network(self):
        return self.setting.network

    @property
    def exact(self):
        return self.setting.exact

    @property
    def options(self):
        return self.setting.options

    @property
    def agf_options(self):
        return self.setting.agf_options

    def initial_theta(self, alpha):
        """The setting's initialization at ``alpha``, seed 0 (the seed of every standard problem)."""
        return self.setting.initial_theta(alpha=alpha, seed=0)

    @property
    def closed_form(self):
        """``closed_form(alpha)``: the setting's staircase at finite α in GF time, or None where it has none.

        With ``exact`` it is AGF itself (diagonal networks); otherwise it is the staircase of neurons
        aligned with their target from the start, with norm the largest initial norm of seed 0, whose
        first jump is a lower bound on the first jump of both engines.
        """
        if not self.setting.has_closed_form:
            return None
        return lambda alpha: self.setting.agf_staircase(alpha=alpha, seed=0)

    def level_outputs(self, predictor):
        """The network's outputs on ``X`` (shape ``(n, c)``) for a closed-form level's ``predictors[k]``."""
        return self.setting.level_outputs(predictor)

    def time_scale(self, alpha):
        """GF time per unit of the rescaled time of ``limit`` at initialization scale ``alpha``.

        ``log(1/α)`` for ``t/log(1/α)``.
        """
        return 1.0 / self.limit.time_unit.factor(alpha)

    def rescaled(self, result, alpha):
        """``result`` in the unit of ``limit``.

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


_KAPPA2_ALPHAS = (1e-4, 1e-8)
_KAPPA3_ALPHAS = (1e-3, 1e-6)


# ---------------------------------------------------------------------------------------------
# diagonal linear networks (chapter 03)


def _diagonal(name, description, X, y, alphas=_KAPPA2_ALPHAS):
    setting = diagonal.DiagonalSetting(X, y)
    return Problem(name=name, description=description, chapter="03", setting=setting, alphas=alphas,
                   jumps_reproduced=setting.limit_staircase().num_jumps)


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


def _deep_diagonal():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4)) * np.array([1.0, 0.7, 0.5, 0.35])
    y = X @ np.array([1.0, -1.0, 0.8, -0.6]) + 0.05 * rng.normal(size=40)
    return Problem(
        name="deep-diagonal", chapter="library",
        description="the library page's worked example: a depth-3 "
                    "diagonal network (kappa = 3) on n = 40, d = 4, "
                    "columns scaled by (1, .7, .5, .35), "
                    "beta = (1, -1, .8, -.6), noise 0.05 (seed 0), "
                    "adaptive rate, every neuron started at its "
                    "maximizer; AGF exact in closed form",
        setting=deep_diagonal.DeepDiagonalSetting(X, y, L=3),
        alphas=_KAPPA3_ALPHAS, jumps_reproduced=4)


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
    kind = "commuting" if commuting else "non-commuting"
    times = "jumps at 1/sigma_k" if commuting else "jumps before 1/sigma_k"
    return Problem(
        name=f"linear-{kind.replace('-', '')}",
        description=f"chapter 04's {kind} population problem: d = c = 4, H = 5, Sigma_yx with singular values "
                    f"(3, 2, 1, .5); greedy low-rank learning, {times}",
        chapter="04", setting=linear.LinearSetting(Sigma_xx, Sigma_yx, H=5), alphas=_KAPPA2_ALPHAS,
        jumps_reproduced=4)


# ---------------------------------------------------------------------------------------------
# ReLU networks (chapter 08), on the smoothed surrogate that lets the engines pass kinks


def _relu_orthogonal():
    return Problem(
        name="relu-orthogonal", chapter="08", alphas=_KAPPA2_ALPHAS, jumps_reproduced=2,
        description="chapter 08's orthogonal data: inputs +-e_1, +-e_2 with targets (3, -2, 1.5, -1), H = 8 smoothed "
                    "ReLU neurons (eps = 1e-4); one neuron per output sign, aligned then grown",
        setting=relu.ReLUSetting.orthogonal([3.0, -2.0, 1.5, -1.0], H=8, eps=1e-4))


def _relu_xor():
    # at 1e-6 and 1e-12: the third and fourth jumps are 1.3 log(1/α) apart, and at 1e-4 gradient flow is still
    # 4.3% of the initial loss above AGF's level in the middle of the plateau between them
    return Problem(
        name="relu-xor", chapter="08", alphas=(1e-6, 1e-12), jumps_reproduced=4,
        description="XOR-like data: x in {+-1}^2, y = m_k x_1 x_2 with m = (1, .8, .6, .4), H = 8 smoothed ReLU neurons "
                    "(eps = 1e-4); every maximizer on a kink, one sample per jump",
        setting=relu.ReLUSetting.xor((1.0, 0.8, 0.6, 0.4), H=8, eps=1e-4))


# ---------------------------------------------------------------------------------------------
# κ = 3 with the adaptive rate: attention (chapter 05), modular addition (chapter 06), composition over a
# group (chapter 09)


def _attention():
    d, N = 4, 20
    rotation = np.linalg.qr(np.random.default_rng(0).standard_normal((d, d)))[0]
    Sigma = (rotation * np.array([1.0, 0.75, 0.5, 0.25])) @ rotation.T
    return Problem(
        name="attention", chapter="05", alphas=_KAPPA3_ALPHAS, jumps_reproduced=4,
        description="chapter 05's in-context regression: d = 4, N = 20, eigenvalues of Sigma (1, .75, .5, .25), "
                    "H = 5 heads, adaptive rate; principal components one head at a time",
        setting=attention.AttentionSetting(Sigma, N, H=5, adaptive_rate=True))


def _modular():
    p = 7
    magnitudes = np.zeros((p - 1) // 2)
    magnitudes[[0, 1]] = [1.0, 0.8]
    x = dft.template(p, magnitudes, seed=1)
    return Problem(
        name="modular", chapter="06", alphas=_KAPPA3_ALPHAS, jumps_reproduced=1,
        description="modular addition mod 7 with frequencies 1 and 2 (|x_hat| in ratio 1 : .8, no resonance: "
                    "3 is not in the template), H = 10 quadratic neurons, adaptive rate",
        setting=modular.ModularSetting(x / np.linalg.norm(x), H=10, adaptive_rate=True))


def _groups_d3():
    G = groups.dihedral(3)
    c, s = 0.6, 0.8
    block = 0.7 * np.array([[c, -s], [s, c]])          # 0.7 times a rotation: more power than A2, less utility
    x = groups.inverse_fourier([np.zeros((1, 1)), np.full((1, 1), 1.0), block], G)
    return Problem(
        name="groups-d3", chapter="09", alphas=_KAPPA3_ALPHAS, jumps_reproduced=1,
        description="composition of two elements of D3: the sign irrep (x_hat 1.0, fitted by two neurons) before "
                    "the 2-d irrep (0.7 times a rotation, twice the power; 9 neurons fit it, H = 8 only partly), "
                    "adaptive rate",
        setting=groups.CompositionSetting(x, G, H=8, adaptive_rate=True, whole_classes=True))


_BUILDERS = {
    "diagonal": _diagonal_regression,
    "diagonal-dormancy": _diagonal_dormancy,
    "diagonal-sign-reversal": _diagonal_sign_reversal,
    "deep-diagonal": _deep_diagonal,
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
