"""Two-layer ReLU networks: closed-form subgradients, a smoothed surrogate for the kinks, and the
utility's data-determined maximizers (chapter 08).

A neuron is ``f_i(x; θ_i) = a_i relu(w_iᵀx̃)`` with ``θ_i = (w_i, a_i)``, ``w`` first, and ``x̃ = x``, or
``x̃ = (x, 1)`` with ``bias=True``: the bias is the last coordinate of ``w_i`` and multiplies a constant
input, so the neuron stays homogeneous of degree κ = 2 in ``θ_i``.

**Kinks.** Gradient flow of a ReLU network is a differential equation whose right-hand side jumps
where ``w_iᵀx̃_n`` changes sign. Where the utility's maximizer lies on such a kink (the XOR-like data of
:func:`xor_data`), a neuron reaches the kink and slides along it (a Filippov sliding mode). An adaptive
solver then chatters across the kink with ever smaller steps and stalls: measured in chapter 08, the
generic engines on :class:`ReLUNetwork` do not finish there. The library's answer is the surrogate
:class:`SmoothReLUNetwork`, with the activation

    σ_ε(w, x̃) = ε‖w‖ · softplus(wᵀx̃ / (ε‖w‖)),     0 ≤ σ_ε − relu(wᵀx̃) ≤ ε‖w‖ log 2,

still homogeneous of degree one in ``w``, so the neuron keeps κ = 2 and every AGF statement applies to
it unchanged. The kink becomes a layer of width ``ε‖w‖`` in which the flow is smooth but stiff (rates of
order 1/ε): use ``method="LSODA"`` in :func:`agf_lib.gradient_flow` and in
:func:`agf_lib.alternating_gradient_flow`, whose stiff switching crosses the layer in a few steps.
Levels move by ``O(ε)`` and the jump times by less (chapter 08 measures both against small-step
gradient descent on the true ReLU network, and tests/test_relu.py checks that they shrink with ε).

**Maximizers.** For one output (``c = 1``) and residual ``r``, the utility of a neuron is
``U(w, a) = a g(w)`` with ``g(w) = E_n[r_n relu(wᵀx̃_n)]``. On the closed cone ``C_P`` of directions with
activation pattern ``P`` (the samples with ``wᵀx̃_n > 0``), ``g(w) = wᵀv_P`` with the data-determined vector
``v_P = E_n[1_{n∈P} r_n x̃_n]``: ``U`` is a quadratic form on each piece. Its maximum over the unit
sphere of ``(w, a)`` on that piece is ``‖Π_{C_P}(±v_P)‖ / 2``, at ``a = ±1/√2`` and ``w`` along the
projection ``Π_{C_P}(±v_P)`` of ``±v_P`` onto the cone (Moreau's decomposition: the projection is ``v_P`` itself
when ``v_P`` lies in its own region, and otherwise a point on the region's boundary, a kink).
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
from scipy.optimize import nnls

from .activations import lifted_inputs, smooth_relu
from .network import FeedForwardNetwork
from .network import as_data
from .results import GF_TIME, LOG_TIME, Staircase
from .setting import Setting
from .validation import check_bool, check_int, real_array

__all__ = [
    "ReLUSetting",
    "ReLUNetwork",
    "SmoothReLUNetwork",
    "initial_theta",
    "orthogonal_data",
    "xor_data",
    "xor_staircase",
    "region_vector",
    "region_maximum",
    "activation_patterns",
    "utility_maximizers",
    "orthogonal_staircase",
]


class ReLUNetwork(FeedForwardNetwork):
    """``f(x; Θ) = Σ_i a_i relu(w_iᵀx̃)``, rows ``θ_i = (w_i, a_i)`` with ``w_i ∈ R^{d(+1)}`` and ``a_i ∈ R^c``:
    :class:`~agf_lib.network.FeedForwardNetwork` with ``activation="relu"``.

    ``bias=True`` appends a constant input 1 to ``x`` (``x̃ = (x, 1)``), so the bias is ``w_i``'s last entry
    and the neuron stays homogeneous of degree κ = 2. With ``z_in = w_iᵀx̃_n`` and ``m_in = ⟨a_i, r_n⟩`` the
    utility and its subgradient (``relu'(0) = 0``) are

        U_i = E_n[relu(z_in) m_in],  ∇_{w_i} U_i = E_n[1[z_in > 0] m_in x̃_n],  ∇_{a_i} U_i = E_n[relu(z_in) r_n].

    On data where a neuron slides along a kink the generic engines stall on this network; use
    :class:`SmoothReLUNetwork` there (see the module docstring).
    """

    def __init__(self, d, H, c=1, *, bias=False):
        super().__init__(d, H, c, activation="relu", bias=bias)

    def __repr__(self):
        return (f"{type(self).__name__}(d={self.input_dim}, H={self.num_neurons}, c={self.output_dim}, "
                f"bias={self.bias})")


class SmoothReLUNetwork(ReLUNetwork):
    """The κ = 2 surrogate ``a_i σ_ε(w_i, x̃)`` with ``σ_ε(w, x̃) = ε‖w‖ softplus(wᵀx̃ / (ε‖w‖))``:
    :class:`~agf_lib.network.FeedForwardNetwork` with the activation ``smooth_relu(eps)`` of
    ``agf_lib.network``.

    ``σ_ε`` is positively homogeneous of degree one in ``w`` and lies between ``relu(wᵀx̃)`` and
    ``relu(wᵀx̃) + ε‖w‖ log 2``. With ``u = wᵀx̃/(ε‖w‖)`` and ``s = sigmoid(u)`` its gradient is

        ∇_w σ_ε = s x̃ + ε (softplus(u) − u s) w/‖w‖,

    which enters the utility gradient as in :class:`ReLUNetwork`. Integrate it with ``method="LSODA"``.
    ``eps`` must be a real number in ``(0, 1]``.

    Along a direction ``u`` of ``w`` orthogonal to every input (a pixel that is zero in every image) the
    true ReLU network's flow never moves ``w`` along it; the surrogate does, through ``‖w‖`` alone. At a critical
    point with ``wᵀu = 0`` the loss's Hessian has ``u`` as an eigenvector with eigenvalue
    ``λ = (∂L/∂‖w‖ at fixed wᵀx̃)/‖w‖``, of order ε (tests/test_relu_digits.py checks it on digits: 2.4e-4
    at ε = 1e-2). An AGF cost step that waits for its gradient to fall by ``cost_tol`` then waits a time of
    order ``log(1/cost_tol)/λ``, far longer than gradient flow gives it before the next neuron arrives; on
    such data pass ``cost_horizon="next_activation"`` to :func:`agf_lib.alternating_gradient_flow`.
    """

    def __init__(self, d, H, c=1, *, eps=1e-4, bias=False):
        FeedForwardNetwork.__init__(self, d, H, c, activation=smooth_relu(eps), bias=bias)
        self.eps = self.activation_function.eps

    def __repr__(self):
        return (f"SmoothReLUNetwork(d={self.input_dim}, H={self.num_neurons}, c={self.output_dim}, "
                f"eps={self.eps:g}, bias={self.bias})")


def initial_theta(network, *, alpha, seed=0):
    """The paper's initialization for ``network`` (a :class:`ReLUNetwork`): ``w_i ~ N(0, α²/(2k) I_k)`` with
    ``k = d (+1 with a bias)`` and ``a_i ~ N(0, α²/(2c) I_c)``, so ``E‖θ_i‖² = α²``; seeded. Shape ``(H, P)``.
    The same as ``network.initial_theta``."""
    if not isinstance(network, ReLUNetwork):
        raise TypeError(f"network must be a ReLUNetwork or SmoothReLUNetwork, got {type(network).__name__}")
    return network.initial_theta(alpha=alpha, seed=seed)


def orthogonal_data(targets):
    """Orthogonal inputs ``x = ±e_j``: ``targets`` of length ``2d`` holds ``y(e_1), y(−e_1), y(e_2), ...``.

    Returns ``X`` of shape ``(2d, d)`` (rows ``e_1, −e_1, e_2, −e_2, ...``) and ``y`` of shape ``(2d,)``.
    """
    y = real_array(targets, "targets", "a 1-D array")
    if y.ndim != 1 or y.size < 2 or y.size % 2:
        raise ValueError(f"targets must be a 1-D array of even length 2d >= 2, got shape {y.shape}")
    d = y.size // 2
    X = np.zeros((2 * d, d))
    X[0::2] = np.eye(d)
    X[1::2] = -np.eye(d)
    return X, y.copy()


def _check_magnitudes(magnitudes):
    m = real_array(magnitudes, "magnitudes", "a 1-D array of 4 positive numbers")
    if m.shape != (4,) or not np.all(m > 0):
        raise ValueError(f"magnitudes must be 4 positive numbers, got {np.asarray(magnitudes).tolist()!r}")
    return m


def xor_data(magnitudes=(1.0, 1.0, 1.0, 1.0)):
    """The four XOR-like points ``x ∈ {±1}²`` (rows ``(1, 1), (1, −1), (−1, 1), (−1, −1)``) with
    ``y = m_k x_1 x_2``, ``m = magnitudes`` (all ones by default): every maximizer of the utility lies on a
    kink. Returns ``X`` of shape ``(4, 2)`` and ``y`` of shape ``(4,)``."""
    m = _check_magnitudes(magnitudes)
    X = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    return X, m * X[:, 0] * X[:, 1]


def xor_staircase(magnitudes=(1.0, 1.0, 1.0, 1.0)):
    """AGF's α → 0 staircase on :func:`xor_data` in the rescaled time ``t / log(1/α)``.

    Two neighbouring points of the square have targets of opposite signs and two opposite points can
    never be active together, so a neuron of output sign ``s`` gains most on the kink ray ``w ∝ x_k`` of a
    sample with ``s y_k > 0``, active on that sample alone: ``Ū* = |y_k| ‖x_k‖ / (2n) = √2 m_k / 8``
    (:func:`utility_maximizers` finds these points). Its cost step fits that sample and leaves the others,
    so each sample is learned by its own neuron, at rescaled time ``1/(2Ū*) = 2√2 / m_k``, largest ``m_k``
    first (ties in index order); each jump lowers the loss by ``m_k² / 8``. ``order[k-1]`` is the index of
    the sample fitted at jump k, and ``predictors[k]`` the network's outputs on level k, shape ``(4, 1)``.
    Assumes each sample gets a neuron (some neuron starts where the flow takes it to that ray).
    """
    m = _check_magnitudes(magnitudes)
    _, y = xor_data(m)
    order = [int(k) for k in np.argsort(-m, kind="stable")]
    outputs = np.zeros((4, 1))
    times, losses, states = [0.0], [0.5 * float(y @ y) / 4], [outputs.copy()]
    for k in order:
        outputs[k, 0] = y[k]
        residual = y - outputs[:, 0]
        times.append(2 * math.sqrt(2) / float(m[k]))
        losses.append(0.5 * float(residual @ residual) / 4)
        states.append(outputs.copy())
    return Staircase(np.array(times), np.array(losses), order, predictors=states, time_unit=LOG_TIME)


def _check_xr(X, residual, bias):
    X = real_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {X.shape}")
    r = real_array(residual, "residual")
    if r.ndim == 2 and r.shape[1] == 1:
        r = r[:, 0]
    if r.shape != (X.shape[0],):
        raise ValueError(f"residual must have shape (n,) or (n, 1) with n = {X.shape[0]}, got {r.shape}")
    return lifted_inputs(X, check_bool(bias, "bias")), r


def _check_pattern(pattern, n):
    P = np.asarray(pattern)
    if P.shape != (n,) or P.dtype != bool:
        raise ValueError(f"pattern must be a boolean array of shape ({n},), got {P.dtype} {P.shape}")
    return P


def region_vector(X, residual, pattern, *, bias=False):
    """``v_P = E_n[1_{n∈P} r_n x̃_n]``: on the activation region ``P``, ``E_n[r_n relu(wᵀx̃_n)] = wᵀv_P``."""
    Xt, r = _check_xr(X, residual, bias)
    P = _check_pattern(pattern, Xt.shape[0])
    return (P * r) @ Xt / Xt.shape[0]


def region_maximum(X, residual, pattern, *, bias=False, sign=1):
    """The largest normalized utility on the closed activation region ``P``, for output weight sign ``sign``.

    Returns ``(value, theta)``: ``value = ‖Π_{C_P}(sign·v_P)‖ / 2`` and the unit maximizer ``theta = (w, a)``
    with ``a = sign/√2`` and ``w = Π/(√2‖Π‖)``, the projection ``Π`` of ``sign·v_P`` onto the closed cone
    ``C_P = {w : wᵀx̃_n ≥ 0 (n ∈ P), wᵀx̃_n ≤ 0 (n ∉ P)}``, computed exactly by nonnegative least squares
    on the polar cone (Moreau). ``theta`` is None when the value is zero.
    """
    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    Xt, r = _check_xr(X, residual, bias)
    P = _check_pattern(pattern, Xt.shape[0])
    v = sign * (P * r) @ Xt / Xt.shape[0]
    polar = -np.where(P, 1.0, -1.0)[:, None] * Xt        # C_P = {w : polar_n · w ≤ 0}
    lam, _ = nnls(polar.T, v)
    proj = v - polar.T @ lam
    size = float(np.linalg.norm(proj))
    if size <= 1e-14 * max(float(np.linalg.norm(v)), 1e-300):
        return 0.0, None
    return size / 2, np.append(proj / (math.sqrt(2) * size), sign / math.sqrt(2))


def activation_patterns(X, *, bias=False, num_samples=20000, seed=0):
    """The activation patterns ``{n : wᵀx̃_n > 0}`` met by ``num_samples`` random directions (seeded), as a
    boolean array of shape ``(num_patterns, n)``: all regions of the arrangement for small ``n`` and ``d``."""
    X = real_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {X.shape}")
    num_samples = check_int(num_samples, "num_samples")
    Xt = lifted_inputs(X, check_bool(bias, "bias"))
    directions = np.random.default_rng(check_int(seed, "seed", 0)).standard_normal((num_samples, Xt.shape[1]))
    return np.unique(directions @ Xt.T > 0, axis=0)


def utility_maximizers(X, residual, *, bias=False, num_samples=20000, seed=0):
    """Every region's best point, best first: a list of ``(value, theta, pattern, sign)``.

    Runs :func:`region_maximum` on every pattern of :func:`activation_patterns` and both output signs.
    The first entry is the global maximum of the normalized utility ``Ū`` over the unit sphere of
    ``(w, a)`` (for one output); entries whose maximizer lies on a region's boundary also appear under
    the neighbouring region, and are kept once.
    """
    Xt, r = _check_xr(X, residual, bias)
    found = []
    for P in activation_patterns(X, bias=bias, num_samples=num_samples, seed=seed):
        for sign in (1, -1):
            value, theta = region_maximum(X, r, P, bias=bias, sign=sign)
            if theta is None:
                continue
            if any(np.allclose(theta, other, atol=1e-12) for _, other, _, _ in found):
                continue
            found.append((value, theta, P, sign))
    found.sort(key=lambda item: -item[0])
    return found


def orthogonal_staircase(targets):
    """AGF's α → 0 staircase on :func:`orthogonal_data` in the rescaled time ``t / log(1/α)``.

    A neuron whose ``a`` has sign ``s`` collects, for each axis ``j``, the one of ``±e_j`` with the larger
    ``s·y`` if it is positive: ``Ū* = ‖b_s‖ / (2n)`` with ``b_{s,j} = max(s y(e_j), s y(−e_j), 0)``, at
    ``w ∝ Σ_j b_{s,j} (±e_j)``, and its cost step fits those samples exactly. The inputs are orthogonal,
    so each sign's group of samples is learned by its own neuron, at its own pace: a neuron of initial
    norm ``ν`` aligns in a time of order one and activates at ``log(1/ν) / (2Ū*)``, which is
    ``1/(2Ū*) = n/‖b_s‖`` in units of ``log(1/α)`` as α → 0. Groups are listed in the order they activate;
    ``order[k-1]`` is ``(sign, indices of the samples fitted)``. Assumes each group gets a neuron
    (some neuron starts in the region that flows to it, true with probability → 1 as H grows) and that
    ``targets`` leaves one sample per sign and axis (at most two groups; see ``Raises``). ``predictors[k]`` holds
    the network's outputs on level k, shape ``(2d, 1)``: the fitted samples' targets, zero elsewhere.

    Raises
    ------
    ValueError
        A second neuron of the same sign would be needed (both ``e_j`` and ``−e_j`` with targets of the
        same sign): the pace of that neuron then depends on the residual left by the first.
    """
    X, y = orthogonal_data(targets)
    n, d = X.shape
    groups = []
    for sign in (1, -1):
        pairs = sign * y.reshape(d, 2)
        if np.any(np.all(pairs > 0, axis=1)):
            raise ValueError("targets must not give both e_j and -e_j targets of the same sign (that needs a "
                             "second neuron of that sign, whose pace depends on the first)")
        b = np.maximum(pairs.max(1), 0.0)
        if np.any(b > 0):
            fitted = tuple(int(2 * j + np.argmax(pairs[j])) for j in range(d) if b[j] > 0)
            groups.append((n / float(np.linalg.norm(b)), sign, fitted))
    groups.sort()
    times, losses, order = [0.0], [0.5 * float(y @ y) / n], []
    residual = y.copy()
    states = [np.zeros((n, 1))]
    for time_, sign, fitted in groups:
        residual[list(fitted)] = 0.0
        times.append(time_)
        losses.append(0.5 * float(residual @ residual) / n)
        order.append((sign, fitted))
        states.append((y - residual)[:, None])
    return Staircase(np.array(times), np.array(losses), order, predictors=states, time_unit=LOG_TIME)


class ReLUSetting(Setting):
    """ReLU networks (chapter 08) on the data of a closed form, as a :class:`~agf_lib.setting.Setting`.

    Build one with :meth:`orthogonal` or :meth:`xor`: the engines run on the smoothed surrogate
    :class:`SmoothReLUNetwork` (it lets them pass kinks), and the closed form is the α → 0 staircase of
    :func:`orthogonal_staircase` or :func:`xor_staircase`; at finite α it is that staircase in GF time at the
    largest initial norm (a neuron aligned from the start: a lower bound on the first jump). A level's
    predictor is the network's outputs on ``X``, shape ``(n, 1)``.

    Parameters
    ----------
    X : (n, d) array
    y : (n,) array
    limit : Staircase
        The α → 0 staircase of these data, in ``t/log(1/α)``.
    H : int, default 8
        Number of neurons.
    eps : float, default 1e-4
        The surrogate's smoothing (:class:`SmoothReLUNetwork`).
    """

    # LSODA crosses the surrogate's stiff layer at a kink, where an explicit method stalls; the cost step's
    # levels are exact to the surrogate's own offset (of order eps) well before its gradient reaches 1e-6
    agf_options = MappingProxyType({"method": "LSODA", "cost_tol": 1e-6})

    def __init__(self, X, y, limit, *, H=8, eps=1e-4):
        X, y = as_data(X, y)
        if y.shape[1] != 1:
            raise ValueError(f"y must have one output for ReLUSetting, got {y.shape[1]}")
        if not isinstance(limit, Staircase):
            raise TypeError(f"limit must be a Staircase, got {type(limit).__name__}")
        self._X, self._y, self._limit = X, y, limit
        self.network = SmoothReLUNetwork(X.shape[1], H, eps=eps)

    @classmethod
    def orthogonal(cls, targets, *, H=8, eps=1e-4):
        """The setting on :func:`orthogonal_data` of ``targets``, with :func:`orthogonal_staircase`."""
        X, y = orthogonal_data(targets)
        return cls(X, y, orthogonal_staircase(targets), H=H, eps=eps)

    @classmethod
    def xor(cls, magnitudes=(1.0, 1.0, 1.0, 1.0), *, H=8, eps=1e-4):
        """The setting on :func:`xor_data` of ``magnitudes``, with :func:`xor_staircase`."""
        X, y = xor_data(magnitudes)
        return cls(X, y, xor_staircase(magnitudes), H=H, eps=eps)

    def data(self):
        return self._X, self._y

    def finite_staircase(self, initial_norms):
        return self._limit.in_units(GF_TIME, float(np.max(initial_norms)))

    def limit_staircase(self):
        return self._limit

    def level_outputs(self, predictor):
        return np.asarray(predictor, dtype=float)
