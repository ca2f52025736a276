"""Deep diagonal linear networks: ``f(x) = Σ_i (Π_l u_{i,l}) x_i``, each neuron homogeneous of degree κ = L.

The library page's worked example of adding a setting ("Adding a setting"): a network, its
:class:`~agf_lib.setting.Setting`, and AGF's closed form, written by following the contract.

Neuron ``i`` has parameters ``θ_i = (u_{i,1}, …, u_{i,L})``, sees its own input coordinate ``x_i`` and
outputs ``β_i x_i`` with ``β_i = Π_l u_{i,l}``. With ``g_i = E[x_i r]`` its utility and gradient are

    U_i = β_i g_i,    ∂U_i/∂u_{i,l} = g_i Π_{m≠l} u_{i,m}.

On the unit sphere the utility is largest, ``Ū_i = |g_i| L^{−L/2}``, where every ``|u_{i,l}| = 1/√L`` and
the signs multiply to ``sign(g_i)``. **The setting's initialization starts every neuron there**:
``θ_i = (α/√L)(1, …, 1, s_i)`` with ``s_i = sign(E[x_i y])``. Gradient flow keeps a neuron's layers balanced
(``u_{i,l}² − u_{i,m}²`` is conserved), so while ``g_i`` keeps its sign the dormant neuron's direction
stays put and only its norm moves. At the per-neuron adaptive rate ``η‖θ‖^{2−κ}`` of the paper's
Appendix B.5 that norm grows as ``dρ_i/dt = κηŪ_i ρ_i`` (Eq. 4), so the neuron reaches norm one once its
accumulated utility ``∫ κηŪ_i dt`` reaches ``log(1/α)`` (:func:`agf_lib.escape.threshold`), and the cost
step fits the active coordinates by least squares, each keeping its sign (the layers stay balanced, so
``β_i`` cannot pass through zero). That is AGF exactly, in closed form: :func:`agf_staircase`. Its limit
α → 0 in ``t/log(1/α)`` replaces ``log(1/α)`` by one: :func:`limit_staircase`.

The closed form assumes what the derivation uses, and checks it: no dormant neuron's ``g_i`` changes sign,
and no least-squares fit on an active set changes an active coefficient's sign (either would make a
neuron leave its maximizer; a ValueError says which happened).
"""

from __future__ import annotations

import math

import numpy as np

from .escape import threshold
from .network import TwoLayerNetwork, as_data
from .results import GF_TIME, LOG_TIME, Staircase
from .setting import ADAPTIVE_RATE, Setting
from .validation import check_int, check_positive

__all__ = ["DeepDiagonalNetwork", "DeepDiagonalSetting", "agf_staircase", "limit_staircase"]


class DeepDiagonalNetwork(TwoLayerNetwork):
    """``f(x; Θ) = Σ_i (Π_l u_{i,l}) x_i``: ``d`` neurons of ``P = L`` parameters, ``c = 1``, κ = L.

    Parameters
    ----------
    d : int
        Input dimension, and number of neurons.
    L : int
        Depth, at least 2 (L = 2 is :class:`agf_lib.diagonal.DiagonalLinearNetwork` in other coordinates).
    """

    output_dim = 1

    def __init__(self, d, L):
        self.input_dim = self.num_neurons = check_int(d, "d")
        self.kappa = self.num_params = check_int(L, "L", minimum=2)

    def neuron_outputs(self, theta, X):
        return (np.prod(theta, axis=1)[:, None] * X.T)[:, :, None]

    def utility_gradient(self, theta, X, residual):
        g = X.T @ residual[:, 0] / X.shape[0]
        # Π_{m≠l} u_m as (product of the layers before l) × (product of the layers after l): no division
        before = np.cumprod(np.hstack([np.ones((theta.shape[0], 1)), theta[:, :-1]]), axis=1)
        after = np.cumprod(np.hstack([np.ones((theta.shape[0], 1)), theta[:, :0:-1]]), axis=1)[:, ::-1]
        return np.prod(theta, axis=1) * g, before * after * g[:, None]

    def initial_theta(self, *, alpha, seed=0):
        """Every layer ``α/√L``: balanced, positive, norm α (``seed`` is checked and unused)."""
        check_int(seed, "seed", 0)
        alpha = check_positive(alpha, "alpha")
        return np.full((self.num_neurons, self.num_params), alpha / math.sqrt(self.num_params))

    def __repr__(self):
        return f"DeepDiagonalNetwork(d={self.input_dim}, L={self.num_params})"


def _staircase(X, y, L, c, time_unit):
    """AGF on balanced neurons started at their maximizers, each activating once ``∫ κŪ_i dt`` reaches ``c``."""
    X, y = as_data(X, y)
    L = check_int(L, "L", minimum=2)
    n, d = X.shape
    Sigma_xx, Sigma_xy = X.T @ X / n, X.T @ y[:, 0] / n
    signs = np.sign(Sigma_xy)
    rate = L * L ** (-L / 2)                       # κŪ_i / |g_i|
    tol = 1e-12 * float(np.abs(Sigma_xy).max(initial=0.0))
    beta, accumulated, active = np.zeros(d), np.zeros(d), []
    times, losses, order, predictors = [0.0], [0.5 * float(np.mean(y**2))], [], [beta.copy()]
    while True:
        g = Sigma_xy - Sigma_xx @ beta
        dormant = [i for i in range(d) if i not in active and signs[i] != 0]
        turned = [i for i in dormant if g[i] * signs[i] < -tol]
        if turned:
            raise ValueError(f"the correlation of dormant coordinate {turned[0]} with the residual changed sign after "
                             f"the jump at t = {times[-1]:.6g}: its neuron leaves its maximizer, outside this "
                             "closed form")
        growing = [i for i in dormant if abs(g[i]) > tol]
        if not growing:
            break
        waits = {i: (c - accumulated[i]) / (rate * abs(g[i])) for i in growing}
        first = min(growing, key=lambda i: (waits[i], i))
        wait = max(waits[first], 0.0)
        for i in growing:
            accumulated[i] += rate * abs(g[i]) * wait
        active.append(first)
        beta = np.zeros(d)
        beta[active] = np.linalg.lstsq(X[:, active], y[:, 0], rcond=None)[0]
        flipped = [i for i in active if beta[i] * signs[i] <= 0]
        if flipped:
            raise ValueError(f"the least-squares fit after coordinate {first} activates gives coordinate {flipped[0]} "
                             "the sign opposite to its neuron's: outside this closed form")
        times.append(times[-1] + wait)
        losses.append(0.5 * float(np.mean((y[:, 0] - X @ beta) ** 2)))
        order.append(first)
        predictors.append(beta.copy())
    return Staircase(np.array(times), np.array(losses), order, predictors=predictors,
                     active=[tuple(sorted(order[:k])) for k in range(len(order) + 1)],
                     deactivated=[()] * len(order), time_unit=time_unit)


def agf_staircase(X, y, L, *, alpha):
    """AGF in closed form at initialization scale ``alpha`` in GF time, at the adaptive rate (module docstring).

    Neurons start at ``(α/√L)(1, …, 1, s_i)`` (:meth:`DeepDiagonalSetting.initial_theta`).
    ``order[k-1]`` is the coordinate that activates at jump k, ``predictors[k]`` the coefficients β.

    Raises
    ------
    ValueError
        If a dormant coordinate's correlation with the residual, or an active coefficient, changes sign.
    """
    c = threshold(check_positive(alpha, "alpha"), kappa=check_int(L, "L", minimum=2), adaptive_rate=True)[0]
    return _staircase(X, y, L, c, GF_TIME)


def limit_staircase(X, y, L):
    """The α → 0 limit of :func:`agf_staircase` in ``t/log(1/α)``: the same recursion with threshold one."""
    return _staircase(X, y, L, 1.0, LOG_TIME)


class DeepDiagonalSetting(Setting):
    """Deep diagonal networks on data ``(X, y)``, as a Setting.

    At the adaptive rate, every neuron started at its maximizer (module
    docstring): ``agf_staircase`` is AGF itself. A level's predictor is β,
    its outputs ``X β``.

    Parameters
    ----------
    X : (n, d) array
    y : (n,) or (n, 1) array
    L : int
        Depth, at least 2.
    """

    exact = True
    options = ADAPTIVE_RATE

    def __init__(self, X, y, L):
        self._X, self._y = as_data(X, y)
        if self._y.shape[1] != 1:
            raise ValueError("y must have a single output coordinate, "
                             f"got {self._y.shape[1]}")
        self.network = DeepDiagonalNetwork(self._X.shape[1], L)
        # the last layer carries the sign of E[x_i y]
        correlations = self._X.T @ self._y[:, 0]
        self._signs = np.where(correlations < 0, -1.0, 1.0)

    def data(self):
        return self._X, self._y

    def initial_theta(self, *, alpha, seed=0):
        theta = self.network.initial_theta(alpha=alpha, seed=seed)
        theta[:, -1] *= self._signs
        return theta

    def finite_staircase(self, initial_norms):
        norms = np.unique(initial_norms)
        if norms.size != 1:       # every neuron starts at norm alpha
            raise ValueError("initial_norms must be one norm, "
                             f"got {norms.size} different ones")
        return agf_staircase(self._X, self._y, self.network.kappa,
                             alpha=float(norms[0]))

    def finite_staircase_at(self, alpha, seed):
        # every neuron's norm is alpha itself: no rounding through it
        return agf_staircase(self._X, self._y, self.network.kappa,
                             alpha=alpha)

    def limit_staircase(self):
        return limit_staircase(self._X, self._y, self.network.kappa)

    def level_outputs(self, predictor):
        beta = np.asarray(predictor, dtype=float)
        return (self._X @ beta)[:, None]
