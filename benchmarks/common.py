"""The problem every benchmark runs, and small helpers for timing and tables.

The problem is the paper's high-dimensional diagonal-network example in miniature: d = 5 input
coordinates with a power-law spread of scales, n = 20 samples, a planted β* with alternating signs
and a little label noise, all drawn from one seeded generator. With these numbers the closed-form
AGF (``agf_lib.diagonal.agf``) has five well-separated jumps, one per coordinate, in the order of the
scales, and no coordinate returns to dormancy.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
import torch

D, N = 5, 20
SCALES = np.array([1.0, 0.7, 0.5, 0.35, 0.25])  # column scales: covariance diag ≈ SCALES² (power law)
BETA_STAR = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
NOISE = 0.01
SEED = 2


def diagonal_problem(seed=SEED):
    """``(X, y)``: ``X = Z·diag(SCALES)`` with ``Z`` standard normal (n × d), ``y = Xβ* + NOISE·ε``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) * SCALES
    y = X @ BETA_STAR + NOISE * rng.standard_normal(N)
    return X, y


def describe_problem(seed=SEED):
    fmt = lambda v: "(" + ", ".join(f"{x:g}" for x in v) + ")"
    return (f"diagonal linear network, d = {D}, n = {N}, column scales {fmt(SCALES)}, "
            f"β* = {fmt(BETA_STAR)}, noise {NOISE:g}, seed {seed}")


def machine():
    return (f"Python {platform.python_version()}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"{os.cpu_count()} CPUs, {platform.machine()}")


def timed(fn, *args, **kwargs):
    """``(result, seconds)`` of one call, timed with :func:`time.perf_counter`."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def best_of(repeats, fn, *args, **kwargs):
    """``(result, best seconds)`` over ``repeats`` calls (the result of the last call)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        result, seconds = timed(fn, *args, **kwargs)
        best = min(best, seconds)
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
