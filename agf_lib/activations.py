"""The activations of :class:`agf_lib.network.FeedForwardNetwork`: the neuron ``a σ(w, x̃)``, one closed-form
gradient for all of them.

A registry (:data:`ACTIVATIONS`, and the families :func:`power` and :func:`smooth_relu`) of small objects
that evaluate ``σ`` and its gradient in ``w`` on a stack of weights; ``FeedForwardNetwork`` turns them into
a network's outputs, utilities and gradients. ReLU networks (:mod:`agf_lib.relu`) and the composition
networks of :mod:`agf_lib.groups` are feed-forward networks with these activations.
"""

from __future__ import annotations

import abc
import math
import re
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .validation import check_int

__all__ = ["ACTIVATIONS", "Activation", "Power", "ReLU", "SmoothReLU", "power", "smooth_relu", "lifted_inputs"]


def lifted_inputs(X, bias):
    """Inputs ``x̃``: ``X`` itself, or with ``bias`` ``X`` with a column of ones appended (the bias input)."""
    return np.concatenate([X, np.ones((X.shape[0], 1))], axis=1) if bias else X


class Activation(abc.ABC):
    """An activation of the neuron ``a σ(w, x̃)`` with ``θ = (w, a)``: its values and its gradient in ``w``.

    An activation is evaluated on the weights ``w`` of shape ``(H, k)`` and the inputs ``x̃`` of shape
    ``(n, k)`` rather than on ``z = wᵀx̃`` alone, because it may depend on ``w`` through more than ``z``
    (the smoothed ReLU of :class:`SmoothReLU` depends on ``‖w‖`` too). It is positively homogeneous of
    degree ``κ − 1`` in ``w``, so the neuron is homogeneous of degree ``κ`` in ``θ``. The gradient has
    the form

        ∇_w σ(w_i, x̃_n) = A_in x̃_n + B_in w_i,

    with ``B = 0`` when σ depends on ``w`` through ``z`` only (then ``A_in = σ'(z_in)``).

    The activations are frozen dataclasses, compared by value; :data:`ACTIVATIONS` names the
    parameterless ones, :func:`power` and :func:`smooth_relu` build the families.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The activation's name (``network.activation``)."""

    @property
    @abc.abstractmethod
    def kappa(self) -> int:
        """κ, the degree of homogeneity of ``a σ(w, x̃)`` in ``θ = (w, a)``."""

    @abc.abstractmethod
    def evaluate(self, w, Xt):
        """Values and gradient coefficients.

        Parameters
        ----------
        w : (H, k) array
            Weights, one row per neuron.
        Xt : (n, k) array
            Inputs ``x̃``.

        Returns
        -------
        values : (H, n) array
            ``σ(w_i, x̃_n)``.
        along_x : (H, n) array
            ``A``, the coefficient of ``x̃_n`` in the gradient.
        along_w : (H, n) array or None
            ``B``, the coefficient of ``w_i``; None where it is zero.
        """

    def values(self, w, Xt):
        """``σ(w_i, x̃_n)``, shape ``(H, n)``: the first output of :meth:`evaluate`, without the gradient."""
        return self.evaluate(w, Xt)[0]


@dataclass(frozen=True)
class Power(Activation):
    """``σ(z) = z^k`` for an integer ``k ≥ 1`` (κ = k + 1): ``"linear"`` for k = 1, ``"square"`` for k = 2,
    ``"power<k>"`` otherwise. Build it with :func:`power`."""

    k: int

    def __post_init__(self):
        check_int(self.k, "k")

    @property
    def name(self):
        return {1: "linear", 2: "square"}.get(self.k, f"power{self.k}")

    @property
    def kappa(self):
        return self.k + 1

    def evaluate(self, w, Xt):
        z = w @ Xt.T
        if self.k == 1:
            return z, np.ones_like(z), None
        z_km1 = z                                  # z^(k−1) by products: exact for k = 2, as z·z below
        for _ in range(self.k - 2):
            z_km1 = z_km1 * z
        return z_km1 * z, self.k * z_km1, None

    def values(self, w, Xt):
        z = w @ Xt.T
        s = z
        for _ in range(self.k - 1):
            s = s * z
        return s

    def __repr__(self):
        return f"power({self.k})"


@dataclass(frozen=True)
class ReLU(Activation):
    """``σ(z) = max(z, 0)`` (κ = 2), with the subgradient ``σ'(z) = 1[z > 0]`` (``σ'(0) = 0``)."""

    name = "relu"
    kappa = 2

    def evaluate(self, w, Xt):
        z = w @ Xt.T
        return np.maximum(z, 0.0), (z > 0).astype(float), None

    def values(self, w, Xt):
        return np.maximum(w @ Xt.T, 0.0)

    def __repr__(self):
        return "ReLU()"


@dataclass(frozen=True)
class SmoothReLU(Activation):
    """The smoothed ReLU ``σ_ε(w, x̃) = ε‖w‖ softplus(wᵀx̃ / (ε‖w‖))`` (κ = 2), zero at ``w = 0``.

    ``σ_ε`` is positively homogeneous of degree one in ``w`` and lies between ``relu(wᵀx̃)`` and
    ``relu(wᵀx̃) + ε‖w‖ log 2``. With ``u = wᵀx̃/(ε‖w‖)`` and ``s = sigmoid(u)`` its gradient is
    ``∇_w σ_ε = s x̃ + ε (softplus(u) − u s) w/‖w‖``. Build it with :func:`smooth_relu`.

    Raises
    ------
    TypeError
        If ``eps`` is not a real number.
    ValueError
        If ``eps`` is not in ``(0, 1]``.
    """

    eps: float
    name = "smooth_relu"
    kappa = 2

    def __post_init__(self):
        eps = self.eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
            raise TypeError(f"eps must be a real number, got {type(eps).__name__}")
        eps = float(eps)
        if not (math.isfinite(eps) and 0 < eps <= 1):
            raise ValueError(f"eps must be in (0, 1], got {eps!r}")
        object.__setattr__(self, "eps", eps)       # frozen: stored as a float

    def _scaled(self, w, Xt):
        norm = np.sqrt(np.einsum("hp,hp->h", w, w))
        width = self.eps * np.maximum(norm, 1e-300)[:, None]        # ε‖w‖; a zero w outputs zero
        u = (w @ Xt.T) / width
        return norm, width, u, np.logaddexp(0.0, u)

    def evaluate(self, w, Xt):
        norm, width, u, soft = self._scaled(w, Xt)
        s = 0.5 * (1.0 + np.tanh(0.5 * u))
        along_w = self.eps * (soft - u * s) / np.maximum(norm, 1e-300)[:, None]
        return width * soft * (norm > 0)[:, None], s, along_w

    def values(self, w, Xt):
        norm, width, _, soft = self._scaled(w, Xt)
        return width * soft * (norm > 0)[:, None]

    def __repr__(self):
        return f"smooth_relu(eps={self.eps!r})"


def power(k):
    """The activation ``σ(z) = z^k`` (κ = k + 1), also spelled ``activation="power<k>"`` (``"power3"``);
    ``power(1)`` is ``"linear"`` and ``power(2)`` is ``"square"``.

    Raises
    ------
    TypeError, ValueError
        If ``k`` is not an integer ``>= 1``.
    """
    return Power(k)


def smooth_relu(eps=1e-4):
    """The smoothed ReLU :class:`SmoothReLU` of width ``eps`` (κ = 2)."""
    return SmoothReLU(eps)


#: The named activations, a read-only mapping from name to :class:`Activation`; :func:`power` and
#: :func:`smooth_relu` build the families.
ACTIVATIONS = MappingProxyType({"linear": Power(1), "relu": ReLU(), "square": Power(2)})


def _activation(activation):
    """The :class:`Activation` that ``activation`` (an Activation, a name of :data:`ACTIVATIONS`, or
    ``"power<k>"``) names."""
    if isinstance(activation, Activation):
        return activation
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a name or an Activation, got {type(activation).__name__}")
    if activation in ACTIVATIONS:
        return ACTIVATIONS[activation]
    match = re.fullmatch(r"power([1-9][0-9]*)", activation)
    if match:
        return Power(int(match[1]))
    raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r} (or 'power<k>' for "
                     "an integer k >= 1, or an Activation: power(k), smooth_relu(eps))")
