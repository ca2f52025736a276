"""Finite groups and their Fourier transform, in plain NumPy: the group library under :mod:`agf_lib.groups`.

Nothing here knows about networks, losses or the engines; :mod:`agf_lib.groups` (the composition task),
:mod:`agf_lib.structured_loss` and :mod:`agf_lib.exact_fits` build on it, and :mod:`agf_lib.groups` re-exports every
public name (``groups.cyclic``, ``groups.fourier``, ...).

Why this module is longer than 500 lines: each constructor writes out its group's irreducible representations
(A5's take sixty lines), and the transform sits beside the class whose irreps it uses; splitting them would
put the checks of a group's irreps (Schur orthogonality, the Fourier inverse) in two places.

**Groups.** A :class:`FiniteGroup` is a multiplication table (``table[a, b]`` is the index of
``a·b``) together with a complete list of irreducible unitary representations (irreps) ``ρ``, each
an array of shape ``(|G|, d_ρ, d_ρ)``. Irreps of real type are given as real orthogonal matrices.
Each irrep has a Frobenius–Schur indicator ``ν_ρ = (1/|G|) Σ_g χ_ρ(g²)``: ``1`` real, ``0`` complex,
``−1`` quaternionic. The theory works with *irrep classes*: a complex irrep together with its
conjugate, or a real or quaternionic irrep on its own. These are the irreducible representations
over the reals, and a real function's Fourier coefficients on a class determine each other.
The constructors: :func:`cyclic`, :func:`dihedral`, :func:`alternating4`, :func:`symmetric4`,
:func:`alternating5` (the icosahedral rotation group, order 60, irreps of dimension 1, 3, 3, 4, 5),
:func:`quaternion` and :func:`direct_product`.

**Fourier transform** (the convention of :mod:`agf_lib.dft`, extended to matrices):

    x̂[ρ] = Σ_g x(g) ρ(g)^†,      x(g) = (1/|G|) Σ_ρ d_ρ tr(ρ(g) x̂[ρ]),
    Σ_g x(g) conj(y(g)) = (1/|G|) Σ_ρ d_ρ tr(x̂[ρ] ŷ[ρ]^†)                        (Plancherel).

Translation ``(g·x)(a) = x(g⁻¹a)`` acts as ``(g·x)^[ρ] = x̂[ρ] ρ(g)^†`` and the convolution
``(φ * ψ)(h) = Σ_g φ(g) ψ(g⁻¹h)`` as ``(φ * ψ)^[ρ] = ψ̂[ρ] φ̂[ρ]``. For ``cyclic(p)``, irrep ``m`` is
``ρ_m(a) = e^{2πi am/p}`` and ``x̂[ρ_m] = dft(x)[m]``; ``(a·x)[j] = x[j − a] = numpy.roll(x, a)[j]``
(:func:`translates`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import KW_ONLY, dataclass, field

import numpy as np

from .validation import real_array, check_int, check_centred

__all__ = [
    "FiniteGroup", "cyclic", "dihedral", "alternating4", "symmetric4", "alternating5", "quaternion", "direct_product",
    "fourier", "inverse_fourier", "class_power", "class_component", "translates",
]

_TOL = 1e-9              # tolerance for user-supplied tables and irreps (the library's own hold to ~1e-15)


# ----------------------------------------------------------------------------------------------
# input validation (shared with agf_lib.groups, structured_loss and exact_fits)


def _check_group(G, name="G"):
    if not isinstance(G, FiniteGroup):
        raise TypeError(f"{name} must be a groups.FiniteGroup (e.g. groups.cyclic(5)), got {type(G).__name__}")
    return G


def _check_functions(u, G, name="u", complex_ok=False):
    """An array whose last axis indexes the elements of ``G``."""
    u = real_array(u, name, complex_ok=complex_ok)
    if u.ndim == 0 or u.shape[-1] != G.order:
        raise ValueError(f"{name} must have last axis of length |G| = {G.order}, got shape {u.shape}")
    return u


def _check_template(x, G, name="x"):
    """A nonzero centred real template of shape ``(|G|,)``."""
    x = real_array(x, name)
    if x.shape != (G.order,):
        raise ValueError(f"{name} must be a 1-D template of length |G| = {G.order}, got shape {x.shape}")
    return check_centred(x, name)



def _check_classes(classes, G, name="learned"):
    if isinstance(classes, (str, bytes)) or not isinstance(classes, (list, tuple, range, np.ndarray)):
        raise TypeError(f"{name} must be a list or tuple of irrep-class indices, got {type(classes).__name__}")
    out = []
    for c in classes:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise TypeError(f"{name} must hold integer irrep-class indices, got {type(c).__name__}")
        if not 0 <= c < G.num_classes:
            raise ValueError(f"{name} must hold irrep-class indices in [0, {G.num_classes}) for {G.name}, got {c}")
        out.append(int(c))
    return out



# ----------------------------------------------------------------------------------------------
# finite groups


def _read_only(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class FiniteGroup:
    """A finite group as a multiplication table, with a complete set of irreducible unitary representations.

    The constructor checks the group axioms and that the irreps are unitary, homomorphic,
    irreducible, pairwise inequivalent and complete (to 1e-9).

    Parameters
    ----------
    table : (N, N) int array
        ``table[a, b]`` is the index of the product ``a·b``.
    irreps : tuple of (N, d, d) arrays
        One array per irrep ``ρ``, ``irreps[r][g] = ρ(g)``: unitary, pairwise inequivalent,
        ``Σ d_ρ² = N``. Real (float) arrays for real orthogonal irreps, complex otherwise.
    name : str, default "G"
        The group's name.
    irrep_names, element_names : tuple of str, optional
        Names of the irreps and of the elements; by default ``ρ0, ρ1, …`` and ``0, 1, …``.

    Attributes
    ----------
    order : int
        ``N``.
    identity : int
        Index of the identity.
    inverse : (N,) int array
        ``inverse[g]`` is the index of ``g⁻¹``.
    dims : tuple of int
        ``d_ρ`` per irrep.
    characters : (R, N) array
        ``tr ρ(g)``.
    frobenius_schur : tuple
        ``ν_ρ = (1/N) Σ_g χ_ρ(g²)`` ∈ {1, 0, −1}.
    irrep_classes : tuple of tuples
        Irrep indices: ``(r,)`` for a real or quaternionic irrep, ``(r, s)`` for a complex irrep
        ``r`` and its conjugate ``s``, ordered by first index.
    class_types : tuple of str
        ``"real"``, ``"complex"`` or ``"quaternionic"``, per class.
    class_dims : tuple of int
        ``d_ρ`` of each class's irreps.
    num_classes : int
        Number of classes.

    Raises
    ------
    ValueError
        If the table or the irreps fail a check.
    """

    table: np.ndarray
    irreps: tuple
    _: KW_ONLY
    name: str = "G"
    irrep_names: tuple | None = None
    element_names: tuple | None = None
    order: int = field(init=False)
    identity: int = field(init=False)
    inverse: np.ndarray = field(init=False)
    dims: tuple = field(init=False)
    characters: np.ndarray = field(init=False)
    frobenius_schur: tuple = field(init=False)
    irrep_classes: tuple = field(init=False)
    class_types: tuple = field(init=False)
    class_dims: tuple = field(init=False)

    def __post_init__(self):
        set_ = lambda key, value: object.__setattr__(self, key, value)  # noqa: E731 (frozen dataclass)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        table = self.table
        if not isinstance(table, (np.ndarray, list, tuple)):
            raise TypeError(f"table must be an integer array, got {type(table).__name__}")
        table = np.asarray(table)
        if table.dtype.kind not in "iu":
            raise TypeError(f"table must hold integers, got dtype {table.dtype}")
        if table.ndim != 2 or table.shape[0] != table.shape[1] or table.shape[0] < 1:
            raise ValueError(f"table must be a square (N, N) array, got shape {table.shape}")
        N = table.shape[0]
        table = table.astype(np.int64)
        if table.min() < 0 or table.max() >= N:
            raise ValueError(f"table entries must be element indices in [0, {N}), got range "
                             f"[{table.min()}, {table.max()}]")
        identity_rows = np.nonzero((table == np.arange(N)).all(axis=1))[0]
        if identity_rows.size != 1 or not np.array_equal(table[:, identity_rows[0]], np.arange(N)):
            raise ValueError("table must have a two-sided identity element")
        e = int(identity_rows[0])
        rows_ok = (np.sort(table, axis=1) == np.arange(N)).all()
        cols_ok = (np.sort(table, axis=0) == np.arange(N)[:, None]).all()
        if not (rows_ok and cols_ok):
            raise ValueError("table must be a Latin square (every element has an inverse, cancellation holds)")
        for a in range(N):  # associativity (a·b)·c == a·(b·c), one a at a time to keep memory at N²
            if not np.array_equal(table[table[a]], table[a][table]):
                raise ValueError(f"table is not associative (fails for a = {a})")
        inverse = np.argmax(table == e, axis=1)

        if not isinstance(self.irreps, (list, tuple)) or len(self.irreps) == 0:
            raise TypeError("irreps must be a non-empty list or tuple of (N, d, d) arrays")
        irreps = []
        for r, rho in enumerate(self.irreps):
            rho = real_array(rho, f"irreps[{r}]", complex_ok=True)
            if rho.ndim != 3 or rho.shape[0] != N or rho.shape[1] != rho.shape[2]:
                raise ValueError(f"irreps[{r}] must have shape (N, d, d) with N = {N}, got {rho.shape}")
            if np.iscomplexobj(rho) and not np.any(rho.imag):
                rho = rho.real
            d = rho.shape[1]
            eye = np.eye(d)
            if np.abs(rho.conj().transpose(0, 2, 1) @ rho - eye).max() > _TOL:
                raise ValueError(f"irreps[{r}] is not unitary")
            products = np.einsum("aij,bjk->abik", rho, rho)
            if np.abs(products - rho[table]).max() > _TOL:
                raise ValueError(f"irreps[{r}] is not a homomorphism: rho(a) rho(b) != rho(a·b)")
            irreps.append(_read_only(rho))
        dims = tuple(int(rho.shape[1]) for rho in irreps)
        characters = np.array([np.trace(rho, axis1=1, axis2=2) for rho in irreps])
        gram = characters.conj() @ characters.T / N
        if np.abs(gram - np.eye(len(irreps))).max() > _TOL:
            raise ValueError("irreps must be irreducible and pairwise inequivalent (characters orthonormal)")
        if sum(d * d for d in dims) != N:
            raise ValueError(f"irreps must be complete: sum of d_rho^2 is {sum(d * d for d in dims)}, |G| = {N}")

        indicator = (characters[:, np.diag(table)].sum(axis=1) / N)
        fs = np.rint(indicator.real).astype(int)
        if np.abs(indicator - fs).max() > _TOL:
            raise ValueError("irreps have non-integer Frobenius-Schur indicators; check the irreps")
        classes, types, seen = [], [], set()
        for r in range(len(irreps)):
            if r in seen:
                continue
            if fs[r] != 0:
                classes.append((r,))
                types.append("real" if fs[r] == 1 else "quaternionic")
                seen.add(r)
                continue
            partner = int(np.argmin(np.abs(characters - characters[r].conj()).max(axis=1)))
            classes.append((r, partner))
            types.append("complex")
            seen.update((r, partner))

        names = self.irrep_names
        if names is None:
            names = tuple(f"ρ{r}" for r in range(len(irreps)))
        if len(names) != len(irreps) or not all(isinstance(s, str) for s in names):
            raise ValueError(f"irrep_names must be {len(irreps)} strings, got {names!r}")
        elements = self.element_names
        if elements is None:
            elements = tuple(str(g) for g in range(N))
        if len(elements) != N or not all(isinstance(s, str) for s in elements):
            raise ValueError(f"element_names must be {N} strings, got {elements!r}")

        set_("table", _read_only(table))
        set_("irreps", tuple(irreps))
        set_("irrep_names", tuple(names))
        set_("element_names", tuple(elements))
        set_("order", N)
        set_("identity", e)
        set_("inverse", _read_only(inverse))
        set_("dims", dims)
        set_("characters", _read_only(characters))
        set_("frobenius_schur", tuple(int(v) for v in fs))
        set_("irrep_classes", tuple(classes))
        set_("class_types", tuple(types))
        set_("class_dims", tuple(dims[c[0]] for c in classes))

    @property
    def num_classes(self):
        return len(self.irrep_classes)

    @property
    def is_abelian(self):
        return bool(np.array_equal(self.table, self.table.T))

    def class_names(self):
        """One label per irrep class: ``"ρ"`` or ``"ρ/ρ̄"`` from ``irrep_names``."""
        return ["/".join(self.irrep_names[r] for r in c) for c in self.irrep_classes]

    def __repr__(self):
        return f"FiniteGroup({self.name}, order={self.order}, irrep dims={list(self.dims)})"


def cyclic(n):
    """The cyclic group Z/n: elements ``0, …, n−1``, ``a·b = a + b mod n``.

    Irrep ``m`` (``m = 0, …, n−1``) is ``ρ_m(a) = e^{2πi am/n}``, so that ``fourier(x, cyclic(n))[m]`` is
    ``dft.dft(x)[m]``. ``ρ_0`` and (``n`` even) ``ρ_{n/2}`` are real; ``ρ_m`` and ``ρ_{n−m}`` form a complex pair.
    """
    n = check_int(n, "n")
    a = np.arange(n)
    table = (a[:, None] + a[None, :]) % n
    irreps = []
    for m in range(n):
        if (2 * m) % n == 0:
            irreps.append(np.cos(np.pi * (2 * m // n) * a).reshape(n, 1, 1).round())
        else:
            irreps.append(np.exp(2j * np.pi * ((a * m) % n) / n).reshape(n, 1, 1))
    G = FiniteGroup(table, tuple(irreps), name=f"Z{n}", irrep_names=tuple(f"χ{m}" for m in range(n)),
                    element_names=tuple(str(g) for g in a))
    object.__setattr__(G, "_by_fft", True)     # fourier and class_component take the FFT (kept by pickle)
    return G


def _rotation(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def dihedral(n):
    """The dihedral group D_n of order ``2n``: element ``a + n·b`` is ``r^a s^b`` (``r`` a rotation by
    ``2π/n``, ``s`` a reflection, ``s r s = r⁻¹``), so ``r^a s^b · r^c s^d = r^{a + (−1)^b c} s^{b+d}``.

    Irreps, all real: ``A1`` (trivial), ``A2`` (``s ↦ −1``), for even ``n`` also ``B1`` (``r ↦ −1``) and
    ``B2`` (``r, s ↦ −1``), and the 2-dim ``E_m``, ``1 ≤ m < n/2``: ``r ↦`` rotation by ``2πm/n``,
    ``s ↦ diag(1, −1)``.
    """
    n = check_int(n, "n")
    a, b = np.arange(2 * n) % n, np.arange(2 * n) // n
    sign = 1 - 2 * b
    table = ((a[:, None] + sign[:, None] * a[None, :]) % n) + n * (b[:, None] ^ b[None, :])
    one = lambda values: np.asarray(values, dtype=float).reshape(2 * n, 1, 1)  # noqa: E731
    irreps, names = [one(np.ones(2 * n)), one(sign)], ["A1", "A2"]
    if n % 2 == 0:
        irreps += [one((-1.0) ** a), one((-1.0) ** (a + b))]
        names += ["B1", "B2"]
    reflection = np.diag([1.0, -1.0])
    for m in range(1, (n + 1) // 2):
        rot = _rotation(2 * np.pi * ((a * m) % n) / n)
        irreps.append(np.where(b[:, None, None] == 1, rot @ reflection, rot))
        names.append(f"E{m}")
    elements = tuple(("r" + (str(i) if i > 1 else "") if i else "") + ("s" if j else "") or "e" for i, j in zip(a, b))
    return FiniteGroup(table, tuple(irreps), name=f"D{n}", irrep_names=tuple(names), element_names=elements)


def _permutation_group(perms):
    """Table of a group of permutations (tuples), ``(p·q)(i) = p(q(i))``, and the permutation matrices."""
    index = {p: i for i, p in enumerate(perms)}
    table = np.array([[index[tuple(p[q[i]] for i in range(len(q)))] for q in perms] for p in perms])
    n = len(perms[0])
    matrices = np.zeros((len(perms), n, n))
    for g, p in enumerate(perms):
        matrices[g, list(p), range(n)] = 1.0   # P(p) e_i = e_{p(i)}
    return table, matrices


def _parity(p):
    return sum(1 for i in range(len(p)) for j in range(i + 1, len(p)) if p[i] > p[j]) % 2


# An orthonormal basis of the sum-zero vectors of R^4 in which the permutation representation of
# S4 (and A4) becomes signed permutation matrices: the three nontrivial characters of the Klein group.
_KLEIN_BASIS = np.array([[1, 1, -1, -1], [1, -1, 1, -1], [1, -1, -1, 1]], dtype=float).T / 2


def alternating4():
    """The alternating group A_4 (order 12): even permutations of ``0, 1, 2, 3`` in lexicographic order
    (the identity first), ``(p·q)(i) = p(q(i))``.

    Irreps: ``trivial``; ``ω`` and ``ω̄`` (a complex conjugate pair), ``g ↦ e^{±2πi j/3}`` through
    ``A_4 → A_4/V_4 ≅ Z/3`` with ``g ∈ V_4 c^j`` for the 3-cycle ``c = (0 1 2)``; ``standard``, the
    3-dim real representation on the sum-zero vectors of ``R^4`` (signed permutation matrices in the
    basis of the Klein group's characters).
    """
    perms = [p for p in itertools.permutations(range(4)) if _parity(p) == 0]
    table, matrices = _permutation_group(perms)
    index = {p: i for i, p in enumerate(perms)}
    klein = {index[p] for p in perms if all(p[i] != i for i in range(4))} | {index[(0, 1, 2, 3)]}
    c = index[(1, 2, 0, 3)]
    c_inverse = int(np.argmax(table[c] == index[(0, 1, 2, 3)]))
    coset = np.empty(len(perms), dtype=int)
    for g in range(len(perms)):
        h, j = g, 0
        while h not in klein:
            h, j = table[h, c_inverse], j + 1
        coset[g] = j
    omega = np.exp(2j * np.pi * coset / 3).reshape(-1, 1, 1)
    standard = _KLEIN_BASIS.T @ matrices @ _KLEIN_BASIS
    irreps = (np.ones((12, 1, 1)), omega, omega.conj(), standard)
    return FiniteGroup(table, irreps, name="A4", irrep_names=("trivial", "ω", "ω̄", "standard"),
                       element_names=tuple("".join(map(str, p)) for p in perms))


def symmetric4():
    """The symmetric group S_4 (order 24): permutations of ``0, 1, 2, 3`` in lexicographic order,
    ``(p·q)(i) = p(q(i))``. All five irreps are real: ``trivial``, ``sign``, the 2-dim ``E`` (through
    ``S_4 → S_3``, the action on the three ways to split ``{0,1,2,3}`` into pairs), ``standard``
    (3-dim, on the sum-zero vectors of ``R^4``) and ``standard⊗sign``.
    """
    perms = list(itertools.permutations(range(4)))
    table, matrices = _permutation_group(perms)
    sign = np.array([1.0 - 2 * _parity(p) for p in perms]).reshape(-1, 1, 1)
    pairings = [frozenset({frozenset({0, 1}), frozenset({2, 3})}), frozenset({frozenset({0, 2}), frozenset({1, 3})}),
                frozenset({frozenset({0, 3}), frozenset({1, 2})})]
    on_pairings = np.zeros((24, 3, 3))
    for g, p in enumerate(perms):
        for i, pairing in enumerate(pairings):
            image = frozenset(frozenset(p[v] for v in pair) for pair in pairing)
            on_pairings[g, pairings.index(image), i] = 1.0
    triangle = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]]).T / np.array([math.sqrt(2), math.sqrt(6)])
    E = triangle.T @ on_pairings @ triangle
    standard = _KLEIN_BASIS.T @ matrices @ _KLEIN_BASIS
    irreps = (np.ones((24, 1, 1)), sign, E, standard, standard * sign)
    return FiniteGroup(table, irreps, name="S4", irrep_names=("trivial", "sign", "E", "standard", "standard⊗sign"),
                       element_names=tuple("".join(map(str, p)) for p in perms))


_GOLDEN = (1 + math.sqrt(5)) / 2


def _icosahedron_rotations():
    """The 60 rotations of the icosahedron whose vertices are the cyclic shifts of ``(0, ±1, ±φ)``, each with
    the permutation it makes of the icosahedron's five frames (triples of mutually orthogonal 2-fold axes).

    The rotation group acts simply transitively on directed edges, so the rotations are the maps taking one
    directed edge ``(v, w)``, with ``v × w``, to each of the 60 directed edges. The 2-fold axes are the edge
    midpoints (15 up to sign); each is orthogonal to exactly two others, which makes the five frames.
    """
    vertices = np.array([np.roll([0.0, s * 1.0, t * _GOLDEN], shift)
                         for shift in range(3) for s in (1, -1) for t in (1, -1)])
    gaps = np.linalg.norm(vertices[:, None] - vertices[None], axis=-1)
    edges = [(i, j) for i in range(12) for j in range(12) if abs(gaps[i, j] - 2.0) < 1e-9]   # edge length 2
    frame = lambda i, j: np.stack([vertices[i], vertices[j], np.cross(vertices[i], vertices[j])], axis=1)  # noqa: E731
    reference = np.linalg.inv(frame(*edges[0]))
    rotations = np.array([frame(i, j) @ reference for i, j in edges])
    axes = []
    for i, j in edges:
        axis = (vertices[i] + vertices[j]) / np.linalg.norm(vertices[i] + vertices[j])
        if not any(abs(abs(axis @ b) - 1) < 1e-9 for b in axes):
            axes.append(axis)
    axes = np.array(axes)
    frames = []
    for a in axes:
        members = frozenset(np.nonzero(np.abs(axes @ a) < 1e-9)[0]) | {int(np.argmax(np.abs(axes @ a)))}
        if members not in frames:
            frames.append(members)
    frame_of = {b: f for f, members in enumerate(frames) for b in members}
    permutations = [tuple(frame_of[int(np.argmax(np.abs(axes @ (R @ axes[min(members)]))))] for members in frames)
                    for R in rotations]
    return rotations, permutations


def alternating5():
    """The alternating group A_5 (order 60), the rotation group of the icosahedron: even permutations of
    ``0, …, 4`` in lexicographic order (the identity first), ``(p·q)(i) = p(q(i))``.

    All five irreps are real; they carry the Mulliken names of the icosahedral group. ``trivial``;
    ``T1``, the 3-dim rotations of the icosahedron with vertices the cyclic shifts of ``(0, ±1, ±φ)``,
    ``φ = (1 + √5)/2``, the rotation for ``g`` being the one that permutes the icosahedron's five frames
    (triples of orthogonal 2-fold axes) as ``g`` permutes ``0, …, 4``; ``T2``, the 3-dim
    ``g ↦ T1(t g t)`` for the transposition ``t = (0 1)`` (an outer automorphism: it exchanges the two
    classes of 5-cycles, on which the characters ``φ`` and ``1 − φ`` swap); ``G``, the 4-dim representation
    on the sum-zero vectors of ``R^5``; ``H``, the 5-dim representation on the weights of the ten pairs
    ``{i, j}`` that sum to zero at every point (the permutation representation on pairs minus the
    trivial and ``G``).
    """
    perms = [p for p in itertools.permutations(range(5)) if _parity(p) == 0]
    table, matrices = _permutation_group(perms)
    index = {p: i for i, p in enumerate(perms)}
    rotations, images = _icosahedron_rotations()
    T1 = np.empty((60, 3, 3))
    T1[[index[p] for p in images]] = rotations
    swap = (1, 0, 2, 3, 4)
    T2 = T1[[index[tuple(swap[p[swap[i]]] for i in range(5))] for p in perms]]
    helmert = np.zeros((5, 4))
    for j in range(4):
        helmert[: j + 1, j], helmert[j + 1, j] = 1.0, -(j + 1.0)
    helmert /= np.linalg.norm(helmert, axis=0)
    G = helmert.T @ matrices @ helmert
    pairs = list(itertools.combinations(range(5), 2))
    on_pairs = np.zeros((60, 10, 10))
    for g, p in enumerate(perms):
        for i, pair in enumerate(pairs):
            on_pairs[g, pairs.index(tuple(sorted(p[v] for v in pair))), i] = 1.0
    incidence = np.array([[float(v in pair) for pair in pairs] for v in range(5)])
    balanced = _canonical_basis(np.eye(10) - np.linalg.pinv(incidence) @ incidence)
    H = balanced.T @ on_pairs @ balanced
    irreps = (np.ones((60, 1, 1)), T1, T2, G, H)
    return FiniteGroup(table, irreps, name="A5", irrep_names=("trivial", "T1", "T2", "G", "H"),
                       element_names=tuple("".join(map(str, p)) for p in perms))


def _quaternion_product(p, q):
    a1, b1, c1, d1 = p
    a2, b2, c2, d2 = q
    return (a1 * a2 - b1 * b2 - c1 * c2 - d1 * d2, a1 * b2 + b1 * a2 + c1 * d2 - d1 * c2,
            a1 * c2 - b1 * d2 + c1 * a2 + d1 * b2, a1 * d2 + b1 * c2 - c1 * b2 + d1 * a2)


def quaternion():
    """The quaternion group Q_8 = {±1, ±i, ±j, ±k} (elements in that order), Hamilton's product.

    Irreps: ``trivial`` and the three real characters ``χ_i``, ``χ_j``, ``χ_k`` (``χ_i`` is 1 on ``±1, ±i``
    and −1 on ``±j, ±k``), and ``quaternionic``: ``a + bi + cj + dk ↦ [[a + bi, c + di], [−c + di, a − bi]]``,
    the one quaternionic irrep of the book's groups (Frobenius–Schur indicator −1).
    """
    units = [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]
    elements = [tuple(s * v for v in u) for u in units for s in (1, -1)]
    index = {q: i for i, q in enumerate(elements)}
    table = np.array([[index[_quaternion_product(p, q)] for q in elements] for p in elements])
    axis = np.array([np.argmax(np.abs(q)) for q in elements])   # 0 for ±1, 1 for ±i, ...
    chars = [np.where((axis == 0) | (axis == t), 1.0, -1.0).reshape(8, 1, 1) for t in (1, 2, 3)]
    q = np.array(elements, dtype=float)
    two = np.empty((8, 2, 2), dtype=complex)
    two[:, 0, 0], two[:, 0, 1] = q[:, 0] + 1j * q[:, 1], q[:, 2] + 1j * q[:, 3]
    two[:, 1, 0], two[:, 1, 1] = -q[:, 2] + 1j * q[:, 3], q[:, 0] - 1j * q[:, 1]
    names = ("1", "-1", "i", "-i", "j", "-j", "k", "-k")
    return FiniteGroup(table, (np.ones((8, 1, 1)), *chars, two), name="Q8",
                       irrep_names=("trivial", "χi", "χj", "χk", "quaternionic"), element_names=names)


def _real_form(rho, seed=0):
    """A real orthogonal irrep equivalent to a complex-matrix irrep ``rho`` of real type (indicator 1).

    The realification ``R(g) = [[Re ρ, −Im ρ], [Im ρ, Re ρ]]`` is two copies of a real irrep ``π``; a
    symmetric element of its commutant (a group average of a fixed random matrix) has two eigenvalues
    of multiplicity ``d`` whose eigenspaces carry ``π``.
    """
    d = rho.shape[1]
    R = np.block([[rho.real, -rho.imag], [rho.imag, rho.real]])
    A = np.random.default_rng(check_int(seed, "seed", 0)).normal(size=(2 * d, 2 * d))
    S = np.einsum("gij,jk,glk->il", R, A + A.T, R) / rho.shape[0]
    values, vectors = np.linalg.eigh(S)
    if values[d] - values[d - 1] < 1e-6 * max(1.0, abs(values).max()):
        raise ValueError("could not split the realification of a real-type irrep (degenerate commutant)")
    Q = vectors[:, d:]
    return Q.T @ R @ Q


def direct_product(G, H):
    """The direct product ``G × H``: element ``(g, h)`` has index ``g·|H| + h``.

    Irreps are the Kronecker products ``ρ ⊗ σ`` (in the order of ``G``'s irreps, then ``H``'s), with
    Frobenius–Schur indicator ``ν_ρ ν_σ``. A product of two quaternionic irreps is of real type and is
    replaced by an equivalent real orthogonal irrep.
    """
    G, H = _check_group(G, "G"), _check_group(H, "H")
    nG, nH = G.order, H.order
    table = (G.table[:, None, :, None] * nH + H.table[None, :, None, :]).reshape(nG * nH, nG * nH)
    irreps, names = [], []
    for r, rho in enumerate(G.irreps):
        for s, sigma in enumerate(H.irreps):
            d = rho.shape[1] * sigma.shape[1]
            kron = np.einsum("gij,hkl->ghikjl", rho, sigma).reshape(nG * nH, d, d)
            if G.frobenius_schur[r] * H.frobenius_schur[s] == 1 and np.iscomplexobj(kron) and np.any(kron.imag):
                kron = _real_form(kron)
            irreps.append(kron)
            names.append(f"{G.irrep_names[r]}⊗{H.irrep_names[s]}")
    elements = tuple(f"({g},{h})" for g in G.element_names for h in H.element_names)
    return FiniteGroup(table, tuple(irreps), name=f"{G.name}×{H.name}", irrep_names=tuple(names), element_names=elements)


def _canonical_basis(vectors, rtol=1e-10):
    """An orthonormal basis of the span of the columns of ``vectors`` that depends on the span alone: Gram–Schmidt
    of its projections of the coordinate vectors, in order, skipping those already spanned.

    An SVD's singular vectors would do only where the singular values differ: for a template with ``x̂``
    orthogonal on a class they are equal, and which basis the SVD returns then moves with rounding (so would a
    random start given in it)."""
    U, S, _ = np.linalg.svd(vectors, full_matrices=False)
    U = U[:, S > rtol * S[0]]
    projections, basis = U @ U.T, []
    for column in projections.T:
        for _ in range(2):                                             # twice is enough (Kahan)
            for b in basis:
                column = column - (b @ column) * b
        norm = np.linalg.norm(column)
        if norm > 1e-6:
            basis.append(column / norm)
        if len(basis) == U.shape[1]:
            break
    return np.array(basis).T

# ----------------------------------------------------------------------------------------------
# Fourier analysis


def fourier(u, G):
    """The group Fourier transform ``û[ρ] = Σ_g u(g) ρ(g)^†`` for every irrep ``ρ`` of ``G``.

    ``u`` has shape ``(..., |G|)`` (real or complex). Returns a list, one array of shape
    ``(..., d_ρ, d_ρ)`` per irrep (real when ``u`` and ``ρ`` are real). For ``cyclic(p)``,
    ``fourier(u, G)[m][..., 0, 0] == dft.dft(u)[..., m]``.
    """
    G = _check_group(G)
    u = _check_functions(u, G, "u", complex_ok=True)
    if getattr(G, "_by_fft", False):     # cyclic(n), ρ_m(a) = e^{2πi am/n}: the FFT, for all n irreps at once
        c = np.fft.fft(u, axis=-1)[..., None, None]
        real = not np.iscomplexobj(u)
        return [c[..., m, :, :].real if real and rho.dtype.kind == "f" else c[..., m, :, :]
                for m, rho in enumerate(G.irreps)]
    return [np.einsum("...g,gji->...ij", u, rho.conj()) for rho in G.irreps]


def _check_coefficients(u_hat, G, name="u_hat"):
    if not isinstance(u_hat, (list, tuple)) or len(u_hat) != len(G.irreps):
        raise TypeError(f"{name} must be a list of {len(G.irreps)} arrays, one per irrep of {G.name} "
                        f"(as returned by groups.fourier), got {type(u_hat).__name__}")
    out = []
    for r, (block, d) in enumerate(zip(u_hat, G.dims)):
        block = real_array(block, f"{name}[{r}]", complex_ok=True)
        if block.ndim < 2 or block.shape[-2:] != (d, d):
            raise ValueError(f"{name}[{r}] must have shape (..., {d}, {d}), got {block.shape}")
        out.append(block)
    if len({b.shape[:-2] for b in out}) != 1:
        raise ValueError(f"{name} arrays must share their leading (batch) shape")
    return out


def inverse_fourier(u_hat, G, *, real=True):
    """The inverse transform ``u(g) = (1/|G|) Σ_ρ d_ρ tr(ρ(g) û[ρ])``; shape ``(..., |G|)``.

    With ``real=True`` (default) the real part is returned: the coefficients of a real function
    give a real function up to rounding.
    """
    G = _check_group(G)
    u_hat = _check_coefficients(u_hat, G)
    u = sum(d * np.einsum("gij,...ji->...g", rho, block) for rho, d, block in zip(G.irreps, G.dims, u_hat))
    u = u / G.order
    return u.real if real else u


def class_power(u, G):
    """The power of ``u`` per irrep class, ``(1/|G|) Σ_{ρ∈c} d_ρ ‖û[ρ]‖_F²``: shape ``(..., num_classes)``.

    The classes' powers sum to ``‖u‖²`` (Plancherel), and the power of class ``c`` is
    ``‖class_component(u, G, [c])‖²``.
    """
    G = _check_group(G)
    u_hat = fourier(u, G)
    per_irrep = [d * np.sum(np.abs(block) ** 2, axis=(-2, -1)) / G.order for d, block in zip(G.dims, u_hat)]
    return np.stack([sum(per_irrep[r] for r in c) for c in G.irrep_classes], axis=-1)


def class_component(u, G, classes):
    """The component of ``u`` (shape ``(..., |G|)``) in the isotypic subspace of the given irrep classes:
    the inverse transform of ``û`` with every other irrep's coefficient set to zero."""
    G = _check_group(G)
    classes = _check_classes(classes, G, "classes")
    keep = {r for c in classes for r in G.irrep_classes[c]}
    if getattr(G, "_by_fft", False):                # cyclic(n): by the FFT and its inverse
        u = _check_functions(u, G, "u", complex_ok=True)
        kept = np.fft.ifft(np.where(np.isin(np.arange(G.order), list(keep)), np.fft.fft(u, axis=-1), 0), axis=-1)
        return kept if np.iscomplexobj(u) else kept.real
    u_hat = [block if r in keep else np.zeros_like(block) for r, block in enumerate(fourier(u, G))]
    return inverse_fourier(u_hat, G, real=not np.iscomplexobj(u))


def translates(x, G):
    """All translates of ``x``: row ``g`` is ``g·x``, ``(g·x)(a) = x(g⁻¹a)``; shape ``(|G|, |G|)``.

    For ``cyclic(p)``, ``g·x = numpy.roll(x, g)``.
    """
    G = _check_group(G)
    x = real_array(x, "x")
    if x.shape != (G.order,):
        raise ValueError(f"x must be a 1-D template of length |G| = {G.order}, got shape {x.shape}")
    return x[G.table[G.inverse]]

