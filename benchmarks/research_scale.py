"""Chapter 06's staircase at research scale: modular addition at p = 97, run once and saved for the chapter.

The setting of ``bench_scale.py`` at p = 97: the quadratic network with H = 3p = 291 neurons, α = 1e-6 (seed 0),
the adaptive rate, a template with frequencies 2, 9, 20 at magnitudes 1, 0.8, 0.6 (``dft.template``, seed 0,
scaled to ‖x‖ = 1), all p² = 9 409 pairs. Gradient flow runs on the structured population loss (chosen by
itself from 2 000 rows on) to 3 × the last jump of ``modular.agf_staircase`` at the largest initial norm,
where the three drops are over, and the loss and the output power per frequency are saved on 121 equally
spaced times, with the template and the first rows of θ₀ so that the chapter can check that it loads the
setting it rebuilds. The chapter reruns the first samples and compares.

    python benchmarks/research_scale.py          # about a minute on a 2-core machine; writes research_scale.npz
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from agf_lib import dft, modular
from saved_runs import sampled_flow, save

P, ALPHA, SEED = 97, 1e-6, 0
FREQUENCIES, MAGNITUDES = (2, 9, 20), (1.0, 0.8, 0.6)
HORIZON, SAMPLES = 3.0, 121
OUT = Path(__file__).with_name("research_scale.npz")


def setting():
    """Template, data, network, θ₀ and the sample times (GF time) of the run."""
    magnitudes = np.zeros(P // 2)
    magnitudes[np.array(FREQUENCIES) - 1] = MAGNITUDES
    x = dft.template(P, magnitudes, seed=SEED)
    x /= np.linalg.norm(x)
    X, Y = modular.dataset(x)
    network = modular.QuadraticModularNetwork(P, 3 * P)
    theta0 = network.initial_theta(alpha=ALPHA, seed=SEED)
    nu = float(np.linalg.norm(theta0, axis=1).max())
    t_end = HORIZON * float(modular.agf_staircase(x, initial_norm=nu, adaptive_rate=True).times[-1])
    return x, X, Y, network, theta0, np.linspace(0.0, t_end, SAMPLES)


def run(times_until=None):
    """Gradient flow of the setting, sampled on its times (up to ``times_until`` samples)."""
    x, X, Y, network, theta0, times = setting()
    return sampled_flow(network, (X, Y), theta0, times, times_until)


def main():
    start = time.perf_counter()
    trajectory = run()
    seconds = time.perf_counter() - start
    x, X, *_ = setting()
    power = modular.output_power(modular.QuadraticModularNetwork(P, 3 * P), trajectory.params, X)
    save(OUT, trajectory, seconds, power=power[:, list(FREQUENCIES)], template=x)
    print(f"p = {P}: gradient flow to t = {trajectory.times[-1]:.0f} in {seconds:.1f} s "
          f"({trajectory.evaluations} evaluations); final loss {trajectory.losses[-1]:.3g}")


if __name__ == "__main__":
    main()
