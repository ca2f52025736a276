"""Limit studies: the α → 0 limit of a staircase measured by a ladder of α and an extrapolation.

The book's central claims are limits: AGF's staircase is what gradient flow does as the initialization
scale α vanishes (the paper's Theorem 3.1 and its analogues). A closed form states the limit; a limit
study measures it. It runs an engine at each α of a ladder, reads each jump time and plateau loss
against a reference staircase's levels (:meth:`~agf_lib.results.Staircase.compare`), and extrapolates
each to α → 0 by a straight line in the variable in which the finite-α correction vanishes linearly:

* ``x = 1/log(1/α)`` for times in ``t/log(1/α)`` (κ = 2, or the adaptive rate): a jump at GF time
  ``τ log(1/α) + c`` reads ``τ + c x``;
* ``x = α^{κ−2}`` for times in ``t·α^{κ−2}`` (the plain rate, κ ≥ 3): a jump at ``τ α^{2−κ} + c`` reads
  ``τ + c x``.

The intercept is the measured limit, its standard error (from the fit's residuals, with three or more
α) the error bar, and the root-mean-square residual says whether the straight line fits
(:meth:`LimitStudy.poor_fits` lists the jumps where it does not). Plateau losses
converge differently, like a power of α (mid-plateau, the mode that comes next has grown from α^c, and
the loss has not quite settled), with a power that depends on the spectrum; no straight line fits them.
The study reports the level of the smallest α and, as its error bar, the change from the next smallest
(an upper bound where the ladder's steps shrink the deviation at least twofold, as they do on the book's
problems). A run whose
loss depends on float64 rounding (its ``resolved_until``, from the rounding check of
:func:`agf_lib.gradient_flow`) contributes no jump past that time: the study refuses what lies below the
resolution floor instead of extrapolating rounding.

**Drops carried by the active neurons.** Where every neuron is active after the first jump, a later drop
is carried by a perturbation of the active network: at a plateau, gradient flow sits near a saddle, and a
small mode along an unstable direction of the linearized flow grows like ``e^{μt}`` (:func:`growth_rates`).
A mode of amplitude ``α^e`` (``e`` in units of ``log(1/α)``) at the plateau's start reaches order one at
rescaled time ``τ + e/μ``, whatever α: the α → 0 time of the drop it carries (chapter 09, pieces of an irrep
learned inside the active neurons).

The runs are independent and go through ``joblib.Parallel``: ``n_jobs`` processes here, or a Dask
cluster through joblib's dask backend (``with joblib.parallel_config("dask"): limit_study(...)`` after
starting a ``dask.distributed.Client``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from ._engine import check_network, unpack_data
from .results import LOG_TIME, Staircase, TimeUnit, Trajectory
from .validation import check_bool, check_fraction, check_positive, real_array

__all__ = ["LimitStudy", "limit_study", "agf_limit", "growth_rates"]

MAX_JACOBIAN_SIZE = 4000   # growth_rates builds a dense Jacobian of this many rows at most


@dataclass(frozen=True)
class LimitStudy:
    """A measured α → 0 limit, made by :func:`limit_study`.

    Attributes
    ----------
    alphas : (A,) array
        The ladder, in decreasing order.
    variable : str
        The extrapolation variable, ``"1/log(1/α)"`` or ``"α^k"`` (``"α"`` for k = 1).
    x : (A,) array
        Its value at each α.
    jump_times : (A, K) array
        Each run's jump times in the reference's unit: ``inf`` where the run never made that drop, NaN
        where it made it past ``resolved_until`` (refused).
    plateau_losses : (A, K+1) array
        Each run's plateau losses (NaN where refused or never reached).
    limit : Staircase
        The extrapolated staircase, in the reference's unit, over the jumps that two or more runs made. A
        jump extrapolated to before its predecessor is placed at its predecessor's time: in the limit the
        two coincide, and what separates them is the fit's error (``raw_times`` keeps the intercepts).
    time_errors : (K',) array
        Standard errors of ``limit``'s jump times (NaN with only two runs).
    level_errors : (K'+1,) array
        Error bars of ``limit``'s levels: the change from the next smallest α's.
    residuals : (K',) array
        Root-mean-square residuals of the straight-line fits of the jump times.
    raw_times : (K',) array
        The fits' intercepts, before they are made non-decreasing.
    reference : Staircase
        The staircase whose levels defined the jumps (usually the closed form's limit).
    refused : tuple of float
        The α whose runs depended on rounding before their last jump.
    """

    alphas: np.ndarray
    variable: str
    x: np.ndarray
    jump_times: np.ndarray
    plateau_losses: np.ndarray
    limit: Staircase
    time_errors: np.ndarray
    level_errors: np.ndarray
    residuals: np.ndarray
    raw_times: np.ndarray
    reference: Staircase
    refused: tuple

    def poor_fits(self, rtol=0.01):
        """The jumps (numbered from 1) whose straight line misses its points by more than ``rtol`` of the
        measured time (root-mean-square residual): there the ladder's larger α are not yet in the regime
        where the correction is linear, and the intercept is not the limit. Drop the largest α or add smaller
        ones. (With two α the line passes through both points, and nothing is flagged.) ``benchmarks/README.md``
        (``group_limits.py``) records such a ladder, on A4's three-dimensional irrep.
        """
        rtol = check_fraction(rtol, "rtol")
        return [k + 1 for k, (residual, time) in enumerate(zip(self.residuals, self.limit.times[1:]))
                if residual > rtol * time]

    def table(self):
        """A :class:`pandas.DataFrame`, one row per jump: the reference's time, the measured limit, its error
        bar, the fit's residual, and the relative difference of the two."""
        import pandas as pd

        K = self.limit.num_jumps
        reference = self.reference.times[1 : K + 1]
        return pd.DataFrame(
            {"reference": reference, "measured": self.limit.times[1:], "error bar": self.time_errors,
             "fit residual": self.residuals, "relative difference": self.limit.times[1:] / reference - 1},
            index=pd.RangeIndex(1, K + 1, name="jump"))


def _variable(unit):
    if unit.logarithmic:
        return "1/log(1/α)", lambda alpha: 1.0 / math.log(1.0 / alpha)
    if unit.power > 0:
        label = "α" if unit.power == 1 else f"α^{unit.power}"
        return label, lambda alpha: alpha**unit.power
    raise ValueError(f"reference must be in a rescaled time unit (t/log(1/α) or t·α^k) with an α → 0 limit, "
                     f"got '{unit}'")


def _line(x, y):
    """Intercept, its standard error and the RMS residual of the least-squares line through ``(x, y)``."""
    design = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    rms = float(np.sqrt(np.mean(residual**2)))
    if x.size < 3:
        return float(coef[0]), math.nan, rms
    sigma2 = float(residual @ residual) / (x.size - 2)
    covariance = sigma2 * np.linalg.inv(design.T @ design)
    return float(coef[0]), float(np.sqrt(covariance[0, 0])), rms


def _resolved_jumps(staircase):
    """How many of a staircase's jumps come before its resolution floor."""
    return int(np.sum(staircase.times[1:] <= staircase.resolved_until))


def _last_two(levels):
    """The level of the smallest α (last) and its change from the next smallest's."""
    return float(levels[-1]), float(abs(levels[-1] - levels[-2]))


def _measure(result, reference, alpha):
    """Jump times and plateau losses of one run, in the reference's unit, NaN past its resolution floor."""
    if isinstance(result, Trajectory):
        run = result.in_units(reference.time_unit, alpha)
        comparison = reference.compare(run)
        times, levels = comparison.trajectory_jump_times.copy(), comparison.plateau_losses.copy()
        past_floor = times >= run.resolved_until
        times[past_floor] = np.nan
        levels[1:][past_floor] = np.nan
        return times, levels, bool(past_floor.any())
    if isinstance(result, Staircase):
        run = result.in_units(reference.time_unit, alpha)
        K = reference.num_jumps
        times, levels = np.full(K, np.inf), np.full(K + 1, np.nan)
        k = min(K, run.num_jumps)
        times[:k], levels[: k + 1] = run.times[1 : k + 1], run.losses[: k + 1]
        past_floor = times > run.resolved_until
        times[past_floor] = np.nan
        levels[1:][past_floor] = np.nan
        return times, levels, bool(past_floor.any())
    raise TypeError(f"run(alpha) must return a Trajectory or a Staircase, got {type(result).__name__}")


def limit_study(run, alphas, reference, *, n_jobs=1):
    """Measure the α → 0 limit of ``run``'s staircase by a ladder of α and a straight-line extrapolation.

    Parameters
    ----------
    run : callable
        ``run(alpha)`` returns a :class:`~agf_lib.results.Trajectory` (gradient flow, in GF time or any
        convertible unit) or a :class:`~agf_lib.results.Staircase` (AGF, a closed form) at that α. With
        ``n_jobs > 1`` it must be picklable by cloudpickle (a function or lambda of module-level objects).
    alphas : sequence of float
        Two or more distinct initialization scales in ``(0, 1)``; three or more give error bars.
    reference : Staircase
        The staircase whose levels define the jumps (its midpoints, as :meth:`~agf_lib.results.Staircase.compare` reads
        them), in a rescaled unit: ``t/log(1/α)`` or ``t·α^k``. Usually the closed form's α → 0 limit.
    n_jobs : int, default 1
        Runs at once (``joblib.Parallel``; ``-1``: one per core). The backend is joblib's current one,
        so a ``joblib.parallel_config("dask")`` block sends the runs to a Dask cluster.

    Returns
    -------
    LimitStudy

    Raises
    ------
    TypeError
        If ``run`` is not callable, returns something else than a Trajectory or Staircase, or
        ``reference`` is not a Staircase.
    ValueError
        If ``alphas`` has fewer than two distinct values in ``(0, 1)``, ``reference`` is in GF time, or
        fewer than two runs make the first jump above the resolution floor.
    """
    if not callable(run):
        raise TypeError(f"run must be callable as run(alpha), got {type(run).__name__}")
    if not isinstance(reference, Staircase):
        raise TypeError(f"reference must be a Staircase, got {type(reference).__name__}")
    variable, of = _variable(reference.time_unit)
    alphas = real_array(alphas, "alphas", "a sequence of numbers in (0, 1)")
    if alphas.ndim != 1 or np.unique(alphas).size < 2 or not np.all((alphas > 0) & (alphas < 1)):
        raise ValueError(f"alphas must hold two or more distinct values in (0, 1), got {alphas.tolist()}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a nonzero integer (joblib's n_jobs), got {n_jobs!r}")
    alphas = np.sort(np.unique(alphas))[::-1]

    results = Parallel(n_jobs=int(n_jobs))(delayed(run)(float(alpha)) for alpha in alphas)
    measured = [_measure(result, reference, alpha) for result, alpha in zip(results, alphas)]
    jump_times = np.array([m[0] for m in measured])
    plateau = np.array([m[1] for m in measured])
    refused = tuple(float(alpha) for alpha, m in zip(alphas, measured) if m[2])
    x = np.array([of(alpha) for alpha in alphas])

    fits, level_fits = [], [_last_two(plateau[np.isfinite(plateau[:, 0]), 0])]
    for k in range(reference.num_jumps):
        ok = np.isfinite(jump_times[:, k]) & np.isfinite(plateau[:, k + 1])
        if ok.sum() < 2:
            break
        fits.append(_line(x[ok], jump_times[ok, k]))
        level_fits.append(_last_two(plateau[ok, k + 1]))
    if not fits:
        raise ValueError("fewer than two runs made the first jump above the resolution floor: "
                         f"refused {list(refused)}; use larger alphas or a longer run")
    # a jump extrapolated to before its predecessor coincides with it in the limit, to the fit's error
    times = np.maximum.accumulate(np.array([0.0] + [f[0] for f in fits]))
    limit = Staircase(times, [f[0] for f in level_fits], list(reference.order[: len(fits)]),
                      time_unit=reference.time_unit)
    return LimitStudy(alphas=alphas, variable=variable, x=x, jump_times=jump_times, plateau_losses=plateau,
                      limit=limit, time_errors=np.array([f[1] for f in fits]),
                      level_errors=np.array([f[1] for f in level_fits]), residuals=np.array([f[2] for f in fits]),
                      raw_times=np.array([f[0] for f in fits]), reference=reference, refused=refused)


class _AsSteps:
    """``run(alpha)``'s staircase as a trajectory whose loss steps down at each jump (picklable for joblib)."""

    def __init__(self, run):
        self.run = run

    def __call__(self, alpha):
        staircase = self.run(alpha)
        if not isinstance(staircase, Staircase):
            raise TypeError(f"run(alpha) must return a Staircase, got {type(staircase).__name__}")
        times, losses = staircase.times, staircase.losses
        end = 2.0 * times[-1] + 1.0
        steps_t = np.append(np.repeat(times, 2)[1:], end)             # each jump time twice: before and after
        steps_loss = np.append(np.repeat(losses, 2)[:-1], losses[-1])
        return Trajectory(steps_t, steps_loss, time_unit=staircase.time_unit, resolved_until=staircase.resolved_until)


def agf_limit(run, alphas=(1e-12, 1e-24), *, time_unit=LOG_TIME, reference=None, n_jobs=1):
    """The α → 0 limit of numerical AGF (:func:`agf_lib.alternating_gradient_flow`), by a limit study of its runs.

    With the adaptive rate (or κ = 2) a dormant neuron's direction flow does not involve its norm, and its
    log-norm grows by the integral of κ times its utility, so it jumps when that integral reaches
    ``log(1/α)`` plus a constant: AGF's jump times are ``τ_k log(1/α) + c_k`` up to the exponentially small
    part of the directions' alignment, and two values of α give the limit ``τ_k``. This is the limit of what
    AGF's cost steps actually fit, jump by jump, where no closed form says what that is (chapter 09's pieces
    that share a factor, or an irrep coupled to a learned one, follow the first jump a fixed GF time
    later: ``τ_k`` equal to the first's).

    Parameters
    ----------
    run : callable
        ``run(alpha)`` returns a :class:`~agf_lib.results.Staircase` (GF time), from the same seeded
        initialization scaled by α, so that the same neurons activate in the same order at every α.
    alphas : sequence of float, default (1e-12, 1e-24)
        Two or more initialization scales in ``(0, 1)``, above the resolution floor of the problem.
    time_unit : TimeUnit or str, default LOG_TIME
        The rescaled unit of the limit (``t·α^k`` for the plain rate, κ = k + 2).
    reference : Staircase, optional
        Read each run against these levels instead, as :func:`limit_study` reads gradient flow: each run's
        loss, a step function of time, crossing the middle of each of the reference's drops (its unit is
        the limit's). The runs then need not activate the same neurons in the same order, only fit the
        same levels: where many neurons share a feature, which of them activates first changes with α
        (chapter 09's groups, where this is how the library computes the limit of AGF's cost steps).
    n_jobs : int, default 1
        As for :func:`limit_study`.

    Returns
    -------
    LimitStudy
        Its ``limit`` is the α → 0 staircase (levels of the smallest α, ``level_errors`` the change from the
        next); its ``reference`` is the run at the smallest α, converted to ``time_unit``, or ``reference``.

    Raises
    ------
    ValueError
        If the runs do not activate the same neurons in the same order (without ``reference``), or as for
        :func:`limit_study`.
    TypeError
        If ``run`` does not return a Staircase, or as for :func:`limit_study`.
    """
    if not callable(run):
        raise TypeError(f"run must be callable as run(alpha), got {type(run).__name__}")
    alphas = real_array(alphas, "alphas", "a sequence of numbers in (0, 1)")
    if alphas.ndim != 1 or np.unique(alphas).size < 2 or not np.all((alphas > 0) & (alphas < 1)):
        raise ValueError(f"alphas must hold two or more distinct values in (0, 1), got {alphas.tolist()}")
    if reference is not None:
        if not isinstance(reference, Staircase):
            raise TypeError(f"reference must be a Staircase, got {type(reference).__name__}")
        return limit_study(_AsSteps(run), alphas, reference, n_jobs=n_jobs)
    smallest = float(alphas.min())
    others = [float(alpha) for alpha in np.unique(alphas) if alpha != smallest]
    ladder = [smallest] + others
    results = dict(zip(ladder, Parallel(n_jobs=int(n_jobs))(delayed(run)(alpha) for alpha in ladder)))
    for alpha, result in results.items():
        if not isinstance(result, Staircase):
            raise TypeError(f"run(alpha) must return a Staircase, got {type(result).__name__}")
    reference = results[smallest].in_units(TimeUnit.parse(time_unit), smallest)
    for alpha in others:
        k = min(_resolved_jumps(results[alpha]), _resolved_jumps(reference))
        if list(results[alpha].order[:k]) != list(reference.order[:k]):
            raise ValueError(f"AGF activates other neurons at alpha = {alpha:g} ({list(results[alpha].order)}) "
                             f"than at {smallest:g} ({list(reference.order)}): the runs do not follow one staircase")
    return limit_study(results.__getitem__, list(results), reference)


def growth_rates(network, data, theta, *, eta=1.0, adaptive_rate=False, relative_step=1e-6):
    """Rates at which small perturbations of ``theta`` grow under gradient flow: the eigenvalues of the
    Jacobian of the flow's vector field ``θ̇_i = η‖θ_i‖^{2−κ} ∇U_i(θ_i; y − f)`` (``η`` alone without the
    adaptive rate), by decreasing real part.

    At a plateau, ``theta`` lies near a saddle of the loss; a perturbation along an eigenvector of
    eigenvalue ``μ`` (real part positive) grows like ``e^{μt}``, so a mode of amplitude ``α^e`` reaches
    order one after ``e log(1/α)/μ`` of GF time, ``e/μ`` in ``t/log(1/α)`` (module docstring). For a linear
    network ``Σ_i a_i w_iᵀx`` with ``E[xxᵀ] = I`` that has learned the top singular mode of ``E[yxᵀ]``, the
    largest rate is ``η`` times the second singular value (``tests/test_limits.py``).

    The Jacobian is built by central differences of the closed-form gradient (``2HP`` gradient
    evaluations), with steps ``relative_step`` times the largest entry of ``theta``.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network (``H`` neurons of ``P`` parameters, ``HP`` at most ``MAX_JACOBIAN_SIZE`` = 4000).
    data : tuple
        The pair ``(X, y)``, as for :func:`agf_lib.gradient_flow`.
    theta : (H, P) array
        Where to linearize: not all zero, and every row nonzero with the adaptive rate and κ > 2.
    eta : float, default 1.0
        The learning rate.
    adaptive_rate : bool, default False
        The neuron-wise rate ``η‖θ_i‖^{2−κ}`` of :func:`agf_lib.gradient_flow`.
    relative_step : float, default 1e-6
        The finite-difference step, relative to ``max |θ|``.

    Returns
    -------
    (HP,) complex array
        The eigenvalues, by decreasing real part.

    Raises
    ------
    TypeError, ValueError
        If the network, data or ``theta`` do not fit (as for :func:`agf_lib.gradient_flow`), ``HP`` exceeds
        ``MAX_JACOBIAN_SIZE``, ``theta`` is zero, or a row of it is zero where the adaptive rate divides by its norm.
    """
    network = check_network(network)
    X, y = unpack_data(network, data)
    theta = network.check_theta(theta)
    eta = check_positive(eta, "eta")
    adaptive_rate = check_bool(adaptive_rate, "adaptive_rate")
    relative_step = check_positive(relative_step, "relative_step")
    if theta.size > MAX_JACOBIAN_SIZE:
        raise ValueError(f"theta has {theta.size} entries; growth_rates builds a dense Jacobian of at most "
                         f"MAX_JACOBIAN_SIZE = {MAX_JACOBIAN_SIZE} rows")
    if not np.any(theta):
        raise ValueError("theta must have a nonzero entry: the finite-difference steps are relative to its size")
    power = 2.0 - network.kappa if adaptive_rate else 0.0
    if power < 0 and not np.all(np.linalg.norm(theta, axis=1) > 0):
        raise ValueError("theta has a zero row, where the adaptive rate η‖θ_i‖^{2−κ} is infinite")

    ones = np.ones(network.num_neurons)

    def field(point):
        # −∇L as gradient descent takes it: residual and utility gradients in one evaluation, in the chart
        # (an isometry, so from_chart maps the gradient back)
        gradient = network.from_chart(network.chart_residual_gradient(network.to_chart(point), X, y, ones)[1])
        return (eta * np.linalg.norm(point, axis=1, keepdims=True) ** power * gradient).ravel()

    h = relative_step * float(np.abs(theta).max())
    flat = theta.ravel()
    jacobian = np.empty((flat.size, flat.size))
    for k in range(flat.size):
        step = np.zeros_like(flat)
        step[k] = h
        ahead, behind = (flat + step).reshape(theta.shape), (flat - step).reshape(theta.shape)
        jacobian[:, k] = (field(ahead) - field(behind)) / (2 * h)
    eigenvalues = np.linalg.eigvals(jacobian)
    return eigenvalues[np.argsort(-eigenvalues.real, kind="stable")]
