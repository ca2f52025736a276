"""Specifications of `agf_lib.dft`: the DFT on Z/p in the paper's convention (Appendix F).

References are written independently: the transform as an explicit double sum, cyclic shifts and
cross-correlations by index arithmetic.
"""

import numpy as np
import pytest

from agf_lib import dft

ODD_P = [3, 5, 7, 11, 13, 23]


def explicit_dft(u):
    p = len(u)
    j = np.arange(p)
    return np.array([np.sum(u * np.exp(-2j * np.pi * j * k / p)) for k in range(p)])


@pytest.mark.parametrize("p", [1, 2, 4, 5, 11])
def test_dft_is_the_explicit_sum_with_a_minus_sign_in_the_exponent(p):
    u = np.random.default_rng(p).normal(size=p)
    np.testing.assert_allclose(dft.dft(u), explicit_dft(u), atol=1e-12)


@pytest.mark.parametrize("p", ODD_P)
def test_plancherel_inner_product_is_one_over_p_times_the_spectral_one(p):
    rng = np.random.default_rng(p)
    u, v = rng.normal(size=(2, p))
    np.testing.assert_allclose(u @ v, np.vdot(dft.dft(v), dft.dft(u)).real / p, rtol=1e-12)


@pytest.mark.parametrize("p", ODD_P)
def test_cross_correlation_transform_is_conj_x_hat_times_u_hat(p):
    rng = np.random.default_rng(p + 1)
    x, u = rng.normal(size=(2, p))
    corr = np.array([sum(x[j] * u[(j + a) % p] for j in range(p)) for a in range(p)])
    np.testing.assert_allclose(dft.dft(corr), np.conj(dft.dft(x)) * dft.dft(u), atol=1e-10)


def test_power_spectrum_of_a_harmonic_sits_at_its_frequency():
    p, k, amplitude = 11, 3, 0.7
    power = dft.power_spectrum(dft.harmonic(p, k, amplitude=amplitude, phase=1.2))
    expected = np.zeros(p // 2 + 1)
    expected[k] = (p * amplitude / 2) ** 2
    np.testing.assert_allclose(power, expected, atol=1e-12)
    np.testing.assert_array_equal(dft.frequencies(p), np.arange(6))


@pytest.mark.parametrize("p", [3, 7, 13])
def test_template_has_the_prescribed_magnitudes_and_phases_and_is_centred(p):
    rng = np.random.default_rng(p)
    half = (p - 1) // 2
    magnitudes, phases = rng.uniform(0.1, 2, half), rng.uniform(-np.pi, np.pi, half)
    x = dft.template(p, magnitudes, phases=phases)
    x_hat = dft.dft(x)
    assert x.shape == (p,) and abs(x.sum()) < 1e-12
    np.testing.assert_allclose(np.abs(x_hat[1 : half + 1]), magnitudes, rtol=1e-12)
    np.testing.assert_allclose(np.angle(x_hat[1 : half + 1]), phases, atol=1e-12)
    # seeded random phases are reproducible
    np.testing.assert_array_equal(dft.template(p, magnitudes, seed=4), dft.template(p, magnitudes, seed=4))


@pytest.mark.parametrize("p", [2, 4, 10])
def test_even_template_has_a_real_coefficient_at_p_half_with_the_sign_of_its_phase(p):
    """For even p, x̂[p/2] = Σ_j (−1)^j x[j] (the explicit sum) is real: ± its magnitude, by the phase 0 or π."""
    half = p // 2
    magnitudes = np.linspace(1.0, 2.0, half)
    for phase, sign in ((0.0, 1.0), (np.pi, -1.0)):
        phases = np.concatenate([np.linspace(-1.0, 1.0, half - 1), [phase]])
        x = dft.template(p, magnitudes, phases=phases)
        assert abs(x.sum()) < 1e-12
        np.testing.assert_allclose(x @ (-1.0) ** np.arange(p), sign * magnitudes[-1], rtol=1e-12)
        np.testing.assert_allclose(np.abs(dft.dft(x)[1 : half + 1]), magnitudes, rtol=1e-12)
    drawn = dft.dft(dft.template(p, magnitudes, seed=3))[half]     # a drawn phase is rounded to 0 or π
    assert abs(drawn.imag) < 1e-12 and abs(abs(drawn.real) - magnitudes[-1]) < 1e-12


def test_dominant_frequencies_sort_by_magnitude_skip_zeros_and_break_ties_low_first():
    x = dft.template(11, [0.5, 0.0, 2.0, 0.5, 1.0], seed=0)
    np.testing.assert_array_equal(dft.dominant_frequencies(x), [3, 5, 1, 4])
    assert dft.dominant_frequencies(np.zeros(5)).size == 0


@pytest.mark.parametrize("p,m", [(11, 2), (11, 5), (13, 7), (9, 4)])
def test_relabel_moves_frequency_m_k_to_k_and_is_invertible(p, m):
    u = np.random.default_rng(m).normal(size=(3, p))
    relabelled = dft.relabel(u, m)
    k = np.arange(p)
    np.testing.assert_allclose(dft.dft(relabelled), dft.dft(u)[:, (m * k) % p], atol=1e-10)
    np.testing.assert_allclose(dft.relabel(relabelled, pow(m, -1, p)), u)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: dft.dft("abc"), TypeError, "^u must be an array of real numbers, got str"),
        (lambda: dft.dft(np.array([1.0, np.nan])), ValueError, "^u contains NaN or infinite values"),
        (lambda: dft.dft(np.array([1 + 1j, 2])), TypeError, "^u must hold real numbers, got dtype complex128"),
        (lambda: dft.template(1, np.ones(1)), ValueError, "^p must be an integer >= 2, got 1"),
        (lambda: dft.template(11, np.ones(4)), ValueError, "^magnitudes must have ⌊p/2⌋ = 5 entries"),
        (lambda: dft.template(10, np.ones(4)), ValueError, "^magnitudes must have ⌊p/2⌋ = 5 entries"),
        (lambda: dft.template(10, np.ones(5), phases=[0, 0, 0, 0, 1.0]), ValueError,
         r"^phases\[4\] \(frequency p/2 = 5\) must be 0 or π"),
        (lambda: dft.template(11, -np.ones(5)), ValueError, "^magnitudes must be non-negative"),
        (lambda: dft.template(11, np.ones(5), phases=np.ones(3)), ValueError,
         r"^phases must have ⌊p/2⌋ = 5 entries, got shape \(3,\)"),
        (lambda: dft.harmonic(0, 1), ValueError, "^p must be an integer >= 1, got 0"),
        (lambda: dft.harmonic(5, 1.5), TypeError, "^k must be an integer frequency, got float"),
        (lambda: dft.relabel(np.ones(9), 3), ValueError, r"^m must be a unit mod p = 9 \(gcd\(m, p\) = 1\), got 3"),
        (lambda: dft.relabel(np.ones(9), 2.0), TypeError, "^m must be an integer, got float"),
    ],
)
def test_bad_inputs_raise_errors_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
