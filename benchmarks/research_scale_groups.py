"""Chapter 09's staircase at research scale: composition over A5 (order 60, an irrep of dimension 5), run once
and saved for the chapter.

The setting: ``groups.alternating5()``, k = 2, the template with x̂[T1] = 1.0·Q₃ and x̂[H] = 0.9·Q₅ (Q_d an
orthogonal matrix, ``orthogonal(d, seed)`` below; every other coefficient zero), scaled to ‖x‖ = 1, all
|G|² = 3 600 pairs, ``groups.CompositionNetwork`` with H = 6|G| = 360 neurons (64 800 parameters), α = 1e-6
(seed 0), the adaptive rate. The utility criterion puts the three-dimensional T1 first although the
five-dimensional H holds 2.25 times its power. Gradient flow runs on the structured population loss (the
network takes it by itself from 2 000 rows on) to ``HORIZON`` × the last jump of ``groups.limit_staircase``,
and the loss and each class's share of the target's power in the output are saved on ``SAMPLES`` equally
spaced times, with the template and the first rows of θ₀ so that the chapter can check that it loads the
setting it rebuilds. The chapter reruns the first samples and compares.

The run of 2026-12-06 took 757 s of wall time (12 959 evaluations) on a shared 2-core machine under a load
average of 7-9, where it had a fraction of a core: its CPU time was not recorded.

    python benchmarks/research_scale_groups.py   # writes research_scale_groups.npz and .json
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from agf_lib import groups
from saved_runs import sampled_flow, save

ALPHA, SEED, WIDTH = 1e-6, 0, 360
SCALES = {1: (1.0, 1), 4: (0.9, 2)}          # irrep index: (s, seed of its orthogonal matrix); 1 = T1, 4 = H
HORIZON, SAMPLES = 3.0, 161
OUT = Path(__file__).with_name("research_scale_groups.npz")


def orthogonal(d, seed):
    """A d × d orthogonal matrix (QR of a standard normal one)."""
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))[0]


def setting():
    """Group, template, data, network, θ₀ and the sample times (GF time) of the run."""
    G = groups.alternating5()
    blocks = [SCALES[r][0] * orthogonal(d, SCALES[r][1]) if r in SCALES else np.zeros((d, d))
              for r, d in enumerate(G.dims)]
    x = groups.inverse_fourier(blocks, G)
    x /= np.linalg.norm(x)
    X, Y = groups.dataset(x, G)
    network = groups.CompositionNetwork(G, WIDTH)
    theta0 = network.initial_theta(alpha=ALPHA, seed=SEED)
    limit = groups.limit_staircase(x, G, adaptive_rate=True)
    t_end = HORIZON * float(limit.times[-1]) * math.log(1 / ALPHA)
    return G, x, X, Y, network, theta0, np.linspace(0.0, t_end, SAMPLES)


def run(times_until=None):
    """Gradient flow of the setting, sampled on its times (up to ``times_until`` samples)."""
    G, x, X, Y, network, theta0, times = setting()
    return sampled_flow(network, (X, Y), theta0, times, times_until)


def main():
    start = time.perf_counter()
    trajectory = run()
    seconds = time.perf_counter() - start
    G, x, X, _, network, *_ = setting()
    power = groups.output_power(network, trajectory.params, X)          # (samples, classes)
    save(OUT, trajectory, seconds, power=power, template=x)
    print(f"A5: gradient flow to t = {trajectory.times[-1]:.0f} in {seconds:.1f} s "
          f"({trajectory.evaluations} evaluations); final loss {trajectory.losses[-1]:.4g}")


if __name__ == "__main__":
    main()
