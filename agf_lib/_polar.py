"""The polar state both engines integrate: each neuron as a unit direction and a log-norm.

Gradient flow ``dΘ/dt = −η∇L(Θ)`` in the coordinates the paper's Eq. (2) suggests: each neuron is
split into its direction ``θ̄_i = θ_i/‖θ_i‖`` and its log-norm ``ℓ_i = log‖θ_i‖``. With
``r = y − Σ_j e^{κℓ_j} f_j(·; θ̄_j)`` the residual and ``U_i`` the utility (paper Eq. 1), κ-homogeneity
turns gradient flow into (exactly, no approximation)

    dθ̄_i/dt = η e^{(κ−2)ℓ_i} (I − θ̄_i θ̄_iᵀ) ∇U_i(θ̄_i; r),
    dℓ_i/dt  = η e^{(κ−2)ℓ_i} θ̄_iᵀ ∇U_i(θ̄_i; r)      (= η κ e^{(κ−2)ℓ_i} U_i(θ̄_i; r) by Euler's identity).

With a fixed residual this is AGF's utility flow (its first phase); with the residual of the neurons
being integrated it is gradient flow of those neurons (AGF's cost phase, or gradient flow itself).
The state vector is ``(θ̄_1, …, θ̄_H, ℓ_1, …, ℓ_H)``, in the network's chart (see
:class:`~agf_lib.network.TwoLayerNetwork`). Private: :mod:`agf_lib.flow` and :mod:`agf_lib.agf` use it.
:class:`LogChartField` is the state gradient flow integrates instead for a network whose chart
coordinates keep their signs: their logarithms.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PolarField", "LogChartField", "batched_losses", "log_chart_applies", "to_polar", "pack"]


def to_polar(theta, name="theta0"):
    """Split parameters ``(H, P)`` (in the network's chart, ``network.to_chart(θ)``) into unit directions
    and log-norms."""
    norms = np.sqrt(np.einsum("hp,hp->h", theta, theta))
    if np.any(norms == 0):
        raise ValueError(f"every neuron of {name} must be nonzero (its direction is undefined at the origin)")
    return theta / norms[:, None], np.log(norms)


def pack(dirs, logn):
    return np.concatenate([dirs.ravel(), logn])


class PolarField:
    """Velocity of gradient flow in polar coordinates for a subset ``index`` of the neurons.

    The state vector holds the directions and log-norms of the neurons in ``index``; the other
    neurons output nothing (their weight ``e^{κℓ}`` is replaced by zero) but keep a direction in
    ``self.dirs``, so networks whose neurons see different inputs (``g_i(x)``) are evaluated whole.
    Called with a fixed ``residual``, it is the utility flow of dormant neurons that do not enter
    the residual, the first step of AGF (paper Eq. 2). ``evaluations`` counts utility-gradient calls.

    A call costs one network evaluation (outputs and utility gradient) plus about ten small NumPy
    operations; it is the right-hand side the solvers call thousands of times.
    """

    def __init__(self, network, X, y, dirs, eta=1.0, adaptive_rate=False):
        self.network, self.X, self.y = network, X, y
        self.dirs = dirs.copy()
        self.eta, self.adaptive_rate = eta, adaptive_rate
        self.kappa = float(network.kappa)
        self.scalar_rate = bool(adaptive_rate) or self.kappa == 2
        self.gradients = {None: network.gradient_function(X, y)}    # by index, prepared on first use
        self.evaluations = 0
        self.jitter = None

    def perturb_directions(self, size, seed=0):
        """From now on, perturb the directions at every gradient-flow evaluation by ``size`` times a fresh
        standard normal per component (seeded): absolutely, as float64 rounds a unit vector's components,
        or relatively in a chart, whose small components the engines keep to relative precision. The
        rounding check of :func:`agf_lib.gradient_flow` reruns the flow so perturbed (Monte Carlo
        arithmetic): a result that moves by more than rounding does depends on rounding."""
        self.jitter = (float(size), np.random.default_rng(seed))

    def _whole(self, index):
        """Whether the neurons in ``index`` are evaluated within the whole network (the others weighted zero):
        when the network's neurons see different inputs. ``index = None`` is every neuron."""
        return index is not None and not self.network.neurons_share_inputs

    def _all_dirs(self, dirs, index):
        """The directions the network is evaluated at: ``dirs``, or every neuron's with those in ``index``
        replaced when it is evaluated whole."""
        if not self._whole(index):
            return dirs
        all_dirs = self.dirs.copy()
        all_dirs[index] = dirs
        return all_dirs

    def full(self, dirs, logn, index):
        """Directions of all neurons and the weights ``e^{κℓ_i}`` (zero outside ``index``; ``None``: all, or
        only the neurons in ``index`` when the network's neurons share their inputs)."""
        weights = np.exp(self.kappa * logn)
        if not self._whole(index):
            return dirs, weights
        all_dirs, all_weights = self.dirs.copy(), np.zeros(len(self.dirs))
        all_dirs[index], all_weights[index] = dirs, weights
        return all_dirs, all_weights

    def outputs(self, dirs, logn, index):
        """``Σ_{i ∈ index} e^{κℓ_i} f_i(·; θ̄_i)``, shape (n, c)."""
        all_dirs, weights = self.full(dirs, logn, index)
        return self.network.weighted_output(all_dirs, self.X, weights)

    def gradient_of(self, index):
        """The network's ``gradient_function`` of the neurons in ``index`` (``None``: all), prepared once per index."""
        key = None if index is None else (index.dtype.char, index.tobytes())
        if key not in self.gradients:
            self.gradients[key] = self.network.gradient_function(self.X, self.y, index)
        return self.gradients[key]

    def utility_gradient(self, dirs, logn, residual, index):
        """``∇U_i(θ̄_i; r)`` of the neurons in ``index`` at their unit directions, shape (len(index), P)."""
        self.evaluations += 1
        grad = self.network.chart_utility_gradient(self._all_dirs(dirs, index), self.X, residual)[1]
        return grad[index] if self._whole(index) else grad

    def params(self, dirs, logn):
        """The parameters ``θ_i = e^{ℓ_i} θ̄_i`` in the network's own coordinates, shape (H, P)."""
        return self.network.from_chart(np.exp(logn)[:, None] * dirs)

    def tolerances(self, atol, H):
        """``atol`` for :func:`scipy.integrate.solve_ivp`: in a chart (see :class:`TwoLayerNetwork`),
        small direction components carry information and get a purely relative error control."""
        if not self.network.has_chart:
            return atol
        return np.concatenate([np.full(H * self.network.num_params, 1e-300), np.full(H, atol)])

    def _into(self, out, grad, dirs, logn, H):
        """Write ``(dθ̄/dt, dℓ/dt)`` for utility gradients ``grad`` at ``dirs`` into the flat array ``out``."""
        m = out.size - H
        radial = np.vecdot(grad, dirs)
        tangent = out[:m].reshape(H, -1)
        np.multiply(radial[:, None], dirs, out=tangent)
        np.subtract(grad, tangent, out=tangent)
        if not self.scalar_rate:              # the rate η‖θ_i‖^{κ−2} of each neuron
            rate = self.eta * np.exp((self.kappa - 2.0) * logn)
            tangent *= rate[:, None]
            np.multiply(radial, rate, out=out[m:])
        else:
            out[m:] = radial
            if self.eta != 1.0:
                out *= self.eta
        return out

    def velocity(self, dirs, logn, residual, index):
        """``(dθ̄/dt, dℓ/dt)`` of the neurons in ``index`` for a given residual."""
        H = dirs.shape[0]
        out = self._into(np.empty(dirs.size + H), self.utility_gradient(dirs, logn, residual, index), dirs, logn, H)
        return out[:-H].reshape(H, -1), out[-H:]

    def speed(self, dirs, logn, residual, index):
        """The largest speed ``‖(dθ̄_i/dt, dℓ_i/dt)‖`` over the neurons in ``index``: the time scale of a phase."""
        d_dirs, d_logn = self.velocity(dirs, logn, residual, index)
        return float(np.sqrt((d_dirs**2).sum(1) + d_logn**2).max())

    @staticmethod
    def split(state, H):
        dirs = state[:-H].reshape(H, -1)
        return dirs / np.sqrt(np.vecdot(dirs, dirs))[:, None], state[-H:]

    def __call__(self, state, index=None, residual=None):
        H = self.network.num_neurons if index is None else len(index)
        dirs, logn = self.split(state, H)
        if self.jitter is not None:
            size, rng = self.jitter
            noise = size * rng.standard_normal(dirs.shape)
            dirs = dirs * (1.0 + noise) if self.network.has_chart else dirs + noise
        if residual is None:
            # gradient flow of these neurons: residual and gradient in one evaluation (of the whole network,
            # the others weighted zero, when its neurons see different inputs)
            self.evaluations += 1
            grad = self.gradient_of(index)(dirs, np.exp(self.kappa * logn))
        else:
            grad = self.utility_gradient(dirs, logn, residual, index)
        return self._into(np.empty(state.size), grad, dirs, logn, H)

    def loss(self, dirs, logn, index=None):
        residual = self.y - self.outputs(dirs, logn, index)
        return 0.5 * float(np.einsum("nc,nc->", residual, residual)) / self.X.shape[0]

    def losses(self, states):
        """The loss at each column of ``states`` (polar states of all neurons, shape (S, T))."""
        H, T = self.network.num_neurons, states.shape[1]
        dirs = states[:-H].T.reshape(T, H, -1)
        dirs = dirs / np.sqrt(np.einsum("thp,thp->th", dirs, dirs))[..., None]
        return batched_losses(self.network, self.X, self.y, dirs, np.exp(self.kappa * states[-H:].T))

    def log_norms(self, states):
        """``log‖θ_i‖`` at each column of ``states``, shape (T, H)."""
        return states[-self.network.num_neurons:].T.copy()

    def all_params(self, states):
        """Θ in the network's own coordinates at each column of ``states``, shape (T, H, P)."""
        H = self.network.num_neurons
        return np.stack([self.params(*self.split(state, H)) for state in states.T])


def log_chart_applies(network, phi):
    """Whether the engines integrate chart coordinates ``phi`` (shape (H, P)) in their logarithms: the network
    has a ``sign_preserving_chart`` and no coordinate is zero (a zero stays zero and has no logarithm)."""
    return network.sign_preserving_chart and bool(np.all(phi != 0))


def half_log_sum_exp2(s):
    """``½ log Σ_k e^{2s_k}`` over the last axis, without overflow or underflow: the log-norm of a neuron whose
    chart coordinates have logarithms ``s`` (``logaddexp``'s reduction, which on rows this short costs far
    less than SciPy's ``logsumexp``: see benchmarks/README.md, "Design decisions measured")."""
    return 0.5 * np.logaddexp.reduce(2.0 * s, axis=-1)


def batched_losses(network, X, y, phi, weights):
    """The loss ``½ E‖y − Σ_i weights_i f_i(x; φ_i)‖²`` for each of ``T`` sets of chart coordinates ``phi``
    (shape (T, H, P)) and weights (shape (T, H)), by
    :meth:`~agf_lib.network.TwoLayerNetwork.batched_weighted_output` on chunks of them: one evaluation per
    chunk instead of one per set, which is what makes sampling a trajectory's loss cheap (see
    benchmarks/README.md, "Design decisions measured")."""
    structured = network.structured_losses(X, y, phi, weights)
    if structured is not None:            # computed without the outputs (the full dataset of a group template)
        return structured
    (n, c), T = y.shape, phi.shape[0]
    losses = np.empty(T)
    chunk = max(1, 2_000_000 // (phi.shape[1] * n * c))
    for start in range(0, T, chunk):
        rows = slice(start, start + chunk)
        residual = y - network.batched_weighted_output(phi[rows], X, weights[rows])
        losses[rows] = 0.5 * np.einsum("tnc,tnc->t", residual, residual) / n
    return losses


class LogChartField:
    """Velocity of gradient flow in the logarithms of the chart coordinates, for a network with a
    ``sign_preserving_chart`` (see :class:`~agf_lib.network.TwoLayerNetwork`). With ``φ_ik = σ_ik e^{s_ik}``,
    the signs ``σ`` fixed by the initialization,

        ds_ik/dt = η (∂U_i(φ_i; r)/∂φ_ik) / φ_ik

    exactly, the residual ``r`` being that of all neurons (κ = 2, so the adaptive rate is η). For the
    diagonal network this is ``ds/dt = η(−∇_{β_i}L)(1, −1)``: constant while the residual is, so that a
    plateau costs a solver a few steps, and a straight line in ``s`` (the imprint ``log|q|`` falling as
    ``log|p|`` rises) however long. Every coordinate is a logarithm, whose absolute error is the relative error of the chart
    coordinate, at α = 1e-12 as at α = 1e-100: the solver controls the error absolutely
    (:meth:`tolerances`). The state is ``s`` flattened row by row, shape (H·P,).
    """

    def __init__(self, network, X, y, phi0, eta=1.0, index=None):
        self.network, self.X, self.y = network, X, y
        self.signs, self.shape = np.sign(phi0), phi0.shape
        self.state0 = np.log(np.abs(phi0)).ravel()
        self.eta = eta
        self.gradient = network.log_gradient_function(X, y, index)
        self.evaluations = 0

    @staticmethod
    def tolerances(rtol):
        """``(rtol, atol)`` for the solver: each log-coordinate to ``rtol`` absolutely (each chart coordinate
        relatively), and no relative control of the logs themselves (SciPy's floor, 100 ε)."""
        return 100 * np.finfo(float).eps, rtol

    def __call__(self, state):
        self.evaluations += 1
        velocity = self.gradient(state.reshape(self.shape)).ravel()
        return velocity * self.eta if self.eta != 1.0 else velocity

    def polar(self, state):
        """``(dirs, logn)``, the unit directions and log-norms of the neurons at one state."""
        s = state.reshape(self.shape)
        logn = half_log_sum_exp2(s)
        return self.signs * np.exp(s - logn[:, None]), logn

    def charts(self, states):
        """The chart coordinates at each column of ``states`` (shape (H·P, T)), shape (T, H, P)."""
        return self.signs * np.exp(states.T.reshape(-1, *self.shape))

    def losses(self, states):
        phi = self.charts(states)
        return batched_losses(self.network, self.X, self.y, phi, np.ones(phi.shape[:2]))

    def log_norms(self, states):
        """``log‖θ_i‖ = ½ log Σ_k e^{2s_ik}`` at each column of ``states``, shape (T, H)."""
        return half_log_sum_exp2(states.T.reshape(-1, *self.shape))

    def all_params(self, states):
        return np.stack([self.network.from_chart(phi) for phi in self.charts(states)])
