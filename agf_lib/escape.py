"""When a dormant neuron escapes: the κ-dependent jump threshold and escape time (the book's chapter 02).

Under a fixed residual a neuron of norm ``ρ`` and normalized utility ``Ū`` grows as
``dρ/dt = κηŪρ^{κ−1}`` (Eq. 4 of the paper), so it reaches norm one once its accumulated utility
``S = ∫κŪ dt`` crosses the threshold ``c/η``, with ``ν`` the initial norm and

    c(ν) = (ν^{2−κ} − 1)/(κ − 2) for κ ≥ 3,

    c(ν) = log(1/ν) for κ = 2, or any κ with the per-neuron adaptive rate η‖θ‖^{2−κ} (Appendix B.5).

At constant ``Ū`` the escape time is ``c(ν)/(κηŪ)``. As ν = α → 0 these times
have a limit in the rescaled units ``t/log(1/α)`` (logarithmic case) or ``t·α^{κ−2}``
(:class:`agf_lib.results.TimeUnit`), where ``c`` becomes 1 (resp. ``1/(κ−2)``).
"""

from __future__ import annotations

import math

import numpy as np

from .results import GF_TIME, LOG_TIME, TimeUnit
from .validation import as_float_array, check_bool, check_int, check_positive, real_array

__all__ = ["threshold", "escape_times", "jump_times"]


def _logarithmic(kappa, adaptive_rate):
    return check_bool(adaptive_rate, "adaptive_rate") or kappa == 2


def threshold(initial_norm, *, kappa, adaptive_rate=False, unit_name="neuron"):
    """The jump threshold ``c(ν)`` (times η) of a neuron of initial norm ``ν = initial_norm``.

    Parameters
    ----------
    initial_norm : float or None
        The initial norm ``ν``, in ``(0, 1)``; None for the α → 0 limit.
    kappa : int
        Degree of homogeneity κ, at least 2.
    adaptive_rate : bool, default False
        Whether the per-neuron rate ``η‖θ‖^{2−κ}`` is used (then ``c`` is logarithmic for every κ).
    unit_name : str, default "neuron"
        What a neuron is called in error messages.

    Returns
    -------
    c : float
        The threshold; without ``initial_norm``, the coefficient of the rescaled unit returned
        (1 for ``t/log(1/α)``, ``1/(κ−2)`` for ``t·α^{κ−2}``).
    unit : TimeUnit
        GF time with ``initial_norm``, the rescaled unit without.

    Raises
    ------
    ValueError
        If ``initial_norm`` is not below one, or gives times beyond the float64 range.
    """
    kappa = check_int(kappa, "kappa", minimum=2)
    logarithmic = _logarithmic(kappa, adaptive_rate)
    if initial_norm is None:
        return (1.0, LOG_TIME) if logarithmic else (1.0 / (kappa - 2), TimeUnit.alpha_power(kappa - 2))
    nu = check_positive(initial_norm, "initial_norm", finite=False)
    if nu >= 1:
        raise ValueError(f"initial_norm must be below one (a dormant {unit_name}), got {initial_norm!r}")
    log_inv = -math.log(nu)
    if logarithmic:
        return log_inv, GF_TIME
    if (kappa - 2) * log_inv > 700:
        raise ValueError(f"initial_norm = {nu!r} gives jump times beyond float range for κ = {kappa}; "
                         "leave initial_norm out for the rescaled limit")
    return math.expm1((kappa - 2) * log_inv) / (kappa - 2), GF_TIME


def _as_utilities(utility):
    """``utility``, a number or an array of real numbers, as a float array; TypeError naming it otherwise."""
    if isinstance(utility, (int, float, np.integer, np.floating)) and not isinstance(utility, bool):
        return np.asarray(utility, dtype=float)
    return as_float_array(utility, "utility", "a number or an array of real numbers")


def escape_times(utility, *, kappa, initial_norm=None, eta=1.0, adaptive_rate=False, unit_name="neuron"):
    """When neurons of constant normalized utility ``Ū`` reach norm one: ``c(ν)/(κηŪ)``.

    Parameters
    ----------
    utility : float or array
        Normalized utilities ``Ū``, positive.
    kappa : int
        Degree of homogeneity κ, at least 2.
    initial_norm : float, optional
        The initial norm ``ν``, in ``(0, 1)``; without it, the α → 0 limit.
    eta : float, default 1.0
        Learning rate.
    adaptive_rate : bool, default False
        Whether the per-neuron rate ``η‖θ‖^{2−κ}`` is used (then ``c`` is logarithmic for every κ).
    unit_name : str, default "neuron"
        What a neuron is called in error messages ("head", "basis vector", ...).

    Returns
    -------
    times : float or array
        The escape times, of the shape of ``utility``, with :func:`threshold`'s ``c``.
    unit : TimeUnit
        Their unit: GF time with ``initial_norm``, the rescaled unit of the α → 0 limit without.

    Raises
    ------
    ValueError
        If a utility is not finite and positive (a neuron with ``Ū ≤ 0`` never escapes), or as for
        :func:`threshold`.
    """
    utility = _as_utilities(utility)
    if not np.all(np.isfinite(utility)) or np.any(utility <= 0):
        raise ValueError("utility must be finite and positive (a neuron with Ū ≤ 0 never escapes)")
    eta = check_positive(eta, "eta")
    c, unit = threshold(initial_norm, kappa=kappa, adaptive_rate=adaptive_rate, unit_name=unit_name)
    return c / (kappa * eta * utility), unit


def jump_times(utility, *, kappa, initial_norm=None, eta=1.0, adaptive_rate=False, unit_name="neuron"):
    """The jump times ``τ^(1), τ^(2), …`` of a staircase whose k-th jump is made by a neuron of
    normalized utility ``Ū_k = utility[k-1]`` (the paper's Eqs. 7 and 9 for κ = 3).

    Parameters
    ----------
    utility : (K,) array
        Normalized utilities ``Ū_k``, positive.
    kappa : int
        Degree of homogeneity κ, at least 2.
    initial_norm : None, float or sequence, optional
        ``None`` or a number ``ν``: each neuron escapes from ``ν`` from the start,
        ``τ^(k) = c(ν)/(κηŪ_k)`` (:func:`escape_times`; ``None``: the α → 0 limit in its rescaled
        unit). A sequence ``μ^(0), …, μ^(m−1)`` (``m ≤ K``), the largest norm of a dormant neuron at
        each earlier jump (:meth:`agf_lib.results.Staircase.dormant_norms`):
        the recursion ``τ^(k) = τ^(k−1) + c(μ^(k−1))/(κηŪ_k)`` for the first ``m`` jumps, in GF time.
    eta : float, default 1.0
        Learning rate.
    adaptive_rate : bool, default False
        Whether the per-neuron rate ``η‖θ‖^{2−κ}`` is used.
    unit_name : str, default "neuron"
        What a neuron is called in error messages.

    Returns
    -------
    times : array
        The jump times.
    unit : TimeUnit
        Their unit.

    Raises
    ------
    ValueError
        If ``initial_norm`` holds more norms than there are jumps, or as for :func:`escape_times`.
    """
    utility = _as_utilities(utility)
    if initial_norm is None or np.isscalar(initial_norm) or (isinstance(initial_norm, np.ndarray)
                                                             and initial_norm.ndim == 0):
        return escape_times(utility, kappa=kappa, initial_norm=initial_norm, eta=eta, adaptive_rate=adaptive_rate,
                            unit_name=unit_name)
    norms = real_array(initial_norm, "initial_norm", "a number or a 1-D array")
    if norms.ndim != 1 or not 1 <= norms.size <= utility.size:
        raise ValueError(f"initial_norm must hold one dormant norm per jump, at most {utility.size}, "
                         f"got shape {norms.shape}")
    steps = [escape_times(u, kappa=kappa, initial_norm=float(mu), eta=eta, adaptive_rate=adaptive_rate,
                          unit_name=unit_name)[0] for u, mu in zip(utility, norms)]
    return np.cumsum(steps), GF_TIME
