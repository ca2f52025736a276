"""Helpers for writing a chapter: claims checked and glued in one call, timed runs, rendered tables.

The book's convention (library page, "Writing a chapter"): the cells a reader sees do the step the
text describes; every number the prose states comes from :func:`claim`, which checks it from both
sides and glues the text the prose shows; wall times come from :class:`timer`; tabular results are
:func:`table` objects, shown as HTML tables. Checks that need more than a claim live in cells tagged
``hide-input``, behind a "Show the checks" toggle.

How a chapter uses it::

    from agf_lib.book import claim, table, timer

    with timer("fc_wall"):                       # glues "3.4" (seconds) under the name fc_wall
        run = agf_lib.gradient_flow(...)
    claim("err_16", 100 * error, close_to=9, atol=0.5, fmt=".0f")   # glues "9" as err_16
    table({"α": alphas, "error": errors}, formats={"α": alpha_text, "error": ".2%"})

Outside a notebook (plain Python, the tests) nothing is glued; the checks run all the same.
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["ClaimError", "claim", "timer", "format_seconds", "table", "alpha_text", "number_text"]

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


class ClaimError(AssertionError):
    """A claim of the text that the computation does not bear out."""


def _glue(name, value):
    """Glue ``value`` under ``name`` in a notebook (not displayed); do nothing outside one."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None:
        return
    from myst_nb import glue

    glue(name, value, display=False)


def _format(value, fmt):
    if callable(fmt):
        return fmt(value)
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a format spec string or a callable, got {type(fmt).__name__}")
    return format(value, fmt)


def _real_values(value):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("value must be a real number or an array of real numbers, got bool")
    array = np.asarray(value)
    if array.dtype.kind not in "iuf" or array.size == 0:
        raise TypeError(f"value must be a real number or a non-empty array of real numbers, got {value!r}")
    return array.astype(float)


def claim(name, value, *, between=None, close_to=None, rtol=0.0, atol=0.0, fmt=".3g"):
    """Check a number the text states, and glue its text under ``name``.

    Returns nothing, so that a claim on the last line of a check cell shows no output.

    Exactly one of the two forms of the check:

    - ``between=(low, high)``: ``low <= value <= high`` (every element, for an array);
    - ``close_to=x``: ``|value - x| <= atol + rtol * |x|`` (every element).

    Parameters
    ----------
    name : str or None
        The glue name the prose cites (a ``glue:text`` role); ``None`` checks without gluing.
    value : real number or array of real numbers
        What the computation gave. An array is checked element by element and glued only if ``fmt``
        is a callable (a format spec applies to one number).
    fmt : str or callable
        A format spec (``".3g"``, ``".1f"``, ``".0%"``) or a function of ``value`` returning the text.

    Raises
    ------
    ClaimError
        The value is outside the stated bounds (or NaN): the text would be wrong.
    ValueError, TypeError
        The check itself is malformed: both or neither form, ``low > high``, negative tolerances.
    """
    if name is not None and (not isinstance(name, str) or not name.isidentifier()):
        raise ValueError(f"name must be a glue name (letters, digits, underscores) or None, got {name!r}")
    if (between is None) == (close_to is None):
        raise ValueError("give exactly one of between=(low, high) and close_to=x")
    values = _real_values(value)
    if between is not None:
        if rtol or atol:
            raise ValueError("rtol and atol go with close_to, not with between")
        try:
            low, high = (float(bound) for bound in between)
        except (TypeError, ValueError):
            raise TypeError(f"between must be a pair of real numbers (low, high), got {between!r}") from None
        if not low <= high:
            raise ValueError(f"between must have low <= high, got {between!r}")
        ok = (values >= low) & (values <= high)
        stated = f"in [{low:g}, {high:g}]"
    else:
        if not isinstance(close_to, numbers.Real) or isinstance(close_to, bool) or not math.isfinite(close_to):
            raise TypeError(f"close_to must be a finite real number, got {close_to!r}")
        for label, tolerance in (("rtol", rtol), ("atol", atol)):
            if not isinstance(tolerance, numbers.Real) or not tolerance >= 0:
                raise ValueError(f"{label} must be a non-negative number, got {tolerance!r}")
        if rtol == 0 and atol == 0:
            raise ValueError("close_to needs a tolerance: give rtol or atol (or both)")
        ok = np.abs(values - close_to) <= atol + rtol * abs(close_to)
        stated = f"within {atol:g} + {rtol:g}·|x| of {close_to:g}"
    if not np.all(ok):
        label = f"claim {name!r}" if name else "claim"
        raise ClaimError(f"{label}: {value!r} is not {stated}")
    if name is not None and (values.ndim == 0 or callable(fmt)):
        _glue(name, _format(value, fmt))


def format_seconds(seconds):
    """Wall time as text with two significant digits: ``"0.043"``, ``"3.4"``, ``"12"``."""
    if not isinstance(seconds, numbers.Real) or not seconds >= 0:
        raise ValueError(f"seconds must be a non-negative number, got {seconds!r}")
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.2g}"


class timer:
    """A context manager that measures its block's wall time and glues it under ``name``.

    ``with timer("gf_wall") as clock: ...`` glues :func:`format_seconds` of the time under ``gf_wall``
    when the block ends; ``clock.seconds`` holds it as a float. ``name=None`` only measures. To cite the
    total of several runs, put them in one block; for a time that spans cells, call :meth:`start` and
    :meth:`stop`.
    """

    def __init__(self, name=None):
        if name is not None and (not isinstance(name, str) or not name.isidentifier()):
            raise ValueError(f"name must be a glue name (letters, digits, underscores) or None, got {name!r}")
        self.name = name
        self.seconds = 0.0

    def start(self):
        """Start measuring (for a time that spans cells: ``clock = timer("name").start()``)."""
        self._start = time.perf_counter()
        return self

    def stop(self):
        """Stop, glue the time under the name, and return it in seconds."""
        if not hasattr(self, "_start"):
            raise RuntimeError("the timer was never started")
        self.seconds = time.perf_counter() - self._start
        if self.name is not None:
            _glue(self.name, format_seconds(self.seconds))
        return self.seconds

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def number_text(value, digits=2):
    """A number as plain text with ``digits`` significant digits, powers of ten written out:
    ``3.8×10⁻¹²``, ``−10⁻⁸``, ``0.5``, ``12``, ``0``. Magnitudes from 0.01 to 10⁵ are written as decimals.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"value must be a finite real number, got {value!r}")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 1:
        raise ValueError(f"digits must be a positive integer, got {digits!r}")
    if value == 0:
        return "0"
    sign = "−" if value < 0 else ""
    rounded = float(f"{abs(value):.{digits}g}")
    if 0.01 <= rounded < 1e5:
        return sign + (f"{rounded:.{digits}g}" if rounded < 10**digits else f"{rounded:.0f}")
    exponent = math.floor(math.log10(rounded))
    mantissa = round(rounded / 10.0**exponent, digits - 1)
    if mantissa >= 10:                         # rounding of the logarithm
        mantissa, exponent = mantissa / 10, exponent + 1
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return sign + (power if mantissa == 1 else f"{mantissa:.{digits}g}×{power}")


def alpha_text(alpha):
    """An initialization scale as plain text, one notation everywhere: ``10⁻⁸``, ``3×10⁻⁵``, ``0.5``.

    For tables and printed sentences; figures use :func:`agf_lib.plotting.alpha_label` (the same
    notation in math text).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha > 0 or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a finite positive number, got {alpha!r}")
    return number_text(alpha, digits=3) if not 0.01 <= alpha < 100 else f"{alpha:g}"


_tables = itertools.count()


def table(data, *, formats=None, index=False, name=None, wrap=False):
    """Tabular results as a table a reader sees (HTML, rendered by the book), never as a repr.

    Parameters
    ----------
    data : mapping of column name to sequence, or pandas.DataFrame
        The columns, in order.
    formats : mapping of column name to format spec or callable, optional
        How each column's entries are written (``".3g"``, ``".1%"``, :func:`alpha_text`, ...);
        columns not named show as pandas writes them.
    index : bool
        Show the DataFrame's index (for a DataFrame whose index names the rows).
    name : str, optional
        Also glue the table under this name, for a numbered ``glue:figure`` with a caption.
    wrap : bool
        Let the text of the cells wrap (for columns of words); by default a row stays on one line and a
        wide table scrolls sideways.

    Returns
    -------
    pandas.io.formats.style.Styler
        Displayed as an HTML table when it is the last expression of a cell.
    """
    import pandas as pd
    from pandas.io.formats.style import Styler

    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, Mapping):
        frame = pd.DataFrame(dict(data))
    else:
        raise TypeError(f"data must be a mapping of columns or a pandas DataFrame, got {type(data).__name__}")
    formats = dict(formats or {})
    unknown = set(formats) - set(frame.columns)
    if unknown:
        raise ValueError(f"formats names columns the table does not have: {sorted(map(str, unknown))}")
    formatters: dict[object, Callable] = {}
    for column, fmt in formats.items():
        if callable(fmt):
            formatters[column] = fmt
        elif isinstance(fmt, str):
            formatters[column] = (lambda spec: lambda v: format(v, spec))(fmt)
        else:
            raise TypeError(f"formats[{column!r}] must be a format spec string or a callable, got {fmt!r}")
    styler = Styler(frame, uuid=name or f"table{next(_tables)}", uuid_len=0, cell_ids=False)
    styler = styler.format(formatters, na_rep="—")
    styler = styler.set_table_attributes(f'class="agf-table{" agf-table-wrap" if wrap else ""}"')
    if not index:
        styler = styler.hide(axis="index")
    if name is not None:
        _glue(name, styler)
    return styler
