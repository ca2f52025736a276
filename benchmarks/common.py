"""The problem the benchmarks run on, and small helpers for timing and tables.

The diagonal problem is the book's standard one, ``agf_lib.problems.get("diagonal")`` (the problem of
chapter 01 and of the tests): n = 20 samples in d = 5 dimensions with column scales (1, .7, .5, .35,
.25), a planted β ~ N(0, I) and label noise 0.1, seed 0. Its closed-form AGF
(``agf_lib.diagonal.agf_staircase``) has five jumps, one per coordinate, and no coordinate returns to
dormancy.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
import torch

from agf_lib import problems

PROBLEM = "diagonal"


def diagonal_problem():
    """``(X, y)`` of the standard problem, ``X`` of shape (n, d) and ``y`` of shape (n,)."""
    X, y = problems.get(PROBLEM).data
    return X.copy(), y[:, 0].copy()


def describe_problem():
    return f"problems.get({PROBLEM!r}): {problems.get(PROBLEM).description}"


def machine():
    return (f"Python {platform.python_version()}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"{os.cpu_count()} CPUs, {platform.machine()}")


def timed(fn, *args, **kwargs):
    """``(result, seconds)`` of one call, timed with :func:`time.perf_counter`."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


# Short runs are repeated until this much time is spent: on a shared machine the minimum of three 5 ms
# runs still varied by 2× from one benchmark run to the next (timeit's autorange does the same).
MIN_TOTAL_SECONDS = 0.3


def best_of(repeats, fn, *args, **kwargs):
    """``(result, best seconds)`` over at least ``repeats`` calls, and over more while the calls so far took
    less than ``MIN_TOTAL_SECONDS`` (the result of the last call)."""
    best, total, calls, result = float("inf"), 0.0, 0, None
    while calls < repeats or total < MIN_TOTAL_SECONDS:
        result, seconds = timed(fn, *args, **kwargs)
        best, total, calls = min(best, seconds), total + seconds, calls + 1
    return result, best


def max_relative_error(values, reference):
    """``(max |values − reference| / |reference|, index of the max)``."""
    values, reference = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    errors = np.abs(values - reference) / np.abs(reference)
    k = int(np.argmax(errors))
    return float(errors[k]), k


def table(header, rows):
    """A plain-text table: first column left-aligned, the others right-aligned, widths fit to the content."""
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[j]) for row in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths)))
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
