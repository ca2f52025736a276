"""Alternating Gradient Flows (the paper's Algorithm 1) for any network of the library's abstraction.

Neurons start dormant. Each iteration has two steps.

* **Utility maximization.** With the active neurons' output held fixed, every dormant neuron
  follows gradient flow of its own utility ``U_i(θ_i; r)`` (paper Eq. 2), in polar coordinates:
  its direction climbs the utility on the sphere while ``dℓ_i/dt = ηκ e^{(κ−2)ℓ_i} Ū_i``. The first
  neuron whose norm reaches one activates. This is the paper's condition that the accumulated
  utility ``𝒮_i = ∫κŪ_i`` reaches ``c_i/η`` with ``c_i = −log‖θ_i(0)‖`` for κ = 2 and
  ``c_i = (‖θ_i(0)‖^{2−κ} − 1)/(κ − 2)`` for κ > 2, exact at finite α, since ``ℓ_i`` is integrated
  alongside the direction.
* **Cost minimization.** The active neurons follow gradient flow of the loss, with the dormant
  neurons taken as zero, until the gradient vanishes. An active neuron driven back towards the
  origin (its norm below ``dormancy_threshold``) returns to the dormant set with the state it had
  when it last crossed the unit sphere inwards, i.e. with ``𝒮_i = c_i/η`` as in the paper's
  Appendix B.3.

The float64 limit stated in :mod:`agf_lib.flow` applies here too, to networks without a chart: a
dormant neuron whose utility flow reverses its sign after a long excursion, or a neuron restored
at norm one after returning to dormancy, is timed with an error that grows as α shrinks. In the
diagonal network's chart both are timed to 1e-7 or better, down to α = 1e-100.

Time runs during utility maximization only. The loop ends when no dormant neuron can gain utility
(every dormant neuron stationary on the sphere with nonpositive utility), after ``max_jumps`` jumps,
or when the next jump would come after ``t_end``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from scipy.integrate import solve_ivp

from .flow import (PolarField, check_max_jumps, check_network, check_positive, check_solver, pack, single_thread,
                   to_polar, unpack_data)
from .results import Staircase

__all__ = ["alternating_gradient_flow"]


def _utility_phase(field, residual, index, dirs, logn, t_budget, method, rtol, atol, utility_tol, grad_scale):
    """Utility flow of the dormant neurons ``index`` until one of them reaches norm one.

    Returns ``(dt, j, dirs, logn)`` with ``j`` the position in ``index`` of the neuron that
    activates, or ``(None, None, dirs, logn)`` when no neuron can gain utility or the time budget
    is spent.
    """
    H = len(index)
    rhs = lambda t, s: field(s, index, residual)
    event = lambda t, s: float(np.max(s[-H:]))
    event.terminal, event.direction = True, 1.0
    state, elapsed, previous = pack(dirs, logn), 0.0, None
    atol = field.tolerances(atol, H)
    d_dirs, d_logn = field.velocity(dirs, logn, residual, index)
    window = 10.0 / max(float(torch.sqrt((d_dirs**2).sum(1) + d_logn**2).max()), 1e-300)
    while elapsed < t_budget:
        span = min(window, t_budget - elapsed)
        sol = solve_ivp(rhs, (0.0, span), state, method=method, rtol=rtol, atol=atol, events=event)
        if not sol.success:
            raise RuntimeError(f"utility maximization failed: {sol.message}")
        if sol.status == 1:
            dirs, logn = field.split(sol.y_events[0][0], H)
            return elapsed + float(sol.t_events[0][0]), int(torch.argmax(logn)), dirs, logn
        state, elapsed = sol.y[:, -1], elapsed + span
        dirs, logn = field.split(state, H)
        grad = field.utility_gradient(dirs, logn, residual, index)
        radial = (grad * dirs).sum(1)
        tangential = torch.linalg.vector_norm(grad - radial[:, None] * dirs, dim=1)
        # No utility to gain: every neuron stationary on the sphere with nonpositive utility, and not
        # slowly leaving a utility minimum (there its tangential speed grows from window to window).
        if (max(float(tangential.max()), float(radial.max())) <= utility_tol * grad_scale
                and previous is not None and bool((tangential <= previous).all())):
            return None, None, dirs, logn
        previous = tangential
        window *= 4.0
    return None, None, dirs, logn


def _cost_phase(field, index, dirs, logn, activation_dirs, log_dormancy, method, rtol, atol, cost_tol,
                max_cost_time):
    """Gradient flow of the active neurons ``index`` to convergence.

    Returns the neurons still active with their ``(dirs, logn)``, and a dict ``{neuron: direction}``
    of those that returned to dormancy, with their direction at their last inward crossing of the
    unit sphere (where ``ℓ = 0``).
    """
    index = index.clone()
    returned = {}
    g0 = None
    while len(index):
        H = len(index)

        def gradient_size(s):
            # ‖∇U_i(θ̄_i; r)‖ over the active neurons: zero exactly at a critical point of the loss,
            # and not shrinking with a neuron's norm, so that a neuron drifting back to the origin
            # keeps the phase going until it is declared dormant.
            d, l = field.split(s, H)
            grad = field.utility_gradient(d, l, field.y - field.outputs(d, l, index), index)
            return float(torch.linalg.vector_norm(grad))

        if g0 is None:
            g0 = gradient_size(pack(dirs, logn))
        if g0 == 0.0 or gradient_size(pack(dirs, logn)) <= cost_tol * g0:
            break
        converged = lambda t, s: math.log(max(gradient_size(s), 1e-300) / (cost_tol * g0))
        converged.terminal, converged.direction = True, -1.0
        vanishing = lambda t, s: float(np.min(s[-H:])) - log_dormancy
        vanishing.terminal, vanishing.direction = True, -1.0
        crossings = []
        for j in range(H):
            cross = lambda t, s, j=j: float(s[-H + j])
            cross.direction = -1.0
            crossings.append(cross)
        sol = solve_ivp(lambda t, s: field(s, index), (0.0, max_cost_time), pack(dirs, logn), method=method,
                        rtol=rtol, atol=atol, events=[converged, vanishing, *crossings])
        if not sol.success:
            raise RuntimeError(f"cost minimization failed: {sol.message}")
        dirs, logn = field.split(sol.y[:, -1], H)
        if sol.status == 0:
            warnings.warn(f"cost minimization did not converge within max_cost_time = {max_cost_time:g}",
                          RuntimeWarning, stacklevel=3)
        if sol.t_events[1].size == 0:
            break
        j = int(torch.argmin(logn))
        neuron = int(index[j])
        if sol.t_events[2 + j].size:
            returned[neuron] = field.split(sol.y_events[2 + j][-1], H)[0][j].clone()
        else:  # it never crossed inwards after activating: it left the unit sphere at once
            returned[neuron] = activation_dirs[neuron]
        keep = torch.tensor([k for k in range(H) if k != j], dtype=torch.long)
        index, dirs, logn = index[keep], dirs[keep], logn[keep]
    return index, dirs, logn, returned


@single_thread()
def alternating_gradient_flow(network, data, theta0, *, eta=1.0, t_end=math.inf, max_jumps=None,
                              method="DOP853", cost_method="LSODA", rtol=1e-10, atol=1e-12,
                              adaptive_rate=False, dormancy_threshold=None, cost_tol=1e-9, utility_tol=1e-8,
                              max_cost_time=1e6):
    """Numerical AGF (Algorithm 1) from ``theta0``; returns a :class:`Staircase` in GF time ``t``.

    Parameters
    ----------
    network : TwoLayerNetwork
    data : pair ``(X, y)``
    theta0 : (H, P) initial parameters, all neurons dormant (norm below one) and nonzero
    eta : learning rate of both flows
    t_end : stop before a jump later than this time
    max_jumps : stop after this many jumps
    method, rtol, atol : :func:`scipy.integrate.solve_ivp` settings for utility maximization
    cost_method : solver for cost minimization; LSODA switches to a stiff method near the minimum,
        where explicit methods stall at their stability limit
    adaptive_rate : neuron-wise rate ``η‖θ_i‖^{2−κ}`` (Appendix B.5), making κ > 2 behave like κ = 2
    dormancy_threshold : norm below which an active neuron returns to dormancy; default the
        geometric mean of the largest initial norm and one, but at least 1e-6
    cost_tol : cost minimization stops when the active neurons' utility gradients have fallen by
        this factor
    utility_tol : relative size of utility gradients below which no dormant neuron can gain utility
    max_cost_time : longest GF time allowed for one cost minimization

    The cost step stops once its gradient has fallen by ``cost_tol``, and the residual it leaves gives
    dormant neurons a utility of that order. After the last real feature, such a neuron can still
    grow and activate, very late and with no drop in the loss (at t ≈ 4e12, against a last real jump
    at 801, on chapter 05's attention problem from α = 1e-3). Bound such runs with ``t_end`` or
    ``max_jumps``.

    ``states[k]`` holds Θ (shape (H, P)) on level k, dormant neurons included at their current
    (small) size; ``active[k]`` the active neurons; ``deactivated[k-1]`` those that returned to
    dormancy during the cost step of jump k.
    """
    network = check_network(network)
    X, y = unpack_data(network, data)
    theta0 = network.check_theta(theta0, "theta0")
    eta = check_positive(eta, "eta")
    check_solver(method)
    check_solver(cost_method)
    check_max_jumps(max_jumps)
    t_end = float(t_end)
    if not t_end > 0:
        raise ValueError(f"t_end must be positive, got {t_end!r}")
    dirs, logn = to_polar(network.to_chart(theta0))
    if float(torch.linalg.vector_norm(theta0, dim=1).max()) >= 1.0:
        raise ValueError("theta0 must have every neuron inside the unit sphere (dormant); use a smaller alpha")
    if dormancy_threshold is None:
        log_dormancy = max(0.5 * float(logn.max()), math.log(1e-6))
    else:
        log_dormancy = math.log(check_positive(dormancy_threshold, "dormancy_threshold"))
        if log_dormancy >= 0:
            raise ValueError(f"dormancy_threshold must be below one, got {dormancy_threshold!r}")

    field = PolarField(network, X, y, dirs, eta=eta, adaptive_rate=adaptive_rate)
    H = network.num_neurons
    active = torch.zeros(H, dtype=torch.bool)
    activation_dirs = {}
    grad0 = field.utility_gradient(dirs, logn, y, None)
    grad_scale = max(float(torch.linalg.vector_norm(grad0, dim=1).max()), 1e-300)

    def snapshot():
        return field.params(dirs, logn).numpy().copy()

    def level():
        members = torch.nonzero(active)[:, 0]
        return field.loss(dirs[members], logn[members], members)

    t = 0.0
    times, losses, order, states, active_sets, deactivated = [0.0], [level()], [], [snapshot()], [()], []
    while (max_jumps is None or len(order) < max_jumps) and not bool(active.all()):
        members, dormant = torch.nonzero(active)[:, 0], torch.nonzero(~active)[:, 0]
        residual = y - field.outputs(dirs[members], logn[members], members)
        dt, j, d_new, l_new = _utility_phase(field, residual, dormant, dirs[dormant], logn[dormant], t_end - t,
                                             method, rtol, atol, utility_tol, grad_scale)
        dirs[dormant], logn[dormant] = d_new, l_new
        if dt is None:
            break
        i = int(dormant[j])
        t += dt
        logn[i] = 0.0
        active[i] = True
        activation_dirs[i] = dirs[i].clone()

        members = torch.nonzero(active)[:, 0]
        kept, d_act, l_act, returned = _cost_phase(field, members, dirs[members], logn[members], activation_dirs,
                                                   log_dormancy, cost_method, rtol, atol, cost_tol, max_cost_time)
        dirs[kept], logn[kept] = d_act, l_act
        for k, direction in returned.items():
            dirs[k], logn[k], active[k] = direction, 0.0, False
        times.append(t)
        losses.append(level())
        order.append(i)
        states.append(snapshot())
        active_sets.append(tuple(int(k) for k in torch.nonzero(active)[:, 0]))
        deactivated.append(tuple(sorted(returned)))
    return Staircase(np.array(times), np.array(losses), order, states=states, active=active_sets,
                     time_unit="t", deactivated=deactivated)
