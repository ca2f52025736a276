"""The network abstraction: a two-layer network given neuron by neuron.

A network holds no parameters. It maps parameters ``theta`` of shape ``(H, P)`` (one row per
neuron) and inputs ``X`` of shape ``(n, d)`` to every neuron's output ``f_i(x; θ_i)``, of shape
``(H, n, c)``; the network's output is the sum over neurons. Each neuron is homogeneous of degree
``kappa`` in its own parameters, ``f_i(x; sθ_i) = s^κ f_i(x; θ_i)`` for ``s > 0``.

Loss and utility follow the paper's Section 2 (Eq. 1), with the mean over samples and the sum
over output coordinates::

    L(Θ) = E_x[½‖y(x) − Σ_i f_i(x; θ_i)‖²]
    U_i(θ_i; r) = E_x[⟨f_i(x; θ_i), r(x)⟩]

where ``r`` is the residual of the active neurons.

**Length.** Most of it is the contract of :class:`TwoLayerNetwork`: every optional fast path an engine may
call, with its default built from the required methods and documented where it is defined; the activations are
:mod:`agf_lib.activations`.
"""

from __future__ import annotations

import math

import numpy as np

from .activations import Activation, Power, ReLU, _activation, lifted_inputs
from .validation import as_float_array, check_bool, check_int, check_positive, real_array

__all__ = ["TwoLayerNetwork", "FeedForwardNetwork", "as_data", "loss", "utility"]


def as_data(X, y):
    """Validate a data pair and return float64 arrays ``X`` of shape ``(n, d)`` and ``y`` of shape ``(n, c)``.

    A ``y`` of shape ``(n,)`` becomes ``(n, 1)``.

    Raises
    ------
    TypeError
        If ``X`` or ``y`` is not a real NumPy array or torch tensor.
    ValueError
        If the shapes do not match, or an entry is not finite.
    """
    expected = "a numpy array or torch tensor"
    X, y = real_array(X, "X", expected=expected), real_array(y, "y", expected=expected)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {tuple(X.shape)}")
    if 0 in X.shape:       # no sample: every mean over samples divides by zero
        raise ValueError(f"X must have at least one row (sample) and one column (input), got shape {X.shape}")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape (n,) or (n, c) with n = {X.shape[0]} rows like X, got {tuple(y.shape)}")
    return X, y


class TwoLayerNetwork:
    """Base class of the library's networks, given neuron by neuron.

    Every method takes and returns float64 NumPy arrays. A subclass sets the attributes below and
    provides its outputs in one of two ways:

    - the fast path: :meth:`neuron_outputs` and :meth:`utility_gradient` in closed form, in NumPy
      (every network of the library does this); or
    - the fallback: :meth:`torch_outputs`, the same outputs written with torch operations, from which
      :meth:`neuron_outputs` and :meth:`utility_gradient` are derived (the gradient by autograd).

    The engines call these methods thousands of times, and the torch fallback is much slower per
    call, so the closed form decides their speed.

    The engines integrate each neuron in polar coordinates of a chart ``φ_i = C(θ_i)``, a linear
    isometry of the neuron's parameters (:meth:`to_chart`, :meth:`from_chart`; the identity unless a
    subclass overrides them, with the chart methods below). A good chart makes what a neuron's
    direction must remember a coordinate of its own: a diagonal neuron far from the origin has
    direction ``(1, α²/‖θ‖²)`` in ``(u + v, u − v)/√2``, whereas in ``(u, v)`` the same fact is a
    difference of two numbers near ``1/√2``, lost in float64 once ``‖θ‖ ≫ 1e8 α``.

    Attributes
    ----------
    kappa : float
        Degree of homogeneity of each neuron in its own parameters.
    num_neurons : int
        ``H``, the number of neurons (rows of ``theta``).
    num_params : int
        ``P``, the number of parameters of a neuron (columns of ``theta``).
    input_dim : int
        ``d``, the number of columns of ``X``.
    output_dim : int
        ``c``, the number of output coordinates.
    has_chart : bool
        Whether the network overrides the chart; the engines then control the error of direction
        components relatively. Default False.
    sign_preserving_chart : bool
        Whether the chart coordinates keep their signs under gradient flow, each one's velocity
        proportional to itself (a diagonal neuron's ``p`` and ``q`` follow ``dp/dt = ηgp`` and
        ``dq/dt = −ηgq``); such a network provides :meth:`log_gradient_function`, has κ = 2, and
        gradient flow integrates the logarithms of its coordinates. Default False.
    quadratic_utility : bool
        Whether every neuron's utility is a quadratic form in its parameters (κ = 2, the output
        linear in each of two blocks: linear and diagonal networks); AGF then solves the utility flow
        in closed form. Default False.
    neurons_share_inputs : bool
        Whether all neurons compute the same function of their own parameters and the input (no
        neuron-specific input ``g_i(x)``, unlike the diagonal network), so that any subset of rows is a
        network of its own. Default False.
    """

    kappa: float
    num_neurons: int
    num_params: int
    input_dim: int
    output_dim: int

    def torch_outputs(self, theta, X):
        """Every neuron's output as a torch tensor of shape ``(H, n, c)``, from torch tensors ``theta``
        and ``X``.

        Implement it (and nothing else) for a network without closed forms.

        Raises
        ------
        NotImplementedError
            Unless a subclass implements it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement neuron_outputs and utility_gradient "
                                  "(NumPy, closed form) or torch_outputs (torch, differentiated by autograd)")

    def neuron_outputs(self, theta, X):
        """Every neuron's output ``f_i(x_n; θ_i)``.

        Parameters
        ----------
        theta : (H, P) array
            Parameters, one row per neuron.
        X : (n, d) array
            Inputs.

        Returns
        -------
        (H, n, c) array
            The outputs of each neuron.
        """
        import torch

        with torch.no_grad():
            return self.torch_outputs(torch.from_numpy(np.asarray(theta, dtype=float)),
                                      torch.from_numpy(np.asarray(X, dtype=float))).numpy()

    def __call__(self, theta, X):
        """The network's output ``f(x_n; Θ) = Σ_i f_i(x_n; θ_i)``, shape ``(n, c)``."""
        return self.neuron_outputs(theta, X).sum(0)

    def utility_gradient(self, theta, X, residual):
        """Utilities ``U_i(θ_i; r)`` and their gradients ``∇_{θ_i} U_i``.

        Parameters
        ----------
        theta : (H, P) array
            Parameters, one row per neuron.
        X : (n, d) array
            Inputs.
        residual : (n, c) array
            The residual ``r``.

        Returns
        -------
        U : (H,) array
            The utilities.
        grad : (H, P) array
            Their gradients.
        """
        import torch

        theta = torch.tensor(np.asarray(theta, dtype=float), requires_grad=True)
        X, residual = torch.from_numpy(np.asarray(X, dtype=float)), torch.from_numpy(np.asarray(residual, dtype=float))
        with torch.enable_grad():
            U = torch.einsum("hnc,nc->h", self.torch_outputs(theta, X), residual) / X.shape[0]
            (grad,) = torch.autograd.grad(U.sum(), theta)
        return U.detach().numpy(), grad.numpy()

    # The engines integrate each neuron in polar coordinates of a *chart* ``φ_i = C(θ_i)``, a linear
    # isometry of the neuron's parameters (the identity unless a subclass overrides the four methods
    # below). A good chart makes what a neuron's direction must remember a coordinate of its own: a
    # diagonal neuron far from the origin has direction (1, α²/‖θ‖²) in (u + v, u − v)/√2, whereas in
    # (u, v) the same fact is a difference of two numbers near 1/√2, lost in float64 once ‖θ‖ ≫ 1e8 α.
    # With ``has_chart`` the engines control the error of direction components relatively.
    has_chart = False

    # Set by networks whose chart coordinates keep their signs under gradient flow, each one's velocity being
    # proportional to itself (a diagonal neuron's p and q follow dp/dt = ηgp and dq/dt = −ηgq), and which
    # provide :meth:`log_gradient_function`. Gradient flow then integrates the coordinates' logarithms, in
    # which a plateau is a straight line and every coordinate, however small, keeps its relative accuracy.
    # Such a network has κ = 2 (its velocity is linear in each coordinate), so the adaptive rate is η.
    sign_preserving_chart = False

    # Set by networks whose every neuron's utility is a quadratic form in its parameters (κ = 2, the
    # output linear in each of two blocks: linear and diagonal networks). Their utility gradient is
    # linear in θ_i, and AGF solves the utility flow in closed form (a matrix exponential).
    quadratic_utility = False

    # Set by networks whose neurons all compute the same function of their own parameters and the input
    # (no neuron-specific input g_i(x), unlike the diagonal network): any subset of rows is then a
    # network of its own, and the engines evaluate only the neurons they need.
    neurons_share_inputs = False

    def to_chart(self, theta):
        """Chart coordinates ``φ`` of parameters ``theta``, shape ``(H, P)``; the identity by default."""
        return theta

    def from_chart(self, phi):
        """Parameters of chart coordinates ``phi`` (also maps gradients back); the identity by default."""
        return phi

    def chart_outputs(self, phi, X):
        """:meth:`neuron_outputs` of the parameters with chart coordinates ``phi``."""
        return self.neuron_outputs(phi, X)

    def chart_utility_gradient(self, phi, X, residual):
        """:meth:`utility_gradient` with the gradient taken in chart coordinates."""
        return self.utility_gradient(phi, X, residual)

    def weighted_output(self, phi, X, weights):
        """The weighted output ``Σ_i weights_i f_i(x_n; φ_i)`` for chart coordinates ``phi``.

        This is what the engines evaluate, with ``weights_i = ‖θ_i‖^κ`` and unit directions ``phi``.
        Override it where the sum is cheaper than the ``(H, n, c)`` array of every neuron's output.

        Parameters
        ----------
        phi : (H, P) array
            Chart coordinates.
        X : (n, d) array
            Inputs.
        weights : (H,) array
            Weight of each neuron.

        Returns
        -------
        (n, c) array
        """
        return np.einsum("h,hnc->nc", weights, self.chart_outputs(phi, X))

    def chart_residual_gradient(self, phi, X, y, weights):
        """The residual and the utility gradients at it, in chart coordinates.

        This is what both engines evaluate at every step of gradient flow. By default
        :meth:`weighted_output`, then
        :meth:`~agf_lib.network.TwoLayerNetwork.chart_utility_gradient`; a network whose two share
        work (its pre-activations ``w_iᵀx``) overrides it to do that work once.

        Parameters
        ----------
        phi : (H, P) array
            Chart coordinates.
        X : (n, d) array
            Inputs.
        y : (n, c) array
            Targets.
        weights : (H,) array
            Weight of each neuron, as in :meth:`weighted_output`.

        Returns
        -------
        r : (n, c) array
            The residual ``y − Σ_i weights_i f_i(x; φ_i)``.
        grad : (H, P) array
            The utility gradients ``∇U_i(φ_i; r)``.
        """
        residual = y - self.weighted_output(phi, X, weights)
        return residual, self.chart_utility_gradient(phi, X, residual)[1]

    def gradient_function(self, X, y, index=None):
        """The map ``(phi, weights) ↦ ∇U`` of :meth:`chart_residual_gradient` for fixed data, prepared once.

        The map returns the utility gradients at the residual, without the residual; the engines call
        it at every step. By default it calls :meth:`chart_residual_gradient`; a network whose gradient
        needs only moments of the data overrides it (linear and diagonal networks: ``E[xxᵀ]`` and
        ``E[yxᵀ]``, so that a call costs ``O(d²)`` whatever ``n``).

        Parameters
        ----------
        X : (n, d) array
            Inputs.
        y : (n, c) array
            Targets.
        index : integer array, optional
            The map of the neurons in ``index`` alone, the others switched off: it takes and returns
            their rows only (an AGF cost step, which moves the active neurons). When the neurons share
            their inputs that is the same map on fewer rows; otherwise, by default, the whole network
            is evaluated with the other neurons weighted zero.

        Returns
        -------
        callable
            ``gradient(phi, weights)``, returning an array of the shape of ``phi``.
        """
        if index is None or self.neurons_share_inputs:
            def gradient(phi, weights):
                return self.chart_residual_gradient(phi, X, y, weights)[1]
            return gradient
        all_phi = np.full((self.num_neurons, self.num_params), 1.0 / math.sqrt(self.num_params))
        all_weights = np.zeros(self.num_neurons)

        def gradient_of_subset(phi, weights):
            all_phi[index], all_weights[index] = phi, weights
            return self.chart_residual_gradient(all_phi, X, y, all_weights)[1][index]
        return gradient_of_subset

    def log_gradient_function(self, X, y, index=None):
        """For a ``sign_preserving_chart``: the velocity of gradient flow in the logarithms of the chart
        coordinates, for fixed data, prepared once.

        The map is ``s ↦ (∂U_i/∂φ_ik)/φ_ik`` at ``φ_ik = ±e^{s_ik}`` and η = 1, the residual being that
        of all neurons. It must not depend on the signs (the diagonal network's depends on ``p²`` and
        ``q²`` only), and is written without the division, so that a coordinate whose ``e^{s}``
        underflows keeps its velocity. What the flow it defines conserves must be linear in ``s`` (the
        diagonal network's flow conserves ``s_p + s_q = log|pq|`` for each neuron): AGF ends its cost
        steps with Newton steps in the span of this map's Jacobian, which keep linear invariants
        exactly and would move any other.

        Parameters
        ----------
        X : (n, d) array
            Inputs.
        y : (n, c) array
            Targets.
        index : integer array, optional
            The map of the neurons in ``index`` alone, the others switched off, as in
            :meth:`gradient_function` (an AGF cost step).

        Returns
        -------
        callable
            The map, from ``s`` of shape ``(H, P)`` to an array of that shape.

        Raises
        ------
        NotImplementedError
            For a network without a sign-preserving chart.
        """
        raise NotImplementedError(f"{type(self).__name__} has no sign-preserving chart")

    def batched_weighted_output(self, phi, X, weights):
        """:meth:`weighted_output` of every snapshot of a stack; the engines sample a trajectory's loss
        this way.

        By default, when the neurons share their inputs and a snapshot's outputs are few, the stack is
        evaluated as one network of ``T·H`` neurons, and otherwise one snapshot at a time; the
        library's networks override it with one evaluation that never forms the ``(T, H, n, c)`` array
        of every neuron's output. Callers keep ``T·H·n·c`` moderate (in chunks).

        Parameters
        ----------
        phi : (T, H, P) array
            Chart coordinates of each snapshot.
        X : (n, d) array
            Inputs.
        weights : (T, H) array
            Weights of each snapshot.

        Returns
        -------
        (T, n, c) array
        """
        T, H, P = phi.shape
        if not self.neurons_share_inputs or H * X.shape[0] * self.output_dim > 1024:
            # above about 1 700 outputs per snapshot the (T, H, n, c) array costs more than it saves (measured)
            return np.stack([self.weighted_output(phi_t, X, weights_t) for phi_t, weights_t in zip(phi, weights)])
        outputs = self.chart_outputs(phi.reshape(T * H, P), X)
        return np.einsum("thnc,th->tnc", outputs.reshape(T, H, *outputs.shape[1:]), weights)

    def structured_losses(self, X, y, phi, weights):
        """The losses ``½ E‖y − Σ_i weights_i f_i(x; φ_i)‖²`` of a stack of snapshots computed without their
        outputs, or None: the engines then evaluate :meth:`batched_weighted_output`. None by default; a network
        that recognizes structured data overrides it (:class:`agf_lib.groups.CompositionNetwork` on the full
        dataset of a template).

        Parameters
        ----------
        X : (n, d) array
        y : (n, c) array
        phi : (T, H, P) array
            Chart coordinates of each snapshot.
        weights : (T, H) array

        Returns
        -------
        (T,) array or None
        """
        return None

    def check_theta(self, theta, *, name="theta"):
        """Validate parameters and return them as a float64 array of shape ``(H, P)``.

        Parameters
        ----------
        theta : array or torch tensor
            The parameters.
        name : str, default "theta"
            Their name in error messages.

        Raises
        ------
        TypeError
            If ``theta`` is not a NumPy array or torch tensor of real numbers.
        ValueError
            If it has the wrong shape, or an entry is not finite.
        """
        if not (isinstance(theta, np.ndarray) or type(theta).__module__.startswith("torch")):
            raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(theta).__name__}")
        theta = as_float_array(theta, name)
        expected = (self.num_neurons, self.num_params)
        if tuple(theta.shape) != expected:
            raise ValueError(f"{name} must have shape {expected} (one row per neuron), got {tuple(theta.shape)}")
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"{name} contains NaN or infinite values")
        return theta

    def check_data(self, X, y):
        """Validate data against this network's input and output sizes.

        Returns
        -------
        X : (n, d) array
        y : (n, c) array
            The data as float64 arrays (a ``y`` of shape ``(n,)`` becomes ``(n, 1)``).

        Raises
        ------
        TypeError
            If ``X`` or ``y`` is not a real NumPy array or torch tensor.
        ValueError
            If the shapes do not match each other or the network, or an entry is not finite.
        """
        X, y = as_data(X, y)
        if X.shape[1] != self.input_dim:
            raise ValueError(f"X must have {self.input_dim} columns for this network, got {X.shape[1]}")
        if y.shape[1] != self.output_dim:
            raise ValueError(f"y must have {self.output_dim} output coordinates for this network, got {y.shape[1]}")
        return X, y


def _check_network(network):
    if not isinstance(network, TwoLayerNetwork):
        raise TypeError(f"network must be an agf_lib TwoLayerNetwork, got {type(network).__name__}")


def loss(network, theta, X, y):
    """The loss ``L(Θ) = E_x[½‖y − f(x; Θ)‖²]``, the mean over samples of the sum over outputs.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network.
    theta : (H, P) array
        Parameters.
    X : (n, d) array
        Inputs.
    y : (n,) or (n, c) array
        Targets.

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        If the arguments do not fit the network (see :meth:`TwoLayerNetwork.check_theta` and
        :meth:`TwoLayerNetwork.check_data`).
    """
    _check_network(network)
    X, y = network.check_data(X, y)
    theta = network.check_theta(theta)
    return float(0.5 * ((y - network(theta, X)) ** 2).sum() / X.shape[0])


def utility(network, theta, X, residual):
    """Each neuron's utility ``U_i(θ_i; r) = E_x[⟨f_i(x; θ_i), r(x)⟩]`` (paper Eq. 1).

    Parameters
    ----------
    network : TwoLayerNetwork
        The network.
    theta : (H, P) array
        Parameters.
    X : (n, d) array
        Inputs.
    residual : (n,) or (n, c) array
        The residual ``r``.

    Returns
    -------
    (H,) array

    Raises
    ------
    TypeError, ValueError
        If the arguments do not fit the network, as for :func:`loss`.
    """
    _check_network(network)
    try:
        X, residual = network.check_data(X, residual)
    except (TypeError, ValueError) as error:      # check_data calls the targets y; here they are the residual
        if not str(error).startswith("y "):
            raise
        raise type(error)("residual" + str(error)[1:]) from None
    theta = network.check_theta(theta)
    return np.einsum("hnc,nc->h", network.neuron_outputs(theta, X), residual) / X.shape[0]


class FeedForwardNetwork(TwoLayerNetwork):
    """``f(x; Θ) = Σ_i a_i σ(w_i, x̃)``, the paper's two-layer network with ``g_i(x) = x``.

    Each row of ``theta`` is ``θ_i = (w_i, a_i)`` with ``w_i ∈ R^k`` then ``a_i ∈ R^c`` (``P = k + c``),
    where ``x̃ = x`` and ``k = d``, or with ``bias=True`` ``x̃ = (x, 1)`` and ``k = d + 1``: the bias is
    ``w_i``'s last entry and multiplies a constant input, so the neuron keeps its degree κ. For most
    activations ``σ(w, x̃) = σ(wᵀx̃)``. With the gradient of the activation written
    ``∇_w σ(w_i, x̃_n) = A_in x̃_n + B_in w_i`` (``Activation.evaluate``) and ``m_in = ⟨a_i, r_n⟩``, the
    utility and its gradient are closed forms::

        U_i = E_n[σ(w_i, x̃_n) m_in]
        ∇_{w_i} U_i = E_n[A_in m_in x̃_n] + E_n[B_in m_in] w_i
        ∇_{a_i} U_i = E_n[σ(w_i, x̃_n) r_n]

    Parameters
    ----------
    d : int
        Input dimension.
    H : int
        Number of neurons.
    c : int, default 1
        Output dimension.
    activation : str or Activation, default "linear"
        ``"linear"`` (κ = 2), ``"relu"`` (κ = 2), ``"square"`` (κ = 3), ``"power<k>"`` (``z^k``, κ = k + 1),
        or an ``Activation``: ``power(k)``, ``smooth_relu(eps)`` (κ = 2).
    bias : bool, default False
        Whether to append a constant input 1 to ``x``.

    Attributes
    ----------
    activation : str
        The activation's name.
    activation_function : Activation
        The activation.
    weight_dim : int
        ``k``, the length of ``w_i``.

    Raises
    ------
    ValueError
        If ``activation`` is unknown, or a size is not a positive integer.
    TypeError
        If ``activation`` is neither a string nor an ``Activation``, or ``bias`` is not a bool.
    """

    neurons_share_inputs = True

    def __init__(self, d, H, c=1, *, activation="linear", bias=False):
        d, H, c = check_int(d, "d"), check_int(H, "H"), check_int(c, "c")
        self.activation_function = _activation(activation)
        self.activation = self.activation_function.name
        self.bias = check_bool(bias, "bias")
        self.input_dim, self.num_neurons, self.output_dim = d, H, c
        self.weight_dim = d + int(self.bias)
        self.num_params = self.weight_dim + c
        self.kappa = self.activation_function.kappa
        self.quadratic_utility = self.activation == "linear"

    def _values(self, theta, X):
        return self.activation_function.values(theta[:, : self.weight_dim], lifted_inputs(X, self.bias))

    def neuron_outputs(self, theta, X):
        return self._values(theta, X)[:, :, None] * theta[:, None, self.weight_dim :]

    def __call__(self, theta, X):
        return self._values(theta, X).T @ theta[:, self.weight_dim :]

    def weighted_output(self, phi, X, weights):
        return (self._values(phi, X) * weights[:, None]).T @ phi[:, self.weight_dim :]

    def batched_weighted_output(self, phi, X, weights):
        T, H, _ = phi.shape                           # one product for the stack: (T·H, k) by (k, n)
        s = self._values(phi.reshape(T * H, -1), X).reshape(T, H, -1)
        return np.matmul((s * weights[..., None]).swapaxes(1, 2), phi[..., self.weight_dim :])

    def utility_gradient(self, theta, X, residual):
        Xt = lifted_inputs(X, self.bias)
        evaluated = self.activation_function.evaluate(theta[:, : self.weight_dim], Xt)
        grad, m = self._gradient(theta, Xt, residual, evaluated)
        return (evaluated[0] * m).sum(1) / X.shape[0], grad

    def _gradient(self, theta, Xt, residual, evaluated):
        n, k = Xt.shape[0], self.weight_dim
        values, along_x, along_w = evaluated
        m = theta[:, k:] @ residual.T                 # (H, n)
        grad = np.empty_like(theta)
        # scaled after the products, on the (H, P) results rather than the (H, n) factors
        grad[:, :k] = ((along_x * m) @ Xt) * (1.0 / n)
        if along_w is not None:
            grad[:, :k] += ((along_w * m).sum(1) * (1.0 / n))[:, None] * theta[:, :k]
        grad[:, k:] = (values @ residual) * (1.0 / n)
        return grad, m

    def chart_residual_gradient(self, phi, X, y, weights):
        Xt = lifted_inputs(X, self.bias)
        evaluated = self.activation_function.evaluate(phi[:, : self.weight_dim], Xt)   # shared by both
        residual = y - (evaluated[0] * weights[:, None]).T @ phi[:, self.weight_dim :]
        return residual, self._gradient(phi, Xt, residual, evaluated)[0]

    def initial_theta(self, *, alpha, seed=0):
        """The paper's initialization ``a_i ~ N(0, α²/(2c) I)``, ``w_i ~ N(0, α²/(2k) I)`` (``k = d``, or
        ``d + 1`` with a bias), so ``E‖θ_i‖² = α²``.

        Parameters
        ----------
        alpha : float
            Initialization scale α, positive.
        seed : int, default 0
            Seed of the random generator.

        Returns
        -------
        (H, k + c) array
        """
        alpha = check_positive(alpha, "alpha")
        rng = np.random.default_rng(check_int(seed, "seed", 0))
        w = rng.normal(0.0, alpha / math.sqrt(2 * self.weight_dim), (self.num_neurons, self.weight_dim))
        a = rng.normal(0.0, alpha / math.sqrt(2 * self.output_dim), (self.num_neurons, self.output_dim))
        return np.concatenate([w, a], axis=1)

    def __repr__(self):
        fn = self.activation_function
        activation = repr(self.activation) if isinstance(fn, (Power, ReLU)) else repr(fn)
        bias = ", bias=True" if self.bias else ""
        return (f"FeedForwardNetwork(d={self.input_dim}, H={self.num_neurons}, c={self.output_dim}, "
                f"activation={activation}{bias})")
