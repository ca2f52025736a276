"""The library's input checks, in one place and one style.

A value of the wrong type raises ``TypeError``; a value of the right type but outside its range raises
``ValueError``. Every message names the argument and says what was expected.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["as_float_array", "real_array", "check_real", "check_positive", "check_fraction", "check_int",
           "check_bool", "check_centred", "check_max_jumps", "check_num_samples", "check_covariance"]

_REALS = (int, float, np.integer, np.floating)


def as_float_array(value, name, expected="a numpy array or torch tensor", complex_ok=False, scalar_ok=False):
    """``value`` (NumPy array, list, tuple or torch tensor; a real number too with ``scalar_ok``) as a float64
    (or, with ``complex_ok``, complex128) NumPy array, or a TypeError naming ``name`` and what was ``expected``."""
    if type(value).__module__.startswith("torch"):
        value = value.detach().cpu().numpy()
    if scalar_ok and isinstance(value, _REALS) and not isinstance(value, bool):
        value = np.asarray(value)
    if not isinstance(value, (np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}")
    try:
        value = np.asarray(value)
    except ValueError:             # a ragged nested list
        raise TypeError(f"{name} must be {expected}, got a ragged nested sequence") from None
    if value.dtype.kind not in ("biufc" if complex_ok else "biuf"):
        raise TypeError(f"{name} must hold {'numbers' if complex_ok else 'real numbers'}, got dtype {value.dtype}")
    return value.astype(complex if value.dtype.kind == "c" else float)


def real_array(value, name, what="an array", expected=None, complex_ok=False, scalar_ok=False):
    """``value`` as a finite float (or complex) array; TypeError/ValueError naming ``name``."""
    kind = "numbers" if complex_ok else "real numbers"
    value = as_float_array(value, name, expected or f"{what} of {kind}", complex_ok=complex_ok, scalar_ok=scalar_ok)
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return value


def _real_number(value, name):
    """``value`` as a float, or a TypeError naming ``name`` (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, _REALS):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def check_real(value, name):
    """A finite real number of any sign, as a float; NaN and ±inf are a ValueError naming ``name``."""
    value = _real_number(value, name)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return value


def check_positive(value, name, *, finite=True):
    """A positive real number (finite unless ``finite=False``), as a float."""
    value = _real_number(value, name)
    if math.isnan(value) or value <= 0 or (finite and math.isinf(value)):
        raise ValueError(f"{name} must be a {'finite ' if finite else ''}positive number, got {value!r}")
    return value


def check_fraction(value, name, *, zero_ok=False):
    """A real number in ``(0, 1)`` (``[0, 1)`` with ``zero_ok``), as a float: a relative tolerance."""
    value = _real_number(value, name)
    if not ((0 <= value if zero_ok else 0 < value) and value < 1):
        raise ValueError(f"{name} must be a number in {'[0' if zero_ok else '(0'}, 1), got {value!r}")
    return value


def check_int(value, name, minimum=1):
    """An integer ``>= minimum``, as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_bool(value, name):
    """``True`` or ``False`` (a NumPy bool too), as a bool; anything else, 0 and 1 included, is a TypeError."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_centred(x, name):
    """A template's own conditions, after its shape is checked: nonzero, and centred (sum zero)."""
    scale = float(np.abs(x).max())
    if scale == 0:
        raise ValueError(f"{name} must be nonzero")
    if abs(float(x.sum())) > 1e-9 * scale * x.size:
        raise ValueError(f"{name} must be centred (sum zero); subtract its mean first (sum is {x.sum():.3g})")
    return x


def check_max_jumps(max_jumps):
    """``None`` (no limit) or a non-negative integer: a TypeError for another type, a ValueError below zero."""
    if max_jumps is None:
        return None
    if isinstance(max_jumps, bool) or not isinstance(max_jumps, (int, np.integer)):
        raise TypeError(f"max_jumps must be None or a non-negative integer, got {type(max_jumps).__name__}")
    if max_jumps < 0:
        raise ValueError(f"max_jumps must be None or a non-negative integer, got {max_jumps!r}")
    return int(max_jumps)


def check_num_samples(num_samples):
    """The size of a sampling grid: an integer of at least 2 (a TypeError for another type)."""
    return check_int(num_samples, "num_samples", minimum=2)


def check_covariance(value, name):
    """A covariance matrix: square ``(d, d)`` with ``d ≥ 1``, real, symmetric to 1e-10 of its largest entry and
    positive definite (smallest eigenvalue above 1e-14 of it), as a float array made exactly symmetric."""
    matrix = real_array(value, name, expected="a square (d, d) covariance matrix (an array of real numbers)")
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"{name} must be a square (d, d) covariance matrix, got shape {matrix.shape}")
    scale = max(float(np.abs(matrix).max()), np.finfo(float).tiny)
    if np.abs(matrix - matrix.T).max() > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric")
    matrix = 0.5 * (matrix + matrix.T)
    smallest = float(np.linalg.eigvalsh(matrix)[0])
    if smallest <= 1e-14 * scale:
        raise ValueError(f"{name} must be positive definite (smallest eigenvalue {smallest:.3g})")
    return matrix
