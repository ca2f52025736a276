"""The α → 0 limit of numerical AGF on the group templates of ``group_limits.py``, read against the piece levels
(``limits.agf_limit(run, alphas, reference=pieces)``), beside gradient flow's limit studies (issue 29).

Each AGF run (``alternating_gradient_flow``, seed 0, the adaptive rate, rtol 1e-7, atol 1e-10, every neuron
allowed to activate) is read as a loss that steps down at its jumps; its crossings of the middles of the piece
staircase's drops are extrapolated linearly in 1/log(1/α) from two values of α, as AGF's jumps come at
``τ log(1/α) + c``. The runs need not activate their neurons in the same order, only fit the same levels. Saved
to ``group_agf_limits.json`` next to this file, which chapter 09 loads, with gradient flow's limit from
``group_limits.json`` beside each.

    python benchmarks/group_agf_limits.py        # about five minutes on one core (A4's runs take most)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import group_limits
from agf_lib import alternating_gradient_flow, limits

OUT = Path(__file__).with_name("group_agf_limits.json")
CASES = {      # template of group_limits.TEMPLATES: (ladder of α, cost_tol)
    "D3, E σ = (2, 1) and A2 = 1.26 (chapter 09)": ((1e-6, 1e-12), 3e-2),
    "A4, standard irrep, σ = (3, 2, 1)": ((1e-24, 1e-48), 1e-3),
    "D3, E alone, σ = (2, 1)": ((1e-9, 1e-12), 3e-2),
}


class Run:
    """Numerical AGF on one template at one α (picklable)."""

    def __init__(self, name, cost_tol):
        self.name, self.cost_tol = name, cost_tol

    def __call__(self, alpha):
        G, H, options, _ = group_limits.TEMPLATES[self.name]
        _, network, data, _, _ = group_limits.setting(G, H, options)
        return alternating_gradient_flow(network, data, network.initial_theta(alpha=alpha, seed=0), adaptive_rate=True,
                                         rtol=1e-7, atol=1e-10, cost_tol=self.cost_tol, check_rounding=False)


def main():
    flows = json.loads(group_limits.OUT.read_text())
    results = {}
    for name, (ladder, cost_tol) in CASES.items():
        G, H, options, _ = group_limits.TEMPLATES[name]
        pieces = group_limits.setting(G, H, options)[3]
        start = time.perf_counter()
        study = limits.agf_limit(Run(name, cost_tol), ladder, reference=pieces)
        seconds = time.perf_counter() - start
        gf = np.array(flows[name]["limit_times"])
        K = study.limit.num_jumps
        gap = np.abs(study.limit.times[1:] / gf[1 : K + 1] - 1)
        results[name] = dict(ladder=list(ladder), cost_tol=cost_tol, seconds=seconds,
                             limit_times=study.limit.times.tolist(), limit_levels=study.limit.losses.tolist(),
                             jump_times=study.jump_times.tolist(), gf_limit_times=gf.tolist(),
                             gf_limit_levels=flows[name]["limit_levels"], piece_times=pieces.times.tolist(),
                             levels=pieces.losses.tolist(), max_gap=float(gap.max()))
        print(f"\n{name}: ladder {list(ladder)}, cost_tol {cost_tol:g}, {seconds:.1f} s")
        print(f"  crossings:          {np.round(study.jump_times, 3).tolist()}")
        print(f"  AGF's limit:        {np.round(study.limit.times[1:], 3).tolist()}")
        print(f"  gradient flow's:    {np.round(gf[1:], 3).tolist()}")
        print(f"  largest difference: {gap.max():.1%}")
    OUT.write_text(json.dumps(results, indent=1))
    print(f"\nsaved {OUT}")


if __name__ == "__main__":
    main()
