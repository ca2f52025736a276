"""Gradient flow, in polar coordinates per neuron or the logarithms of a sign-preserving chart, and
fixed-step gradient descent.

Gradient flow ``dΘ/dt = −η∇L(Θ)`` is integrated in the coordinates the paper's Eq. (2) suggests:
each neuron is split into its direction ``θ̄_i = θ_i/‖θ_i‖`` and its log-norm ``ℓ_i = log‖θ_i‖``.
With ``r = y − Σ_j e^{κℓ_j} f_j(·; θ̄_j)`` the residual and ``U_i`` the utility (paper Eq. 1),
κ-homogeneity turns gradient flow, exactly, into::

    dθ̄_i/dt = η e^{(κ−2)ℓ_i} (I − θ̄_i θ̄_iᵀ) ∇U_i(θ̄_i; r)
    dℓ_i/dt  = η e^{(κ−2)ℓ_i} θ̄_iᵀ ∇U_i(θ̄_i; r)   (= η κ e^{(κ−2)ℓ_i} U_i(θ̄_i; r), Euler's identity)

Every state variable is of order one whatever α is, so an adaptive solver's error control is
meaningful at α = 1e-12 as at α = 1e-100, where plain coordinates of size α would not be.

One limit remains in plain coordinates: once a neuron has grown to norm one, its direction keeps
the imprint of the initialization (for a diagonal neuron, the conserved ``u² − v² = 2α²``) only
to about 1e-16 relative, so a neuron that later shrinks back through the origin and changes sign
is timed as if α were larger. A network lifts this limit by declaring a chart (see
:class:`~agf_lib.network.TwoLayerNetwork`) in which that imprint is a small coordinate of its own;
the engines then take polar coordinates in the chart and control direction components relatively.
Networks without a chart (:class:`~agf_lib.network.FeedForwardNetwork`) keep the limit.

Where the chart's coordinates keep their signs along the flow (``sign_preserving_chart``: the
diagonal network's ``p = (u + v)/√2`` and ``q = (u − v)/√2`` follow ``dp/dt = ηgp`` and
``dq/dt = −ηgq`` with ``g = −∇_β L``), gradient flow integrates their logarithms instead:
``d log|p|/dt = ηg`` is constant along a plateau, so the solver crosses one in a few steps, and the
imprint ``log|q|`` is a coordinate like any other, controlled to ``rtol`` absolutely (relatively in
``q``). A start with a chart coordinate at zero (``u = v``) has no logarithm and takes the polar
coordinates.

For ReLU networks the velocity has kinks where ``w_iᵀx`` changes sign; explicit solvers crawl
across them with ever smaller steps, and ``method="LSODA"``, which switches to a stiff method there,
takes far fewer (see benchmarks/README.md, "Design decisions measured").

Each evaluation of the right-hand side costs one evaluation of the network's utility gradients at
the residual (its ``gradient_function``, prepared once per dataset, or in a log chart its
``log_gradient_function``). Networks without a closed-form utility gradient go through torch
autograd, which is much slower per evaluation; ``benchmarks/`` measures both.
"""

from __future__ import annotations

import math

import numpy as np

from ._engine import (ROUNDING_CHECK_NORM, ROUNDING_PERTURBATION, ROUNDING_TOLERANCE, SOLVERS, PrecisionWarning,
                      check_network, check_progress, check_solver, integrate, progress_bar, rounding_of_losses,
                      single_thread, unpack_data)
from ._polar import LogChartField, PolarField, log_chart_applies, pack, to_polar
from .results import Trajectory
from .validation import check_bool, check_int, check_num_samples, check_positive

__all__ = ["gradient_flow", "gradient_descent", "SOLVERS", "PrecisionWarning", "ROUNDING_CHECK_NORM",
           "ROUNDING_TOLERANCE"]

# the bar of a gradient-flow run: how far its time has come
_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| t = {n:.4g} of {total:.4g} [{elapsed}<{remaining}]"


def gradient_flow(network, data, theta0, t_end, *, eta=1.0, method="DOP853", rtol=1e-9, atol=1e-12,
                  num_samples=2000, times=None, record_params=False, adaptive_rate=False, progress=None,
                  check_rounding=None):
    """Integrate gradient flow ``dΘ/dt = −η∇L(Θ)`` from ``theta0`` over ``[0, t_end]``.

    The state integrated is the polar coordinates of the module docstring (or, for a network with a
    sign-preserving chart, the logarithms of its chart coordinates), all of order one whatever the
    initialization scale.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network.
    data : tuple
        The pair ``(X, y)``, ``X`` of shape ``(n, d)`` and ``y`` of shape ``(n,)`` or ``(n, c)``.
    theta0 : (H, P) array
        Initial parameters, every row nonzero.
    t_end : float
        Final GF time, positive.
    eta : float, default 1.0
        Learning rate; it rescales time.
    method : str, default "DOP853"
        The method of :func:`scipy.integrate.solve_ivp`: ``"DOP853"``, ``"RK45"``, ``"RK23"``,
        ``"Radau"``, ``"BDF"`` or ``"LSODA"``.
    rtol, atol : float, default 1e-9, 1e-12
        Tolerances of the solver. In a log chart every coordinate is a logarithm, held to ``rtol``
        absolutely, and ``atol`` does not apply.
    num_samples : int, default 2000
        Size of the linear grid on which the loss is sampled, in addition to the solver's own steps
        (which cluster at the drops) and a logarithmic grid.
    times : 1-D array, optional
        Sample exactly at these times instead (non-decreasing, within ``[0, t_end]``).
    record_params : bool, default False
        Also record ``Θ(t)`` and ``log‖θ_i(t)‖`` at every sample.
    adaptive_rate : bool, default False
        Use the neuron-wise rate ``η‖θ_i‖^{2−κ}`` of the paper's Appendix B.5.
    progress : bool or None, default None
        Show a progress bar (tqdm, on standard error) of the run's time, and of the rounding check's
        rerun. ``True``: from the start; ``False``: never; ``None``: only on runs that take more than
        5 s, and only where someone watches (standard error a terminal, or a Jupyter front end; never
        inside the book build, nbval or pytest: see *Progress* below).
    check_rounding : bool or None, default None
        Whether to check that the result does not depend on float64 rounding (see *Resolution* below).
        ``None``: check where the largest initial norm is below ``ROUNDING_CHECK_NORM`` (1e-8).

    Returns
    -------
    Trajectory
        The loss (and, with ``record_params``, the parameters and log-norms) in GF time ``t``; its
        ``evaluations`` counts the utility-gradient evaluations (of the rounding check's rerun too),
        its ``rounding_error`` and ``resolved_until`` say how far the check's rerun moved.

    Warns
    -----
    PrecisionWarning
        If the rerun of the rounding check moves the loss by more than
        ``ROUNDING_TOLERANCE`` (1e-3) of its fall: past ``resolved_until`` the run depends on rounding.

    Notes
    -----
    *Resolution.* A direction is a unit vector in float64, which resolves its components only to about
    1e-16 of its norm, and a velocity computed from its O(1) components carries rounding errors of that
    size. A dormant neuron aligning with one feature keeps its components along the later ones, of order
    α^c, only down to that floor; once they fall below it, the neuron's later escape starts from rounding
    instead of from α^c, and its jump comes early (chapter 05's attention problem does this at α = 1e-24).
    The rounding check detects it as Monte Carlo arithmetic does: it reruns the flow with every direction
    component perturbed at each evaluation by ``4ε`` (ε = 2.2e-16) times a seeded standard normal, about
    the size of the rounding of a dot product, and compares the two losses on the same times. Where the
    result rests on components well above the floor, the two agree to far below ``ROUNDING_TOLERANCE``,
    and where it rests on rounding they do not (the attention problem's figures across α are in
    benchmarks/README.md, "Design decisions measured"). The check doubles the cost of a run. The floor
    remains for every network integrated in polar coordinates; in a log chart (the diagonal network)
    every coordinate is a logarithm, resolved relatively at any α, and the check is not run.

    *Progress.* With ``progress=None`` a bar appears once a run has taken 5 s of wall time, and only
    where standard error is a terminal or the call comes from an interactive Jupyter front end (one
    that accepts input), and not in a worker process (a limit study's). The headless executors that
    run the book's chapters, nbclient in the book build and nbval in the tests, send their cells
    without input, and pytest captures standard error, so the pages and the test logs never show a bar.

    Raises
    ------
    ValueError
        If an argument is out of range (``t_end``, ``eta``, ``rtol`` or ``atol`` not a finite
        positive number, an unknown ``method``, ``times`` empty, not finite or not within
        ``[0, t_end]``, data without rows, ``theta0`` of the wrong shape, not finite or with a zero
        row).
    TypeError
        If an argument has the wrong type (``network`` not a
        :class:`~agf_lib.network.TwoLayerNetwork`, ``data`` not a pair, a flag not ``True`` or
        ``False``, ``progress`` not ``True``, ``False`` or ``None``).
    RuntimeError
        If the solver fails.
    FloatingPointError
        If a norm overflows float64 (use a smaller ``t_end`` or ``eta``).
    """
    network = check_network(network)
    X, y = unpack_data(network, data)
    theta0 = network.check_theta(theta0, name="theta0")
    t_end, eta = check_positive(t_end, "t_end"), check_positive(eta, "eta")
    check_solver(method)
    check_num_samples(num_samples)
    rtol, atol = check_positive(rtol, "rtol"), check_positive(atol, "atol")
    adaptive_rate = check_bool(adaptive_rate, "adaptive_rate")
    record_params, progress = check_bool(record_params, "record_params"), check_progress(progress)
    phi0 = network.to_chart(theta0)
    if log_chart_applies(network, phi0):
        field = LogChartField(network, X, y, phi0, eta=eta)
        state0, (solver_rtol, solver_atol) = field.state0, field.tolerances(rtol)
    else:
        dirs, logn = to_polar(phi0)
        field = PolarField(network, X, y, dirs, eta=eta, adaptive_rate=adaptive_rate)
        state0, solver_rtol, solver_atol = pack(dirs, logn), rtol, field.tolerances(atol, network.num_neurons)

    # A trial step of the solver can overshoot to log-norms whose e^{κℓ} overflows; the velocity there is
    # inf or NaN and the solver rejects the step. Such steps are silenced; what is kept is checked below.
    with single_thread(network), np.errstate(over="ignore", invalid="ignore"), \
            progress_bar(progress, total=t_end, desc="gradient flow", bar_format=_BAR_FORMAT) as bar:
        times, states = integrate(_advancing(bar, field), state0, t_end, method=method, rtol=solver_rtol,
                                  atol=solver_atol, num_samples=num_samples, times=times)
        losses = field.losses(states)
        if not (np.all(np.isfinite(states)) and np.all(np.isfinite(losses))):
            raise FloatingPointError("gradient flow left float64 (a norm overflowed); use a smaller t_end or eta")
        log_norms = field.log_norms(states) if record_params else None
        params = field.all_params(states) if record_params else None
        evaluations, rounding = field.evaluations, {}
        polar = isinstance(field, PolarField)
        if check_rounding or (check_rounding is None and polar and logn.max() < math.log(ROUNDING_CHECK_NORM)):
            if polar:
                shadow = PolarField(network, X, y, dirs, eta=eta, adaptive_rate=adaptive_rate)
                shadow.perturb_directions(ROUNDING_PERTURBATION)
                bar.reset()
                bar.set_description("gradient flow, rounding check")
                _, shadow_states = integrate(_advancing(bar, shadow), state0, t_end, method=method,
                                             rtol=solver_rtol, atol=solver_atol, num_samples=num_samples, times=times)
                evaluations += shadow.evaluations
                rounding = rounding_of_losses(times, losses, shadow.losses(shadow_states), "gradient flow")
    return Trajectory(times, losses, params=params, log_norms=log_norms, evaluations=evaluations, **rounding)


def _advancing(bar, field):
    """``field`` as the right-hand side ``rhs(t, state)`` of :func:`integrate`, moving ``bar`` to the latest
    time it is evaluated at (a solver's trial stages run ahead of its accepted steps by one step at most)."""
    if bar.disable:
        return lambda t, state: field(state)

    def rhs(t, state):
        if t > bar.n:
            bar.update(t - bar.n)
        return field(state)
    return rhs


def check_momentum(momentum):
    """The heavy-ball coefficient β: a real number in [0, 1), as a float."""
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.integer, np.floating)):
        raise TypeError(f"momentum must be a real number in [0, 1), got {type(momentum).__name__}")
    momentum = float(momentum)
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    return momentum


def check_batch(network, batch, batch_size):
    """A batch ``(X, y)`` returned by a sampler, validated: ``batch_size`` rows, finite, the network's sizes."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"sampler must return a pair (X, y), got {type(batch).__name__}")
    try:
        X, y = network.check_data(*batch)
    except (TypeError, ValueError) as error:
        raise type(error)(f"sampler returned a bad batch: {error}") from None
    if X.shape[0] != batch_size:
        raise ValueError(f"sampler must return batch_size = {batch_size} rows, got {X.shape[0]}")
    return X, y


def epoch_batches(X, y, batch_size, rng):
    """Endless minibatches, as ``torch.utils.data.DataLoader(..., shuffle=True)`` draws them: each epoch a
    fresh permutation of the rows, cut into consecutive batches of ``batch_size`` rows, the last one smaller
    when ``batch_size`` does not divide ``n``. Every row is used once per epoch (without replacement)."""
    n = X.shape[0]
    while True:
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            yield X[rows], y[rows]


def online_batches(network, sampler, batch_size, rng):
    """Endless fresh batches ``sampler(rng, batch_size)``, each validated by :func:`check_batch`."""
    while True:
        yield check_batch(network, sampler(rng, batch_size), batch_size)


def make_batches(network, X, y, batch_size, sampler, seed):
    """The batches of one run, or None for full-batch descent; validates ``batch_size``, ``sampler``, ``seed``."""
    seed = check_int(seed, "seed", minimum=0)
    if sampler is not None and not callable(sampler):
        raise TypeError(f"sampler must be callable as sampler(rng, batch_size) -> (X, y), got {type(sampler).__name__}")
    if batch_size is None:
        if sampler is not None:
            raise ValueError("batch_size must be given with a sampler (the number of fresh rows per step)")
        return None
    batch_size = check_int(batch_size, "batch_size")
    rng = np.random.default_rng(seed)
    if sampler is not None:
        return online_batches(network, sampler, batch_size, rng)
    n = X.shape[0]
    if batch_size > n:
        raise ValueError(f"batch_size must be at most the number of rows of the data, n = {n}, got {batch_size}")
    return None if batch_size == n else epoch_batches(X, y, batch_size, rng)


def gradient_descent(network, data, theta0, t_end, *, eta=1e-3, momentum=0.0, batch_size=None, sampler=None,
                     seed=0, num_samples=2000, record_params=False):
    """Fixed-step gradient descent, with heavy-ball momentum and minibatch or online sampling, reported in
    the time of gradient flow ``dΘ/dt = −∇L(Θ)`` (the paper's Section 2, with η = 1).

    The update is that of PyTorch's ``torch.optim.SGD(lr=η, momentum=β)`` (dampening 0, no Nesterov),
    as the paper's public notebooks train (β = 0.9 in the modular one; the others, some of them NumPy
    loops, take β = 0)::

        v_{k+1} = β v_k + g_k,   Θ_{k+1} = Θ_k − η v_{k+1},   v_0 = 0,

    where ``g_k`` is the gradient of the loss on step ``k``'s batch; β = 0 is plain descent
    ``Θ ← Θ − η∇L(Θ)``. The loss gradient is the utility gradient at the residual,
    ``∇_{θ_i}L(Θ) = −∇U_i(θ_i; y − f(Θ))``, so every network's closed form serves here too.

    **Time map.** Step ``k`` is reported at GF time ``t_k = k·η/(1 − β)``. Unrolled, the velocity is
    ``v_{k+1} = Σ_{j≤k} β^{k−j} g_j``, a geometric average over the last ``~1/(1 − β)`` gradients. When
    the gradient changes little over that many steps (η small), ``v_{k+1} ≈ g_k/(1 − β)``, so
    ``Θ_{k+1} − Θ_k ≈ −(η/(1 − β))∇L(Θ_k)``: Euler's method for gradient flow with step ``η/(1 − β)``.
    The deviation from gradient flow is first order in η. Expanding ``Θ_{k±1}`` about a smooth path
    ``Θ(t_k)`` gives, to that order, the modified flow ``dΘ/dt = −∇L − (h/2)∇²L ∇L`` with
    ``h = η(1 + β)/(1 − β)²``, the one plain descent at step ``h`` follows; and since the velocity starts
    from zero (under a constant gradient the iterates lag by ``β/(1 − β)`` steps), the path starts late
    by ``βη/(1 − β)²`` in GF time. A minibatch or online gradient is an unbiased estimate of ``∇L``, so
    the same map holds on average; the noise moves the path around it by an amount that shrinks as the
    batch grows.

    **Batches.** By default every step uses all of ``data``. With ``batch_size = b < n`` each step uses
    ``b`` rows, drawn as ``torch.utils.data.DataLoader(shuffle=True)`` draws them: each epoch a fresh
    permutation of the rows (a seeded :func:`numpy.random.default_rng`), cut into consecutive batches,
    the last one smaller when ``b`` does not divide ``n``; every row is used once per epoch, without
    replacement. ``batch_size = n`` is full-batch descent, bit for bit, and draws nothing. With a
    ``sampler`` (online descent, for population settings), each step draws fresh rows
    ``sampler(rng, batch_size)`` from the same seeded generator, and never reuses them.

    **Recorded loss.** Always the loss on ``data``, whatever the batches: the full-data loss for
    minibatch descent, and for online descent the loss on ``data`` as an evaluation set. With the
    population data of a setting (:func:`agf_lib.linear.population_data`,
    :func:`agf_lib.attention.population_data`, whose empirical moments are the population's) that is
    the population loss exactly, as :func:`gradient_flow` reports it on the same data.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network.
    data : tuple
        The pair ``(X, y)``, as for :func:`gradient_flow`: the training data, or, with a ``sampler``,
        the evaluation set on which the loss is recorded.
    theta0 : (H, P) array
        Initial parameters.
    t_end : float
        Final GF time; the run takes ``ceil(t_end / (η/(1 − β)))`` steps.
    eta : float, default 1e-3
        Step size η.
    momentum : float, default 0.0
        The heavy-ball coefficient β, in ``[0, 1)``.
    batch_size : int, optional
        Rows per step: at most ``n`` for minibatches of ``data``; any positive size with a ``sampler``,
        which requires it. None (the default) uses all of ``data`` at every step.
    sampler : callable, optional
        ``sampler(rng, batch_size) -> (X, y)``, fresh rows from a :class:`numpy.random.Generator`,
        ``X`` of shape ``(batch_size, d)`` and ``y`` of shape ``(batch_size,)`` or ``(batch_size, c)``.
    seed : int, default 0
        Seed of the generator that draws the batches (unused in full-batch descent).
    num_samples : int, default 2000
        About how many steps are recorded (every ``max(1, steps // num_samples)``-th, and the last).
    record_params : bool, default False
        Also record ``Θ`` at every recorded step.

    Returns
    -------
    Trajectory
        The loss on ``data`` (and, with ``record_params``, the parameters) in GF time ``t``.

    Raises
    ------
    ValueError
        If an argument is out of range (``t_end`` or ``eta`` not positive, ``momentum`` outside
        ``[0, 1)``, ``batch_size`` below 1 or above ``n`` without a sampler, missing with one, a
        negative ``seed``, a batch from ``sampler`` of the wrong shape or not finite).
    TypeError
        If an argument has the wrong type (``sampler`` not callable or not returning a pair,
        ``batch_size``, ``seed`` not integers, ``momentum`` not a real number).
    FloatingPointError
        If the loss diverges (use a smaller ``eta``).
    """
    network = check_network(network)
    X, y = unpack_data(network, data)
    theta = network.check_theta(theta0, name="theta0").copy()
    t_end, eta = check_positive(t_end, "t_end"), check_positive(eta, "eta")
    momentum = check_momentum(momentum)
    batches = make_batches(network, X, y, batch_size, sampler, seed)
    check_num_samples(num_samples)
    time_per_step = eta / (1.0 - momentum)
    num_steps = int(math.ceil(t_end / time_per_step))
    record_every = max(1, num_steps // num_samples)
    times, losses, params = [], [], []
    n, ones = X.shape[0], np.ones(network.num_neurons)
    velocity = np.zeros_like(theta) if momentum else None   # −v in the docstring: the descent direction
    with single_thread(network), np.errstate(over="ignore", invalid="ignore"):
        for step in range(num_steps + 1):
            phi = network.to_chart(theta)
            if batches is None:
                # the residual and −∇L in one evaluation; a chart is an isometry, so from_chart maps gradients back
                residual, grad = network.chart_residual_gradient(phi, X, y, ones)
            recording = step % record_every == 0 or step == num_steps
            if recording:
                if batches is not None:
                    residual = y - network.weighted_output(phi, X, ones)
                times.append(step * time_per_step)
                losses.append(0.5 * float(np.einsum("nc,nc->", residual, residual)) / n)
                if record_params:
                    params.append(theta.copy())
                if not math.isfinite(losses[-1]):
                    raise FloatingPointError(f"gradient descent diverged at step {step} with eta = {eta}; "
                                             "use a smaller step")
            if step == num_steps:
                break
            if batches is not None:
                X_batch, y_batch = next(batches)
                grad = network.chart_residual_gradient(phi, X_batch, y_batch, ones)[1]
            if velocity is None:
                theta += eta * network.from_chart(grad)
            else:
                velocity *= momentum
                velocity += network.from_chart(grad)
                theta += eta * velocity
    return Trajectory(np.array(times), np.array(losses), params=np.array(params) if record_params else None)
