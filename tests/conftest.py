"""Shared test problems: small seeded regressions with known structure (the named ones come from
:mod:`agf_lib.problems`, where the conformance test and the book find them too).

Every problem is float64 and fully determined by its seed, so a failing test reproduces exactly.

The test run keeps BLAS, OpenMP and torch to one thread per process (unless the environment already sets
them): its two xdist workers share two cores, one running the unit tests and one the book build, whose
kernels inherit the setting. The library's arrays are small, so threads gain nothing there, and two
processes each spawning a second thread slowed the book's execution by about 10% (85 s against 77 s).
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before NumPy and torch are imported, which read it once

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from agf_lib import groups, problems  # noqa: E402


def not_a_count(name, value):
    """``(exception, message)`` that ``agf_lib.validation.check_int`` raises for a bad size ``value`` of
    ``name``: a TypeError for a non-integer, a ValueError for an integer below one."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return TypeError, f"^{name} must be an integer, got {type(value).__name__}"
    return ValueError, f"^{name} must be an integer >= 1, got {value}"


def make_regression(seed, n, d, correlation=0.0, noise=0.1):
    """``X`` with AR(1) correlated columns (``corr(x_i, x_j) = correlation^|i−j|``) and decaying scales,
    ``y = Xβ + noise·ε`` with ``β ~ N(0, I)``: a generic problem for the diagonal network."""
    rng = np.random.default_rng(seed)
    lags = np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    mixing = np.linalg.cholesky(correlation**lags)
    scales = 0.8 ** np.arange(d)
    X = rng.normal(size=(n, d)) @ mixing.T * scales
    beta = rng.normal(size=d)
    y = X @ beta + noise * rng.normal(size=n)
    return X, y


def piece_template(G, a2=0.0, sigma=(2.0, 1.0)):
    """Chapter 09's templates on a dihedral group ``G``: ``x̂[E] = R diag(σ) Rᵀ diag(1, −1)`` on the first
    two-dimensional irrep (``R`` the rotation with cosine 0.6), ``x̂[A2] = a2``, zero elsewhere."""
    turn = np.array([[0.6, -0.8], [0.8, 0.6]])
    blocks = [np.zeros((1, 1)), np.full((1, 1), a2), turn @ np.diag(sigma) @ turn.T @ np.diag([1.0, -1.0])]
    return groups.inverse_fourier(blocks + [np.zeros((2, 2))] * (len(G.dims) - 3), G)


def _problem_data(name):
    """``(X, y)`` of a standard problem of :mod:`agf_lib.problems`, with ``y`` of shape (n,)."""
    X, y = problems.get(name).data
    return X.copy(), y[:, 0].copy()


@pytest.fixture
def regression_problem():
    """The book's standard diagonal regression (``problems.get("diagonal")``): n = 20, d = 5, columns
    scaled by (1, .7, .5, .35, .25), ``β ~ N(0, I)``, ``y = Xβ + 0.1 ε`` (seed 0). Its AGF staircase has
    five jumps and no deactivation."""
    return _problem_data("diagonal")


@pytest.fixture
def deactivation_problem():
    """A design in which a coordinate returns to dormancy (``problems.get("diagonal-dormancy")``):
    ``x_3 ≈ 0.7(x_1 + x_2)`` explains ``y = x_1 + x_2`` best on its own, activates first, and is dropped
    once ``x_1`` and ``x_2`` are both active. Pesme–Flammarion: order (2, 0, 1, 2),
    ``deactivated = [(), (), (2,), ()]``."""
    return _problem_data("diagonal-dormancy")


@pytest.fixture
def sign_reversal_problem():
    """Two coordinates with ``Σ_xx = [[1, .8], [.8, 1]]`` and ``Σ_xy = (1, .3)`` exactly (n = 2;
    ``problems.get("diagonal-sign-reversal")``).

    Coordinate 1 activates at rescaled time 1 with ``s_2 = 0.3``; then the gradient on coordinate 2
    reverses, ``s_2`` runs from 0.3 down to −1 at speed 0.5, and coordinate 2 activates with a negative
    sign at rescaled time 3.6, fitting the data exactly (final loss 0)."""
    return _problem_data("diagonal-sign-reversal")
