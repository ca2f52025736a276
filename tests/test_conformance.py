"""Conformance: both engines against the closed form of every standard problem (``agf_lib.problems``).

For every problem and two values of α:

* numerical AGF (:func:`agf_lib.alternating_gradient_flow`) against the closed form: what is learned at
  each level and the levels themselves, then the jump times (against the exact closed form at that α
  where the setting has one, else against the α → 0 limit in ``t / log(1/α)``);
* gradient flow (:func:`agf_lib.gradient_flow`) against numerical AGF: the levels, and jump times whose
  error is smaller at the smaller α.

Jumps are located the same way in every run: :meth:`agf_lib.Staircase.compare` against the reference
staircase (a run's k-th jump is where its loss first falls below the midpoint of the k-th drop). A
jump whose drop is below 1% of the initial loss is not timed: gradient flow then slides through it
along the plateau (chapter 03's return to dormancy: x_3 hands its share to x_1 over a whole plateau),
and the midpoint crossing times that slide, not the jump. Its level is still checked.

Run alone with ``python -m pytest -m conformance`` (or ``-k conformance``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import agf_lib
from agf_lib import linear, problems
from agf_lib.results import Trajectory

pytestmark = pytest.mark.conformance

# Two values of α per problem, problems.Problem.alphas (larger first; log(1/α) doubles between them).
# Every problem is checked. (groups-d3 once had its 2-d irrep first: at H = 8, below the 9 neurons that fit
# that irrep exactly (chapter 09), neither engine reached its level; it now checks the sign irrep first, which
# two neurons fit: the first to exactly half its drop, the second 7.3 GF time units later at both α (1.05
# and 0.52 in t/log(1/α)), so the midpoint crossing times the second, and the two merge as α → 0.)
UNCHECKED = set()

# Gradient flow's solver: LSODA is 10x faster than DOP853 on the return to dormancy (a plateau of
# 1.4e3 log(1/α)), and its error (rtol 1e-8) is far below the O(1/log(1/α)) gaps measured here.
GF_OPTIONS = {"method": "LSODA", "rtol": 1e-8, "atol": 1e-10}

TIMED_DROP = 0.01  # a jump is timed when its drop is at least this fraction of the initial loss

# --- tolerances, each measured on this machine (the largest value over all problems and both α) ---
# AGF against the exact closed form (diagonal networks), in GF time: jump times within 6.7e-8
# relative (the brentq roots of the utility step and the cost step's end, cost_rtol 1e-6), levels
# within 2.5e-15.
EXACT_TIME_RTOL = 1e-6
EXACT_LEVEL_RTOL = 1e-12
# AGF's levels against the closed form's, as a fraction of the initial loss: 2e-7 (modular, where the
# cost step ends with its loss settled to cost_tol² = 1e-6 of its fall), 1e-13 elsewhere.
LEVEL_TOL = 2e-6
# The ReLU problems run on the smoothed surrogate (eps = 1e-4), which exceeds relu(wᵀx) by at most eps‖w‖ log 2
# (relu.py; test_relu). On relu-xor the neuron fitting sample k has |a|‖w‖ = m_k/√2 (m = 1, .8, .6, .4), so a
# sample on kinks moves by at most δ = eps log 2 Σ m_k/√2 = 1.37e-4, and a level by at most mean|r|·δ + δ²/2
# with mean|r| ≤ mean m = 0.7: 3.6e-4 of the initial loss Σm²/8 = 0.27 (measured 6.3e-5). relu-orthogonal has
# no neuron on a kink and meets LEVEL_TOL.
LEVEL_TOL_OF = {"relu-xor": 3.6e-4}
# The function computed on each level against the closed form's, ‖f − f_k‖ / ‖y‖: 2.8e-4 (modular at
# α = 1e-6), 6.7e-5 (relu-xor: the surrogate's offset on kink samples), 4e-7 for the linear problems and
# relu-orthogonal, 2e-8 elsewhere.
OUTPUT_TOL = 2e-3
# Jump times against the α → 0 limit: theory gives the form, not the constant. A neuron escapes after
# (log(1/α) + c)/(κηŪ) in GF time, c = log(α / its initial projection on the maximizer) plus the O(1) time it
# takes to align; initial_theta scales one seeded draw by α, so c does not depend on α and the relative error
# is c'/log(1/α) with c' set by the draw. Measured c': 1.07 (linear, commuting), 1.34 (attention), 1.1
# (modular), 1.73 (groups-d3), 1.09 (relu-xor), 0.10 (relu-orthogonal); the bound, twice attention's 1.34, was
# set before groups-d3 was added and has not been moved since.
LIMIT_TIME_C = 2.7
# Gradient flow against AGF, error × log(1/α): of order one by the same argument (a drop takes O(1) GF time
# on a plateau of length O(log(1/α))), with a constant no closed form gives. Measured: 1.45 (linear,
# commuting, fourth jump), 0.72 (diagonal), 0.77 (attention), 0.37 (modular), 0.19 (groups-d3), 0.99
# (relu-xor, fourth jump), 0.44 (relu-orthogonal); the bound is about twice the largest.
GF_TIME_C = 3.0
# Gradient flow's plateaus (at the middle of AGF's) against AGF's levels, as a fraction of the initial
# loss: at the larger α up to 2.4e-2 (attention's first plateau), 1.8e-2 (diagonal-dormancy's third);
# at the smaller α up to 3.7e-3 (diagonal-dormancy's third), 8.3e-4 (attention), 4.6e-4 (linear).
# The ReLU problems: 1.6e-2 and 9.1e-4 (relu-xor), 6.5e-3 and 4.2e-4 (relu-orthogonal).
GF_LEVEL_TOL = {0: 4e-2, 1: 6e-3}
# Error ratios between the two α: for an error c/log(1/α) the ratio is log(1/α_small)/log(1/α_large) = 2.
# With a next-order term, c/L·(1 + y) at the larger α (L = log(1/α)), it is 2(1 + y)/(1 + y/2): the band
# (1.5, 2.5) allows y from −0.4 to +0.67, a next-order term up to about half the leading one; no theory
# fixes its size. Measured: 1.80 (groups-d3) to 2.06 on every timed jump but one (1.93 to 2.01 on the ReLU
# problems). The ratio measures the rate only where the error has its asymptotic form at both α, and a signed
# error that changes sign between them has not: diagonal-dormancy's first jump (−0.86% at 1e-3, +0.0013% at
# 1e-5, +0.12% at 1e-6; a correction that decays like a small power of α, and the error × log(1/α) reaches
# 0.0465 only below α = 1e-12: 0.0444, 0.0464, 0.0465 at 1e-12, 1e-20, 1e-30). Such a jump is held to the
# shrinking error alone.
RATIO_BAND = (1.5, 2.5)

# The neuron-wise engine does not apply to the fully connected linear network with non-commuting covariances:
# the paper's AGF for that network runs on orthonormal basis vectors of the hidden layer (Section 4,
# linear.basis_agf), and AGF on neurons activates the neurons that share the first feature one after the
# other, within a time of order one. Its later jumps then move away from gradient flow as α shrinks, which
# test_neuron_wise_agf_fails_on_the_noncommuting_linear_network asserts; the three tests of jump times
# below leave the problem out. (With commuting covariances the two coincide up to the 1/log(1/α) delay.)
NEURON_WISE_FAILS = "linear-noncommuting"


def alphas(name):
    return problems.get(name).alphas


CHECKED = [name for name in problems.names() if name not in UNCHECKED]


def _cases():
    for name in CHECKED:
        for index, alpha in enumerate(alphas(name)):
            yield name, index, alpha


CASES = [pytest.param(name, index, alpha, id=f"{name}-{alpha:g}") for name, index, alpha in _cases()]


NEURON_WISE_CASES = [case for case in CASES if case.values[0] != NEURON_WISE_FAILS]


def staircase_as_trajectory(staircase, t_end):
    """The staircase as a path with vertical drops, so that :meth:`Staircase.compare` finds its jumps exactly."""
    times, losses = [0.0], [staircase.losses[0]]
    for k in range(1, staircase.num_jumps + 1):
        times += [staircase.times[k]] * 2
        losses += [staircase.losses[k - 1], staircase.losses[k]]
    times.append(max(t_end, staircase.times[-1]))
    losses.append(staircase.losses[-1])
    return Trajectory(np.array(times), np.array(losses), time_unit=staircase.time_unit)


@functools.lru_cache(maxsize=None)
def run(name, alpha):
    """Both engines on one problem at one α, with what the checks need."""
    problem = problems.get(name)
    theta0 = problem.initial_theta(alpha)
    t_end = problem.t_end(alpha)
    agf = agf_lib.alternating_gradient_flow(problem.network, problem.data, theta0, t_end=t_end,
                                            **problem.options, **problem.agf_options)
    gf = agf_lib.gradient_flow(problem.network, problem.data, theta0, t_end, **problem.options, **GF_OPTIONS)
    jumps = problem.jumps_reproduced
    if problem.exact:
        reference, agf_path, gf_path, unit = problem.closed_form(alpha), staircase_as_trajectory(agf, t_end), gf, 1.0
    else:
        unit = problem.time_scale(alpha)
        reference = problem.limit
        agf_path = problem.rescaled(staircase_as_trajectory(agf, t_end), alpha)
        gf_path = problem.rescaled(gf, alpha)
    if jumps < reference.num_jumps:
        reference = agf_lib.Staircase(reference.times[: jumps + 1], reference.losses[: jumps + 1],
                                      reference.order[:jumps], predictors=reference.predictors[: jumps + 1],
                                      time_unit=reference.time_unit)
    drops = -np.diff(reference.losses)
    timed = np.nonzero(drops >= TIMED_DROP * reference.losses[0])[0]
    return dict(problem=problem, agf=agf, gf=gf, reference=reference, unit=unit, timed=timed,
                agf_vs_reference=reference.compare(agf_path), gf_vs_reference=reference.compare(gf_path),
                gf_path=gf_path)


@pytest.mark.parametrize("name, index, alpha", CASES)
def test_agf_learns_the_closed_form_levels_in_order(name, index, alpha):
    r = run(name, alpha)
    problem, agf, reference, comparison = r["problem"], r["agf"], r["reference"], r["agf_vs_reference"]
    X, y = problem.data
    scale = reference.losses[0]
    assert np.all(np.isfinite(comparison.trajectory_jump_times)), "AGF missed a jump of the closed form"
    level_tol = LEVEL_TOL_OF.get(name, LEVEL_TOL)
    np.testing.assert_allclose(comparison.plateau_losses, reference.losses, rtol=0, atol=level_tol * scale)
    # what is learned: on each level, the active neurons compute the closed form's function
    bounds = np.concatenate([[0.0], comparison.trajectory_jump_times, [np.inf]])
    for k in range(reference.num_jumps + 1):
        middle = 0.5 * (bounds[k] + bounds[k + 1]) if k < reference.num_jumps else np.inf
        j = int(np.searchsorted(agf.times / r["unit"], middle, side="right")) - 1
        theta = agf.states[j].copy()
        theta[np.setdiff1d(np.arange(problem.network.num_neurons), agf.active[j])] = 0.0
        error = np.linalg.norm(problem.network(theta, X) - problem.level_outputs(reference.predictors[k]))
        assert error <= OUTPUT_TOL * np.linalg.norm(y), (k, error / np.linalg.norm(y))
    if problem.exact:
        assert agf.order == reference.order
        assert agf.deactivated == reference.deactivated
        np.testing.assert_allclose(agf.losses, reference.losses, rtol=EXACT_LEVEL_RTOL, atol=1e-15 * scale)
    elif problem.closed_form is not None:
        # no neuron is faster than one aligned with its target from the start at the largest initial norm
        assert agf.times[1] >= problem.closed_form(alpha).times[1]


@pytest.mark.parametrize("name, index, alpha", NEURON_WISE_CASES)
def test_agf_jump_times_match_the_closed_form(name, index, alpha):
    r = run(name, alpha)
    timed, comparison = r["timed"], r["agf_vs_reference"]
    if r["problem"].exact:
        np.testing.assert_allclose(r["agf"].times, r["reference"].times, rtol=EXACT_TIME_RTOL)
    else:
        errors = comparison.time_errors[timed]
        assert np.all(errors * math.log(1 / alpha) <= LIMIT_TIME_C), errors


@pytest.mark.parametrize("name, index, alpha", NEURON_WISE_CASES)
def test_gradient_flow_follows_agf(name, index, alpha):
    r = run(name, alpha)
    agf_jumps = r["agf_vs_reference"].trajectory_jump_times
    gf_jumps = r["gf_vs_reference"].trajectory_jump_times
    scale = r["reference"].losses[0]
    timed = r["timed"]
    time_errors = np.abs(gf_jumps[timed] / agf_jumps[timed] - 1)
    assert np.all(time_errors * math.log(1 / alpha) <= GF_TIME_C), time_errors
    # gradient flow's loss in the middle of each AGF plateau (at the end of the run for the last)
    bounds = np.concatenate([[0.0], agf_jumps, [np.inf]])
    for k, level in enumerate(r["agf_vs_reference"].plateau_losses):
        if k < agf_jumps.size and k not in timed:
            continue  # a plateau that ends in a drop too small to time: gradient flow slides along it
        middle = 0.5 * (bounds[k] + bounds[k + 1]) if k < agf_jumps.size else r["gf_path"].times[-1]
        gap = abs(float(r["gf_path"].loss_at(middle)) - level)
        assert gap <= GF_LEVEL_TOL[index] * scale, (k, gap / scale)


def _gf_time_errors(name, alpha):
    r = run(name, alpha)
    timed = r["timed"]
    agf_jumps = r["agf_vs_reference"].trajectory_jump_times[timed]
    return r["gf_vs_reference"].trajectory_jump_times[timed] / agf_jumps - 1


@pytest.mark.parametrize("name", [name for name in CHECKED if name != NEURON_WISE_FAILS])
def test_gradient_flow_jump_times_converge_to_agf_as_alpha_shrinks(name):
    large, small = alphas(name)
    before, after = _gf_time_errors(name, large), _gf_time_errors(name, small)
    assert np.all(np.abs(after) < np.abs(before)), (before, after)
    settled = np.sign(before) == np.sign(after)          # the c/log(1/α) form at both α (see RATIO_BAND)
    assert settled.sum() >= 1, (before, after)
    ratios = before[settled] / after[settled]
    assert np.all((RATIO_BAND[0] <= ratios) & (ratios <= RATIO_BAND[1])), ratios


def test_neuron_wise_agf_fails_on_the_noncommuting_linear_network():
    # Neuron-wise AGF's third jump moves away from the α → 0 staircase (measured 47% at 1e-4, 52% at 1e-8)
    # and from gradient flow (118%, 126%), far beyond GF_TIME_C / log(1/α) = 33% and 16%; AGF on basis
    # vectors, from the same start, follows the same gradient-flow runs within GF_TIME_C (error × log(1/α)
    # measured up to 1.43, the first jump) and its third jump approaches them (4.0%, then 2.1%).
    third = 2
    neuron_wise_vs_limit, neuron_wise_vs_gf, basis_vs_gf = [], [], []
    for alpha in alphas(NEURON_WISE_FAILS):
        r = run(NEURON_WISE_FAILS, alpha)
        assert r["timed"].size == 4
        agf_jumps = r["agf_vs_reference"].trajectory_jump_times
        gf_jumps = r["gf_vs_reference"].trajectory_jump_times
        neuron_wise_vs_limit.append(r["agf_vs_reference"].time_errors[third])
        neuron_wise_vs_gf.append(abs(gf_jumps[third] / agf_jumps[third] - 1))
        assert neuron_wise_vs_gf[-1] * math.log(1 / alpha) > GF_TIME_C
        X, y = r["problem"].data
        Sigma_xx, Sigma_yx = X.T @ X / X.shape[0], y.T @ X / X.shape[0]  # exact: linear.population_data
        basis = linear.basis_agf(Sigma_xx, Sigma_yx, r["problem"].initial_theta(alpha))
        basis_errors = basis.compare(r["gf"]).time_errors
        assert np.all(basis_errors * math.log(1 / alpha) <= GF_TIME_C), basis_errors
        basis_vs_gf.append(basis_errors[third])
    assert neuron_wise_vs_limit[1] > neuron_wise_vs_limit[0], neuron_wise_vs_limit
    assert neuron_wise_vs_gf[1] > neuron_wise_vs_gf[0], neuron_wise_vs_gf
    assert basis_vs_gf[1] < basis_vs_gf[0], basis_vs_gf


def test_unknown_problem_names_are_listed():
    with pytest.raises(ValueError, match="diagonal-dormancy"):
        problems.get("diagonals")
    with pytest.raises(TypeError, match="^name must be a string, got int"):
        problems.get(3)
    assert problems.get("attention") is problems.get("attention")
