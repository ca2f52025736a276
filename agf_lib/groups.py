"""Composition over a finite group, one irreducible representation at a time (chapter 09).

The paper's modular-addition section ends with two extensions left for future work: ``k`` summands
with ``σ(z) = z^k``, and composition over an arbitrary finite group ``G``. This module holds both, in
plain NumPy.

**Groups.** A :class:`FiniteGroup` is a multiplication table (``table[a, b]`` is the index of
``a·b``) together with a complete list of irreducible unitary representations (irreps) ``ρ``, each
an array of shape ``(|G|, d_ρ, d_ρ)``. Irreps of real type are given as real orthogonal matrices.
Each irrep has a Frobenius–Schur indicator ``ν_ρ = (1/|G|) Σ_g χ_ρ(g²)``: ``1`` real, ``0`` complex,
``−1`` quaternionic. The theory works with *irrep classes*: a complex irrep together with its
conjugate, or a real or quaternionic irrep on its own. These are the irreducible representations
over the reals, and a real function's Fourier coefficients on a class determine each other.
The constructors: :func:`cyclic`, :func:`dihedral`, :func:`alternating4`, :func:`symmetric4`,
:func:`alternating5` (the icosahedral rotation group, order 60, irreps of dimension 1, 3, 3, 4, 5),
:func:`quaternion` and :func:`product`.

**Fourier transform** (the convention of :mod:`agf_lib.dft`, extended to matrices):

    x̂[ρ] = Σ_g x(g) ρ(g)^†,      x(g) = (1/|G|) Σ_ρ d_ρ tr(ρ(g) x̂[ρ]),
    Σ_g x(g) conj(y(g)) = (1/|G|) Σ_ρ d_ρ tr(x̂[ρ] ŷ[ρ]^†)                        (Plancherel).

Translation ``(g·x)(a) = x(g⁻¹a)`` acts as ``(g·x)^[ρ] = x̂[ρ] ρ(g)^†`` and the convolution
``(φ * ψ)(h) = Σ_g φ(g) ψ(g⁻¹h)`` as ``(φ * ψ)^[ρ] = ψ̂[ρ] φ̂[ρ]``. For ``cyclic(p)``, irrep ``m`` is
``ρ_m(a) = e^{2πi am/p}`` and ``x̂[ρ_m] = dft(x)[m]``; ``(a·x)[j] = x[j − a] = numpy.roll(x, a)[j]``.

**The task and the network.** A template ``x ∈ R^G`` encodes ``g`` by its translate ``g·x``. The
dataset holds all ``|G|^k`` tuples ``(g_1, …, g_k)`` with input ``[g_1·x, …, g_k·x]`` and target
``(g_1⋯g_k)·x``; the loss is the book's ``E[½‖y − f‖²]`` (mean over tuples, sum over the ``|G|``
outputs). Neuron ``i`` has ``θ_i = (u_i^(1), …, u_i^(k), w_i)`` and computes
``f_i = w_i (Σ_j ⟨u_i^(j), g_j·x⟩)^k``, homogeneous of degree ``κ = k + 1``. For ``cyclic(p)`` and
``k = 2`` this is :class:`agf_lib.modular.QuadraticModularNetwork` on :func:`agf_lib.modular.dataset`.

**Utility in the Fourier domain** (the group version of the paper's Lemma F.2, derived in
chapter 09). For a centred template and a residual ``(g_1⋯g_k)·r`` (``r`` centred), only the
term of ``(Σ_j z_j)^k`` that holds every ``z_j`` once survives the mean over tuples, and

    U(θ) = (k!/|G|^{k+1}) Σ_ρ d_ρ Re tr(x̂^† û^(k) x̂^† û^(k−1) ⋯ x̂^† û^(1) ŵ^† r̂)[ρ].

It splits over irrep classes, and so does ``‖θ‖²``; as ``U`` has degree ``k + 1 > 2``, its maximum on
the unit sphere is the largest of the per-class maxima. Hölder's inequality for Schatten norms,
``|tr(A_1⋯A_{k+1})| ≤ Π ‖A_i‖_{S_{k+1}}``, with ``‖x̂^† B‖_{S_{k+1}} ≤ ‖x̂‖_op ‖B‖_{S_{k+1}}``, and the
ratio ``‖B‖_{S_{k+1}}/‖B‖_F`` (at most 1, and at most ``2^{1/(k+1) − 1/2}`` for quaternionic ``B``, whose
singular values come in pairs) gives the per-class maximum (attained by rank-one, resp.
quaternionic-rank-one, coefficients aligned with the top singular vectors of ``r̂``'s class):

    Ū*_c = k! (k+1)^{−(k+1)/2} |G|^{−(k+1)/2} (C_c d_c)^{−(k−1)/2} ‖x̂[ρ]‖_op^k ‖r̂[ρ]‖_op,

with ``C_c = 1`` for a real irrep and ``C_c = 2`` for a complex pair or a quaternionic irrep. For
``r = x`` this is the criterion ``‖x̂[ρ]‖_op^{k+1}/(C_ρ d_ρ)^{(k−1)/2}`` of Marchetti et al. (2026); the
tests check it against numerical maximization on the sphere, quaternionic irreps included. For
``cyclic(p)`` and ``k = 2`` it is Theorem F.3: ``√(2/(27p³)) |x̂[ξ]|³``.

**Levels and jump times** (assuming, as the follow-up does, that each step fits a whole irrep
class): classes are learned in order of decreasing ``Ū*_c``; learning class ``c`` lowers the loss by
half the target's power in it, ``½ (1/|G|) Σ_{ρ∈c} d_ρ ‖x̂[ρ]‖_F²``; and the utility of a new neuron
keeps its form with the learned classes removed from ``r`` (the updated utility of Appendix F).
Chapter 09 tests when this holds, and :func:`levels` refines it (an irrep whose ``x̂[ρ]`` has unequal
singular values is learned piece by piece, :func:`pieces`).

**Where the piece staircase is the α → 0 limit, measured.** The piece staircase (:func:`learning_steps`,
:func:`levels`, :func:`agf_staircase`, :func:`limit_staircase` with ``whole_classes=False``) assumes one step
of pieces at a time, each starting from neurons of norm α. With the adaptive rate (κ = 3) every neuron
aligned with the first step reaches norm one with it, and the active neurons then fit some later pieces
through the cost phase, a fixed gradient-flow time after the first jump: in ``t/log(1/α)`` such a piece's
drop moves onto an earlier one as α → 0. Limit studies of gradient flow (``tests/test_limits.py``,
:func:`agf_lib.limits.limit_study`) find, for ``x̂[E]`` with singular values 2 and 1: on ``D3`` and ``D5``
with ``E`` alone, pieces (1,1), (1,2) and (2,1) at the piece staircase's times (within 2% and 6%), and (2,2) a fixed time
after (2,1), merged with it; on ``D3`` with ``x̂[A2] = 1.26`` added (chapter 09's template), every drop after
the first merged with the first. No rule derived here says which pieces merge; the limit of what AGF's cost
steps fit is computed by :func:`agf_lib.limits.agf_limit` (chapter 09's template: every jump of numerical
AGF extrapolates to the first). The levels of the piece staircase hold at every α wherever its plateaus last.

**Exact fits** (``k = 2``). The cross term of a neuron is one product, so neurons that fit an irrep class exactly
form a bilinear algorithm for ``(ρ(a), ρ(b)) ↦ ρ(a)ρ(b)`` whose squares cancel: their number is at least its
tensor rank. :func:`class_neurons` builds ``d³ + d`` of them for a real class and six for a complex pair;
:func:`least_squares_fit` searches for fewer.

**The population loss over all tuples, in structured form** (what the engines evaluate on :func:`dataset`).
Write ``U_i^(j)(g) = ⟨u_i^(j), g·x⟩`` and ``W_i(g) = ⟨w_i, g·x⟩``, functions on ``G`` (``S`` the matrix of
translates, row ``g`` is ``g·x``: ``U = uSᵀ``). On the tuple ``t = (g_1, …, g_k)`` the pre-activation is the sum
of one function per slot, ``z_it = Σ_j U_i^(j)(g_j)``; the target is ``y_t = (g_1⋯g_k)·x``, so ``⟨w_i, y_t⟩ =
W_i(g_1⋯g_k)`` and ``‖y_t‖ = ‖x‖``. For the network ``Σ_i c_i f_i`` (weights ``c_i``), ``G_ii' = ⟨w_i, w_i'⟩``,
``n = |G|^k``, and

    E_ii' = Σ_t z_it^k z_i't^k,    D_i(h) = Σ_{t: g_1⋯g_k = h} z_it^k,    T_i = Σ_h D_i(h) W_i(h),
    B_i^(j)(g) = Σ_{t: g_j = g} z_it^{k−1} W_i(g_1⋯g_k),    Q_i^(j)(g) = Σ_i' c_i' G_ii' Σ_{t: g_j = g} z_it^{k−1} z_i't^k,

expanding ``‖y_t − f_t‖²`` and ``⟨w_i, r_t⟩ = W_i(g_1⋯g_k) − Σ_i' c_i' G_ii' z_i't^k`` gives the loss, each
utility at the residual and its gradient exactly:

    L = ½‖x‖² − (1/n) Σ_i c_i T_i + (1/2n) Σ_ii' c_i c_i' G_ii' E_ii',     U_i = (T_i − Σ_i' c_i' G_ii' E_ii')/n,
    ∇_{u_i^(j)} U_i = (k/n) (B_i^(j) − Q_i^(j)) S,      ∇_{w_i} U_i = (D_i S − Σ_i' c_i' E_ii' w_i')/n.

Each sum over tuples reduces to sums over one slot. Expanding ``z^a = Σ_{|α|=a} (a!/α!) Π_j U^(j)(g_j)^{α_j}``,
an unconstrained sum over tuples factorizes into per-slot moments ``Σ_g U_i^(j)(g)^a U_i'^(j)(g)^b``: ``E`` is a
sum of entrywise products of ``H × H`` moment matrices, and ``Q^(j)`` keeps slot ``j``'s factors as functions of
``g``. The sums tied to the product ``g_1⋯g_k`` are convolutions: ``D̂ = Σ_{|α|=k} (k!/α!) Â_k ⋯ Â_1`` with
``Â_j`` the transform of ``U^(j)^{α_j}``, and a marginal ``Σ_{l, r} L(l) R(r) W(l g r)`` (``L``, ``R`` the
convolutions of the slots before and after ``j``) has the transform ``R̂^† Ŵ L̂^†``. Only the projections of
``B − Q`` and ``D`` on the column space of ``S`` enter (they are multiplied by ``S``, and ``W`` lies in it), so
the transforms are needed on the irreps where ``x̂[ρ] ≠ 0`` only, and each sum over ``g`` runs over an
orthonormal basis of the space its functions occupy: the column space of ``S`` for ``U`` (dimension
``Σ_ρ d_ρ rank x̂[ρ]``, twice the number of frequencies for modular addition) and the span of ``a``-fold
products of it for ``U^a`` (numerical ranks at :func:`numpy.linalg.matrix_rank`'s tolerance). An evaluation
then costs ``O(H²|G|)`` (``G`` and the ``w``-gradient), ``O(H² r)`` for the moments over spaces of dimension
``r ≤ |G|`` and ``O(H|G| r)`` for the functions, and holds ``O(H² + H|G|)`` numbers, against ``O(kH|G|^{k+1})``
operations and ``(H, |G|^k)`` arrays for the dense closed forms. For ``k = 2`` the sums are written out by
hand, and where the template's span is small the ``H × H`` matrices are not formed at all: ``z_i²`` has
coordinates ``Z_i`` on the ``D = 2 dim B_2 + (dim B_1)²`` functions ``B_2(a)``, ``B_1(a)B_1(b)``, ``B_2(b)`` of the
pair (Gram matrix ``Γ``), so ``E_ii' = Z_i Γ Z_i'ᵀ``, the output is ``Σ_d φ_d M_d`` with ``M = Zᵀ diag(c) w``,
every sum over ``i'`` above is a product with ``M`` (``Σ_i' c_i' E_ii' w_i' = Z_i Γ M``) and ``Q_i(g) =
Σ_h z_i(g, h) ⟨w_i, f(g, h)⟩``: ``O(H D |G|)``, taken when ``3D < 2H`` (modular addition with three
frequencies: ``D = 2·11 + 36`` at ``p = 47``). The networks recognize the dataset by comparing it, row by row, with the one its first rows' template
generates (anything else, a subset or a permutation of the rows, noisy targets, is evaluated densely), and
``structured`` chooses (:class:`CompositionNetwork`). ``tests/test_structured.py`` checks the structured
evaluation against the dense one to 1e-12; ``benchmarks/bench_scale.py`` measures the speed.

**The setting's contract** (as in every setting module): the network :class:`CompositionNetwork`,
:func:`initial_theta`, the data :func:`dataset`, the closed-form staircase at finite α in GF time
:func:`agf_staircase`, and its α → 0 limit in rescaled time :func:`limit_staircase`.
"""

from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import KW_ONLY, dataclass, field

import numpy as np
from scipy.optimize import least_squares

from .escape import escape_times
from .network import TwoLayerNetwork
from .results import Staircase
from .validation import real_array, check_bool, check_positive, check_int, check_centred

__all__ = [
    "FiniteGroup", "cyclic", "dihedral", "alternating4", "symmetric4", "alternating5", "quaternion", "product",
    "fourier", "inverse_fourier", "class_power", "class_component", "translates", "dataset",
    "CompositionNetwork", "initial_theta", "utility", "class_utilities", "max_utility",
    "utility_maximizer", "class_neurons", "least_squares_fit", "learning_order", "Piece", "pieces",
    "piece_outputs", "piece_fractions", "learning_steps", "levels", "agf_staircase", "limit_staircase",
    "output_power", "STRUCTURED_MIN_ROWS",
]

_TOL = 1e-9              # tolerance for user-supplied tables and irreps (the library's own hold to ~1e-15)
_MAX_DATASET_ENTRIES = 2e8


# ----------------------------------------------------------------------------------------------
# input validation


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


def _check_k(k):
    return check_int(k, "k", 1)


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
    return FiniteGroup(table, tuple(irreps), name=f"Z{n}", irrep_names=tuple(f"χ{m}" for m in range(n)),
                       element_names=tuple(str(g) for g in a))


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


def product(G, H):
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
    u_hat = [block if r in keep else np.zeros_like(block) for r, block in enumerate(fourier(u, G))]
    return inverse_fourier(u_hat, G, real=not np.iscomplexobj(u))


# ----------------------------------------------------------------------------------------------
# the composition task


def translates(x, G):
    """All translates of ``x``: row ``g`` is ``g·x``, ``(g·x)(a) = x(g⁻¹a)``; shape ``(|G|, |G|)``.

    For ``cyclic(p)``, ``g·x = numpy.roll(x, g)``.
    """
    G = _check_group(G)
    x = real_array(x, "x")
    if x.shape != (G.order,):
        raise ValueError(f"x must be a 1-D template of length |G| = {G.order}, got shape {x.shape}")
    return x[G.table[G.inverse]]


def dataset(x, G, *, k=2):
    """All ``|G|^k`` tuples ``(g_1, …, g_k) ↦ (g_1⋯g_k)·x`` for a centred template ``x``.

    Returns ``X`` of shape ``(|G|^k, k|G|)``, row ``Σ_j g_j |G|^{k−j}`` (the first summand varies
    slowest) holding ``[g_1·x, …, g_k·x]``, and ``Y`` of shape ``(|G|^k, |G|)`` holding
    ``(g_1⋯g_k)·x``. For ``cyclic(p)`` and ``k = 2`` this is :func:`agf_lib.modular.dataset`.
    """
    G = _check_group(G)
    x, k = _check_template(x, G), _check_k(k)
    N = G.order
    if N**k * (k + 1) * N > _MAX_DATASET_ENTRIES:
        raise ValueError(f"k = {k} summands over {G.name} give {N}^{k} tuples, too many to hold; use a smaller k")
    shifts = translates(x, G)
    tuples = np.indices((N,) * k).reshape(k, -1)
    composed = tuples[0]
    for g in tuples[1:]:
        composed = G.table[composed, g]
    return np.concatenate([shifts[g] for g in tuples], axis=1), shifts[composed]


# ----------------------------------------------------------------------------------------------
# the population loss in structured form (module docstring, "The population loss over all tuples")


class _Transform:
    """Fourier transforms of real functions on a group restricted to some of its irreps, as lists of blocks
    (private).

    ``forward(u)`` maps ``u`` of shape ``(..., N)`` to a list with one array of shape ``(..., R, d, d)`` per irrep
    dimension ``d`` (the ``R`` irreps of that dimension kept), ``û[ρ] = Σ_g u(g) ρ(g)^†``, one matrix product;
    ``inverse`` is ``Σ_ρ (d_ρ/N) tr(ρ(g) û[ρ])`` over the irreps kept, the real part: ``u`` itself when ``u`` has
    no component on the others.
    """

    def __init__(self, N, irreps):
        self.N = N
        self.forward_maps, self.inverse_maps, self.shapes = [], [], []
        for d in sorted({rho.shape[1] for rho in irreps}):
            stack = np.stack([rho for rho in irreps if rho.shape[1] == d])          # (R, N, d, d)
            R = stack.shape[0]
            # û[r, i, j] = Σ_g u(g) conj(ρ_r(g)[j, i]);  u(g) = (d/N) Σ_{r, i, j} ρ_r(g)[i, j] û[r, j, i]
            self.forward_maps.append(np.conj(stack).transpose(1, 0, 3, 2).reshape(N, R * d * d))
            self.inverse_maps.append((d / N) * stack.transpose(0, 3, 2, 1).reshape(R * d * d, N))
            self.shapes.append((R, d, d))

    def forward(self, u):
        return [(u @ F).reshape(*u.shape[:-1], *shape) for F, shape in zip(self.forward_maps, self.shapes)]

    def inverse(self, blocks):
        return sum((b.reshape(*b.shape[:-3], -1) @ B).real for b, B in zip(blocks, self.inverse_maps))

    def identity(self):
        """The coefficients of the unit of convolution (identity matrices)."""
        return [np.broadcast_to(np.eye(d), (R, d, d)) for R, d, _ in self.shapes]

    @staticmethod
    def product(A, B):
        if A is None or B is None:
            return None
        return [a * b if a.shape[-1] == 1 else a @ b for a, b in zip(A, B)]

    @staticmethod
    def adjoint(A):
        return [np.conj(a).swapaxes(-1, -2) for a in A]


def _block_sum(terms):
    """The sum of block lists, skipping ``None`` (an empty term); ``None`` if all are."""
    terms = [t for t in terms if t is not None]
    return [sum(parts) for parts in zip(*terms)] if terms else None


def _slot_sum(table, ml, k):
    """``out[A][B] = Σ table[A − a][B − b] ⊙ ml[a][b]`` for ``A, B ≤ k`` (entrywise; ``None`` is an empty sum)."""
    out = [[None] * (k + 1) for _ in range(k + 1)]
    for A in range(k + 1):
        for B in range(k + 1):
            if table[A][B] is None:
                continue
            for a in range(k + 1 - A):
                for b in range(k + 1 - B):
                    term = table[A][B] * ml[a][b]
                    out[A + a][B + b] = term if out[A + a][B + b] is None else out[A + a][B + b] + term
    return out


def _hadamard_product(K, M, C):
    """``(K ⊙ M) @ C`` for an ``(H, H)`` matrix ``K`` and ``M`` a number, a row ``(1, H)``, a column ``(H, 1)``
    or an ``(H, H)`` matrix, without forming ``K ⊙ M`` unless ``M`` is a matrix."""
    M = np.asarray(M)
    if M.ndim == 0:
        return M * (K @ C)
    if M.shape[0] == 1 and M.shape[1] != 1:
        return K @ (M[0][:, None] * C)
    if M.shape[1] == 1 and M.shape[0] != 1:
        return M * (K @ C)
    return (K * M) @ C


class _StructuredLoss:
    """The population loss of ``Σ_i c_i w_i (Σ_j ⟨u_i^(j), g_j·x⟩)^k`` over all ``N^k`` tuples ``(g_1, …, g_k)``
    with targets ``(g_1⋯g_k)·x``, each neuron's utility at its residual and their gradients, from functions
    on ``G`` alone (module docstring), never the ``(N^k, N)`` outputs (private).

    ``S`` holds the translates (row ``g`` is ``g·x``, :func:`translates`), ``irreps`` the group's irreps and
    ``identity`` the index of its identity. The functions ``U = ⟨u, g·x⟩`` lie in the column space of ``S``, and
    their powers ``U^a`` in the span of ``a``-fold products of it: orthonormal bases ``B_a`` of these spaces carry
    the sums over ``g``, ``dim B_a ≤ N`` terms each; the Fourier transforms keep the irreps on which ``x̂`` is
    nonzero, as every transform the gradient inverts holds ``Ŵ`` as a factor (numerical rank and support, with
    :func:`numpy.linalg.matrix_rank`'s tolerance ``N ε σ_max``).
    """

    def __init__(self, S, k, irreps, identity):
        self.S, self.k = S, k
        N = self.N = S.shape[0]
        self.n = float(N) ** k
        self.half_norm2 = 0.5 * float(S[0] @ S[0])
        self.fact = [float(math.factorial(a)) for a in range(k + 1)]
        left, sigma, _ = np.linalg.svd(S)
        tol = sigma[0] * N * np.finfo(float).eps
        x = S[identity]
        support = [rho for rho in irreps
                   if np.linalg.norm(np.einsum("g,gji->ij", x, np.conj(rho)), 2) > tol]
        self.transform = _Transform(N, support)
        self.ones_hat = self.transform.forward(np.ones(N))
        rank = int(np.sum(sigma > tol)) if sigma[0] > 0 else 0
        self.bases = [None, left[:, :rank].T.copy()]                     # B_1: the column space of S
        for a in range(2, k + 1):
            self.bases.append(self._products(self.bases[a - 1], self.bases[1]))
        if rank == N:
            self.bases[1] = None
        B1 = self.bases[1]
        self.S_reduced = S.T.copy() if B1 is None else S.T @ B1.T        # U = u @ S_reduced @ B_1
        self.S_back = S if B1 is None else B1 @ S                         # f @ S = (f @ B_1ᵀ) @ S_back
        if k == 2:                                                         # what _evaluate2 reads
            eye = np.eye(N)
            B1 = eye if B1 is None else B1
            B2 = eye if self.bases[2] is None else self.bases[2]
            self.r, self.s = B1.shape[0], B2.shape[0]
            self.B1, self.B2 = B1, B2
            self.B12 = np.concatenate([B1, B2]).T                          # U² in B_1 (for Σ U U'²) and in B_2
            self.B21 = B2 @ B1.T
            self.B21_stack = np.concatenate([B2, B1])                      # expands (U² | U) coordinates
            # the functions z² span on pairs: B_2(a), B_1(a) B_1(b), B_2(b), and their Gram matrix
            r, s, sigma, tau = self.r, self.s, B1.sum(1), B2.sum(1)
            self.tau = tau
            AX = np.einsum("mp,q->mpq", self.B21, sigma).reshape(s, r * r)
            XB = np.einsum("p,mq->pqm", sigma, self.B21).reshape(r * r, s)
            self.pair_gram = np.block([[N * np.eye(s), AX, np.outer(tau, tau)],
                                       [AX.T, np.eye(r * r), XB],
                                       [np.outer(tau, tau), XB.T, N * np.eye(s)]])
            self.ones1 = B1.sum(1)                                         # the constant function in B_1
            F = self.transform
            self.forward1 = [B1 @ M for M in F.forward_maps]               # from B_1 coordinates
            self.inverse1 = [M @ B1.T for M in F.inverse_maps]             # into B_1 coordinates

    def _products(self, A, B):
        """An orthonormal basis (rows) of the span of the entrywise products of the rows of ``A`` and ``B``
        (``None``, meaning every function, once it spans all ``N`` dimensions)."""
        N = self.N
        if A is None or B is None or A.shape[0] * B.shape[0] < 1:
            return None
        products = (A[:, None, :] * B[None, :, :]).reshape(-1, N)
        _, sigma, right = np.linalg.svd(products, full_matrices=False)
        rank = int(np.sum(sigma > sigma[0] * max(products.shape) * np.finfo(float).eps)) if sigma[0] > 0 else 0
        return None if rank == N else right[:rank].copy()

    def _coordinates(self, f, a):
        """``f`` in the basis ``B_a`` (``f`` itself when ``B_a`` is every function)."""
        B = self.bases[a]
        return f if B is None else f @ B.T

    def _expand(self, c, a):
        B = self.bases[a]
        return c if B is None else c @ B

    def _forward1(self, coords):
        """The transform of functions given by their coordinates in ``B_1`` (shape ``(..., r)``)."""
        return [(coords @ M).reshape(*coords.shape[:-1], *shape)
                for M, shape in zip(self.forward1, self.transform.shapes)]

    def _inverse1(self, blocks):
        """The ``B_1`` coordinates of the inverse transform."""
        return sum((b.reshape(*b.shape[:-3], -1) @ M).real for b, M in zip(blocks, self.inverse1))

    def _loss_and_utilities(self, w, E, T, weights, n):
        """From the moments ``E_ii' = Σ_t z_i^k z_i'^k`` and ``T_i = Σ_t z_i^k ⟨w_i, y_t⟩``: the output Gram
        ``G = w wᵀ``, the loss and the utilities at the residual (k = 2 and general k share them)."""
        G = w @ w.T
        GE = G * E
        loss = self.half_norm2 + (0.5 * (weights @ GE @ weights) - weights @ T) / n
        return G, loss, (T - GE @ weights) / n

    def _evaluate2(self, theta, weights, gradient):
        """:meth:`evaluate` for ``k = 2``, its sums written out (module docstring), the two slots side by side
        (index 0: ``U``, 1: ``V``)."""
        N, n, H, r, s = self.N, self.n, theta.shape[0], self.r, self.s
        coords = (theta.reshape(3 * H, N) @ self.S_reduced).reshape(H, 3, r)
        C = coords[:, :2].transpose(1, 0, 2)                                # (2, H, r): U and V in B_1
        Cw = coords[:, 2]
        UV = C @ self.B1                                                     # (2, H, N)
        squares = UV * UV
        proj = squares @ self.B12                                            # U², V² in B_1 and in B_2
        C21, C2 = proj[..., :r], proj[..., r:]
        sums, sums2 = UV.sum(2), squares.sum(2)                              # (2, H): Σ_g U_i, Σ_g U_i², ...
        (su, sv), (su2, sv2) = sums, sums2
        F = self.transform
        Uh, Vh, Wh = ([b[:, l] for b in self._forward1(coords)] for l in range(3))   # on the support of x̂
        D = (su2 + sv2)[:, None] * self.ones1 + 2.0 * self._inverse1(F.product(Vh, Uh))   # Σ_{gh = f} z², in B_1
        T = np.einsum("ir,ir->i", D, Cw)
        w = theta[:, 2 * N :]
        if 3 * self.pair_gram.shape[0] < 2 * H:
            return self._outputs2(C, C2, UV, sums, D, T, w, Uh, Vh, Wh, Cw, weights, gradient)
        m11 = C @ C.transpose(0, 2, 1)                                       # Σ_g U_i U_i', Σ_h V_i V_i'
        m12 = C @ C21.transpose(0, 2, 1)                                     # Σ_g U_i U_i'², ...
        m22 = C2 @ C2.transpose(0, 2, 1)
        A = m12[0] * sv[:, None] + su[:, None] * m12[1]
        O = np.outer(su2, sv2)
        E = N * (m22[0] + m22[1]) + 4.0 * (m11[0] * m11[1]) + 2.0 * (A + A.T) + O + O.T   # Σ_t z_i² z_i'²
        G, loss, utilities = self._loss_and_utilities(w, E, T, weights, n)
        if not gradient:
            return loss, utilities, None
        K = G * weights[None, :]
        # B: Σ_h z_i(g, h) W_i(gh) and Σ_g z_i(g, h) W_i(gh), in B_1
        sW = Cw @ self.ones1
        B = C * sW[:, None] + np.stack([self._inverse1(F.product(F.adjoint(Vh), Wh)),
                                        self._inverse1(F.product(Wh, F.adjoint(Uh)))])
        # Q_i(g) = Σ_i' K_ii' Σ_h (U_i(g) + V_i(h)) (U_i'(g) + V_i'(h))² and its mirror, in B_1
        other, other2 = sums[::-1], sums2[::-1]
        KC = (K @ np.concatenate([C2[0], other[0][:, None] * C[0], C2[1], other[1][:, None] * C[1]], axis=1))
        KC = KC.reshape(H, 2, s + r).transpose(1, 0, 2)                    # (2, H, s + r): K U², K (ΣV ⊙ U)
        KU2 = KC[..., :s]
        X1 = np.concatenate([N * KU2, 2.0 * KC[..., s:]], axis=2) @ self.B21_stack
        X1 += (K @ other2.T).T[..., None]
        Q = ((UV * X1) @ self.B1.T + other[..., None] * (KU2 @ self.B21)
             + 2.0 * np.stack([(K * m11[1]) @ C[0], (K * m11[0]) @ C[1]])
             + np.stack([(K * m12[1]).sum(1), (K * m12[0]).sum(1)])[..., None] * self.ones1)
        rows = np.empty((H, 3, r))
        rows[:, :2] = ((2.0 / n) * (B - Q)).transpose(1, 0, 2)
        rows[:, 2] = D / n
        grad = (rows.reshape(3 * H, r) @ self.S_back).reshape(H, 3 * N)
        grad[:, 2 * N :] -= (E * (weights / n)[None, :]) @ w
        return loss, utilities, grad

    def _outputs2(self, C, C2, UV, sums, D, T, w, Uh, Vh, Wh, Cw, weights, gradient):
        """:meth:`_evaluate2` through the network's output instead of ``H × H`` Gram matrices, when the template's
        span is small: ``z_i²`` has coordinates ``Z_i`` on the functions ``B_2(a)``, ``B_1(a)B_1(b)``, ``B_2(b)``
        of the pair (Gram matrix ``Γ``), the output is ``f = Σ_d φ_d M_d`` with ``M = Zᵀ diag(c) w``, and
        ``Σ_i' c_i' E_ii' w_i' = Z_i Γ M``, ``Σ_i' c_i' G_ii' E_ii' = ⟨w_i, Z_i Γ M⟩``, ``Σ_t ‖f_t‖² = tr(MᵀΓM)``,
        ``Q_i(g) = Σ_h z_i(g, h) ⟨w_i, f(g, h)⟩``: ``O(H D |G|)`` with ``D = 2 dim B_2 + (dim B_1)²``."""
        N, n, H, r, s = self.N, self.n, w.shape[0], self.r, self.s
        (Cu, Cv), (C2u, C2v), (U, V), (su, sv) = C, C2, UV, sums
        Z = np.concatenate([C2u, 2.0 * (Cu[:, :, None] * Cv[:, None, :]).reshape(H, r * r), C2v], axis=1)
        M = Z.T @ (weights[:, None] * w)                                     # (D, N)
        GM = self.pair_gram @ M
        ZGM = Z @ GM                                                         # Σ_i' c_i' E_ii' w_i'
        loss = self.half_norm2 + (0.5 * np.einsum("dn,dn->", M, GM) - weights @ T) / n
        utilities = (T - np.einsum("in,in->i", ZGM, w)) / n
        if not gradient:
            return loss, utilities, None
        F = self.transform
        sW = Cw @ self.ones1
        B = C * sW[:, None] + np.stack([self._inverse1(F.product(F.adjoint(Vh), Wh)),
                                        self._inverse1(F.product(Wh, F.adjoint(Uh)))])
        P = w @ M.T                                                          # ⟨w_i, M_d⟩
        PA, PX, PB = P[:, :s], P[:, s : s + r * r].reshape(H, r, r), P[:, s + r * r :]
        sigma, tau = self.ones1, self.tau
        Cu21, Cv21 = Cu @ self.B21.T, Cv @ self.B21.T                        # ⟨U_i, B_2⟩, ⟨V_i, B_2⟩
        a1, b1 = PA @ self.B2, PB @ self.B2
        Xs_u, Xs_v = np.einsum("ipq,q->ip", PX, sigma), np.einsum("ipq,p->iq", PX, sigma)
        Qu = (a1 * (N * U + sv[:, None]) + (Xs_u @ self.B1 + (PB @ tau)[:, None]) * U) @ self.B1.T \
            + np.einsum("ipq,iq->ip", PX, Cv) + np.einsum("im,im->i", PB, Cv21)[:, None] * self.ones1
        Qv = (b1 * (N * V + su[:, None]) + (Xs_v @ self.B1 + (PA @ tau)[:, None]) * V) @ self.B1.T \
            + np.einsum("ipq,ip->iq", PX, Cu) + np.einsum("im,im->i", PA, Cu21)[:, None] * self.ones1
        rows = np.empty((H, 3, r))
        rows[:, :2] = ((2.0 / n) * (B - np.stack([Qu, Qv]))).transpose(1, 0, 2)
        rows[:, 2] = D / n
        grad = (rows.reshape(3 * H, r) @ self.S_back).reshape(H, 3 * N)
        grad[:, 2 * N :] -= ZGM / n
        return loss, utilities, grad

    def evaluate(self, theta, weights, *, gradient=True):
        """``(loss, utilities, gradients)`` for neurons ``theta`` (shape ``(H, (k+1)N)``) weighted by ``weights``:
        the loss ``½ E‖y − Σ_i c_i f_i‖²``, every ``U_i(θ_i; r)`` at that residual and, with ``gradient``, their
        gradients ``∇U_i`` (else None)."""
        if self.k == 2:
            return self._evaluate2(theta, weights, gradient)
        return self._evaluate(theta, weights, gradient)

    def _evaluate(self, theta, weights, gradient):
        """:meth:`evaluate` for any ``k``, by sums over the exponents of each slot (module docstring)."""
        k, N, n, fact, F = self.k, self.N, self.n, self.fact, self.transform
        H = theta.shape[0]
        coords = (theta.reshape(H * (k + 1), N) @ self.S_reduced)          # ⟨u_i^(l), g·x⟩ and ⟨w_i, g·x⟩, reduced
        UW = self._expand(coords, 1).reshape(H, k + 1, N)
        coords = coords.reshape(H, k + 1, -1)
        w = theta[:, k * N :]
        W = UW[:, k]
        # per slot: powers P[l][a] = (U^(l))^a, their coordinates C[l][a] in B_a, moments m[l][a][b]/(a! b!)
        P, C, m = [], [], []
        for l in range(k):
            U = UW[:, l]
            powers = [None, U]
            for _ in range(2, k + 1):
                powers.append(powers[-1] * U)
            Cl = [None, coords[:, l]] + [self._coordinates(powers[a], a) for a in range(2, k + 1)]
            ml = [[None] * (k + 1) for _ in range(k + 1)]
            ml[0][0] = float(N)
            sums = [None] + [p.sum(1) for p in powers[1:]]
            for a in range(1, k + 1):
                ml[0][a] = sums[a][None, :] / fact[a]
                ml[a][0] = sums[a][:, None] / fact[a]
                ml[a][a] = (Cl[a] @ Cl[a].T) / (fact[a] * fact[a])
                for b in range(a + 1, k + 1):
                    ml[a][b] = (Cl[a] @ self._coordinates(powers[b], a).T) / (fact[a] * fact[b])
                    ml[b][a] = ml[a][b].T
            P.append(powers), C.append(Cl), m.append(ml)
        # sums over the slots before / after a slot of Π_l m[l][α_l][β_l], with Σα = A and Σβ = B
        start = [[None] * (k + 1) for _ in range(k + 1)]
        start[0][0] = 1.0
        prefix, suffix = [start, m[0]], [None] * (k + 1)
        for l in range(1, k - 1):
            prefix.append(_slot_sum(prefix[-1], m[l], k))
        suffix[k], suffix[k - 1] = start, m[k - 1]
        for l in range(k - 2, 0, -1):
            suffix[l] = _slot_sum(suffix[l + 1], m[l], k)
        last = prefix[k - 1]                                                 # E_ii' = Σ_t z_i^k z_i'^k
        E = sum(last[A][B] * m[k - 1][k - A][k - B] for A in range(k + 1) for B in range(k + 1)
                if last[A][B] is not None)
        E = fact[k] ** 2 * np.broadcast_to(E, (H, H))
        # the Fourier side: Â[l][a] of P[l][a]/a!, and ordered products over the slots before / after a slot
        hats = F.forward(np.concatenate([P[l][a] for l in range(k) for a in range(1, k + 1)] + [W]).reshape(-1, H, N))
        Ahat = [[self.ones_hat] + [[b[l * k + a - 1] / fact[a] for b in hats] for a in range(1, k + 1)]
                for l in range(k)]
        What = [b[k * k] for b in hats]
        left = [[F.identity()] + [None] * k]
        for l in range(k):
            left.append([_block_sum([F.product(Ahat[l][a], left[l][A - a]) for a in range(A + 1)])
                         for A in range(k + 1)])
        right = [None] * (k + 1)
        right[k] = [F.identity()] + [None] * k
        for l in range(k - 1, 0, -1):
            right[l] = [_block_sum([F.product(right[l + 1][B - b], Ahat[l][b]) for b in range(B + 1)])
                        for B in range(k + 1)]
        D = fact[k] * F.inverse(left[k][k])                                 # D_i(h) = Σ_{t: g_1⋯g_k = h} z_i^k
        T = np.einsum("ih,ih->i", D, W)
        G, loss, utilities = self._loss_and_utilities(w, E, T, weights, n)
        if not gradient:
            return loss, utilities, None
        K = G * (fact[k - 1] * fact[k] * weights)[None, :]
        ones = np.ones((H, 1))
        rows = np.empty((H, k + 1, N))
        for j in range(k):
            # Q_i(g) = Σ_i' c_i' G_ii' Σ_{t: g_j = g} z_i^{k−1} z_i'^k,  B_i(g) = Σ_{t: g_j = g} z_i^{k−1} W_i(g_1⋯g_k)
            Q = np.zeros((H, N))
            for a in range(k):
                inner = 0.0
                for b in range(k + 1):
                    Kab = None
                    for A in range(k - a):
                        for B in range(k + 1 - b):
                            pre, post = prefix[j][A][B], suffix[j + 1][k - 1 - a - A][k - b - B]
                            if pre is not None and post is not None:
                                term = post if pre is start[0][0] else pre if post is start[0][0] else pre * post
                                Kab = term if Kab is None else Kab + term
                    if Kab is not None:
                        product = _hadamard_product(K, Kab, ones if b == 0 else C[j][b])
                        inner = inner + (product if b == 0 else self._expand(product, b)) / (fact[a] * fact[b])
                Q += inner if a == 0 else P[j][a] * inner
            Bj = np.zeros((H, N))
            for a in range(k):
                terms = [F.product(F.product(F.adjoint(right[j + 1][k - 1 - a - A]), What), F.adjoint(left[j][A]))
                         if right[j + 1][k - 1 - a - A] is not None and left[j][A] is not None else None
                         for A in range(k - a)]
                total = _block_sum(terms)
                if total is not None:
                    inverse = F.inverse(total) * (fact[k - 1] / fact[a])
                    Bj += inverse if a == 0 else P[j][a] * inverse
            rows[:, j] = (Bj - Q) * (k / n)
        rows[:, k] = D / n
        grad = (self._coordinates(rows.reshape(H * (k + 1), N), 1) @ self.S_back).reshape(H, (k + 1) * N)
        grad[:, k * N :] -= (E * (weights / n)[None, :]) @ w
        return loss, utilities, grad


def _structure_of(X, y, table, k, irreps):
    """The :class:`_StructuredLoss` of ``(X, y)`` if it is, entry for entry, :func:`dataset` of some template
    over the group with multiplication ``table`` and ``k`` summands, else None.

    The template's translates are read off ``X`` (row ``g·N^{k−1}`` starts with ``g·x``) and every row of
    ``X`` and ``y`` is compared with what they give, one value of ``g_1`` at a time (``O(N^k)`` memory).
    """
    N = table.shape[0]
    M = N ** (k - 1)
    if X.shape != (N * M, k * N) or y.shape != (N * M, N):
        return None
    S = np.ascontiguousarray(X[::M, :N])                                   # S[g] = g·x
    e = int(np.flatnonzero((table == np.arange(N)).all(axis=1))[0])
    inverse = np.argmax(table == e, axis=1)
    if not np.array_equal(S, S[e][table[inverse]]):                        # (g·x)(a) = x(g⁻¹a)
        return None
    rest = np.indices((N,) * (k - 1)).reshape(k - 1, M)
    composed = rest[0]
    for g in rest[1:]:
        composed = table[composed, g]
    for g in range(N):
        rows = slice(g * M, (g + 1) * M)
        if not (np.array_equal(X[rows, :N], np.broadcast_to(S[g], (M, N)))
                and all(np.array_equal(X[rows, l * N : (l + 1) * N], S[rest[l - 1]]) for l in range(1, k))
                and np.array_equal(y[rows], S[table[g, composed]])):
            return None
    return _StructuredLoss(S, k, irreps, e)


#: With ``structured=None`` the networks take the structured evaluation on datasets of at least this many rows:
#: below it the dense closed forms cost less (measured: p = 23, H = 69: 0.34 ms dense, 0.52 ms structured;
#: p = 31, H = 93: 3.1 ms against 1.1 ms), and the book's small problems keep their dense arithmetic.
STRUCTURED_MIN_ROWS = 2000


def _check_structured(structured):
    if structured is not None and not isinstance(structured, (bool, np.bool_)):
        raise TypeError(f"structured must be True, False or None, got {type(structured).__name__}")
    return structured if structured is None else bool(structured)


class _StructuredNetwork:
    """What :class:`CompositionNetwork` and :class:`agf_lib.modular.QuadraticModularNetwork` share: on the full
    dataset of a template (:func:`dataset`, recognized by value) the engines' evaluations go through
    :class:`_StructuredLoss`; on any other data, with ``structured = False``, or with ``structured = None`` on
    fewer than :data:`STRUCTURED_MIN_ROWS` rows, through the dense closed forms.

    A subclass sets ``structured``, ``k`` and ``_group_table`` and provides ``_irreps()``.
    """

    structured = None

    def _find_structure(self, X, y):
        if self.structured is False or (self.structured is None and X.shape[0] < STRUCTURED_MIN_ROWS):
            return None
        return _structure_of(X, y, self._group_table, self.k, self._irreps())

    def _cached_structure(self, X, y):
        """:meth:`_find_structure` of the engine's own arrays, remembered by identity for the next call (the
        engines sample the loss in chunks, each a call)."""
        cached = getattr(self, "_structure_cache", None)
        if cached is not None and cached[0]() is X and cached[1]() is y and cached[2] is self.structured:
            return cached[3]
        structure = self._find_structure(X, y)
        self._structure_cache = (weakref.ref(X), weakref.ref(y), self.structured, structure)
        return structure

    def gradient_function(self, X, y, index=None):
        """:meth:`agf_lib.network.TwoLayerNetwork.gradient_function`; on the full dataset of a template, the
        structured evaluation (module docstring), which never forms the ``(n, c)`` residual."""
        structure = self._find_structure(X, y)
        if structure is None:
            return super().gradient_function(X, y, index)

        def gradient(phi, weights):
            return structure.evaluate(phi, weights)[2]
        return gradient

    def structured_losses(self, X, y, phi, weights):
        """The losses of a stack of snapshots without their outputs, on the full dataset of a template
        (:meth:`agf_lib.network.TwoLayerNetwork.structured_losses`); None on other data."""
        structure = self._cached_structure(X, y)
        if structure is None:
            return None
        return np.array([structure.evaluate(phi_t, weights_t, gradient=False)[0]
                         for phi_t, weights_t in zip(phi, weights)])

    def structured_evaluation(self, theta, X, y, weights=None):
        """The loss, the utilities at its residual and their gradients from the structure (module docstring):
        ``(loss, utilities, gradients)`` of the network ``Σ_i weights_i f_i(·; θ_i)`` (weights one by default),
        as :func:`agf_lib.network.loss`, :func:`agf_lib.network.utility` and :meth:`utility_gradient` give them
        densely.

        Raises
        ------
        ValueError
            If ``(X, y)`` is not the full dataset of a template (:func:`dataset`), or the shapes do not fit.
        """
        theta = self.check_theta(theta)
        X, y = self.check_data(X, y)
        weights = np.ones(self.num_neurons) if weights is None else real_array(weights, "weights")
        if weights.shape != (self.num_neurons,):
            raise ValueError(f"weights must have shape ({self.num_neurons},), got {weights.shape}")
        structure = _structure_of(X, y, self._group_table, self.k, self._irreps())
        if structure is None:
            raise ValueError("(X, y) must be the full dataset of a template (dataset(x)), row for row")
        return structure.evaluate(theta, weights)


class CompositionNetwork(_StructuredNetwork, TwoLayerNetwork):
    """``f(g_1·x, …, g_k·x; Θ) = Σ_i w_i (Σ_j ⟨u_i^(j), g_j·x⟩)^k``: composition of ``k`` elements of ``G``.

    ``theta`` has shape ``(H, (k+1)|G|)``, each row ``θ_i = (u_i^(1), …, u_i^(k), w_i)``; inputs ``X`` of
    shape ``(n, k|G|)`` (see :func:`dataset`), ``|G|`` outputs; κ = k + 1. Closed forms, with
    ``z_in = ⟨(u_i^(1), …, u_i^(k)), x_n⟩`` and ``s_in = ⟨w_i, r_n⟩``:

        U_i = E_n[z_in^k s_in],   ∇_{u_i} U_i = k E_n[z_in^{k−1} s_in x_n],   ∇_{w_i} U_i = E_n[z_in^k r_n].

    For ``cyclic(p)`` and ``k = 2`` it computes what :class:`agf_lib.modular.QuadraticModularNetwork` does.

    ``structured``: on the full dataset of a template (:func:`dataset`, recognized by comparing every row) the
    engines (``gradient_function``, and the loss they sample) take the structured population loss of the
    module docstring, which never forms an ``(|G|^k, |G|)`` array, with ``True``; the dense closed forms above
    (the reference) with ``False``; with ``None`` (default) the structured one from :data:`STRUCTURED_MIN_ROWS`
    rows on. ``structured_evaluation`` returns the structured loss, utilities and gradients.
    """

    neurons_share_inputs = True           # every neuron sees the same k inputs

    def __init__(self, G, H, *, k=2, structured=None):
        self.group = _check_group(G)
        self.num_neurons = check_int(H, "H")
        self.k = _check_k(k)
        self.structured = _check_structured(structured)
        self._group_table = self.group.table
        self.kappa = self.k + 1
        N = self.group.order
        self.input_dim, self.output_dim, self.num_params = self.k * N, N, (self.k + 1) * N

    def _preactivations(self, theta, X):
        return theta[:, : self.input_dim] @ X.T                      # (H, n)

    def neuron_outputs(self, theta, X):
        z = self._preactivations(theta, X)
        return (z**self.k)[:, :, None] * theta[:, None, self.input_dim :]

    def __call__(self, theta, X):
        return (self._preactivations(theta, X) ** self.k).T @ theta[:, self.input_dim :]

    def weighted_output(self, phi, X, weights):
        return ((self._preactivations(phi, X) ** self.k) * weights[:, None]).T @ phi[:, self.input_dim :]

    def batched_weighted_output(self, phi, X, weights):
        T, H, _ = phi.shape                                           # one product for the stack
        z = (phi[..., : self.input_dim].reshape(T * H, -1) @ X.T).reshape(T, H, -1)
        return np.matmul((z**self.k * weights[..., None]).swapaxes(1, 2), phi[..., self.input_dim :])

    def utility_gradient(self, theta, X, residual):
        z = self._preactivations(theta, X)                           # (H, n)
        z_km1 = z ** (self.k - 1)
        grad, s, z_k = self._gradient(theta, X, residual, z_km1, z_km1 * z)
        return (z_k * s).sum(1) / X.shape[0], grad

    def _gradient(self, theta, X, residual, z_km1, z_k):
        n = X.shape[0]
        s = theta[:, self.input_dim :] @ residual.T                  # (H, n)
        return np.concatenate([(self.k / n) * (z_km1 * s) @ X, z_k @ residual / n], axis=1), s, z_k

    def chart_residual_gradient(self, phi, X, y, weights):
        z = self._preactivations(phi, X)                             # shared by the output and the gradient
        z_km1 = z ** (self.k - 1)
        z_k = z_km1 * z
        residual = y - (z_k * weights[:, None]).T @ phi[:, self.input_dim :]
        return residual, self._gradient(phi, X, residual, z_km1, z_k)[0]

    def _irreps(self):
        return self.group.irreps

    def initial_theta(self, *, alpha, seed=0):
        """See :func:`initial_theta`."""
        return initial_theta(self.group, self.num_neurons, alpha=alpha, seed=seed, k=self.k)

    def __repr__(self):
        return f"CompositionNetwork({self.group.name}, H={self.num_neurons}, k={self.k})"


def initial_theta(G, H, *, alpha, seed=0, k=2):
    """The paper's initialization for :class:`CompositionNetwork` (``d = k|G|`` inputs, ``c = |G|`` outputs).

    ``(u^(1), …, u^(k)) ~ N(0, α²/(2k|G|) I)`` and ``w ~ N(0, α²/(2|G|) I)``, so ``E‖θ_i‖² = α²``; the
    same draws as :func:`agf_lib.modular.initial_theta` for ``cyclic(p)`` and ``k = 2``. Shape ``(H, (k+1)|G|)``.
    """
    G, H, k = _check_group(G), check_int(H, "H"), _check_k(k)
    alpha = check_positive(alpha, "alpha")
    N = G.order
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    u = rng.normal(0.0, 1.0, (H, k * N)) * (alpha / math.sqrt(2 * k * N))
    w = rng.normal(0.0, 1.0, (H, N)) * (alpha / math.sqrt(2 * N))
    return np.concatenate([u, w], axis=1)


# ----------------------------------------------------------------------------------------------
# theory: utility, its maximum per irrep class, levels, staircase


def _residual_coefficients(x_hat, G, learned):
    gone = {r for c in learned for r in G.irrep_classes[c]}
    return [np.zeros_like(block) if r in gone else block for r, block in enumerate(x_hat)]


def utility(theta, x, G, *, k=2, learned=()):
    """The utility of neurons in the Fourier domain (module docstring; Lemma F.2 for ``cyclic(p)``):

        U(θ) = (k!/|G|^{k+1}) Σ_ρ d_ρ Re tr(x̂^† û^(k) ⋯ x̂^† û^(1) ŵ^† r̂)[ρ],

    against the residual ``(g_1⋯g_k)·r`` with ``r`` the template ``x`` minus its components in the
    irrep classes ``learned``. ``theta`` of shape ``((k+1)|G|,)`` or ``(H, (k+1)|G|)``; a float or ``(H,)``.
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    learned = _check_classes(learned, G)
    N = G.order
    theta = real_array(theta, "theta")
    if theta.ndim not in (1, 2) or theta.shape[-1] != (k + 1) * N:
        raise ValueError(f"theta must have shape ({(k + 1) * N},) or (H, {(k + 1) * N}) for k = {k} on "
                         f"{G.name}, got {theta.shape}")
    x_hat = fourier(x, G)
    r_hat = _residual_coefficients(x_hat, G, learned)
    parts = [fourier(theta[..., j * N : (j + 1) * N], G) for j in range(k + 1)]
    total = 0.0
    for r, d in enumerate(G.dims):
        x_dag = x_hat[r].conj().T
        M = np.swapaxes(parts[k][r].conj(), -1, -2) @ r_hat[r]          # ŵ^† r̂
        for j in range(k):
            M = x_dag @ parts[j][r] @ M
        total = total + d * np.trace(M, axis1=-2, axis2=-1).real
    value = math.factorial(k) / N ** (k + 1) * total
    return float(value) if np.ndim(value) == 0 else value


def _op_norms(x_hat):
    return np.array([np.linalg.norm(block, 2) for block in x_hat])


def class_utilities(x, G, *, k=2, learned=()):
    """The maximal utility of one unit-norm neuron within each irrep class (module docstring):

        Ū*_c = k! (k+1)^{−(k+1)/2} |G|^{−(k+1)/2} (C_c d_c)^{−(k−1)/2} ‖x̂[ρ_c]‖_op^{k+1},

    ``C_c = 1`` for a real irrep, 2 for a complex pair or a quaternionic irrep; zero for the classes in
    ``learned`` (their part of the residual is gone). Shape ``(num_classes,)``, in the order of
    ``G.irrep_classes``. For ``cyclic(p)`` and ``k = 2``: ``√(2/(27p³)) |x̂[m]|³`` per pair ``±m``.
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    learned = set(_check_classes(learned, G))
    N = G.order
    sigma = _op_norms(fourier(x, G))
    out = np.zeros(G.num_classes)
    for c, (members, kind, d) in enumerate(zip(G.irrep_classes, G.class_types, G.class_dims)):
        if c in learned:
            continue
        C = 1 if kind == "real" else 2
        out[c] = (math.factorial(k) * (k + 1) ** (-(k + 1) / 2) * N ** (-(k + 1) / 2)
                  * (C * d) ** (-(k - 1) / 2) * sigma[members[0]] ** (k + 1))
    return out


def max_utility(x, G, *, k=2, learned=()):
    """The maximal utility ``max_{‖θ‖=1} U(θ)`` of one neuron against the target (or, with ``learned``,
    the updated utility): the largest of :func:`class_utilities`. Theorem F.3 for ``cyclic(p)``, ``k = 2``."""
    return float(class_utilities(x, G, k=k, learned=learned).max())


def learning_order(x, G, *, k=2, tol=1e-12):
    """The irrep classes in the predicted order of learning: decreasing :func:`class_utilities`
    (the follow-up's criterion ``‖x̂[ρ]‖_op^{k+1}/(C_ρ d_ρ)^{(k−1)/2}``), ties by class index.

    Classes with ``‖x̂[ρ]‖_op ≤ tol · max_ρ ‖x̂[ρ]‖_op`` carry nothing to learn and are left out. For
    ``cyclic(p)`` class ``m`` is the pair ``±m``, and this is :func:`agf_lib.dft.dominant_frequencies`.
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    tol = check_positive(tol, "tol")
    sigma = _op_norms(fourier(x, G))
    present = [c for c, members in enumerate(G.irrep_classes) if sigma[members[0]] > tol * sigma.max()]
    scores = class_utilities(x, G, k=k)
    return sorted(present, key=lambda c: -scores[c])


@dataclass(frozen=True)
class Piece:
    """One piece of the target in an irrep class (see :func:`pieces`).

    ``irrep_class``: the class index; ``chain``: ``(a, i_1, …, i_{k−1})``, indices of groups of equal
    singular values of ``x̂[ρ]`` (largest first); ``sigma``: the singular value of each group;
    ``multiplicity``: the size of each group; ``utility``: the maximal utility of one unit-norm neuron
    on the piece; ``power``: the piece's share of the target's power (``E_n ‖piece‖²``).
    """

    irrep_class: int
    chain: tuple
    sigma: tuple
    multiplicity: tuple
    utility: float
    power: float


def _singular_groups(block, rtol):
    """``(S, groups)``: singular values of ``block`` and index ranges of equal ones (within ``rtol``)."""
    U, S, Vh = np.linalg.svd(block)
    groups_, start = [], 0
    for j in range(1, S.size + 1):
        if j == S.size or S[j] < S[start] * (1 - rtol):
            groups_.append((start, j))
            start = j
    return U, S, Vh, groups_


def pieces(x, G, *, k=2, rtol=1e-9, tol=1e-12):
    """The target ``(g_1⋯g_k)·x`` cut into orthogonal pieces, one per chain of singular values (chapter 09).

    With the singular value decomposition ``x̂[ρ] = U Σ V^†`` and ``M(g) = V^† ρ(g)^† V``, the target's
    coefficient is ``x̂[ρ] ρ(g_k)^† ⋯ ρ(g_1)^† = U Σ M(g_k) ⋯ M(g_1) V^†``. Inserting the projectors
    ``P_i`` onto groups of equal singular values between the factors cuts it into pieces
    ``U Σ P_a M(g_k) P_{i_1} M(g_{k−1}) ⋯ P_{i_{k−1}} M(g_1) V^†``, one per chain ``(a, i_1, …, i_{k−1})``.
    By Schur orthogonality the pieces are orthogonal functions of the tuple; a neuron's utility is a sum of
    one term per piece, and the largest utility of one unit-norm neuron on a piece is
    :func:`class_utilities` with ``σ_1^{k+1}`` replaced by ``σ_a² σ_{i_1} ⋯ σ_{i_{k−1}}``. The piece's power is
    ``(C_p d/|G|) σ_a² n_a Π_j (n_{i_j}/d)`` (``n`` the multiplicities, ``C_p = 2`` for a complex pair, else
    1). When ``x̂[ρ]`` is a multiple of a unitary matrix the class is one piece; a quaternionic irrep's
    singular values come in pairs, which form one group each.

    Returns a list of :class:`Piece`, sorted by class, then chain. Singular values below
    ``tol · max ‖x̂[ρ]‖_op`` are left out (nothing to learn).
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    rtol, tol = check_positive(rtol, "rtol"), check_positive(tol, "tol")
    N = G.order
    x_hat = fourier(x, G)
    top = _op_norms(x_hat).max()
    out = []
    for c, (members, kind, d) in enumerate(zip(G.irrep_classes, G.class_types, G.class_dims)):
        _, S, _, ranges = _singular_groups(x_hat[members[0]], rtol)
        sigma = [float(S[a]) for a, _ in ranges]
        mult = [b - a for a, b in ranges]
        live = [j for j, s in enumerate(sigma) if s > tol * top]
        C = 1 if kind == "real" else 2
        scale = (math.factorial(k) * (k + 1) ** (-(k + 1) / 2) * N ** (-(k + 1) / 2) * (C * d) ** (-(k - 1) / 2))
        for chain in itertools.product(live, repeat=k):
            a, rest = chain[0], chain[1:]
            utility_ = scale * sigma[a] ** 2 * math.prod(sigma[i] for i in rest)
            power = ((2 if kind == "complex" else 1) * d / N * sigma[a] ** 2 * mult[a]
                     * math.prod(mult[i] / d for i in rest))
            out.append(Piece(c, chain, tuple(sigma[i] for i in chain), tuple(mult[i] for i in chain),
                             float(utility_), float(power)))
    return out


def piece_outputs(x, G, *, k=2, rtol=1e-9, tol=1e-12):
    """The pieces of :func:`pieces` as functions on the dataset: shape ``(num_pieces, |G|^k, |G|)``, in the
    order of :func:`pieces`, rows as in :func:`dataset`. They are orthogonal and sum to its target ``Y``."""
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    N = G.order
    if N**k * N * (k + 1) > _MAX_DATASET_ENTRIES:
        raise ValueError(f"k = {k} summands over {G.name} give {N}^{k} tuples, too many to hold; use a smaller k")
    x_hat = fourier(x, G)
    items = pieces(x, G, k=k, rtol=rtol, tol=tol)
    out = np.zeros((len(items), N**k, N))
    cache = {}
    for p, piece in enumerate(items):
        members, kind = G.irrep_classes[piece.irrep_class], G.class_types[piece.irrep_class]
        rho, d = G.irreps[members[0]], G.class_dims[piece.irrep_class]
        if piece.irrep_class not in cache:
            U, S, Vh, ranges = _singular_groups(x_hat[members[0]], rtol)
            V = Vh.conj().T
            M = V.conj().T @ np.swapaxes(rho.conj(), 1, 2) @ V          # M(g) = V^† ρ(g)^† V
            projectors = [np.diag((np.arange(d) >= a) & (np.arange(d) < b)).astype(float) for a, b in ranges]
            cache[piece.irrep_class] = (U, S, Vh, M, projectors)
        U, S, Vh, M, projectors = cache[piece.irrep_class]
        chain = piece.chain                                          # factor j (g_j) carries P_{i_{k−j}}
        T = projectors[chain[k - 1]] @ M                              # g_1, shape (N, d, d)
        for j in range(2, k + 1):
            T = np.einsum("gij,njk->ngik", projectors[chain[k - j]] @ M, T).reshape(-1, d, d)
        coefficient = (U * S) @ T @ Vh                                # (N^k, d, d)
        values = d / N * np.einsum("hij,nji->nh", rho, coefficient)
        out[p] = (2 * values.real) if kind == "complex" else values.real
    return out


def piece_fractions(outputs, x, G, *, k=2, rtol=1e-9, tol=1e-12):
    """How much of each piece a network's ``outputs`` on the dataset hold: ``⟨f, piece⟩/⟨piece, piece⟩``
    (sums over tuples and outputs), 1 once a piece is fitted. ``outputs`` of shape ``(..., |G|^k, |G|)``;
    returns ``(..., num_pieces)`` in the order of :func:`pieces`."""
    outputs = real_array(outputs, "outputs")
    P = piece_outputs(x, G, k=k, rtol=rtol, tol=tol)
    if outputs.shape[-2:] != P.shape[1:]:
        raise ValueError(f"outputs must have shape (..., {P.shape[1]}, {P.shape[2]}), got {outputs.shape}")
    return np.einsum("...nc,pnc->...p", outputs, P) / np.einsum("pnc,pnc->p", P, P)


def learning_steps(x, G, *, k=2, whole_classes=False, rtol=1e-9):
    """The steps of the staircase: lists of :func:`pieces` learned together, in order of decreasing utility.

    Pieces of one class with equal utility (within ``rtol``) make one step; steps are sorted by
    decreasing utility, ties by class index. With ``whole_classes=True``, the follow-up's assumption:
    each class is one step at its :func:`class_utilities` (the utility of its largest piece).
    Returns a list of lists of :class:`Piece`.
    """
    whole_classes = check_bool(whole_classes, "whole_classes")
    rtol = check_positive(rtol, "rtol")
    items = pieces(x, G, k=k)
    steps = []
    for piece in items:
        for step in steps:
            same_class = step[0].irrep_class == piece.irrep_class
            if same_class and (whole_classes or abs(step[0].utility - piece.utility) <= rtol * step[0].utility):
                step.append(piece)
                break
        else:
            steps.append([piece])
    for step in steps:
        step.sort(key=lambda p: -p.utility)
    return sorted(steps, key=lambda s: (-s[0].utility, s[0].irrep_class))


def levels(x, G, *, k=2, whole_classes=False):
    """Loss levels ``ℓ^(j) = ½‖x‖² − ½ Σ_{l≤j} P_l`` after the first ``j`` steps of :func:`learning_steps`,
    ``P_l`` the power of the pieces of step ``l``: the group version of the paper's Eq. 9. ``ℓ^(0) = ½‖x‖²``,
    the last is 0 (up to rounding).

    By default one step per group of equal-utility pieces of a class (chapter 09: an irrep whose ``x̂[ρ]``
    has unequal singular values is learned in several steps). With ``whole_classes=True`` each class is
    one step, the follow-up's assumption, and the drops are half of :func:`class_power`. Both agree
    when every ``x̂[ρ]`` is a multiple of a unitary matrix, and for ``cyclic(p)`` they are
    :func:`agf_lib.modular.levels`.
    """
    steps = learning_steps(x, G, k=k, whole_classes=whole_classes)
    x = np.asarray(x, dtype=float)
    drops = np.array([0.5 * sum(p.power for p in step) for step in steps])
    return 0.5 * float(x @ x) - np.concatenate([[0.0], np.cumsum(drops)])


def utility_maximizer(x, G, *, k=2, irrep_class=None, singular_vector=None):
    """A unit-norm neuron ``θ`` (shape ``((k+1)|G|,)``) whose utility is :func:`class_utilities` of ``irrep_class``
    (default: the first class of :func:`learning_order`).

    With ``(a, b)`` a top singular pair of ``x̂[ρ]`` (``x̂[ρ] b = ‖x̂[ρ]‖_op a``) for the class's first irrep,
    every block ``u^(1), …, u^(k), w`` is the real function ``g ↦ Re tr(ρ(g) a b^†)`` scaled to norm
    ``1/√(k+1)``: rank-one coefficients ``∝ a b^†`` (a quaternionic-rank-one pair for a quaternionic irrep).

    When the top singular value is repeated (within a relative 1e-9; always so for a quaternionic irrep, and
    for every orthogonal ``x̂[ρ]``), every unit ``a`` in its left singular space gives a maximizer, and these
    need not fit the same share of the class (chapter 09). ``singular_vector`` chooses ``a`` (a vector of
    that space, normalized here). By default ``a`` is the projection onto that space of the first coordinate
    vector with the largest projection: a choice made by the space itself, not by how rounding steers the SVD.
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    if irrep_class is None:
        order = learning_order(x, G, k=k)
        if not order:
            raise ValueError("x has no irrep class to learn")
        irrep_class = order[0]
    (irrep_class,) = _check_classes([irrep_class], G, "irrep_class")
    r = G.irrep_classes[irrep_class][0]
    x_hat = fourier(x, G)[r]
    U, S, _ = np.linalg.svd(x_hat)
    if S[0] == 0:
        raise ValueError(f"x has no component in irrep class {irrep_class} ({G.class_names()[irrep_class]})")
    top = U[:, S >= S[0] * (1 - 1e-9)]
    projector = top @ top.conj().T
    if singular_vector is None:
        weights = projector.diagonal().real            # ‖P e_j‖², as P is an orthogonal projector
        j = int(np.flatnonzero(weights >= weights.max() * (1 - 1e-9))[0])
        a = projector[:, j] / math.sqrt(weights[j])
    else:
        a = np.asarray(singular_vector)
        if a.dtype.kind not in "iufc":
            raise TypeError(f"singular_vector must be a vector of numbers, got {type(singular_vector).__name__}")
        if a.shape != (x_hat.shape[0],) or not np.all(np.isfinite(a)) or not np.any(a):
            raise ValueError(f"singular_vector must be a nonzero finite vector of length {x_hat.shape[0]}, "
                             f"got shape {a.shape}")
        a = a / np.linalg.norm(a)
        if np.linalg.norm(projector @ a - a) > 1e-8:
            raise ValueError(f"singular_vector must lie in the top left singular space of x̂[ρ] (dimension "
                             f"{top.shape[1]}) of irrep class {irrep_class}")
    b = x_hat.conj().T @ a / S[0]
    block = np.einsum("gij,ji->g", G.irreps[r], np.outer(a, b.conj())).real
    block = block / (np.linalg.norm(block) * math.sqrt(k + 1))
    return np.tile(block, k + 1)


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


def least_squares_fit(x, G, H, *, seed=0, max_nfev=None):
    """Fit ``H`` neurons (``k = 2``) to the whole composition task of ``x`` by Levenberg–Marquardt
    (``scipy.optimize.least_squares``, closed-form Jacobian) from a standard normal start drawn with ``seed``.

    The fit runs in the span of the translates of ``x`` (``n`` dimensions): the other components of ``u`` and
    ``v`` change no output, and those of ``w`` only add to the loss. Returns ``(relative_loss, theta)``:
    ``‖f − y‖²/‖y‖²`` over all pairs, and ``θ`` of shape ``(H, 3|G|)``. A local method: a loss above zero says
    this start found no exact fit, not that none exists. With ``max_nfev`` the fit stops there, converged or
    not; without it, a fit that has not converged within SciPy's default budget raises ``RuntimeError``.
    """
    G = _check_group(G)
    x = _check_template(x, G)
    H = check_int(H, "H", 1)
    if 3 * H > G.order**2:       # Levenberg-Marquardt needs no more parameters (3nH) than residuals (|G|²n)
        raise ValueError(f"H must be at most |G|²/3 = {G.order**2 // 3} for a Levenberg-Marquardt fit (no more "
                         f"parameters than residuals), got {H}")
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

    start = np.random.default_rng(check_int(seed, "seed", 0)).normal(size=H * 3 * n)
    fit = least_squares(residual, start, jac=jacobian, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                        max_nfev=max_nfev)
    # status 0: the evaluation budget ran out, which a caller's max_nfev asks for; without one, the fit
    # did not converge within SciPy's default budget, and its loss would pass for a converged one
    if fit.status < 0 or (fit.status == 0 and max_nfev is None) or not np.all(np.isfinite(fit.x)):
        raise RuntimeError(f"least_squares_fit did not converge (scipy least_squares, status {fit.status}: "
                           f"{fit.message}); give max_nfev to accept a fit within a budget")
    u, v, w = split(fit.x)
    return float(2 * fit.cost / (y**2).sum()), np.concatenate([u, v, w], axis=1) @ np.kron(np.eye(3), basis.T)


def _staircase(x, G, k, initial_norm, eta, adaptive_rate, whole_classes):
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    steps = learning_steps(x, G, k=k, whole_classes=whole_classes)
    times, unit = escape_times([s[0].utility for s in steps], kappa=k + 1, initial_norm=initial_norm, eta=eta,
                               adaptive_rate=adaptive_rate)
    times = np.concatenate([[0.0], times])
    if whole_classes:
        order = [s[0].irrep_class for s in steps]
        states = [np.zeros_like(x)] + [class_component(x, G, order[: j + 1]) for j in range(len(order))]
    else:
        states = [[piece for step in steps[:j] for piece in step] for j in range(len(steps) + 1)]
    return Staircase(times, levels(x, G, k=k, whole_classes=whole_classes), [s[0].irrep_class for s in steps],
                     states=states, time_unit=unit)


def agf_staircase(x, G, *, initial_norm, k=2, eta=1.0, adaptive_rate=False, whole_classes=False):
    """The AGF staircase of composition over ``G`` at finite initial norm, in GF time (Eq. 9, group version).

    One step of :func:`learning_steps` at a time: ``order[j-1]`` is the irrep class of the ``j``-th step
    (a class appears once per step it takes); ``losses`` = :func:`levels`; ``states[j]`` the list of
    :class:`Piece` learned after ``j`` jumps (with ``whole_classes=True``: the template learned, its
    components in the first ``j`` classes, so that the network then computes ``(g_1⋯g_k)·states[j]``).
    ``times[j]`` is when a neuron of initial norm ``ν = initial_norm``, aligned from the start with the
    step's pieces at their utility ``Ū`` (unchanged by the steps before), reaches norm one
    (:func:`agf_lib.escape.escape_times`, the paper's Eq. 4 at constant utility):

        τ^(j) = (ν^{2−κ} − 1) / ((κ−2) κ η Ū)       or, with the adaptive rate η‖θ‖^{2−κ},   log(1/ν) / (κηŪ),

    κ = k + 1 (κ = 2 takes the logarithmic form). No unit neuron has utility above the first step's
    (:func:`max_utility`), so ``times[1]`` is a lower bound on the first jump of both engines from neurons
    of norm at most ``ν``. With ``whole_classes=True``, one step per class (the follow-up's assumption).
    For ``cyclic(p)`` and ``k = 2`` this is :func:`agf_lib.modular.agf_staircase` (class ``m`` = frequency ``m``;
    the paper's recursion over dormant norms reduces to independent escapes, as no step changes the
    utility of another).
    """
    check_positive(initial_norm, "initial_norm", finite=False)   # None: groups.limit_staircase is the limit
    return _staircase(x, G, k, initial_norm, eta, adaptive_rate, whole_classes)


def limit_staircase(x, G, *, k=2, eta=1.0, adaptive_rate=False, whole_classes=False):
    """The α → 0 limit of :func:`agf_staircase`, in the rescaled time of :func:`agf_lib.escape.threshold`:
    ``t/log(1/α)`` for κ = 2 or with the adaptive rate, where ``τ^(j) = 1/(κηŪ_j)``, else ``t·α^{κ−2}``,
    where ``τ^(j) = 1/((κ−2)κηŪ_j)``. Levels, order and states as in :func:`agf_staircase`; for ``cyclic(p)``
    and ``k = 2``, :func:`agf_lib.modular.limit_staircase`.

    It is gradient flow's α → 0 limit when every step starts from neurons of norm α. Where a later piece is
    fitted by the neurons already active (see *Where the piece staircase is the α → 0 limit, measured* in the
    module docstring), gradient flow's drop of it comes earlier, and in this unit merges with an earlier
    drop as α → 0; :func:`agf_lib.limits.agf_limit` computes the limit there."""
    return _staircase(x, G, k, None, eta, adaptive_rate, whole_classes)


def output_power(network, theta, X):
    """Power of the network's output per irrep class, ``E_n[class_power(f(x_n))]``: shape ``(num_classes,)``,
    or ``(T, num_classes)`` for a stack of snapshots ``theta`` of shape ``(T, H, P)``.

    For the target ``(g_1⋯g_k)·x`` this is :func:`class_power` of ``x``.
    """
    if not isinstance(network, CompositionNetwork):
        raise TypeError(f"network must be a groups.CompositionNetwork, got {type(network).__name__}")
    theta = real_array(theta, "theta")
    X = real_array(X, "X")
    if X.ndim != 2 or X.shape[1] != network.input_dim:
        raise ValueError(f"X must have shape (n, {network.input_dim}), got {X.shape}")
    stack = theta[None] if theta.ndim == 2 else theta
    if stack.ndim != 3 or stack.shape[1:] != (network.num_neurons, network.num_params):
        raise ValueError(f"theta must have shape ({network.num_neurons}, {network.num_params}) or "
                         f"(T, {network.num_neurons}, {network.num_params}), got {theta.shape}")
    power = np.array([class_power(network(snapshot, X), network.group).mean(0) for snapshot in stack])
    return power[0] if theta.ndim == 2 else power
