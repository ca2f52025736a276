"""Composition over a finite group, one irreducible representation at a time (chapter 09).

The paper's modular-addition section ends with two extensions left for future work: ``k`` summands
with ``σ(z) = z^k``, and composition over an arbitrary finite group ``G``. This module holds both, in
plain NumPy, on the group library of :mod:`agf_lib.finite_groups` (finite groups, their irreps and
Fourier transform), whose names it re-exports (``groups.cyclic``, ``groups.fourier``, ...), as it does the
exact fits of :mod:`agf_lib.exact_fits`. Irreps, irrep classes (``C_c``, the real, complex and
quaternionic types) and the transform ``x̂[ρ] = Σ_g x(g) ρ(g)^†`` are defined there.

**The task and the network.** A template ``x ∈ R^G`` encodes ``g`` by its translate ``g·x``. The
dataset holds all ``|G|^k`` tuples ``(g_1, …, g_k)`` with input ``[g_1·x, …, g_k·x]`` and target
``(g_1⋯g_k)·x``; the loss is the book's ``E[½‖y − f‖²]`` (mean over tuples, sum over the ``|G|``
outputs). Neuron ``i`` has ``θ_i = (u_i^(1), …, u_i^(k), w_i)`` and computes
``f_i = w_i (Σ_j ⟨u_i^(j), g_j·x⟩)^k``, homogeneous of degree ``κ = k + 1``. For ``cyclic(p)`` and
``k = 2`` this is :class:`agf_lib.modular.QuadraticModularNetwork` on :func:`agf_lib.modular.dataset`
(a front on this module at ``cyclic(p)``).

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
with ``E`` alone, pieces (1,1), (1,2) and (2,1) at the piece staircase's times (within 2% and 6%), and (2,2) a
fixed time after (2,1), merged with it (within 7% of it on the templates of ``benchmarks/group_limits.py``); on
``D3`` with ``x̂[A2] = 1.26`` added (chapter 09's template), every drop after the first merged with the first. With E alone every neuron is active after the first drop, and (2,1) and
(2,2) grow inside the active neurons as one unstable mode of the flow linearized at the fit of (1,1) and (1,2)
(:func:`agf_lib.limits.growth_rates`): from that rate chapter 09 predicts the third drop's limit within 4.3% on
every E-alone template of ``benchmarks/group_limits.py``. No closed form here gives that rate, nor says which
pieces merge elsewhere (on A4's three-dimensional irrep with σ = (3, 2, 1), all nine). The library's α → 0
staircase of a group template is computed from what AGF's cost steps fit: numerical AGF read against these
levels and extrapolated, ``limits.agf_limit(run, alphas, reference=limit_staircase(...))``. It agrees with
gradient flow's limit to 1% on chapter 09's template and on A4's (``benchmarks/group_agf_limits.py``); with E
alone it does not (its third and fourth drops 10-12% early), as AGF's cost steps between activations follow
the modes of the active neurons only in part. The levels of the piece staircase hold at every α wherever its
plateaus last.
``benchmarks/group_limits.py`` runs such studies on more templates (A4's three-dimensional irrep among them).


The population loss over all tuples, which the engines evaluate on :func:`dataset` from functions on ``G``
alone, is derived and implemented in :mod:`agf_lib.structured_loss`.

**The setting** (:class:`CompositionSetting`, the contract of :class:`agf_lib.setting.Setting`) is built
from the network :class:`CompositionNetwork`,
:func:`initial_theta`, the data :func:`dataset`, the closed-form staircase at finite α in GF time
:func:`agf_staircase`, and its α → 0 limit in rescaled time :func:`limit_staircase`.

**Length.** The composition setting and its AGF theory (utilities, pieces, levels, staircases, the setting
class); the finite-group library is :mod:`agf_lib.finite_groups`, the structured loss
:mod:`agf_lib.structured_loss`, the exact fits :mod:`agf_lib.exact_fits`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .escape import jump_times
from .exact_fits import class_neurons, least_squares_fit
from .finite_groups import (FiniteGroup, alternating4, alternating5, class_component, class_power, cyclic, dihedral,
                            fourier, inverse_fourier, direct_product, quaternion, symmetric4, translates)
from .finite_groups import _check_classes, _check_group, _check_template
from .activations import power
from .network import FeedForwardNetwork
from .results import Staircase
from .setting import Setting, rate_options
from .structured_loss import STRUCTURED_MIN_ROWS, StructuredNetwork, _check_structured
from .validation import real_array, check_bool, check_fraction, check_positive, check_int

__all__ = [
    "CompositionSetting",
    "FiniteGroup", "cyclic", "dihedral", "alternating4", "symmetric4", "alternating5", "quaternion", "direct_product",
    "fourier", "inverse_fourier", "class_power", "class_component", "translates", "dataset",
    "CompositionNetwork", "initial_theta", "utility", "class_utilities", "max_utility",
    "utility_maximizer", "class_neurons", "least_squares_fit", "learning_order", "Piece", "pieces",
    "piece_outputs", "learned_outputs", "piece_fractions", "learning_steps", "levels", "agf_staircase", "limit_staircase",
    "output_power", "STRUCTURED_MIN_ROWS",
]

_MAX_DATASET_ENTRIES = 2e8


def _check_k(k):
    return check_int(k, "k", 1)


# ----------------------------------------------------------------------------------------------
# the composition task and the network


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


class CompositionNetwork(StructuredNetwork, FeedForwardNetwork):
    """``f(g_1·x, …, g_k·x; Θ) = Σ_i w_i (Σ_j ⟨u_i^(j), g_j·x⟩)^k``: composition of ``k`` elements of ``G``.

    ``theta`` has shape ``(H, (k+1)|G|)``, each row ``θ_i = (u_i^(1), …, u_i^(k), w_i)``; inputs ``X`` of
    shape ``(n, k|G|)`` (see :func:`dataset`), ``|G|`` outputs; κ = k + 1. As a dense network it is
    :class:`agf_lib.network.FeedForwardNetwork` with ``d = k|G|`` inputs, ``c = |G|`` outputs and the power
    activation ``z^k`` (``agf_lib.activations.power``), whose closed forms it uses: with
    ``z_in = ⟨(u_i^(1), …, u_i^(k)), x_n⟩`` and ``s_in = ⟨w_i, r_n⟩``,

        U_i = E_n[z_in^k s_in],   ∇_{u_i} U_i = k E_n[z_in^{k−1} s_in x_n],   ∇_{w_i} U_i = E_n[z_in^k r_n].

    For ``cyclic(p)`` and ``k = 2`` it is :class:`agf_lib.modular.QuadraticModularNetwork`.

    ``structured``: on the full dataset of a template (:func:`dataset`, recognized by comparing every row) the
    engines (``gradient_function``, and the loss they sample) take the structured population loss of
    :mod:`agf_lib.structured_loss`, which never forms an ``(|G|^k, |G|)`` array, with ``True``; the dense closed
    forms above (the reference) with ``False``; with ``None`` (default) the structured one from
    :data:`agf_lib.structured_loss.STRUCTURED_MIN_ROWS` rows on. ``structured_evaluation`` returns the
    structured loss, utilities and gradients.
    """

    def __init__(self, G, H, *, k=2, structured=None):
        self.group = _check_group(G)
        H = check_int(H, "H")
        self.k = _check_k(k)
        self.structured = _check_structured(structured)
        N = self.group.order
        super().__init__(self.k * N, H, N, activation=power(self.k))

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
    for d in sorted(set(G.dims)):                  # the irreps of one dimension at once, stacked on an axis
        same = [r for r, d_r in enumerate(G.dims) if d_r == d]
        stack = lambda blocks: np.stack([blocks[r] for r in same], axis=-3)  # noqa: E731
        x_dag = np.conj(stack(x_hat)).swapaxes(-1, -2)
        M = np.conj(stack(parts[k])).swapaxes(-1, -2) @ stack(r_hat)        # ŵ^† r̂
        for j in range(k):
            M = x_dag @ stack(parts[j]) @ M
        total = total + d * np.trace(M, axis1=-2, axis2=-1).real.sum(-1)
    value = math.factorial(k) / N ** (k + 1) * total
    return float(value) if np.ndim(value) == 0 else value


def _op_norms(x_hat):
    return np.array([abs(block[0, 0]) if block.shape == (1, 1) else np.linalg.norm(block, 2) for block in x_hat])


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

    Classes with ``‖x̂[ρ]‖_op ≤ tol · max_ρ ‖x̂[ρ]‖_op`` (``tol`` in ``[0, 1)``) carry nothing to learn and are
    left out. For ``cyclic(p)`` class ``m`` is the pair ``±m``, and this is :func:`agf_lib.modular.learning_order`.
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    tol = check_fraction(tol, "tol", zero_ok=True)
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


def learned_outputs(x, G, learned, *, k=2, rtol=1e-9, tol=1e-12):
    """The outputs on :func:`dataset` of the pieces ``learned`` (a staircase's ``predictors[j]``): the sum of
    their rows of :func:`piece_outputs`, shape ``(|G|^k, |G|)``; zero for none.

    Raises
    ------
    ValueError
        If an entry of ``learned`` is not a piece of ``x`` (one of :func:`pieces` with these options).
    """
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    learned = tuple(learned)
    if not learned:
        return np.zeros((G.order**k, G.order))
    items = pieces(x, G, k=k, rtol=rtol, tol=tol)
    missing = [piece for piece in learned if piece not in items]
    if missing:
        raise ValueError(f"learned must hold pieces of x (groups.pieces), got {missing[0]!r}")
    return piece_outputs(x, G, k=k, rtol=rtol, tol=tol)[[items.index(piece) for piece in learned]].sum(0)


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
    one step, the follow-up's assumption, and the drops are half of :func:`agf_lib.finite_groups.class_power`. Both agree
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


def _staircase(x, G, k, initial_norm, eta, adaptive_rate, whole_classes):
    G, k = _check_group(G), _check_k(k)
    x = _check_template(x, G)
    steps = learning_steps(x, G, k=k, whole_classes=whole_classes)
    times, unit = jump_times([s[0].utility for s in steps], kappa=k + 1, initial_norm=initial_norm, eta=eta,
                             adaptive_rate=adaptive_rate)
    J = times.size                                       # fewer than the steps for a sequence of dormant norms
    times = np.concatenate([[0.0], times])
    order = [s[0].irrep_class for s in steps[:J]]
    predictors = [tuple(piece for step in steps[:j] for piece in step) for j in range(J + 1)]
    return Staircase(times, levels(x, G, k=k, whole_classes=whole_classes)[: J + 1], order, predictors=predictors,
                     time_unit=unit)


def agf_staircase(x, G, *, initial_norm, k=2, eta=1.0, adaptive_rate=False, whole_classes=False):
    """The AGF staircase of composition over ``G`` at finite initial norm, in GF time (Eq. 9, group version).

    One step of :func:`learning_steps` at a time: ``order[j-1]`` is the irrep class of the ``j``-th step
    (a class appears once per step it takes); ``losses`` = :func:`levels`; ``predictors[j]`` the tuple of
    :class:`Piece` learned after ``j`` jumps (with ``whole_classes=True``, every piece of the first ``j``
    classes), whose outputs on the dataset :func:`learned_outputs` gives.
    ``times[j]`` is when a neuron of initial norm ``ν = initial_norm``, aligned from the start with the
    step's pieces at their utility ``Ū`` (unchanged by the steps before), reaches norm one
    (:func:`agf_lib.escape.escape_times`, the paper's Eq. 4 at constant utility):

        τ^(j) = (ν^{2−κ} − 1) / ((κ−2) κ η Ū)       or, with the adaptive rate η‖θ‖^{2−κ},   log(1/ν) / (κηŪ),

    κ = k + 1 (κ = 2 takes the logarithmic form). No unit neuron has utility above the first step's
    (:func:`max_utility`), so ``times[1]`` is a lower bound on the first jump of both engines from neurons
    of norm at most ``ν``. With ``whole_classes=True``, one step per class (the follow-up's assumption).
    ``initial_norm`` may also be a sequence ``μ^(0), …, μ^(m−1)``, the largest dormant norm at each earlier
    jump: the paper's recursion ``τ^(j) = τ^(j−1) + c(μ^(j−1))/(κηŪ_j)`` for the first ``m`` steps
    (:func:`agf_lib.escape.jump_times`), and the staircase stops there.
    For ``cyclic(p)`` and ``k = 2`` this is :func:`agf_lib.modular.agf_staircase` (class ``m`` = frequency ``m``).
    """
    if initial_norm is None or isinstance(initial_norm, (str, bytes)) or np.ndim(initial_norm) == 0:
        check_positive(initial_norm, "initial_norm", finite=False)   # None: limit_staircase is the limit
    return _staircase(x, G, k, initial_norm, eta, adaptive_rate, whole_classes)


def limit_staircase(x, G, *, k=2, eta=1.0, adaptive_rate=False, whole_classes=False):
    """The α → 0 limit of :func:`agf_staircase`, in the rescaled time of :func:`agf_lib.escape.threshold`:
    ``t/log(1/α)`` for κ = 2 or with the adaptive rate, where ``τ^(j) = 1/(κηŪ_j)``, else ``t·α^{κ−2}``,
    where ``τ^(j) = 1/((κ−2)κηŪ_j)``. Levels, order and predictors as in :func:`agf_staircase`; for ``cyclic(p)``
    and ``k = 2``, :func:`agf_lib.modular.limit_staircase`.

    It is gradient flow's α → 0 limit when every step starts from neurons of norm α. Where a later piece is
    fitted by the neurons already active (see *Where the piece staircase is the α → 0 limit, measured* in the
    module docstring), gradient flow's drop of it comes earlier, and in this unit merges with an earlier
    drop as α → 0; :func:`agf_lib.limits.agf_limit` computes the limit there."""
    return _staircase(x, G, k, None, eta, adaptive_rate, whole_classes)


def output_power(network, theta, X):
    """Power of the network's output per irrep class, ``E_n[class_power(f(x_n))]``: shape ``(num_classes,)``,
    or ``(T, num_classes)`` for a stack of snapshots ``theta`` of shape ``(T, H, P)``.

    For the target ``(g_1⋯g_k)·x`` this is :func:`agf_lib.finite_groups.class_power` of ``x``.
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


class CompositionSetting(Setting):
    """Composition of ``k`` elements of a finite group with ``H`` neurons (chapter 09), as a
    :class:`~agf_lib.setting.Setting`.

    The data are :func:`dataset` of the template ``x``; the closed forms are :func:`agf_staircase` (from the
    largest initial norm) and :func:`limit_staircase`, by whole irrep classes or by pieces. A level's
    predictor is the tuple of :class:`Piece` learned by then, and its outputs are their sum on the dataset
    (:func:`learned_outputs`).

    Parameters
    ----------
    x : (|G|,) array
        The template.
    G : FiniteGroup
    H : int
        Number of neurons.
    k : int, default 2
        Number of elements composed.
    adaptive_rate : bool, default False
        Run both engines, and time the closed forms, at the paper's adaptive rate (Appendix B.5).
    whole_classes : bool, default False
        The closed forms by whole irrep classes instead of by pieces (:func:`learning_steps`).
    """

    # as for modular addition (agf_lib.modular.ModularSetting)
    agf_options = MappingProxyType({"cost_tol": 1e-3})

    def __init__(self, x, G, H, *, k=2, adaptive_rate=False, whole_classes=False):
        self._G, self._k = _check_group(G), _check_k(k)
        self._x = _check_template(x, self._G)
        self._adaptive_rate = check_bool(adaptive_rate, "adaptive_rate")
        self._whole_classes = check_bool(whole_classes, "whole_classes")
        self._X, self._y = dataset(self._x, self._G, k=self._k)
        self.network = CompositionNetwork(self._G, H, k=self._k)
        self.options = rate_options(self._adaptive_rate)

    def data(self):
        return self._X, self._y

    def finite_staircase(self, initial_norms):
        return agf_staircase(self._x, self._G, initial_norm=initial_norms, k=self._k,
                             adaptive_rate=self._adaptive_rate, whole_classes=self._whole_classes)

    def limit_staircase(self):
        return limit_staircase(self._x, self._G, k=self._k, adaptive_rate=self._adaptive_rate,
                               whole_classes=self._whole_classes)

    @property
    def template(self):
        """The template ``x`` (a copy)."""
        return self._x.copy()

    def level_outputs(self, predictor):
        return learned_outputs(self._x, self._G, predictor, k=self._k)
