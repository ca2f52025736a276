"""The population loss of composition over all tuples, in structured form: what the engines evaluate on
:func:`agf_lib.groups.dataset` (chapters 06 and 09 at research scale), derived here for any finite group and
number of summands ``k``.

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
frequencies: ``D = 2·11 + 36`` at ``p = 47``).

The networks recognize the dataset by comparing it, row by row, with the one its first rows' template
generates (anything else, a subset or a permutation of the rows, noisy targets, is evaluated densely), and
``structured`` chooses (:class:`agf_lib.groups.CompositionNetwork`). ``tests/test_structured.py`` checks the
structured evaluation against the dense one to 1e-12; ``benchmarks/bench_scale.py`` measures the speed.

**Length.** One derivation and the code that follows it line by line: the loss, the utilities and their
gradients for any ``k`` and any group share the moment matrices built here, and splitting them would separate
each formula from its derivation.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .validation import real_array

__all__ = ["STRUCTURED_MIN_ROWS", "StructuredNetwork"]


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

    ``S`` holds the translates (row ``g`` is ``g·x``, :func:`agf_lib.finite_groups.translates`), ``irreps`` the group's irreps and
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
            self.tables = None                                             # the output form's, on first use

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

    def _output_tables(self):
        """The linear maps of :meth:`_outputs2` as real tables (built on first use): ``(square, convolution,
        gradient)``.

        With ``C ⊗ C'`` the outer product of two functions' ``B_1`` coordinates (``r²`` numbers, ``(a, b)`` at
        ``a r + b``), ``(C ⊗ C) @ square`` (``square`` stored as ``(r, r (s + 1))``, contracted with ``C`` twice)
        is ``U²`` in ``B_2`` and, last, ``Σ_g U² = ‖C‖²``; ``(C_U ⊗ C_V) @ convolution`` is the inverse transform
        of ``V̂ Û`` in ``B_1``. ``gradient`` maps ``[P | C_W]`` (``P_i = ⟨w_i, M_d⟩``, ``C_W`` the ``B_1``
        coordinates of ``W_i``) to two ``2r × r`` matrices per neuron, ``K_U`` and ``K_V``, such that
        ``[C_U | C_V] K_U`` is ``B_i − Q_i`` of slot ``U`` in ``B_1`` and ``[C_U | C_V] K_V`` that of slot ``V``:
        ``B`` and ``Q`` are bilinear in the slots' coordinates and ``(P, C_W)``, so each of their terms (written
        out in :meth:`_outputs2`) is one block of the table. The entries are the maps on basis functions,
        computed from the functions on ``G`` and their transforms, so the tables give the same numbers up to
        rounding.
        """
        if self.tables is None:
            N, B1, B2, r, s, F = self.N, self.B1, self.B2, self.r, self.s, self.transform
            sigma, tau, B21, eye = self.ones1, self.tau, self.B21, np.eye(r)
            pairs11 = (B1[:, None, :] * B1[None, :, :]).reshape(r * r, N)
            square = np.concatenate([pairs11 @ B2.T, eye.reshape(r * r, 1)], axis=1).reshape(r, r * (s + 1))
            prod11 = (pairs11 @ B1.T).reshape(r, r, r)                               # ⟨B_1b B_1a, B_1o⟩
            prod21 = ((B2[:, None, :] * B1[None, :, :]).reshape(s * r, N) @ B1.T).reshape(s, r, r)
            basis = self._forward1(eye)                                              # the transforms of B_1
            first, second = [b[:, None] for b in basis], [b[None, :] for b in basis]
            conv = [self._inverse1(blocks) for blocks in (                           # [a, b, o]: factors a, b
                F.product(second, first), F.product(F.adjoint(first), second), F.product(second, F.adjoint(first)))]
            D = 2 * s + r * r
            R = np.zeros((D + r, 2, 2 * r, r))                  # rows: P_A (s), P_X (r²), P_B (s), C_W (r)
            PA, PB, W = R[:s], R[s + r * r : D], R[D:]
            PX = R[s : s + r * r].reshape(r, r, 2, 2 * r, r)    # P_X[p, q]: p the U factor, q the V factor
            for j, (Pj, Pk) in enumerate(((PA, PB), (PB, PA))):  # slot j's own coordinates, then the other's
                own, other = (slice(0, r), slice(r, 2 * r))[:: 1 - 2 * j]
                Pj[:, j, own] -= N * prod21                                          # Q: N (P_A B_2) U
                Pk[:, j, own] -= np.einsum("m,ao->mao", tau, eye)                    # Q: (P_B τ) U
                W[:, j, own] += np.einsum("b,ao->bao", sigma, eye)                   # B: (Σ W) U
                Pj[:, j, other] -= np.einsum("q,mo->mqo", sigma, B21)                # Q: (Σ V) Π_1(P_A B_2)
                Pk[:, j, other] -= np.einsum("mq,o->mqo", B21, sigma)                # Q: ⟨P_B, Π_2 V⟩ σ
            # Q's P_X terms: (P_X σ) U and P_X V for slot U, (σ P_X) V and P_Xᵀ U for slot V
            PX[:, :, 0, :r] -= np.einsum("q,bao->bqao", sigma, prod11)
            PX[:, :, 1, r:] -= np.einsum("p,bao->pbao", sigma, prod11)
            idx = np.arange(r)
            PX[idx[:, None], idx[None, :], 0, r + idx[None, :], idx[:, None]] -= 1.0
            PX[idx[:, None], idx[None, :], 1, idx[:, None], idx[None, :]] -= 1.0
            W[:, 0, r:] += conv[1].transpose(1, 0, 2)                                 # B: V̂^† Ŵ
            W[:, 1, :r] += conv[2].transpose(1, 0, 2)                                 # B: Ŵ Û^†
            self.tables = (square, conv[0].reshape(r * r, r), R.reshape(D + r, 4 * r * r))
        return self.tables

    def _loss_and_utilities(self, w, E, T, weights, n):
        """From the moments ``E_ii' = Σ_t z_i^k z_i'^k`` and ``T_i = Σ_t z_i^k ⟨w_i, y_t⟩``: the output Gram
        ``G = w wᵀ``, the loss and the utilities at the residual (k = 2 and general k share them)."""
        G = w @ w.T
        GE = G * E
        loss = self.half_norm2 + (0.5 * (weights @ GE @ weights) - weights @ T) / n
        return G, loss, (T - GE @ weights) / n

    def _evaluate2(self, theta, weights, gradient, values=True):
        """:meth:`evaluate` for ``k = 2``, its sums written out (module docstring), the two slots side by side
        (index 0: ``U``, 1: ``V``)."""
        N, n, H, r, s = self.N, self.n, theta.shape[0], self.r, self.s
        coords = (theta.reshape(3 * H, N) @ self.S_reduced).reshape(H, 3, r)
        if 3 * self.pair_gram.shape[0] < 2 * H:
            return self._outputs2(coords, theta[:, 2 * N :], weights, gradient, values)
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

    def _outputs2(self, coords, w, weights, gradient, values=True):
        """:meth:`_evaluate2` through the network's output instead of ``H × H`` Gram matrices, when the template's
        span is small: ``z_i²`` has coordinates ``Z_i`` on the functions ``B_2(a)``, ``B_1(a)B_1(b)``, ``B_2(b)``
        of the pair (Gram matrix ``Γ``), the output is ``f = Σ_d φ_d M_d`` with ``M = Zᵀ diag(c) w``, and
        ``Σ_i' c_i' E_ii' w_i' = Z_i Γ M``, ``Σ_i' c_i' G_ii' E_ii' = ⟨w_i, Z_i Γ M⟩``, ``Σ_t ‖f_t‖² = tr(MᵀΓM)``,
        ``Q_i(g) = Σ_h z_i(g, h) ⟨w_i, f(g, h)⟩``: ``O(H D |G|)`` with ``D = 2 dim B_2 + (dim B_1)²``.

        Every function on ``G`` stays in its coordinates (``B_1``, ``B_2``, of dimensions ``r``, ``s`` below
        ``|G|``), and the products and convolutions of two of them are tables (:meth:`_output_tables`) applied to
        their coordinates: real arithmetic on ``(H, r²)`` arrays. With ``P = w Mᵀ`` split as ``(P_A, P_X, P_B)``
        along ``Z``'s blocks, ``σ``, ``τ`` the coordinates of the constant function in ``B_1``, ``B_2`` and
        ``Π_1``, ``Π_2`` the projections on ``B_1``, ``B_2``, slot ``U``'s terms are

            B_i = (Σ W_i) U_i + Π_1(V̂_i^† Ŵ_i)^∨,
            Q_i = Π_1[(N P_A·B_2 + (P_X σ)·B_1 + P_B·τ) U_i] + (Σ V_i) Π_1(P_A·B_2) + P_X V_i + (⟨P_B, Π_2 V_i⟩) σ,

        and slot ``V``'s the mirror images (``P_A`` and ``P_B`` exchanged, ``P_Xᵀ``, ``Ŵ Û^†``)."""
        N, n, H, r, s = self.N, self.n, w.shape[0], self.r, self.s
        square, conv_uv, table = self._output_tables()
        Cu, Cv, Cw = coords[:, 0], coords[:, 1], coords[:, 2]
        C = coords[:, :2]                                                    # U and V in B_1
        proj = np.matmul(C[..., None, :], (C @ square).reshape(H, 2, r, -1))[..., 0, :]  # U², V² in B_2; Σ U², Σ V²
        UV = (Cu[:, :, None] * Cv[:, None, :]).reshape(H, r * r)
        D = (proj[:, 0, -1] + proj[:, 1, -1])[:, None] * self.ones1 + 2.0 * (UV @ conv_uv)   # Σ_{gh = f} z², in B_1
        Z = np.concatenate([proj[:, 0, :s], 2.0 * UV, proj[:, 1, :s]], axis=1)
        M = Z.T @ (weights[:, None] * w)                                     # (D, N)
        GM = self.pair_gram @ M
        ZGM = Z @ GM                                                         # Σ_i' c_i' E_ii' w_i'
        loss = utilities = None
        if values or not gradient:
            T = np.einsum("ir,ir->i", D, Cw)
            loss = self.half_norm2 + (0.5 * np.einsum("dn,dn->", M, GM) - weights @ T) / n
            utilities = (T - np.einsum("in,in->i", ZGM, w)) / n
        if not gradient:
            return loss, utilities, None
        K = (np.concatenate([w @ M.T, Cw], axis=1) @ table).reshape(H, 2, 2 * r, r)
        rows = np.empty((H, 3, r))
        rows[:, :2] = (2.0 / n) * np.matmul(C.reshape(H, 1, 1, 2 * r), K)[:, :, 0]   # B − Q of each slot, in B_1
        rows[:, 2] = D / n
        grad = (rows.reshape(3 * H, r) @ self.S_back).reshape(H, 3 * N)
        grad[:, 2 * N :] -= ZGM / n
        return loss, utilities, grad

    def evaluate(self, theta, weights, *, gradient=True, values=True):
        """``(loss, utilities, gradients)`` for neurons ``theta`` (shape ``(H, (k+1)N)``) weighted by ``weights``:
        the loss ``½ E‖y − Σ_i c_i f_i‖²``, every ``U_i(θ_i; r)`` at that residual and, with ``gradient``, their
        gradients ``∇U_i`` (else None). With ``values = False`` the loss and utilities may be None where the
        gradient does not need them (the engines' right-hand side)."""
        if self.k == 2:
            return self._evaluate2(theta, weights, gradient, values)
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
    """The :class:`_StructuredLoss` of ``(X, y)`` if it is, entry for entry, :func:`agf_lib.groups.dataset` of some template
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


#: With ``structured=None`` the networks take the structured evaluation on datasets of at least this many rows,
#: so that the book's small problems (p ≤ 23, |G| ≤ 24) keep their dense arithmetic, their chapters' numbers
#: unchanged; benchmarks/bench_scale.py measures where each evaluation is cheaper (benchmarks/README.md).
STRUCTURED_MIN_ROWS = 2000


def _check_structured(structured):
    if structured is not None and not isinstance(structured, (bool, np.bool_)):
        raise TypeError(f"structured must be True, False or None, got {type(structured).__name__}")
    return structured if structured is None else bool(structured)


class StructuredNetwork:
    """The structured path of :class:`agf_lib.groups.CompositionNetwork` (and so of its front at ``cyclic(p)``,
    :class:`agf_lib.modular.QuadraticModularNetwork`): on the full dataset of a template
    (:func:`agf_lib.groups.dataset`, recognized by value) the engines' evaluations go through the structured
    loss of the module docstring; on any other data, with ``structured = False``, or with ``structured = None``
    on fewer than :data:`STRUCTURED_MIN_ROWS` rows, through the dense closed forms.

    A subclass sets ``structured``, ``k`` and ``group`` (a :class:`agf_lib.finite_groups.FiniteGroup`).
    """

    structured = None

    def _find_structure(self, X, y):
        if self.structured is False or (self.structured is None and X.shape[0] < STRUCTURED_MIN_ROWS):
            return None
        return _structure_of(X, y, self.group.table, self.k, self.group.irreps)

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
            return structure.evaluate(phi, weights, values=False)[2]
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
        as :func:`agf_lib.network.loss`, :func:`agf_lib.network.utility` and
        :meth:`agf_lib.network.TwoLayerNetwork.utility_gradient` give them densely.

        Raises
        ------
        ValueError
            If ``(X, y)`` is not the full dataset of a template (:func:`agf_lib.groups.dataset`), or the shapes
            do not fit.
        """
        theta = self.check_theta(theta)
        X, y = self.check_data(X, y)
        weights = np.ones(self.num_neurons) if weights is None else real_array(weights, "weights")
        if weights.shape != (self.num_neurons,):
            raise ValueError(f"weights must have shape ({self.num_neurons},), got {weights.shape}")
        structure = _structure_of(X, y, self.group.table, self.k, self.group.irreps)
        if structure is None:
            raise ValueError("(X, y) must be the full dataset of a template (dataset(x)), row for row")
        return structure.evaluate(theta, weights)
