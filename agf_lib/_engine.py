"""The engines' shared plumbing: what gradient flow (:mod:`agf_lib.flow`), AGF (:mod:`agf_lib.agf`) and the
settings' own flows (:mod:`agf_lib.diagonal`, :mod:`agf_lib.linear`) all need, and none of them owns.

Private: nothing here is part of the public API, and the names may change. What it holds:

- **Argument checks of an engine call**: :func:`check_network`, :func:`unpack_data`, :func:`check_solver`
  against :data:`SOLVERS`, the methods of :func:`scipy.integrate.solve_ivp` (:data:`SOLVER_CLASSES` maps
  each name to the class that AGF steps by hand).
- **Sampled integration**: :func:`integrate` runs ``solve_ivp`` and samples it at :func:`sample_times`.
- **Threads**: :func:`single_thread` keeps torch on one thread while a network takes the autograd fallback
  (:func:`uses_autograd`).
- **The rounding check** both engines run below an initial norm of :data:`ROUNDING_CHECK_NORM`: the
  perturbation of the rerun, the tolerance, :class:`PrecisionWarning` (documented, and re-exported, as
  ``agf_lib.flow.PrecisionWarning``), and the comparisons of a run with its rerun
  (:func:`rounding_of_losses` for a trajectory, :func:`rounding_of_jumps` for a staircase).
- **Progress bars**: :func:`progress_bar`, and the rule that decides when an engine shows one.

The state the engines integrate (polar coordinates, a log chart) is in :mod:`agf_lib._polar`. This module
imports nothing of the library above :mod:`agf_lib.network`, so both engines can import it.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import sys
import warnings

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, Radau, solve_ivp
from tqdm import tqdm

from .network import TwoLayerNetwork
from .validation import check_positive, real_array

# ---------------------------------------------------------------------------------------------------------
# Argument checks

#: The methods of :func:`scipy.integrate.solve_ivp`, by name; AGF steps their classes by hand.
SOLVER_CLASSES = {"DOP853": DOP853, "RK45": RK45, "RK23": RK23, "Radau": Radau, "BDF": BDF, "LSODA": LSODA}
SOLVERS = tuple(SOLVER_CLASSES)


def check_solver(method, name="method"):
    """``method`` if it names one of :data:`SOLVERS`; a ValueError naming the argument ``name`` otherwise."""
    if not isinstance(method, str) or method not in SOLVERS:
        raise ValueError(f"{name} must be one of {', '.join(SOLVERS)} (scipy.integrate.solve_ivp), got {method!r}")
    return method


def check_network(network):
    """``network`` if it is a :class:`~agf_lib.network.TwoLayerNetwork`; a TypeError otherwise."""
    if not isinstance(network, TwoLayerNetwork):
        raise TypeError(f"network must be an agf_lib TwoLayerNetwork, got {type(network).__name__}")
    return network


def unpack_data(network, data):
    """The pair ``data = (X, y)``, checked against ``network`` (``y`` as a 2-D array)."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError("data must be a pair (X, y)")
    return network.check_data(*data)


# ---------------------------------------------------------------------------------------------------------
# Sampled integration

def sample_times(t_end, step_times, num_samples, times=None):
    """Solver steps (dense where the loss drops) plus a linear and a logarithmic grid, or the given ``times``."""
    if times is not None:
        times = real_array(times, "times", "a 1-D array")
        if times.ndim != 1 or times.size == 0:
            raise ValueError(f"times must be a non-empty 1-D array, got shape {times.shape}")
        if np.any(np.diff(times) < 0) or times[0] < 0 or times[-1] > t_end:
            raise ValueError("times must be a non-decreasing 1-D array within [0, t_end]")
        return times
    grid = [np.linspace(0.0, t_end, num_samples), np.geomspace(t_end * 1e-6, t_end, num_samples // 2), step_times]
    return np.unique(np.concatenate(grid))


def integrate(rhs, y0, t_end, *, method, rtol, atol, num_samples, times=None, jac=None):
    """:func:`scipy.integrate.solve_ivp` from 0 to ``t_end``, sampled: returns ``(times, states)``, the states
    of shape ``(len(y0), len(times))``, at :func:`sample_times`.

    With the sample ``times`` given, the solver's interpolant is built only on the steps that hold one
    (``t_eval``): DOP853 spends three extra evaluations of ``rhs`` on each interpolant, a large part of its
    work when samples are sparser than steps (see benchmarks/README.md, "Design decisions measured"). The
    steps, and the values at ``times``, are those of a run with an interpolant on every step. ``jac``, the
    Jacobian of ``rhs``, goes to the implicit methods only. ``rtol`` and ``atol`` (a number, or for ``atol``
    one per component) must be finite and positive: a NaN tolerance makes every step pass the error test
    and the solver never ends.
    """
    check_solver(method)
    rtol = check_positive(rtol, "rtol")
    if np.ndim(atol) == 0:
        atol = check_positive(atol, "atol")
    elif not (np.all(np.isfinite(atol)) and np.all(np.asarray(atol) > 0)):
        raise ValueError("atol must be finite and positive in every component")
    options = {"jac": jac} if jac is not None and method in ("LSODA", "BDF", "Radau") else {}
    if times is None:
        options["dense_output"] = True
    else:
        times = sample_times(t_end, None, num_samples, times)
        grid, where = np.unique(times, return_inverse=True)      # solve_ivp wants t_eval strictly increasing
        options["t_eval"] = grid
    sol = solve_ivp(rhs, (0.0, t_end), y0, method=method, rtol=rtol, atol=atol, **options)
    if not sol.success:
        raise RuntimeError(f"gradient flow integration failed: {sol.message}")
    if times is None:
        times = sample_times(t_end, sol.t, num_samples)
        return times, sol.sol(times)
    return times, sol.y[:, where]


# ---------------------------------------------------------------------------------------------------------
# Threads

def uses_autograd(network):
    """Whether ``network`` takes the torch-autograd fallback (no closed-form utility gradient)."""
    return type(network).utility_gradient is TwoLayerNetwork.utility_gradient


@contextlib.contextmanager
def single_thread(network):
    """Run torch on one thread while ``network`` uses the autograd fallback, restoring the caller's setting.

    The fallback evaluates tiny tensors thousands of times; a thread pool only adds overhead there, and
    under load much more (see benchmarks/README.md, "Design decisions measured"). Networks with closed
    forms never touch torch, and torch is not imported for them.
    """
    if not uses_autograd(network):
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


# ---------------------------------------------------------------------------------------------------------
# The rounding check

#: The rounding check's perturbation of each direction component per evaluation: 4ε, about the rounding
#: error of a dot product of a few terms.
ROUNDING_PERTURBATION = 4 * np.finfo(float).eps
#: Largest change of the loss (or of a jump time or level), relative to its fall, that the rounding check accepts.
ROUNDING_TOLERANCE = 1e-3
#: Initial norm below which both engines check for rounding unless told otherwise.
ROUNDING_CHECK_NORM = 1e-8


class PrecisionWarning(UserWarning):
    """A result depends on float64 rounding: see the rounding check of :func:`gradient_flow`."""


# Defined here, beside the check that raises it, and documented where users import it from (numpy's
# ``set_module`` does the same): the API reference and its cross-references then name one place.
PrecisionWarning.__module__ = "agf_lib.flow"


def rounding_of_losses(times, losses, rerun_losses, engine):
    """``rounding_error`` and ``resolved_until`` (see :class:`~agf_lib.results.Trajectory`) of a run whose
    rerun with perturbed directions gave ``rerun_losses`` at the same ``times``; warns if they differ by more
    than ``ROUNDING_TOLERANCE`` of the loss's fall."""
    fall = float(losses.max() - losses.min())
    with np.errstate(invalid="ignore", divide="ignore"):
        moved = np.abs(np.asarray(rerun_losses) - losses) / max(fall, np.finfo(float).tiny)
    moved[~np.isfinite(moved)] = np.inf
    error = float(moved.max())
    above = np.flatnonzero(moved > ROUNDING_TOLERANCE)
    resolved_until = float(times[above[0]]) if above.size else math.inf
    if above.size:
        warnings.warn(f"{engine} depends on float64 rounding from t = {resolved_until:.4g}: rerun with its directions "
                      f"perturbed by {ROUNDING_PERTURBATION:.1e} (4 eps) per evaluation, its loss moves by "
                      f"{error:.2g} of its fall (tolerance {ROUNDING_TOLERANCE:g}). Components of a dormant "
                      "direction fell below float64's resolution; past that time the run is rounding, not the "
                      "dynamics at this alpha: use a larger alpha", PrecisionWarning, stacklevel=3)
    return {"rounding_error": error, "resolved_until": resolved_until}


def rounding_of_jumps(times, losses, order, rerun):
    """``rounding_error`` and ``resolved_until`` of an AGF run against its ``rerun`` with perturbed directions:
    the largest relative change of a jump time, or of a level relative to the loss's fall (infinite where the
    rerun activates another neuron or stops elsewhere); warns past ``ROUNDING_TOLERANCE``."""
    fall = max(float(losses.max() - losses.min()), np.finfo(float).tiny)
    moved = np.full(times.size - 1, np.inf)
    common = min(times.size, rerun.times.size) - 1
    for k in range(common):
        if rerun.order[k] != order[k]:
            break
        moved[k] = max(abs(rerun.times[k + 1] / times[k + 1] - 1), abs(rerun.losses[k + 1] - losses[k + 1]) / fall)
    if moved.size == 0:
        return {"rounding_error": 0.0, "resolved_until": math.inf}
    above = np.flatnonzero(moved > ROUNDING_TOLERANCE)
    resolved_until = float(times[above[0]]) if above.size else math.inf   # the last jump that held
    error = float(moved.max())
    if above.size:
        warnings.warn(f"AGF depends on float64 rounding after t = {resolved_until:.4g} (jump {above[0] + 1}): rerun "
                      f"with its directions perturbed by {ROUNDING_PERTURBATION:.1e} (4 eps) per evaluation, a jump "
                      f"time or level moves by {error:.2g} (tolerance {ROUNDING_TOLERANCE:g}). Components of a "
                      "dormant direction fell below float64's resolution: use a larger alpha", PrecisionWarning,
                      stacklevel=3)
    return {"rounding_error": error, "resolved_until": resolved_until}


# ---------------------------------------------------------------------------------------------------------
# Progress bars

#: Wall time (seconds) after which an engine run shows its bar when ``progress=None`` (automatic).
PROGRESS_DELAY = 5.0


def check_progress(progress):
    """``progress`` if it is True, False or None; a TypeError naming the argument otherwise."""
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or None, got {type(progress).__name__}")
    return None if progress is None else bool(progress)


def watched():
    """Whether someone is probably watching this process's output: it is not a worker process, and its
    standard error is a terminal, or it is an IPython kernel running a request from a front end that
    accepts input (Jupyter, VS Code).

    The headless executors send their requests with ``allow_stdin = False`` (nbclient, which the book build
    runs through myst-nb, and nbval, which runs the chapters as tests), and pytest captures standard error:
    neither the book's pages nor the test logs get a bar. A worker (joblib's processes in a limit study, a
    multiprocessing pool) writes to its parent's terminal, where its siblings' bars would interleave.
    """
    if multiprocessing.parent_process() is not None:
        return False
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):          # a replaced or closed stream
        pass
    ipython = sys.modules.get("IPython")            # never imported here: a kernel has imported it already
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(kernel, "get_parent"):
        return False
    try:
        request = kernel.get_parent()
    except Exception:                               # noqa: BLE001 (an IPython without ipykernel's API)
        return False
    return bool(isinstance(request, dict) and request.get("content", {}).get("allow_stdin", False))


def progress_bar(progress, *, total, desc, bar_format):
    """A :class:`tqdm.tqdm` bar on standard error for an engine run, disabled unless shown.

    ``progress=True`` shows it at once; ``False`` never; ``None`` (automatic) shows it only where
    :func:`watched` says someone is watching, and only once the run has taken :data:`PROGRESS_DELAY`
    seconds, so that short runs print nothing.
    """
    if progress is None:
        show, delay = watched(), PROGRESS_DELAY
    else:
        show, delay = progress, 0.0
    return tqdm(total=total, desc=desc, disable=not show, delay=delay, file=sys.stderr, bar_format=bar_format,
                dynamic_ncols=True)
