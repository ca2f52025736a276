"""Exact fits of composition over a finite group (chapter 09): neurons whose outputs sum to a class of the target.

With ``k = 2`` the cross term of a neuron is one product, so neurons that fit an irrep class exactly form a
bilinear algorithm for ``(ρ(a), ρ(b)) ↦ ρ(a)ρ(b)`` whose squares cancel: their number is at least its tensor
rank. :func:`class_neurons` builds ``d³ + d`` of them for a real class and six for a complex pair;
:func:`least_squares_fit` searches for fewer. Both are re-exported by :mod:`agf_lib.groups`, whose network
(:class:`agf_lib.groups.CompositionNetwork`) computes the fits' outputs.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import least_squares

from .finite_groups import _canonical_basis, _check_classes, _check_group, _check_template, class_component, translates
from .validation import check_int

__all__ = ["class_neurons", "least_squares_fit"]


def _coefficient_readers(x, G, features):
    """Vectors ``u`` with ``⟨u, g·x⟩ = features[g, j]`` for every ``g`` (one column of the result per feature ``j``);
    ValueError when a feature is not a linear function of the translates (``x̂`` singular on the class)."""
    shifts = translates(x, G)
    readers, *_ = np.linalg.lstsq(shifts, features, rcond=None)
    if np.abs(shifts @ readers - features).max() > 1e-9 * max(1.0, np.abs(features).max()):
        raise ValueError("x̂[ρ] must be invertible on the irrep class for its exact construction")
    return readers


def class_neurons(x, G, irrep_class):
    """Neurons (``k = 2``) whose outputs sum to the class component of the target exactly:
    ``Σ_i f_i(a·x, b·x) = class_component((a·b)·x, G, [irrep_class])`` for every pair. Returns ``θ`` of shape
    ``(H, 3|G|)``, ``H = d³ + d`` for a real class of dimension ``d`` and ``H = 6`` for a pair of conjugate
    one-dimensional complex irreps. The cross term of a neuron, ``2 w ⟨u, a·x⟩⟨v, b·x⟩``, is one product, so
    an exact fit is a decomposition of the class's bilinear map ``(ρ(a), ρ(b)) ↦ ρ(a)ρ(b)`` in which the
    squares ``⟨u, a·x⟩²`` and ``⟨v, b·x⟩²`` cancel (chapter 09). Here:

    - real ``ρ`` (orthogonal): ``Σ_j (ρ(a)_{ij} + ρ(b)_{jk})² = 2 + 2 ρ(ab)_{ik}``, as rows and columns of an
      orthogonal matrix have unit norm: ``d³`` neurons, and ``d`` more, ``ρ(a)_{1j}²`` (``Σ_j = 1``), cancel the
      constant;
    - a complex pair ``χ, χ̄``: ``χ(a)χ(b)`` from three real products (Gauss's trick), each the difference of two
      squares ``((s + t)² − (s − t)²)/4``.

    ``x̂[ρ]`` must be invertible (nonzero for a pair); quaternionic classes and complex irreps of dimension
    above one raise ValueError.
    """
    G = _check_group(G)
    x = _check_template(x, G)
    (irrep_class,) = _check_classes([irrep_class], G, "irrep_class")
    kind, N = G.class_types[irrep_class], G.order
    rho = G.irreps[G.irrep_classes[irrep_class][0]]
    d = rho.shape[1]
    if kind == "quaternionic" or (kind == "complex" and d > 1):
        raise ValueError(f"class_neurons builds real classes and one-dimensional complex pairs; class "
                         f"{irrep_class} of {G.name} is {kind} of dimension {d}")
    if kind == "real":
        features = rho.reshape(N, d * d)                          # column i*d + j is g ↦ ρ(g)_ij
    else:
        features = np.stack([rho[:, 0, 0].real, rho[:, 0, 0].imag], axis=1)
    readers = _coefficient_readers(x, G, features)
    target = class_component(translates(x, G), G, [irrep_class])   # row c: the class part of c·x
    writers, *_ = np.linalg.lstsq(features, target, rcond=None)     # Σ_j features[c, j] writers[j] = target[c]
    zero = np.zeros(N)
    rows = []
    if kind == "real":
        read = readers.T.reshape(d, d, N)
        write = writers.reshape(d, d, N)
        for i, j, k in itertools.product(range(d), repeat=3):
            rows.append(np.concatenate([read[i, j], read[j, k], write[i, k] / 2]))
        for j in range(d):
            rows.append(np.concatenate([read[0, j], zero, -write.sum(axis=(0, 1))]))
    else:
        re, im = readers.T
        products = [(re + im, re, writers[0] + writers[1]),      # Re χ(b) (Re χ(a) + Im χ(a))
                    (re, im - re, writers[1]),                   # Re χ(a) (Im χ(b) − Re χ(b))
                    (im, re + im, -writers[0])]                  # Im χ(a) (Re χ(b) + Im χ(b))
        for s, t, w in products:
            for sign in (1, -1):
                rows.append(np.concatenate([s, sign * t, sign * w / 4]))
    return np.array(rows)


def least_squares_fit(x, G, H, *, seed=0, max_nfev=None):
    """Fit ``H`` neurons (``k = 2``) to the whole composition task of ``x`` by SciPy's trust-region reflective
    method (``scipy.optimize.least_squares(method="trf")``, closed-form Jacobian) from a standard normal start
    drawn with ``seed``.

    The fit runs in the span of the translates of ``x`` (``n`` dimensions): the other components of ``u`` and
    ``v`` change no output, and those of ``w`` only add to the loss. Returns ``(relative_loss, theta)``:
    ``‖f − y‖²/‖y‖²`` over all pairs, and ``θ`` of shape ``(H, 3|G|)``. A local method: a loss above zero says
    this start found no exact fit, not that none exists. With ``max_nfev`` the fit stops there, converged or
    not; without it, a fit that has not converged within SciPy's default budget raises ``RuntimeError``.

    The same call returns the same bits in every process (tested), which is why the method is not
    Levenberg–Marquardt: see benchmarks/README.md, "Design decisions measured".
    """
    G = _check_group(G)
    x = _check_template(x, G)
    H = check_int(H, "H", 1)
    seed = check_int(seed, "seed", 0)
    if max_nfev is not None:
        max_nfev = check_int(max_nfev, "max_nfev", 1)
    shifts = translates(x, G)
    basis = _canonical_basis(shifts.T)                                 # (|G|, n): the span of the translates
    z, n = shifts @ basis, basis.shape[1]                              # z[g] = coordinates of g·x
    first, second = np.divmod(np.arange(G.order**2), G.order)          # pair a·|G| + b, as in dataset
    za, zb, y = z[first], z[second], z[G.table[first, second]]
    eye = np.eye(n)

    def split(flat):
        theta = flat.reshape(H, 3, n)
        return theta[:, 0], theta[:, 1], theta[:, 2]

    def residual(flat):
        u, v, w = split(flat)
        return ((za @ u.T + zb @ v.T) ** 2 @ w - y).ravel()

    def jacobian(flat):
        u, v, w = split(flat)
        pre = za @ u.T + zb @ v.T                                          # (pairs, H)
        J = np.empty((len(y), n, H, 3, n))
        J[:, :, :, 0] = 2 * np.einsum("ph,ho,pi->pohi", pre, w, za)
        J[:, :, :, 1] = 2 * np.einsum("ph,ho,pi->pohi", pre, w, zb)
        J[:, :, :, 2] = np.einsum("ph,oi->pohi", pre**2, eye)
        return J.reshape(y.size, -1)

    start = np.random.default_rng(seed).normal(size=H * 3 * n)
    fit = least_squares(residual, start, jac=jacobian, method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                        max_nfev=max_nfev)
    # status 0: the evaluation budget ran out, which a caller's max_nfev asks for; without one, the fit
    # did not converge within SciPy's default budget, and its loss would pass for a converged one
    if fit.status < 0 or (fit.status == 0 and max_nfev is None) or not np.all(np.isfinite(fit.x)):
        raise RuntimeError(f"least_squares_fit did not converge (scipy least_squares, status {fit.status}: "
                           f"{fit.message}); give max_nfev to accept a fit within a budget")
    u, v, w = split(fit.x)
    return float(2 * fit.cost / (y**2).sum()), np.concatenate([u, v, w], axis=1) @ np.kron(np.eye(3), basis.T)
