"""Alternating Gradient Flows (the paper's Algorithm 1) for any network of the library's abstraction.

Neurons start dormant. Each iteration has two steps.

- **Utility maximization.** With the active neurons' output held fixed, every dormant neuron
  follows gradient flow of its own utility ``U_i(θ_i; r)`` (paper Eq. 2), in polar coordinates:
  its direction climbs the utility on the sphere while ``dℓ_i/dt = ηκ e^{(κ−2)ℓ_i} Ū_i``. The first
  neuron whose norm reaches one activates. This is the paper's condition that the accumulated
  utility ``𝒮_i = ∫κŪ_i`` reaches ``c_i/η``, with ``c_i = −log‖θ_i(0)‖`` for κ = 2 and
  ``c_i = (‖θ_i(0)‖^{2−κ} − 1)/(κ − 2)`` for κ > 2, exact at finite α since ``ℓ_i`` is integrated
  alongside the direction. For networks whose utility is a quadratic form in each neuron
  (``quadratic_utility``: linear and diagonal networks) the utility flow is linear and this step is
  solved in closed form; for the others a SciPy solver is stepped by hand, with the norms read
  after every step.
- **Cost minimization.** The active neurons follow gradient flow of the loss, with the dormant
  neurons taken as zero, until the gradient has fallen by ``cost_tol``, or the loss has settled (over
  the last doubling of time it fell by less than ``cost_tol²`` of its fall so far: a loss
  approaching an infimum that no finite weights attain, chapter 06). Both are checked at times
  growing geometrically, on the flow at exactly those times, so that where a step ends depends on
  the flow and not on the solver's steps (the first check at one time unit of the flow's initial speed,
  and by 1e3 at the latest). A step that these rules cannot end in time (its gradient falling like a
  power of time too slowly to reach ``cost_tol`` within ``max_cost_time``, or stalled) ends once the
  next dormant neuron would have activated (``cost_horizon="auto"``, the default). An active neuron
  driven back towards the origin (its norm below ``dormancy_threshold``) returns to the dormant set
  with the state it had when it last crossed the unit sphere inwards, i.e. with ``𝒮_i = c_i/η`` as in
  the paper's Appendix B.3. A step
  that has not converged by ``max_cost_time`` raises :class:`CostStepError`. For a network with a
  ``sign_preserving_chart`` (the diagonal network) the step integrates the logarithms of the chart
  coordinates, in which the flow's conserved quantities are linear and kept exactly, and ends with
  Newton's method as soon as it converges onto a stable critical point nearby. With
  ``cost_horizon="next_activation"`` every step whose gradient falls only like a power of time ends
  once the next dormant neuron would have activated against the current residual.

Time runs during utility maximization only. The loop ends when no dormant neuron can gain utility
(every dormant neuron stationary on the sphere with nonpositive utility), after ``max_jumps`` jumps,
or when the next jump would come after ``t_end``.

The float64 limit stated in :mod:`agf_lib.flow` applies here too, to networks without a chart: a
dormant neuron whose utility flow reverses its sign after a long excursion, or a neuron restored
at norm one after returning to dormancy, is timed with an error that grows as α shrinks. In the
diagonal network's chart both are timed to 1e-7 or better, down to α = 1e-100.

**Length.** One algorithm: its utility phase, its cost phase in two coordinate systems (the cost-step protocol
``_CostCoordinates``) and the loop that alternates them share the engine's private state and tolerances, so
they stay in one module.
"""

from __future__ import annotations

import math

from typing import Protocol

import numpy as np
from scipy.optimize import brentq

from ._polar import LogChartField, PolarField, half_log_sum_exp2, log_chart_applies, pack, to_polar
from ._engine import (ROUNDING_CHECK_NORM, ROUNDING_PERTURBATION, SOLVER_CLASSES, check_network, check_progress,
                      check_solver, progress_bar, rounding_of_jumps, single_thread, unpack_data)
from .results import GF_TIME, Staircase
from .validation import check_bool, check_fraction, check_max_jumps, check_positive

__all__ = ["alternating_gradient_flow", "CostStepError"]

# the bar of an AGF run: the jumps made, and the time of the last
_BAR_FORMAT = "{desc}: {n}/{total} jumps [{elapsed}{postfix}]"


class CostStepError(RuntimeError):
    """A cost minimization of AGF did not reach a critical point within ``max_cost_time``."""


def _solver(method, fun, state, t_bound, rtol, atol, speed=None):
    """A SciPy ODE solver object, stepped by hand: one solver per phase, so that checks made between
    steps (the gradient every so often, the norms after every step) cost no restart.

    Given the initial ``speed``, LSODA is given its first step: the time in which the fastest
    coordinate moves by 1e-2. Its own guess grows with ``t_bound`` and with the inverse of the
    velocity, and with ``t_bound = ∞`` and a small velocity (a utility flow that is zero, a log chart
    held to 100ε relatively) it can be a step to t = ∞: its corrector fails until it gives up, or it
    returns a NaN state. The other methods' guesses are bounded by their first error estimate. Polar
    cost steps keep LSODA's guess: they start from a neuron at norm one, which moves, so the guess is
    finite; and in the float64 limit that :mod:`agf_lib.flow` states, a polar step's result moves with
    its path, so another first step would move results at very small α (see benchmarks/README.md,
    "Design decisions measured")."""
    options = {}
    if method == "LSODA" and speed is not None:
        options["first_step"] = min(1e-2 / max(speed, 1e-300), t_bound)
    return SOLVER_CLASSES[method](fun, 0.0, state, t_bound, rtol=rtol, atol=atol, **options)


def _step(solver, what):
    """One step of ``solver``; returns the step's interpolant, built on its first call (most steps need
    none: it is read only at a check, a crossing or a neuron's arrival), and only until the next step."""
    t_old = solver.t
    solver.step()
    if solver.status == "failed":
        raise RuntimeError(f"{what} failed at t = {solver.t:.6g}: {getattr(solver, 'message', 'step size too small')}")
    # LSODA does not fail when its step falls below the resolution of t: it goes on taking steps that
    # leave t (nearly) where it is, for ever
    if solver.status == "running" and solver.t - t_old <= 16 * np.spacing(solver.t):
        raise RuntimeError(f"{what} stalled at t = {solver.t:.6g}: its steps ({solver.t - t_old:.3g}) fell below "
                           "the resolution of t; bound the run with t_end or max_jumps")
    # nor does it always fail when a step overflows: it can return t = ∞ and a NaN state, and then "finish"
    if not (math.isfinite(solver.t) and np.isfinite(solver.y).all()):
        raise RuntimeError(f"{what} left float64 in a step from t = {t_old:.6g}: its solver returned t = {solver.t:.6g}"
                           " and a state that is not finite; bound the run with t_end or max_jumps")
    t_step, built = solver.t, []

    def interpolant(t):
        if not built:
            if solver.t != t_step:
                raise RuntimeError("the interpolant of a step is read after the solver took the next step")
            built.append(solver.dense_output())
        return built[0](t)
    return interpolant


def _utility_phase(field, residual, index, dirs, logn, t_budget, method, rtol, atol, utility_tol, grad_scale):
    """Utility flow of the dormant neurons ``index`` until one of them reaches norm one.

    Returns ``(dt, j, dirs, logn, reason)`` with ``j`` the position in ``index`` of the neuron that
    activates, or ``(None, None, dirs, logn, reason)`` when no neuron can gain utility
    (``reason = "no utility"``) or the time budget is spent (``"t_end"``). The gradient is checked at
    times growing geometrically; the norms after every step.
    """
    H = len(index)
    speed = field.speed(dirs, logn, residual, index)
    check = 10.0 / max(speed, 1e-300)
    solver = _solver(method, lambda t, s: field(s, index, residual), pack(dirs, logn), t_budget, rtol,
                     field.tolerances(atol, H), speed)
    previous = None
    while solver.status == "running":
        interpolant = _step(solver, "utility maximization")
        if solver.y[-H:].max() >= 0:
            t = brentq(lambda t: interpolant(t)[-H:].max(), solver.t_old, solver.t, xtol=1e-14 * solver.t, rtol=1e-15)
            dirs, logn = field.split(interpolant(t), H)
            return t, int(np.argmax(logn)), dirs, logn, None
        if solver.t >= check:
            dirs, logn = field.split(solver.y, H)
            grad = field.utility_gradient(dirs, logn, residual, index)
            radial = np.einsum("hp,hp->h", grad, dirs)
            tangent = grad - radial[:, None] * dirs
            tangential = np.sqrt(np.einsum("hp,hp->h", tangent, tangent))
            # No utility to gain: every neuron stationary on the sphere with nonpositive utility, and not
            # slowly leaving a utility minimum (there its tangential speed grows from check to check).
            if (max(float(tangential.max()), float(radial.max())) <= utility_tol * grad_scale
                    and previous is not None and bool(np.all(tangential <= previous))):
                return None, None, dirs, logn, "no utility"
            previous = tangential
            check = 4.0 * solver.t
    dirs, logn = field.split(solver.y, H)
    return None, None, dirs, logn, "t_end"


def _quadratic_utility_phase(field, residual, index, dirs, logn, t_budget, utility_tol, grad_scale):
    """:func:`_utility_phase` in closed form, for networks whose utility is a quadratic form in each neuron.

    Then ``∇U_i(θ_i; r) = M_i θ_i`` with ``M_i`` symmetric (the Hessian of ``U_i``, read off the utility
    gradient at the ``P`` basis vectors), κ = 2, and the utility flow ``dθ_i/dt = η M_i θ_i`` is linear:
    with ``M_i = Σ_k λ_k v_k v_kᵀ`` and ``c_k = v_kᵀθ̄_i(0)``,

        log‖θ_i(t)‖² = 2ℓ_i(0) + log Σ_k c_k² e^{2ηλ_k t},

    a convex function of ``t``, evaluated as a log-sum-exp so that α down to 1e-100 and directions
    that shrink like ``e^{−2ηλt}`` stay exact. The first root of it over the dormant neurons is the
    next jump. Eigenvalues below ``utility_tol · grad_scale`` count as no growth.
    """
    H, P = len(index), field.network.num_params
    basis = np.eye(P)
    columns = [field.utility_gradient(np.broadcast_to(basis[j], (H, P)).copy(), logn, residual, index)
               for j in range(P)]
    M = np.stack(columns, axis=2)                                   # M[i] = Hessian of U_i, (H, P, P)
    lam, V = np.linalg.eigh(0.5 * (M + np.swapaxes(M, 1, 2)))
    rate = field.eta * lam                                          # (H, P)
    coef = np.einsum("hpk,hp->hk", V, dirs)                         # (H, P)
    with np.errstate(divide="ignore"):
        log_c2 = 2.0 * np.log(np.abs(coef))  # not log(coef²): a direction component of 1e-163 squares to zero

    def log_norm2(i, t):
        return 2.0 * logn[i] + np.logaddexp.reduce(log_c2[i] + 2.0 * rate[i] * t)

    def slope(i, t):  # d/dt log‖θ_i(t)‖²: a softmax-weighted mean of 2ηλ_k, increasing in t
        exponents = log_c2[i] + 2.0 * rate[i] * t
        weights = np.exp(exponents - exponents.max())
        return 2.0 * float(weights @ rate[i]) / float(weights.sum())

    growing = rate > field.eta * utility_tol * grad_scale
    waits = np.full(H, np.inf)
    for i in range(H):
        live = growing[i] & np.isfinite(log_c2[i])
        if not live.any():
            continue
        k = np.nonzero(live)[0][-1]                                 # eigh sorts ascending: the fastest growing
        t_hi = 1.01 * max(-(2.0 * logn[i] + log_c2[i, k]) / (2.0 * rate[i, k]), 1e-300)  # past the root
        t_lo = 0.0
        if log_norm2(i, 0.0) >= 0:
            # A neuron restored at norm one after returning to dormancy: it activates at once if its
            # norm grows, and otherwise when it has come back up from the bottom of its convex log-norm.
            if slope(i, 0.0) >= 0:
                waits[i] = 0.0
                continue
            while slope(i, t_hi) <= 0:
                t_hi *= 2.0
            t_lo = brentq(lambda t: slope(i, t), 0.0, t_hi, xtol=1e-300, rtol=1e-15)
        if t_hi > t_budget and log_norm2(i, t_budget) < 0:
            continue
        waits[i] = brentq(lambda t: log_norm2(i, t), t_lo, min(t_hi, t_budget), xtol=1e-300, rtol=1e-15)

    dt = float(waits.min())
    if not np.isfinite(dt):
        # Advance every neuron to the end of the budget (or leave it where it is when nothing grows).
        dt, reason = (t_budget, "t_end") if np.isfinite(t_budget) and growing.any() else (0.0, "no utility")
    else:
        reason = None
    exponents = log_c2 + 2.0 * rate * dt
    top = exponents.max(1, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.where(np.isfinite(log_c2), np.exp(0.5 * (exponents - top)), 0.0) * np.sign(coef)
    new_dirs = np.einsum("hpk,hk->hp", V, weights)
    new_dirs /= np.sqrt(np.einsum("hp,hp->h", new_dirs, new_dirs))[:, None]
    new_logn = logn + 0.5 * (top[:, 0] + np.log(np.einsum("hk,hk->h", weights, weights)))
    if reason is not None:
        return None, None, new_dirs, new_logn, reason
    j = int(np.argmin(waits))
    new_logn[j] = 0.0
    return dt, j, new_dirs, new_logn, None


class _CostCoordinates(Protocol):
    """What :func:`_cost_phase` needs of the coordinates a cost step integrates, written once for the two
    that implement it: :class:`_PolarCost` (any network) and :class:`_LogChartCost` (a network with a
    ``sign_preserving_chart``, whose chart coordinates keep their signs).

    An object holds ``field`` (the run's :class:`PolarField`, which counts evaluations and evaluates the
    loss), ``index`` (the active neurons, in the order of the state's rows) and ``H = len(index)``. A
    *state* is a flat float array that a SciPy solver integrates; ``dirs`` are unit directions of shape
    ``(H, P)`` in the network's chart and ``logn`` log-norms of shape ``(H,)``. The phase may read any
    state the solver or its interpolant returns, so no method may assume a normalized state.
    """

    field: PolarField
    index: np.ndarray
    H: int

    def state(self, dirs, logn):
        """The state of the active neurons at ``(dirs, logn)``; :meth:`split` inverts it to rounding."""

    def split(self, state):
        """``(dirs, logn)`` at ``state``: the unit directions (a new array) and the log-norms (which may share
        memory with ``state``: the phase copies what it keeps past the solver's next step)."""

    def log_norms(self, state):
        """``log‖θ_i‖`` of each active neuron at ``state``, shape ``(H,)``, as a new array (a solver may write
        its state in place): the phase finds a neuron's crossings of the unit sphere and of the dormancy
        threshold as roots of it, so it must be continuous along the state's path."""

    def __call__(self, t, state):
        """The velocity of gradient flow of the active neurons at ``state`` (the dormant ones output
        nothing), for the solver: autonomous (``t`` unused), and counted in ``field.evaluations``."""

    def tolerances(self, rtol):
        """``(rtol, atol)`` for the solver, given the cost step's ``cost_rtol`` as ``rtol``."""

    def speed(self, state):
        """The fastest coordinate's speed at ``state``, nonnegative: one over it is the time of the phase's
        first check (and in a log chart it sets LSODA's first step, see :func:`_solver`)."""

    def gradient_size(self, state):
        """``‖∇U_i(θ̄_i; r)‖`` over the active neurons at their unit directions, with ``r`` their residual:
        the same number in both coordinates, zero exactly at a critical point of the loss, and not shrinking
        with a neuron's norm (a neuron drifting back to the origin keeps the phase going until it is
        declared dormant). The phase's stopping rule compares it with its value at the step's start."""

    def polish(self, state, target, log_dormancy):
        """A state near ``state`` where the flow comes to rest, with :meth:`gradient_size` at most ``target``,
        every log-norm above ``log_dormancy`` and the flow's conserved quantities unchanged; or ``None`` when
        the coordinates cannot tell (the phase then integrates on from ``state``)."""


class _PolarCost(_CostCoordinates):
    """The state of a cost step in the polar coordinates of :class:`PolarField` (any network)."""

    def __init__(self, field, index, atol):
        self.field, self.index, self.H = field, index, len(index)
        self.atol = field.tolerances(atol, self.H)

    def state(self, dirs, logn):
        return pack(dirs, logn)

    def split(self, state):
        return self.field.split(state, self.H)

    def log_norms(self, state):
        return state[-self.H:].copy()      # not a view: a solver may overwrite its state in place

    def __call__(self, t, state):
        return self.field(state, self.index)

    def tolerances(self, rtol):
        return rtol, self.atol

    def speed(self, state):
        dirs, logn = self.split(state)
        return self.field.speed(dirs, logn, self.field.y - self.field.outputs(dirs, logn, self.index), self.index)

    def gradient_size(self, state):
        """``‖∇U_i(θ̄_i; r)‖`` over the active neurons: zero exactly at a critical point of the loss, and not
        shrinking with a neuron's norm, so that a neuron drifting back to the origin keeps the phase going
        until it is declared dormant."""
        dirs, logn = self.split(state)
        grad = self.field.utility_gradient(dirs, logn, self.field.y - self.field.outputs(dirs, logn, self.index),
                                           self.index)
        return float(np.sqrt(np.einsum("hp,hp->", grad, grad)))

    def polish(self, state, target, log_dormancy):
        """Newton steps would move the polar state off the flow's (nonlinear) invariants: none."""
        return None


class _LogChartCost(_CostCoordinates):
    """The state of a cost step in the logarithms ``s`` of the chart coordinates, for a network with a
    ``sign_preserving_chart`` (:class:`LogChartField`). The flow there conserves linear functions of ``s``
    (the diagonal network's ``s_p + s_q = log|pq|``, which fixes where a neuron's imprint ``q`` ends), and
    every solver step, every interpolant and every Newton step below keeps them to rounding, whatever the
    tolerance: the path may be loose, and :meth:`polish` makes its end exact."""

    def __init__(self, field, index, dirs):
        self.field, self.index, self.H = field, index, len(index)
        self.log_field = LogChartField(field.network, field.X, field.y, dirs, eta=field.eta, index=index)

    def state(self, dirs, logn):
        return (np.log(np.abs(dirs)) + logn[:, None]).ravel()

    def split(self, state):
        return self.log_field.polar(state)

    def log_norms(self, state):
        return half_log_sum_exp2(state.reshape(self.H, -1))

    def __call__(self, t, state):
        self.field.evaluations += 1
        return self.log_field(state)

    def tolerances(self, rtol):
        return self.log_field.tolerances(rtol)          # each logarithm to rtol absolutely

    def speed(self, state):
        return float(np.abs(self(0.0, state)).max())

    def _gradient_size(self, state, velocity):
        # ∇U_i(θ̄_i; r) = (∂U_i/∂φ_i)/‖φ_i‖ = (velocity/η) ⊙ φ̄_i, as in _PolarCost (κ = 2)
        dirs, _ = self.split(state)
        scaled = velocity.reshape(dirs.shape) * dirs
        return float(np.sqrt(np.einsum("hp,hp->", scaled, scaled))) / self.field.eta

    def gradient_size(self, state):
        return self._gradient_size(state, self(0.0, state))

    def polish(self, state, target, log_dormancy):
        """The flow's limit by Newton's method on ``v(s) = 0``, or ``None`` when the state is not yet in its basin.

        Each step solves ``J Δ = −v`` with ``Δ`` in the span of the Jacobian ``J`` (by forward differences),
        which is where the flow moves: a linear invariant ``wᵀs`` has ``wᵀv ≡ 0``, hence ``wᵀJ = 0``, so
        ``v`` and the steps lie in the span, and the steps keep every invariant. After a short step (below
        1e-2 in every logarithm) the Jacobian is kept (the chord method: one evaluation a step instead of
        one per coordinate). The result is accepted only if the steps contract from the first (the first
        below one, each below half the one before), the gradient falls below ``target``, no neuron falls
        to the dormancy threshold, and the limit is stable (the Jacobian in its span has eigenvalues of
        negative real part: a minimum on the invariant set, not a saddle the flow would leave). Otherwise
        the solver goes on from ``state``."""
        s, size, bound, unit = state.copy(), math.inf, 1.0, np.eye(state.size)
        velocity = self(0.0, s)
        for _ in range(_NEWTON_STEPS):
            if size > 1e-2:
                shifts = 1e-7 * np.maximum(1.0, np.abs(s))
                jac = np.column_stack([(self(0.0, s + shift * e) - velocity) / shift for shift, e in zip(shifts, unit)])
                left, singular, _ = np.linalg.svd(jac)
                span = left[:, :int(np.sum(singular > 1e-10 * singular[0]))]
                reduced = span.T @ jac @ span        # J on its span, which it maps into itself
            step = span @ np.linalg.solve(reduced, -(span.T @ velocity))
            size = float(np.abs(step).max())
            if size > bound:
                return None
            s, bound = s + step, 0.5 * size
            velocity = self(0.0, s)
            if self._gradient_size(s, velocity) <= target:
                stable = np.linalg.eigvals(reduced).real.max() < 0
                return s if stable and self.log_norms(s).min() > log_dormancy else None
        return None


_NEWTON_STEPS = 12         # at most, in one try of a cost step's polish


def _cannot_converge(sizes, check, target, max_cost_time):
    """Whether a cost step with gradient sizes ``sizes`` at its last checks (times doubling up to ``check``)
    cannot meet the gradient rule (``target``) within ``max_cost_time``: the gradient fell over the last
    doubling, by less than a factor 4, and at its mean rate over the last six doublings, ``g ∝ T^{−β}``,
    it reaches ``target`` only after ``max_cost_time``. Near a minimum the fall is exponential, and its
    rate over six doublings soon predicts convergence in time. Four were too few: on chapter 08's
    three-digit problem a step fell like 1/T over four doublings and then converged exponentially."""
    if len(sizes) < _RATE_DOUBLINGS + 1 or not 0.25 * sizes[-2] < sizes[-1] < sizes[-2]:
        return False
    beta = math.log2(sizes[-_RATE_DOUBLINGS - 1] / sizes[-1]) / _RATE_DOUBLINGS
    return beta <= 0 or math.log(check) + math.log(sizes[-1] / target) / beta > math.log(max_cost_time)


_RATE_DOUBLINGS = 6         # the doublings of time over which _cannot_converge measures the gradient's rate
_FIRST_CHECK_MAX = 1e3      # GF time units: the latest first check of a cost step


def _cost_phase(field, index, dirs, logn, activation_dirs, log_dormancy, method, rtol, atol, cost_tol,
                max_cost_time, jump_time, next_activation=None, eager=False):
    """Gradient flow of the active neurons ``index`` to convergence.

    The gradient and the loss are checked at times growing geometrically, on the solver's interpolant at
    exactly those times, and the step ends at the state of the check that met a rule; the norms are read
    after every step. In a log chart (:class:`_LogChartCost`) the step's start, and every check where the
    gradient has halved since the last try, first try to end the step with Newton's method. Returns the
    neurons still active with their ``(dirs, logn)``, and a dict ``{neuron: direction}`` of those that
    returned to dormancy, with their direction at their last inward crossing of the unit sphere (where
    ``ℓ = 0``). Raises :class:`CostStepError` when the gradient has not fallen by ``cost_tol`` within
    ``max_cost_time``.

    ``next_activation(index, dirs, logn, budget)``, if given, is the time the utility phase would take, from
    the active neurons' state at a check, to its next activation, or ``inf`` if none comes within ``budget``
    (the check's time). A check at cost time ``T`` at which that wait is at most ``T`` ends the step (gradient
    flow gives the active neurons no longer than that before the next neuron joins them) if the step
    cannot converge in time (:func:`_cannot_converge`), or with ``eager`` if its gradient fell over the last
    doubling by less than a factor 4.
    """
    returned = {}
    g0, start_loss, elapsed = None, None, 0.0
    while len(index):
        H = len(index)
        log_chart = log_chart_applies(field.network, dirs)
        coords: _CostCoordinates = _LogChartCost(field, index, dirs) if log_chart else _PolarCost(field, index, atol)
        state = coords.state(dirs, logn)
        size = coords.gradient_size(state)
        if g0 is None:
            g0 = size
        if size <= cost_tol * g0:
            return index, dirs, logn, returned
        if (polished := coords.polish(state, cost_tol * g0, log_dormancy)) is not None:
            return (index, *coords.split(polished), returned)
        declined = size        # Newton's method is tried again once the gradient has halved
        speed = coords.speed(state)
        # the first check after one time unit of the flow's speed, but no later than _FIRST_CHECK_MAX (a step
        # that starts next to a critical point, its flow nearly still, would otherwise run to max_cost_time
        # before its first check), or, after a neuron left, at twice the time spent so far (the doubling the
        # checks follow anyway)
        check = min(elapsed + min(1.0 / max(speed, 1e-300), _FIRST_CHECK_MAX), 2.0 * elapsed if elapsed else math.inf,
                    max_cost_time)
        solver = _solver(method, coords, state, math.inf, *coords.tolerances(rtol), speed if log_chart else None)
        crossings, vanished, sizes = {}, False, []
        previous_loss, previous_size = field.loss(dirs, logn, index), None
        if start_loss is None:
            start_loss = previous_loss
        after = coords.log_norms(state)
        while not vanished:
            before = after
            interpolant = _step(solver, f"cost minimization after the jump at t = {jump_time:.6g}")
            after = coords.log_norms(solver.y)
            lowest = after.min()
            for j in np.nonzero((before >= 0) & (after < 0))[0] if lowest < 0 else ():
                t = solver.t_old if before[j] == 0 else brentq(lambda t: coords.log_norms(interpolant(t))[j],
                                                                solver.t_old, solver.t, xtol=1e-14 * max(solver.t, 1))
                crossings[j] = coords.split(interpolant(t))[0][j].copy()
            if lowest < log_dormancy:
                t = brentq(lambda t: coords.log_norms(interpolant(t)).min() - log_dormancy, solver.t_old, solver.t,
                           xtol=1e-14 * max(solver.t, 1))
                state, vanished = interpolant(t), True
                elapsed += t
                break
            if elapsed + solver.t >= check:
                # the checks read the flow at the check time itself, from the step's interpolant, so that
                # where a step ends does not depend on where the solver happened to put its steps
                at_check = interpolant(check - elapsed) if check - elapsed > solver.t_old else solver.y
                size, loss = coords.gradient_size(at_check), field.loss(*coords.split(at_check), index)
                # Converged: the gradient has fallen by cost_tol, or the loss has settled (over the last
                # doubling of time it fell by less than cost_tol² times its fall since the step began; near
                # a nondegenerate minimum the two rules agree, the loss gap being quadratic in the
                # distance). The second rule ends steps whose loss approaches an infimum that no finite
                # parameters attain, where the gradient falls only like 1/t (chapter 06, an incomplete group).
                if size <= cost_tol * g0 or previous_loss - loss <= cost_tol**2 * (start_loss - loss):
                    return (index, *coords.split(at_check), returned)
                if size <= 0.5 * declined:
                    if (polished := coords.polish(at_check, cost_tol * g0, log_dormancy)) is not None:
                        return (index, *coords.split(polished), returned)
                    declined = size
                # An infimum: the gradient fell over the last doubling of time, but by less than a factor 4
                # (no faster than 1/t²; near a minimum the fall is exponential and soon much larger). Such a
                # step ends at the first check by which the next dormant neuron, against the residual at that
                # check, would have activated: with eager at once, else only once its rate shows that the
                # rules cannot end it within max_cost_time.
                sizes.append(size)
                if (next_activation is not None and previous_size is not None
                        and 0.25 * previous_size < size < previous_size
                        and (eager or _cannot_converge(sizes, check, cost_tol * g0, max_cost_time))
                        and next_activation(index, *coords.split(at_check), check) <= check):
                    return (index, *coords.split(at_check), returned)
                previous_loss, previous_size = loss, size
                check = min(2.0 * check, max_cost_time)
            if elapsed + solver.t > max_cost_time:
                raise CostStepError(
                    f"the cost step after the jump at t = {jump_time:.6g} did not converge within max_cost_time = "
                    f"{max_cost_time:g}: the active neurons {[int(i) for i in index]} still have a gradient "
                    f"{size / g0:.3g} of its initial size (cost_tol = {cost_tol:g})")
        dirs, logn = coords.split(state)
        j = int(np.argmin(logn))
        neuron = int(index[j])
        # a neuron that never crossed inwards after activating left the unit sphere at once
        returned[neuron] = crossings.get(j, activation_dirs[neuron])
        keep = np.array([k for k in range(H) if k != j], dtype=int)
        index, dirs, logn = index[keep], dirs[keep], logn[keep]
    return index, dirs, logn, returned


def alternating_gradient_flow(network, data, theta0, *, eta=1.0, t_end=math.inf, max_jumps=None,
                              method="DOP853", cost_method="LSODA", rtol=1e-10, atol=1e-12, cost_rtol=1e-5,
                              adaptive_rate=False, dormancy_threshold=None, cost_tol=1e-9, utility_tol=1e-8,
                              max_cost_time=1e6, cost_horizon="auto", check_rounding=None, progress=None,
                              _perturbed=False):
    """Numerical AGF (the paper's Algorithm 1) from ``theta0``, in GF time ``t``.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network.
    data : tuple
        The pair ``(X, y)``, ``X`` of shape ``(n, d)`` and ``y`` of shape ``(n,)`` or ``(n, c)``.
    theta0 : (H, P) array
        Initial parameters: every neuron dormant (norm below one) and nonzero.
    eta : float, default 1.0
        Learning rate of both flows.
    t_end : float, default inf
        Stop before a jump later than this time.
    max_jumps : int, optional
        Stop after this many jumps.
    method : str, default "DOP853"
        Solver of utility maximization, a method of :func:`scipy.integrate.solve_ivp`.
    rtol, atol : float, default 1e-10, 1e-12
        Tolerances of utility maximization (``atol`` also of polar cost steps).
    cost_method : str, default "LSODA"
        Solver of cost minimization. LSODA switches to a stiff method near the minimum, where
        explicit methods stall at their stability limit; its Jacobian is built by finite differences,
        one evaluation per parameter of the active neurons, so with many active neurons and a long,
        mildly stiff end (chapter 06) the explicit ``"RK23"`` costs less.
    cost_rtol : float, default 1e-5
        Relative tolerance of the cost step's solver (in a log chart, the absolute tolerance of the
        logarithms). Only the end of a cost step matters, the critical point its flow settles at, not
        the path: a looser tolerance than ``rtol`` saves work while ``cost_tol`` still fixes how close
        to that point the step ends. In polar coordinates the path's error moves the neurons'
        conserved quantities, which matters for the timing of neurons that return from dormancy;
        tighten it there.
    adaptive_rate : bool, default False
        Use the neuron-wise rate ``η‖θ_i‖^{2−κ}`` (paper Appendix B.5), making κ > 2 behave like
        κ = 2.
    dormancy_threshold : float, optional
        Norm (below one) below which an active neuron returns to dormancy. By default the geometric
        mean of the largest initial norm and one, but at least 1e-6.
    cost_tol : float, default 1e-9
        Cost minimization stops when the active neurons' utility gradients have fallen by this
        factor, in ``(0, 1)``.
    utility_tol : float, default 1e-8
        Relative size of utility gradients below which no dormant neuron can gain utility; finite
        and positive.
    max_cost_time : float, default 1e6
        Longest GF time allowed for one cost minimization; finite and positive.
    cost_horizon : {"auto", "next_activation", None}, default "auto"
        When a cost step also ends at the *horizon*: the first check by which the next dormant neuron, its
        utility phase run against the residual at that check, would have activated. Gradient flow gives
        the active neurons no more time than that before the next neuron joins them.

        - ``"auto"``: only a step that the gradient and loss rules cannot end within ``max_cost_time``:
          over the last doubling of time its gradient fell, by less than a factor 4, and at its mean rate
          over the last six doublings (a power of time, ``g ∝ T^{−β}``) it would reach ``cost_tol`` only
          after ``max_cost_time``. Such a step approaches an infimum that no finite weights attain (its
          gradient falls like ``1/T``) or crawls along a nearly flat direction; without the horizon it
          raises :class:`CostStepError`. Modular addition with incomplete groups has such steps (chapter
          06: the paper's p = 20 setup at the default ``cost_tol``). On the book's standard problems
          (:func:`agf_lib.problems.names`) at their own options no step meets the condition, so their
          runs are those of ``None`` (measured on their conformance runs).
        - ``"next_activation"``: every step whose gradient fell over the last doubling by less than a
          factor 4; it also cuts slowly converging steps that look power-like early (chapter 04's
          non-commuting linear network, attention at α = 1e-3), and moves their levels.
        - ``None``: the gradient and loss rules only.
    check_rounding : bool or None, default None
        Rerun with every direction perturbed at float64's rounding (4ε per component and evaluation, as
        the rounding check of :func:`agf_lib.gradient_flow` does) and compare the jumps; warn
        (:class:`~agf_lib.flow.PrecisionWarning`) where a jump time or level moves by more than 1e-3. The
        rerun doubles the cost. ``None``: check where the largest initial norm is below 1e-8, except in a
        log chart (the diagonal network), whose coordinates have no floor. On chapter 05's attention problem
        AGF's third and fourth jumps come early at α = 1e-24, silently without the check (see
        benchmarks/README.md, "Design decisions measured").
    progress : bool or None, default None
        Show a progress bar (tqdm, on standard error) of the jumps made, and of the rounding check's
        rerun. ``True``: from the start; ``False``: never; ``None``: on runs that take more than 5 s, where
        someone watches: as for :func:`~agf_lib.flow.gradient_flow` (never inside the book build, nbval or
        pytest).

    Returns
    -------
    Staircase
        The jump times and loss levels, with

        - ``states[k]``: Θ (shape ``(H, P)``) on level ``k``, dormant neurons included at their
          current (small) size;
        - ``active[k]``: the active neurons on level ``k``;
        - ``deactivated[k-1]``: the neurons that returned to dormancy during the cost step of jump
          ``k``;
        - ``stop_reason``: why the loop ended, ``"all active"``, ``"no utility"`` (every dormant
          neuron stationary with nonpositive utility), ``"max_jumps"`` or ``"t_end"``;
        - ``evaluations``: the utility-gradient evaluations made (the rounding check's rerun included);
        - ``rounding_error`` and ``resolved_until``: what the rounding check found.

    Raises
    ------
    ValueError
        If an argument is out of range, for instance a neuron of ``theta0`` with norm one or more
        (use a smaller α), a ``dormancy_threshold`` not below one, a tolerance or ``max_cost_time``
        that is not a finite positive number, or a ``cost_tol`` not below one.
    TypeError
        If an argument has the wrong type (a flag not ``True`` or ``False``, ``progress`` not ``True``,
        ``False`` or ``None``, a number that is not a
        real number, ``network`` not a :class:`~agf_lib.network.TwoLayerNetwork`, ``data`` not a pair).
    CostStepError
        If a cost minimization has not converged within ``max_cost_time``.
    RuntimeError
        If a solver fails, stalls (its steps fall below the resolution of ``t``) or leaves float64.
    FloatingPointError
        If a loss level or a norm is not finite after a cost step.

    Notes
    -----
    A cost step stops once its gradient has fallen by ``cost_tol``, and the residual it leaves gives
    dormant neurons a utility of that order. After the last real feature such a neuron can still grow
    and activate, very late and with no drop in the loss. Bound such runs with ``t_end`` or
    ``max_jumps``: at such times a solver's steps can fall below the resolution of ``t``, or overflow,
    and the run raises a ``RuntimeError`` rather than step in place or go on from a NaN state. What
    happens there is decided by rounding, and can differ between machines, BLAS kernels and thread
    counts.
    """
    network = check_network(network)
    X, y = unpack_data(network, data)
    theta0 = network.check_theta(theta0, name="theta0")
    eta = check_positive(eta, "eta")
    check_solver(method)
    check_solver(cost_method, "cost_method")
    check_max_jumps(max_jumps)
    cost_rtol = check_positive(cost_rtol, "cost_rtol")
    rtol, atol = check_positive(rtol, "rtol"), check_positive(atol, "atol")
    cost_tol, utility_tol = check_fraction(cost_tol, "cost_tol"), check_positive(utility_tol, "utility_tol")
    max_cost_time = check_positive(max_cost_time, "max_cost_time")
    if cost_horizon is not None and not (isinstance(cost_horizon, str) and cost_horizon in ("auto", "next_activation")):
        raise ValueError(f"cost_horizon must be 'auto', 'next_activation' or None, got {cost_horizon!r}")
    adaptive_rate = check_bool(adaptive_rate, "adaptive_rate")
    t_end = check_positive(t_end, "t_end", finite=False)
    dirs, logn = to_polar(network.to_chart(theta0))
    initial_log_norm = float(logn.max())
    if check_rounding is None:       # as gradient_flow: below norm 1e-8, and not in a log chart (no floor there)
        check_rounding = initial_log_norm < math.log(ROUNDING_CHECK_NORM) and \
            not log_chart_applies(network, network.to_chart(theta0))
    check_rounding = check_bool(check_rounding, "check_rounding")
    progress = check_progress(progress)
    if float(np.sqrt((theta0**2).sum(1)).max()) >= 1.0:
        raise ValueError("theta0 must have every neuron inside the unit sphere (dormant); use a smaller alpha")
    if dormancy_threshold is None:
        log_dormancy = max(0.5 * float(logn.max()), math.log(1e-6))
    else:
        log_dormancy = math.log(check_positive(dormancy_threshold, "dormancy_threshold"))
        if log_dormancy >= 0:
            raise ValueError(f"dormancy_threshold must be below one, got {dormancy_threshold!r}")

    field = PolarField(network, X, y, dirs, eta=eta, adaptive_rate=adaptive_rate)
    if _perturbed:
        field.perturb_directions(ROUNDING_PERTURBATION)
    H = network.num_neurons
    active = np.zeros(H, dtype=bool)
    activation_dirs = {}

    def snapshot():
        return field.params(dirs, logn).copy()

    def level():
        members = np.nonzero(active)[0]
        return field.loss(dirs[members], logn[members], members)

    # Trial steps that overshoot to overflowing norms are rejected by the solvers (see gradient_flow).
    with single_thread(network), np.errstate(over="ignore", invalid="ignore"), \
            progress_bar(progress, total=H if max_jumps is None else min(H, max_jumps), bar_format=_BAR_FORMAT,
                         desc="AGF, rounding check" if _perturbed else "AGF") as bar:
        grad0 = field.utility_gradient(dirs, logn, y, None)
        grad_scale = max(float(np.sqrt((grad0**2).sum(1)).max()), 1e-300)
        t = 0.0
        times, losses, order, states, active_sets, deactivated = [0.0], [level()], [], [snapshot()], [()], []
        stop_reason = "all active"
        while not active.all():
            if max_jumps is not None and len(order) >= max_jumps:
                stop_reason = "max_jumps"
                break
            members, dormant = np.nonzero(active)[0], np.nonzero(~active)[0]
            residual = y - field.outputs(dirs[members], logn[members], members)
            if network.quadratic_utility:
                dt, j, d_new, l_new, reason = _quadratic_utility_phase(field, residual, dormant, dirs[dormant],
                                                                       logn[dormant], t_end - t, utility_tol,
                                                                       grad_scale)
            else:
                dt, j, d_new, l_new, reason = _utility_phase(field, residual, dormant, dirs[dormant],
                                                             logn[dormant], t_end - t, method, rtol, atol,
                                                             utility_tol, grad_scale)
            dirs[dormant], logn[dormant] = d_new, l_new
            if dt is None:
                stop_reason = reason
                break
            i = int(dormant[j])
            t += dt
            logn[i] = 0.0
            active[i] = True
            activation_dirs[i] = dirs[i].copy()

            members, waiting = np.nonzero(active)[0], np.nonzero(~active)[0]

            def next_activation(index, d_act, l_act, budget):
                # the utility phase from the active neurons' state at a check, over at most budget; the dormant
                # neurons at their state at the jump (those that leave during this step are not counted)
                if not waiting.size:
                    return math.inf
                residual = y - field.outputs(d_act, l_act, index)
                if network.quadratic_utility:
                    wait = _quadratic_utility_phase(field, residual, waiting, dirs[waiting], logn[waiting], budget,
                                                    utility_tol, grad_scale)[0]
                else:
                    wait = _utility_phase(field, residual, waiting, dirs[waiting], logn[waiting], budget, method, rtol,
                                          atol, utility_tol, grad_scale)[0]
                return math.inf if wait is None else wait

            kept, d_act, l_act, returned = _cost_phase(field, members, dirs[members], logn[members], activation_dirs,
                                                       log_dormancy, cost_method, cost_rtol, atol, cost_tol,
                                                       max_cost_time, t,
                                                       next_activation if cost_horizon else None,
                                                       eager=cost_horizon == "next_activation")
            dirs[kept], logn[kept] = d_act, l_act
            for k, direction in returned.items():
                dirs[k], logn[k], active[k] = direction, 0.0, False
            times.append(t)
            losses.append(level())
            if not (math.isfinite(losses[-1]) and np.all(np.isfinite(logn))):
                raise FloatingPointError(f"AGF left float64 in the cost step after the jump at t = {t:.6g}")
            order.append(i)
            states.append(snapshot())
            active_sets.append(tuple(int(k) for k in np.nonzero(active)[0]))
            deactivated.append(tuple(sorted(returned)))
            bar.set_postfix_str(f"t = {t:.4g}", refresh=False)
            bar.update()
    evaluations, rounding = field.evaluations, {}
    if check_rounding:
        rerun = alternating_gradient_flow(
            network, data, theta0, eta=eta, t_end=t_end, max_jumps=max_jumps, method=method,
            cost_method=cost_method, rtol=rtol, atol=atol, cost_rtol=cost_rtol, adaptive_rate=adaptive_rate,
            dormancy_threshold=dormancy_threshold, cost_tol=cost_tol, utility_tol=utility_tol,
            max_cost_time=max_cost_time, cost_horizon=cost_horizon, check_rounding=False, progress=progress,
            _perturbed=True)
        evaluations += rerun.evaluations
        rounding = rounding_of_jumps(np.array(times), np.array(losses), order, rerun)
    return Staircase(np.array(times), np.array(losses), order, states=states, active=active_sets,
                     time_unit=GF_TIME, deactivated=deactivated, stop_reason=stop_reason,
                     evaluations=evaluations, **rounding)
