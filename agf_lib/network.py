"""The network abstraction: a two-layer network given neuron by neuron.

A network holds no parameters. It maps parameters ``theta`` of shape ``(H, P)`` (one row per
neuron) and inputs ``X`` of shape ``(n, d)`` to every neuron's output ``f_i(x; θ_i)``, of shape
``(H, n, c)``; the network's output is the sum over neurons. Each neuron is homogeneous of degree
``kappa`` in its own parameters, ``f_i(x; sθ_i) = s^κ f_i(x; θ_i)`` for ``s > 0``.

Loss and utility follow the paper's Section 2 (Eq. 1), with the mean over samples and the sum
over output coordinates:

    L(Θ) = E_x[½‖y(x) − Σ_i f_i(x; θ_i)‖²],      U_i(θ_i; r) = E_x[⟨f_i(x; θ_i), r(x)⟩],

where ``r`` is the residual of the active neurons.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["TwoLayerNetwork", "FeedForwardNetwork", "as_data", "loss", "utility", "ACTIVATIONS"]

DTYPE = torch.float64


def as_data(X, y):
    """Validate a data pair and return float64 tensors ``X`` of shape (n, d) and ``y`` of shape (n, c)."""
    tensors = []
    for name, value in (("X", X), ("y", y)):
        if isinstance(value, torch.Tensor):
            value = value.detach().to(DTYPE)
        elif isinstance(value, (np.ndarray, list, tuple)):
            value = torch.as_tensor(np.asarray(value, dtype=float), dtype=DTYPE)
        else:
            raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(value).__name__}")
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"{name} contains NaN or infinite values")
        tensors.append(value)
    X, y = tensors
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {tuple(X.shape)}")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape (n,) or (n, c) with n = {X.shape[0]} rows like X, got {tuple(y.shape)}")
    return X, y


def _real_array(value, name, what="an array"):
    """``value`` (array, list, tuple or tensor) as a finite float array; TypeError/ValueError naming ``name``."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if not isinstance(value, (np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be {what} of real numbers, got {type(value).__name__}")
    value = np.asarray(value)
    if value.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
    value = value.astype(float)
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return value


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)):
        raise TypeError(f"alpha must be a real number, got {type(alpha).__name__}")
    alpha = float(alpha)
    if not math.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be a finite positive number, got {alpha!r}")
    return alpha


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class TwoLayerNetwork:
    """Base class: subclasses set ``kappa``, ``num_neurons``, ``num_params``, ``output_dim``, ``input_dim``
    and implement :meth:`neuron_outputs`.

    :meth:`utility_gradient` is computed with torch autograd; a subclass may override it with a
    closed form for speed.
    """

    kappa: float
    num_neurons: int
    num_params: int
    input_dim: int
    output_dim: int

    def neuron_outputs(self, theta, X):
        """Every neuron's output ``f_i(x_n; θ_i)``: tensor of shape ``(H, n, c)``."""
        raise NotImplementedError

    def __call__(self, theta, X):
        """The network's output ``f(x_n; Θ) = Σ_i f_i(x_n; θ_i)``, shape ``(n, c)``."""
        return self.neuron_outputs(theta, X).sum(0)

    def utility_gradient(self, theta, X, residual):
        """Utilities ``U_i(θ_i; r)`` (shape ``(H,)``) and their gradients ``∇_{θ_i} U_i`` (shape ``(H, P)``)."""
        theta = theta.detach().requires_grad_(True)
        with torch.enable_grad():
            U = torch.einsum("hnc,nc->h", self.neuron_outputs(theta, X), residual) / X.shape[0]
            (grad,) = torch.autograd.grad(U.sum(), theta)
        return U.detach(), grad

    # The engines integrate each neuron in polar coordinates of a *chart* ``φ_i = C(θ_i)``, a linear
    # isometry of the neuron's parameters (the identity unless a subclass overrides the four methods
    # below). A good chart makes what a neuron's direction must remember a coordinate of its own: a
    # diagonal neuron far from the origin has direction (1, α²/‖θ‖²) in (u + v, u − v)/√2, whereas in
    # (u, v) the same fact is a difference of two numbers near 1/√2, lost in float64 once ‖θ‖ ≫ 1e8 α.
    # With ``has_chart`` the engines control the error of direction components relatively.
    has_chart = False

    def to_chart(self, theta):
        return theta

    def from_chart(self, phi):
        return phi

    def chart_outputs(self, phi, X):
        """:meth:`neuron_outputs` of the parameters with chart coordinates ``phi``."""
        return self.neuron_outputs(phi, X)

    def chart_utility_gradient(self, phi, X, residual):
        """:meth:`utility_gradient` with the gradient taken in chart coordinates."""
        return self.utility_gradient(phi, X, residual)

    def check_theta(self, theta, name="theta"):
        """Validate parameters and return them as a float64 tensor of shape ``(H, P)``."""
        if isinstance(theta, np.ndarray):
            theta = torch.as_tensor(theta, dtype=DTYPE)
        elif isinstance(theta, torch.Tensor):
            theta = theta.detach().to(DTYPE)
        else:
            raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(theta).__name__}")
        expected = (self.num_neurons, self.num_params)
        if tuple(theta.shape) != expected:
            raise ValueError(f"{name} must have shape {expected} (one row per neuron), got {tuple(theta.shape)}")
        if not bool(torch.isfinite(theta).all()):
            raise ValueError(f"{name} contains NaN or infinite values")
        return theta

    def check_data(self, X, y):
        """Validate data against this network's input and output sizes."""
        X, y = as_data(X, y)
        if X.shape[1] != self.input_dim:
            raise ValueError(f"X must have {self.input_dim} columns for this network, got {X.shape[1]}")
        if y.shape[1] != self.output_dim:
            raise ValueError(f"y must have {self.output_dim} output coordinates for this network, got {y.shape[1]}")
        return X, y


def loss(network, theta, X, y):
    """The loss ``L(Θ) = E_x[½‖y − f(x; Θ)‖²]`` (mean over samples, sum over outputs), as a float."""
    X, y = network.check_data(X, y)
    theta = network.check_theta(theta)
    with torch.no_grad():
        return float(0.5 * ((y - network(theta, X)) ** 2).sum() / X.shape[0])


def utility(network, theta, X, residual):
    """Each neuron's utility ``U_i(θ_i; r) = E_x[⟨f_i(x; θ_i), r(x)⟩]`` (paper Eq. 1), shape ``(H,)``."""
    X, residual = network.check_data(X, residual)
    theta = network.check_theta(theta)
    with torch.no_grad():
        return (torch.einsum("hnc,nc->h", network.neuron_outputs(theta, X), residual) / X.shape[0]).numpy()


# name -> (σ, homogeneity degree of a σ(wᵀx) in θ = (w, a))
ACTIVATIONS = {
    "linear": (lambda z: z, 2),
    "relu": (torch.relu, 2),
    "square": (lambda z: z * z, 3),
}


class FeedForwardNetwork(TwoLayerNetwork):
    """``f(x; Θ) = Σ_i a_i σ(w_iᵀx)``, the paper's two-layer network with ``g_i(x) = x``.

    Each row of ``theta`` is ``θ_i = (w_i, a_i)`` with ``w_i ∈ R^d`` then ``a_i ∈ R^c`` (``P = d + c``).
    ``activation`` is one of ``"linear"`` (κ = 2), ``"relu"`` (κ = 2) or ``"square"`` (κ = 3).
    """

    def __init__(self, d, H, c=1, activation="linear"):
        d, H, c = _check_positive_int(d, "d"), _check_positive_int(H, "H"), _check_positive_int(c, "c")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.input_dim, self.num_neurons, self.output_dim = d, H, c
        self.num_params = self.input_dim + self.output_dim
        self.activation = activation
        self.sigma, self.kappa = ACTIVATIONS[activation]

    def neuron_outputs(self, theta, X):
        w, a = theta[:, : self.input_dim], theta[:, self.input_dim :]
        return self.sigma(w @ X.T)[:, :, None] * a[:, None, :]

    def initial_theta(self, alpha, seed=0):
        """The paper's initialization ``a_i ~ N(0, α²/(2c) I)``, ``w_i ~ N(0, α²/(2d) I)``, seeded."""
        alpha = _check_alpha(alpha)
        rng = np.random.default_rng(seed)
        w = rng.normal(0.0, alpha / math.sqrt(2 * self.input_dim), (self.num_neurons, self.input_dim))
        a = rng.normal(0.0, alpha / math.sqrt(2 * self.output_dim), (self.num_neurons, self.output_dim))
        return np.concatenate([w, a], axis=1)

    def __repr__(self):
        return (f"FeedForwardNetwork(d={self.input_dim}, H={self.num_neurons}, c={self.output_dim}, "
                f"activation={self.activation!r})")
