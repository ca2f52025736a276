"""The two result types every chapter plots and compares, :class:`Trajectory` and :class:`Staircase`,
and the unit their times are measured in, :class:`TimeUnit`.

**Length.** Three result types and the time unit they share: each method (unit conversion, comparison, jump
detection) is written once for both trajectories and staircases, in one module, so the unit rules cannot drift
apart.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field, replace

import numpy as np

from .validation import as_float_array, check_positive, check_real

__all__ = ["TimeUnit", "GF_TIME", "LOG_TIME", "Trajectory", "Staircase", "StaircaseComparison"]


@dataclass(frozen=True)
class TimeUnit:
    """How a time axis is measured: gradient-flow time ``t`` or one of its α-rescalings.

    The rescaled units are the ones in which AGF's jump times have an α → 0 limit:
    ``t/log(1/α)`` (κ = 2, or any κ with the per-neuron rate η‖θ‖^{2−κ}; :data:`LOG_TIME`) and
    ``t·α^{κ−2}`` (κ ≥ 3 with the plain rate; :meth:`alpha_power`). A unit made by
    :meth:`Trajectory.rescale_time` with a hand-given factor has only a ``label`` and cannot be
    converted. ``unit.factor(alpha)`` is what GF time is multiplied by to get this unit;
    ``str(unit)`` is the axis label.

    Parameters
    ----------
    label : str, default "t"
        The axis label.
    power : int, default 0
        The power of α in the unit, ``κ − 2`` for ``t·α^{κ−2}``.
    logarithmic : bool, default False
        Whether the unit divides by ``log(1/α)``.
    convertible : bool, default True
        False for a unit known only by its label.
    """

    label: str = "t"
    _: KW_ONLY
    power: int = 0
    logarithmic: bool = False
    convertible: bool = True

    @classmethod
    def alpha_power(cls, power):
        """``t·α^power``, the rescaled time of plain-rate κ = power + 2 (κ = 3: ``t·α``).

        Raises
        ------
        ValueError
            If ``power`` is not a positive integer.
        """
        if isinstance(power, bool) or not isinstance(power, (int, np.integer)) or power < 1:
            raise ValueError(f"power must be a positive integer (κ − 2), got {power!r}")
        power = int(power)
        return cls("t·α" if power == 1 else f"t·α^{power}", power=power)

    @classmethod
    def custom(cls, label):
        """A unit known only by its label (a hand-given rescaling)."""
        if not isinstance(label, str) or not label:
            raise TypeError(f"unit must be a TimeUnit or a non-empty label, got {label!r}")
        return cls(label, convertible=False)

    @classmethod
    def parse(cls, unit, *, name="time_unit"):
        """``unit`` as a :class:`TimeUnit`.

        Parameters
        ----------
        unit : TimeUnit or str
            A unit, returned as it is, or a label: ``"t"``, ``"t/log(1/α)"``, ``"t·α"`` or
            ``"t·α^k"`` give the standard units (spaces ignored), any other label a
            :meth:`custom` unit.
        name : str, default "time_unit"
            The argument's name in error messages.

        Raises
        ------
        TypeError
            If ``unit`` is neither a :class:`TimeUnit` nor a non-empty string.
        """
        if isinstance(unit, TimeUnit):
            return unit
        if not isinstance(unit, str):
            raise TypeError(f"{name} must be a TimeUnit or a str, got {type(unit).__name__}")
        if not unit.strip():
            raise ValueError(f"{name} must be a TimeUnit or a non-empty label, got {unit!r}")
        compact = unit.replace(" ", "")
        if compact == "t":
            return GF_TIME
        if compact == "t/log(1/α)":
            return LOG_TIME
        if compact == "t·α":
            return cls.alpha_power(1)
        if compact.startswith("t·α^") and compact[4:].isdigit():
            return cls.alpha_power(int(compact[4:]))
        return cls.custom(unit)

    def factor(self, alpha):
        """The factor from GF time to this unit at initialization scale ``alpha``.

        Parameters
        ----------
        alpha : float
            The initialization scale, in ``(0, 1)`` for a rescaled unit (ignored for GF time).

        Returns
        -------
        float
            What GF time is multiplied by to get this unit.

        Raises
        ------
        ValueError
            If the unit is not convertible (set by hand), or ``alpha`` is not in ``(0, 1)`` (for GF
            time, not a finite positive number).
        TypeError
            If ``alpha`` is not a real number.
        """
        if not self.convertible:
            raise ValueError(f"the time unit {self.label!r} was set by hand and cannot be converted")
        if self.power == 0 and not self.logarithmic:
            check_positive(alpha, "alpha")
            return 1.0
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
            raise TypeError(f"alpha must be a real number, got {type(alpha).__name__}")
        alpha = float(alpha)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1) to rescale time to {self.label}, got {alpha!r}")
        log_inv = -math.log(alpha)
        return math.exp(-self.power * log_inv) / (log_inv if self.logarithmic else 1.0)

    def __str__(self):
        return self.label


GF_TIME = TimeUnit()
"""Gradient-flow time ``t``."""
LOG_TIME = TimeUnit("t/log(1/α)", logarithmic=True)
"""The rescaled time ``t/log(1/α)`` of the κ = 2 settings and of the adaptive rate."""


def _times_argument(t, name):
    """A time or array of times as a finite float array (0-D for a number); TypeError/ValueError naming ``name``."""
    if isinstance(t, (list, tuple, np.ndarray)) or type(t).__module__.startswith("torch"):
        t = as_float_array(t, name, "a real number or an array of real numbers")
        if not np.all(np.isfinite(t)):
            raise ValueError(f"{name} contains NaN or infinite values")
        return t
    return np.asarray(check_real(t, name))


def _extreme(t, low, high):
    """The entry of ``t`` farthest outside ``[low, high]``, as a float (for an error message)."""
    flat = np.ravel(t)
    return float(flat[np.argmax(np.maximum(low - flat, flat - high))])


class _TimeAxis:
    """The time conversions of both result types (their ``times`` and ``time_unit``)."""

    def rescale_time(self, factor, *, unit=None):
        """A copy with every time multiplied by ``factor``, labelled ``unit``.

        For units with no α; for the standard rescalings use :meth:`in_units`.

        Parameters
        ----------
        factor : float
            Positive factor.
        unit : TimeUnit or str, optional
            The new unit; by default a custom unit labelled ``"{factor}·{old unit}"``.
        """
        factor = check_positive(factor, "factor")
        unit = TimeUnit.parse(unit, name="unit") if unit is not None else TimeUnit.custom(f"{factor:.4g}·{self.time_unit}")
        return self._scaled(factor, unit)

    def _scaled(self, factor, unit):
        changes = {"times": self.times * factor, "time_unit": unit}
        if hasattr(self, "resolved_until"):
            changes["resolved_until"] = self.resolved_until * factor
        return replace(self, **changes)

    def in_units(self, unit, alpha):
        """A copy with its times converted to ``unit`` at initialization scale ``alpha``.

        Parameters
        ----------
        unit : TimeUnit or str
            The target unit, or the label of a standard one (see :meth:`TimeUnit.parse`).
        alpha : float
            The initialization scale, in ``(0, 1)``.

        Raises
        ------
        ValueError
            If either unit cannot be converted (a custom unit), or ``alpha`` is not in ``(0, 1)``.
        """
        unit = TimeUnit.parse(unit, name="unit")
        factor = unit.factor(alpha) / self.time_unit.factor(alpha)
        return self._scaled(factor, unit)


@dataclass(frozen=True)
class Trajectory(_TimeAxis):
    """A simulated path: gradient flow or gradient descent.

    Attributes
    ----------
    times : (T,) array
        Increasing sample times, in the unit named by ``time_unit`` (GF time ``t`` by default).
    losses : (T,) array
        Loss ``L(Θ(t))`` at those times.
    params : (T, H, P) array or None
        Parameter snapshots ``Θ(t)`` when they were recorded.
    log_norms : (T, H) array or None
        ``log‖θ_i(t)‖`` per neuron; exact even where ``params`` underflows (α down to 1e-100).
    time_unit : TimeUnit
        How ``times`` is measured (:data:`GF_TIME` by default); a standard label such as
        ``"t/log(1/α)"`` is accepted and parsed.
    evaluations : int or None
        How many utility gradients the engine evaluated to compute it (its unit of work).
    rounding_error : float or None
        How far the loss moved, relative to its fall ``max L − min L``, when the engine reran the run with
        its directions perturbed at float64's rounding (the rounding check of
        :func:`agf_lib.gradient_flow`); None where no check ran.
    resolved_until : float
        The first time at which that rerun moved the loss by more than 1e-3 of its fall: past it the run
        depends on rounding. ``inf`` where it never did, or no check ran.

    Raises
    ------
    ValueError
        If ``times`` is not a non-empty, finite, non-decreasing 1-D array, or the other arrays do
        not match its length.
    """

    times: np.ndarray
    losses: np.ndarray
    _: KW_ONLY
    params: np.ndarray | None = None
    log_norms: np.ndarray | None = None
    time_unit: TimeUnit = GF_TIME
    evaluations: int | None = None
    rounding_error: float | None = None
    resolved_until: float = math.inf

    def __post_init__(self):
        object.__setattr__(self, "time_unit", TimeUnit.parse(self.time_unit))
        times = as_float_array(self.times, "times", "a 1-D array of real numbers")
        losses = as_float_array(self.losses, "losses", "a 1-D array of real numbers")
        if times.ndim != 1 or times.size == 0:
            raise ValueError(f"times must be a non-empty 1-D array, got shape {times.shape}")
        if not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0):
            raise ValueError("times must be finite and sorted (non-decreasing): loss_at and compare interpolate "
                             "in them")
        if losses.shape != times.shape:
            raise ValueError(f"losses must have the shape of times {times.shape}, got {losses.shape}")
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses contains NaN or infinite values")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "losses", losses)
        num_neurons = None
        if self.params is not None:
            params = as_float_array(self.params, "params", "an array of real numbers")
            if params.ndim != 3 or params.shape[0] != times.size:
                raise ValueError(f"params must have shape (T, H, P) with T = {times.size} samples, got {params.shape}")
            num_neurons = params.shape[1]
            object.__setattr__(self, "params", params)
        if self.log_norms is not None:
            log_norms = as_float_array(self.log_norms, "log_norms", "an array of real numbers")
            expected = f"(T, H) = ({times.size}, {'H' if num_neurons is None else num_neurons})"
            if log_norms.ndim != 2 or log_norms.shape[0] != times.size or \
                    (num_neurons is not None and log_norms.shape[1] != num_neurons):
                raise ValueError(f"log_norms must have shape {expected}, got {log_norms.shape}")
            object.__setattr__(self, "log_norms", log_norms)
        if self.evaluations is not None and (isinstance(self.evaluations, bool)
                                             or not isinstance(self.evaluations, (int, np.integer))
                                             or self.evaluations < 0):
            raise ValueError(f"evaluations must be None or a non-negative integer, got {self.evaluations!r}")

    def loss_at(self, t):
        """Loss at time(s) ``t``, by linear interpolation between samples.

        Parameters
        ----------
        t : float or array
            Time(s), in the trajectory's unit, within ``[times[0], times[-1]]``.

        Returns
        -------
        float or array
            The loss, of the shape of ``t``.

        Raises
        ------
        ValueError
            If a time is not finite or lies outside the sampled interval (there is nothing to
            interpolate: the loss there is unknown).
        """
        t = _times_argument(t, "t")
        if np.any(t < self.times[0]) or np.any(t > self.times[-1]):
            raise ValueError(f"t must lie within the trajectory's times [{self.times[0]:.6g}, {self.times[-1]:.6g}], "
                             f"got {_extreme(t, self.times[0], self.times[-1])!r}")
        return np.interp(t, self.times, self.losses)


@dataclass(frozen=True)
class StaircaseComparison:
    """Jump-by-jump comparison of a staircase with a trajectory, made by :meth:`Staircase.compare`.

    ``str()`` of it is a table of both.

    Attributes
    ----------
    jump_times : (K,) array
        The staircase's jump times; entry ``k-1`` is jump ``k``.
    trajectory_jump_times : (K,) array
        The trajectory's jump times (``inf`` where it never makes that drop).
    time_errors : (K,) array
        Their relative difference (``inf`` where the trajectory never makes that drop).
    levels : (K+1,) array
        The staircase's loss levels.
    plateau_losses : (K+1,) array
        The trajectory's loss in the middle of each plateau (entry 0 before the first drop).
    level_errors : (K+1,) array
        Relative difference of ``plateau_losses`` from ``levels`` (relative to
        ``1e-12 * levels[0]`` for a level that is zero; ``inf`` where the trajectory never reaches it).

    Raises
    ------
    ValueError
        If the arrays do not have these shapes, ``jump_times`` or ``levels`` is not finite, an error
        is negative or NaN, or a trajectory jump time is NaN (``inf`` says "never"; ``plateau_losses`` is
        NaN exactly there).
    TypeError
        If an attribute is not an array of real numbers.
    """

    jump_times: np.ndarray
    trajectory_jump_times: np.ndarray
    time_errors: np.ndarray
    levels: np.ndarray
    plateau_losses: np.ndarray
    level_errors: np.ndarray

    def __post_init__(self):
        arrays = {name: as_float_array(getattr(self, name), name, "a 1-D array of real numbers")
                  for name in ("jump_times", "trajectory_jump_times", "time_errors", "levels", "plateau_losses",
                               "level_errors")}
        K = arrays["jump_times"].size
        for name, array in arrays.items():
            size = K if name in ("jump_times", "trajectory_jump_times", "time_errors") else K + 1
            if array.shape != (size,):
                raise ValueError(f"{name} must have shape ({size},) for K = {K} jumps, got {array.shape}")
            object.__setattr__(self, name, array)
        for name in ("jump_times", "levels"):
            if not np.all(np.isfinite(arrays[name])):
                raise ValueError(f"{name} contains NaN or infinite values")
        for name in ("trajectory_jump_times", "time_errors", "level_errors"):
            if np.any(np.isnan(arrays[name])):
                raise ValueError(f"{name} contains NaN (inf stands for a drop the trajectory never makes)")
        for name in ("time_errors", "level_errors"):
            if np.any(arrays[name] < 0):
                raise ValueError(f"{name} must be non-negative, got {float(arrays[name].min())!r}")

    def __str__(self):
        rows = ["jump  staircase τ   trajectory τ   rel. error"]
        for k, (a, b, e) in enumerate(zip(self.jump_times, self.trajectory_jump_times, self.time_errors), 1):
            rows.append(f"{k:4d}  {a:11.5g}  {b:13.5g}  {e:11.2e}")
        rows.append("level  staircase ℓ   trajectory    rel. error")
        for k, (a, b, e) in enumerate(zip(self.levels, self.plateau_losses, self.level_errors)):
            if abs(a) <= 1e-12 * abs(self.levels[0]):  # a zero level has no relative error
                rows.append(f"{k:5d}  {a:11.5g}  {b:11.5g}  abs. {abs(b - a):.1e}")
            else:
                rows.append(f"{k:5d}  {a:11.5g}  {b:11.5g}  {e:11.2e}")
        return "\n".join(rows)


@dataclass(frozen=True)
class Staircase(_TimeAxis):
    """A piecewise-constant prediction of the loss: what AGF (or its α → 0 limit) predicts.

    Attributes
    ----------
    times : (K+1,) array
        Jump times ``τ^(0) = 0 < τ^(1) < ... < τ^(K)``.
    losses : (K+1,) array
        Loss levels: ``losses[k]`` is held on ``[times[k], times[k+1])``, the last one forever.
    order : list
        ``order[k-1]`` is what activated at jump k: for an engine, the index of the neuron; for a closed
        form, the feature in its setting's indexing (a coordinate, a mode, a frequency, an irrep class, a
        sample; for ReLU networks on orthogonal data the pair ``(sign, samples fitted)``).
    states : list or None
        ``states[k]`` is the network's parameters θ on level k, shape ``(H, P)``: a staircase of an AGF
        engine has them; a closed form has none (None).
    predictors : list or None
        ``predictors[k]`` is the function the network computes on level k in its setting's coordinates
        (β for linear networks, ``M`` for attention, the learned part of the template for modular
        addition and groups, the outputs on ``X`` for ReLU networks): what the setting's
        ``level_outputs`` (:class:`agf_lib.setting.Setting`) maps to the outputs. Closed forms have them;
        an engine's staircase has none (None).
    active : list of tuples or None
        ``active[k]``: the indices active on level k (after the cost step of jump k).
    time_unit : TimeUnit
        How ``times`` is measured (a standard label is accepted and parsed, as for :class:`Trajectory`).
    deactivated : list of tuples
        ``deactivated[k-1]``: the indices that returned to dormancy at jump k.
    stop_reason : str or None
        Why an engine's loop ended (see :func:`agf_lib.alternating_gradient_flow`); None for closed forms.
    evaluations : int or None
        Utility-gradient evaluations an engine made to compute it; None for closed forms.
    rounding_error : float or None
        How far the jump times (relatively) or the levels (relative to the loss's fall) moved when the
        engine reran with its directions perturbed at float64's rounding (the rounding check of
        :func:`agf_lib.alternating_gradient_flow`); ``inf`` where the rerun activated another neuron; None
        where no check ran.
    resolved_until : float
        The last jump time before the first jump that moved by more than 1e-3: later jumps depend on
        rounding. ``inf`` where none did, or no check ran.

    Raises
    ------
    ValueError
        If ``times`` and ``losses`` are not 1-D of equal length, not finite, ``times`` does not start
        at 0 and never decrease, or ``order`` (or ``states``, ``predictors``, ``active``, ``deactivated`` where
        given) does not have one entry per level or jump.
    TypeError
        If ``times`` or ``losses`` is not an array of real numbers, or ``order`` not a sequence.
    """

    times: np.ndarray
    losses: np.ndarray
    order: list
    _: KW_ONLY
    states: list | None = None
    predictors: list | None = None
    active: list | None = None
    time_unit: TimeUnit = GF_TIME
    deactivated: list = field(default_factory=list)
    stop_reason: str | None = None
    evaluations: int | None = None
    rounding_error: float | None = None
    resolved_until: float = math.inf

    def __post_init__(self):
        object.__setattr__(self, "time_unit", TimeUnit.parse(self.time_unit))
        times = as_float_array(self.times, "times", "a 1-D array of real numbers")
        losses = as_float_array(self.losses, "losses", "a 1-D array of real numbers")
        if times.ndim != 1 or times.shape != losses.shape:
            raise ValueError(f"times and losses must be 1-D of equal length, got {times.shape} and {losses.shape}")
        if not np.all(np.isfinite(times)):
            raise ValueError("times contains NaN or infinite values")
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses contains NaN or infinite values")
        if times.size == 0 or times[0] != 0 or np.any(np.diff(times) < 0):
            raise ValueError("times must start at 0 and be non-decreasing")
        for name, size in (("order", times.size - 1), ("deactivated", times.size - 1), ("states", times.size),
                           ("predictors", times.size), ("active", times.size)):
            value = getattr(self, name)
            if value is None or (name == "deactivated" and len(value) == 0):   # not given
                continue
            if not hasattr(value, "__len__") or isinstance(value, (str, bytes)):
                raise TypeError(f"{name} must be a sequence, got {type(value).__name__}")
            if len(value) != size:
                what = "jump" if name in ("order", "deactivated") else "level"
                raise ValueError(f"{name} must have one entry per {what} ({size}), got {len(value)}")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "losses", losses)

    @property
    def num_jumps(self):
        """Number of jumps ``K``."""
        return self.times.size - 1

    def level_at(self, t):
        """Loss level held at time(s) ``t``: ``losses[k]`` for ``times[k] <= t < times[k+1]``.

        Parameters
        ----------
        t : float or array
            Time(s), in the staircase's unit.

        Returns
        -------
        float or array
            The level, of the shape of ``t``.

        Raises
        ------
        ValueError
            If a time is negative (the staircase starts at 0) or not finite.
        TypeError
            If ``t`` is not a real number or an array of real numbers.
        """
        t = _times_argument(t, "t")
        if np.any(t < 0):
            raise ValueError(f"t must be non-negative (the staircase starts at 0), got {float(np.min(t))!r}")
        k = np.searchsorted(self.times, t, side="right") - 1
        return self.losses[k]

    def dormant_norms(self):
        """The largest norm ``μ^(l)`` of a neuron still dormant on each level ``l``.

        These are the norms the paper's jump-time recursion starts each wait from (Eqs. 7 and 9;
        :func:`agf_lib.escape.jump_times`).

        Returns
        -------
        (K+1,) array
            ``μ^(l)`` for each level.

        Raises
        ------
        ValueError
            If the staircase is not one of the AGF engine (``states`` holding the parameters,
            ``active`` the active sets).
        """
        states = [np.asarray(state, dtype=float) for state in self.states or ()]
        if self.active is None or not states or any(state.ndim != 2 for state in states):
            raise ValueError("dormant_norms needs a staircase of the AGF engine (parameters in states, and active "
                             "sets)")
        return np.array([np.linalg.norm(np.delete(state, list(active), axis=0), axis=1).max()
                         for state, active in zip(states, self.active)])

    def steps(self, t_end=None):
        """Arrays tracing the staircase as a step plot up to ``t_end``.

        Parameters
        ----------
        t_end : float, optional
            Where the plot ends, positive; by default 1.25 times the last jump time.

        Returns
        -------
        t, loss : arrays
            The corners of the steps, for ``plt.plot(t, loss, drawstyle="steps-post")``.

        Raises
        ------
        ValueError
            If ``t_end`` is not a finite positive number.
        """
        if t_end is None:
            t_end = self.times[-1] * 1.25 + (self.times[-1] == 0)
        else:
            if isinstance(t_end, bool) or not isinstance(t_end, (int, float, np.integer, np.floating)):
                raise TypeError(f"t_end must be a real number, got {type(t_end).__name__}")
            t_end = float(t_end)
            if not t_end > 0 or not np.isfinite(t_end):
                raise ValueError(f"t_end must be a finite positive time (after the start at 0), got {t_end!r}")
        keep = self.times < t_end
        t = np.append(self.times[keep], t_end)
        return t, np.append(self.losses[keep], self.losses[keep][-1])

    def compare(self, trajectory):
        """Per-jump time and level errors of ``trajectory`` against this staircase.

        The trajectory's k-th jump time is the first time, after its (k−1)-th, at which its loss
        falls below the midpoint ``(losses[k-1] + losses[k]) / 2`` of the two AGF levels. Its k-th
        plateau loss is its loss half-way between its k-th and (k+1)-th jump (for the last level, at
        its final time).

        Parameters
        ----------
        trajectory : Trajectory
            A trajectory in the same time unit as the staircase.

        Returns
        -------
        StaircaseComparison
            Jump times, plateau losses and their relative errors.

        Raises
        ------
        TypeError
            If ``trajectory`` is not a :class:`Trajectory`.
        ValueError
            If the time units differ (convert one with :meth:`in_units`).
        """
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"trajectory must be a Trajectory, got {type(trajectory).__name__}")
        if trajectory.time_unit != self.time_unit:
            raise ValueError(
                f"time units differ: staircase in '{self.time_unit}', trajectory in '{trajectory.time_unit}'; "
                "convert one of them first (in_units)"
            )
        t, loss = trajectory.times, trajectory.losses
        crossings = np.full(self.num_jumps, np.inf)
        start = 0
        for k in range(1, self.num_jumps + 1):
            midpoint = 0.5 * (self.losses[k - 1] + self.losses[k])
            below = np.nonzero(loss[start:] < midpoint)[0]
            if below.size == 0:
                break
            j = start + below[0]
            if j == 0:
                crossings[k - 1] = t[0]
            else:  # interpolate the crossing between the two samples that straddle it
                frac = (loss[j - 1] - midpoint) / (loss[j - 1] - loss[j])
                crossings[k - 1] = t[j - 1] + frac * (t[j] - t[j - 1])
            start = j
        jump_times = self.times[1:]
        with np.errstate(invalid="ignore", divide="ignore"):
            time_errors = np.where(np.isfinite(crossings), np.abs(crossings - jump_times) / jump_times, np.inf)
        bounds = np.concatenate([[t[0]], crossings, [np.inf]])
        plateau = np.full(self.num_jumps + 1, np.nan)
        for k in range(self.num_jumps + 1):
            lo, hi = bounds[k], bounds[k + 1]
            if not np.isfinite(lo):
                break
            plateau[k] = trajectory.loss_at(0.5 * (lo + hi) if np.isfinite(hi) else t[-1])
        scale = np.maximum(np.abs(self.losses), 1e-12 * abs(self.losses[0]))  # a zero final level: absolute error
        level_errors = np.where(np.isfinite(plateau), np.abs(plateau - self.losses) / scale, np.inf)
        return StaircaseComparison(jump_times, crossings, time_errors, self.losses.copy(), plateau, level_errors)
