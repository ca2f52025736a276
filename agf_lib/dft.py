"""The discrete Fourier transform on Z/p, as used for modular addition (the paper's Appendix F).

Convention (Appendix F): for ``u ∈ R^p``,

    û[k] = Σ_{j=0}^{p−1} u[j] e^{−2πi jk/p},      u[j] = (1/p) Σ_k û[k] e^{2πi jk/p},

which is :func:`numpy.fft.fft`. With it, Plancherel reads ``⟨u, v⟩ = (1/p) Re⟨û, v̂⟩``, a real vector
has ``û[−k] = conj(û[k])``, and the cross-correlation ``(x ⋆ u)[a] = Σ_j x[j] u[j + a]`` has
transform ``conj(x̂[k]) û[k]``. The frequencies ``0, 1, …, ⌊p/2⌋`` represent Z/p up to sign: for
``0 < k < p/2`` the pair ``±k`` (two conjugate coefficients, a complex irrep and its conjugate), and
``k = 0`` and, for even ``p``, ``k = p/2`` on their own. These two are their own conjugates, so
``û[0]`` and ``û[p/2] = Σ_j (−1)^j u[j]`` are real (real one-dimensional irreps of the cyclic group,
the classes of ``groups.cyclic(p)`` with ``C = 1``), and by Plancherel a real ``u`` has
``‖u‖² = (1/p) Σ_{k=0}^{⌊p/2⌋} C_k |û[k]|²`` with ``C_k = 1`` for ``k = 0, p/2`` and ``C_k = 2`` otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from .validation import check_fraction, check_int, check_real, real_array

__all__ = ["dft", "frequencies", "power_spectrum", "dominant_frequencies", "harmonic", "template", "relabel"]


def _as_real_vectors(u, name="u"):
    """``u`` as a finite float array whose last axis indexes Z/p; TypeError/ValueError on bad input."""
    u = real_array(u, name)
    if u.ndim == 0 or u.shape[-1] < 1:
        raise ValueError(f"{name} must have at least one axis of length >= 1, got shape {u.shape}")
    return u


def dft(u):
    """``û[k] = Σ_j u[j] e^{−2πi jk/p}`` along the last axis (the paper's convention, Appendix F)."""
    return np.fft.fft(_as_real_vectors(u), axis=-1)


def frequencies(p):
    """The frequencies ``0, 1, …, ⌊p/2⌋``: one representative of each pair ``±k`` of Z/p."""
    return np.arange(check_int(p, "p") // 2 + 1)


def power_spectrum(u):
    """Power per frequency: ``|û[k]|²`` for ``k = 0, …, ⌊p/2⌋`` along the last axis.

    For a real ``u`` the pair ``±k`` (``0 < k < p/2``) carries ``2|û[k]|²/p`` of ``‖u‖²`` by
    Plancherel, and ``k = 0`` and (even ``p``) the self-conjugate ``k = p/2`` carry ``|û[k]|²/p``;
    this function returns ``|û[k]|²`` itself, so that a target ``(a+b)·x`` has power ``|x̂[k]|²`` at
    frequency ``k``.
    """
    u_hat = dft(u)
    return np.abs(u_hat[..., : u_hat.shape[-1] // 2 + 1]) ** 2


def dominant_frequencies(x, *, tol=1e-12):
    """Frequencies ``1 ≤ k ≤ ⌊p/2⌋`` with ``|x̂[k]| > tol · max|x̂|``, ordered by decreasing ``|x̂[k]|``.

    Ties keep the lower frequency first. For odd ``p`` this is the order in which Theorem F.3 and the
    updated utility of the paper's Appendix F say a quadratic network learns the frequencies; for even
    ``p`` the real frequency ``p/2`` has a larger utility than a pair of the same magnitude (by ``√2``),
    and :func:`agf_lib.modular.learning_order` gives the order of learning.
    ``tol`` is a relative threshold in ``[0, 1)``; a NaN or negative one is a ValueError.
    """
    tol = check_fraction(tol, "tol", zero_ok=True)
    x = _as_real_vectors(x, "x")
    if x.ndim != 1:
        raise ValueError(f"x must be a 1-D vector, got shape {x.shape}")
    magnitudes = np.abs(dft(x))[1 : x.size // 2 + 1]
    if magnitudes.size == 0:
        return np.zeros(0, dtype=int)
    order = np.argsort(-magnitudes, kind="stable")
    keep = magnitudes[order] > tol * max(float(np.abs(dft(x)).max()), 1e-300)
    return order[keep] + 1


def harmonic(p, k, *, amplitude=1.0, phase=0.0):
    """The real harmonic ``u[j] = amplitude · cos(2πkj/p + phase)``, ``j = 0, …, p−1``.

    For ``0 < k < p/2`` its transform is ``(p·amplitude/2) e^{±i·phase}`` at ``±k`` and zero elsewhere;
    for ``k = p/2`` (even ``p``) it is ``amplitude·cos(phase)·(−1)^j``, with transform
    ``p·amplitude·cos(phase)`` at ``p/2``. ``amplitude`` and ``phase`` are finite real numbers.
    """
    p = check_int(p, "p")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer frequency, got {type(k).__name__}")
    amplitude, phase = check_real(amplitude, "amplitude"), check_real(phase, "phase")
    k = int(k) if -p < k < p else int(k) % p         # the same harmonic; a huge k would overflow k·j
    j = np.arange(p)
    return amplitude * np.cos(2 * np.pi * k * j / p + phase)


def template(p, magnitudes, *, phases=None, seed=0):
    """A centred real vector ``x ∈ R^p`` (``p ≥ 2``) with ``|x̂[k]| = magnitudes[k−1]``, ``k = 1…⌊p/2⌋``.

    ``phases[k−1]`` is the phase of ``x̂[k]``; when omitted the phases are drawn uniformly with ``seed``.
    ``x̂[0] = 0`` (centred), and conjugate symmetry fixes ``x̂[−k]``. For even ``p`` the last entry is the
    real frequency ``p/2``: ``x̂[p/2]`` is real, so its phase must be ``0`` or ``π`` (mod ``2π``), the sign
    of ``x̂[p/2]``; a drawn phase is rounded to the nearer of the two. Each frequency contributes
    ``(C_k |x̂[k]|/p) cos(2πkj/p + phase)`` with ``C_k = 2`` for a pair ``±k`` and ``C_k = 1`` at ``p/2``.
    """
    p = check_int(p, "p")
    if p < 2:
        raise ValueError(f"p must be an integer >= 2, got {p}")
    half = p // 2
    magnitudes = _as_real_vectors(magnitudes, "magnitudes")
    if magnitudes.shape != (half,):
        raise ValueError(f"magnitudes must have ⌊p/2⌋ = {half} entries, got shape {magnitudes.shape}")
    if np.any(magnitudes < 0):
        raise ValueError("magnitudes must be non-negative")
    if phases is None:
        phases = np.random.default_rng(check_int(seed, "seed", 0)).uniform(0.0, 2 * np.pi, half)
        if p % 2 == 0:
            phases[-1] = 0.0 if math.cos(phases[-1]) >= 0 else np.pi
    phases = _as_real_vectors(phases, "phases")
    if phases.shape != (half,):
        raise ValueError(f"phases must have ⌊p/2⌋ = {half} entries, got shape {phases.shape}")
    if p % 2 == 0 and abs(math.sin(phases[-1])) > 1e-12:
        raise ValueError(f"phases[{half - 1}] (frequency p/2 = {half}) must be 0 or π: x̂[p/2] is real for even p, "
                         f"got {phases[-1]}")
    weights = [1.0 if 2 * k == p else 2.0 for k in range(1, half + 1)]
    x = sum(harmonic(p, k, amplitude=C * m / p, phase=s)
            for k, C, m, s in zip(range(1, half + 1), weights, magnitudes, phases))
    return x


def relabel(u, m):
    """The automorphism ``j ↦ m·j`` of Z/p applied to the last axis: ``u'[m·j mod p] = u[j]``.

    ``m`` must be a unit mod ``p`` (``gcd(m, p) = 1``). Then ``û'[k] = û[m·k]``: relabelling the
    residues moves the coefficient of frequency ``m·k`` to frequency ``k``.
    """
    u = _as_real_vectors(u)
    p = u.shape[-1]
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"m must be an integer, got {type(m).__name__}")
    if math.gcd(int(m), p) != 1:
        raise ValueError(f"m must be a unit mod p = {p} (gcd(m, p) = 1), got {m}")
    out = np.empty_like(u)
    out[..., ((int(m) % p) * np.arange(p)) % p] = u          # m mod p first: a huge m would overflow
    return out
