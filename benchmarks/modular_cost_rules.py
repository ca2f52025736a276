"""How a cost step's end moves AGF's later jumps on the paper's modular setup, run once for chapter 06.

The paper's modular-addition notebook (p = 20, H = 18, coefficients 10, 5, 2.5 at frequencies 1, 3, 5, their
torch seed 0 and init scale 10^-2: ``paper_experiments.modular_setting``) has cost steps whose loss approaches an
infimum that no finite weights attain, or crawls along a nearly flat direction. This script runs
``agf_lib.alternating_gradient_flow`` there up to t = 600 (the horizon of the gradient-flow run saved by
``paper_experiments.py``, which covers the first two frequencies) under five stopping rules for such steps:

* ``auto``: the engine's defaults (``cost_tol`` 1e-9, ``cost_horizon="auto"``);
* ``auto, cost_tol 1e-12``: the same rule at a tighter tolerance;
* ``next_activation``: every power-like step ends at the next activation (``cost_tol`` 1e-9);
* ``rules, cost_tol 1e-3`` and ``rules, cost_tol 1e-5``: no horizon; the gradient and loss-settling rules at the
  loose tolerances that let them end (at 1e-9 they raise ``CostStepError``).

For each run it saves the jump times, levels, the order of activation and the output power per frequency of the
active neurons on every level (``modular.output_power``), with the template and θ₀, to
``benchmarks/modular_cost_rules.npz``; wall times and the machine to ``modular_cost_rules.json``.

    python benchmarks/modular_cost_rules.py        # a few minutes on a 2-core machine
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import agf_lib
from agf_lib import modular

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paper_experiments  # noqa: E402  (the notebook's setting, shared with the appendix page)

P, H, T_END = 20, 18, 600.0
RULES = {
    "auto": dict(),
    "auto, cost_tol 1e-12": dict(cost_tol=1e-12),
    "next_activation": dict(cost_horizon="next_activation"),
    "rules, cost_tol 1e-3": dict(cost_horizon=None, cost_tol=1e-3),
    "rules, cost_tol 1e-5": dict(cost_horizon=None, cost_tol=1e-5),
}
OUT = Path(__file__).with_name("modular_cost_rules.npz")


def setting():
    """The template, the data, the network and θ₀ of the notebook's setup."""
    x, theta0 = paper_experiments.modular_setting()
    return x, modular.dataset(x), modular.QuadraticModularNetwork(P, H), theta0


def active_states(staircase):
    """Each level's parameters with the dormant neurons set to zero: the function AGF computes there."""
    states = np.array(staircase.states)
    for k, members in enumerate(staircase.active):
        states[k][np.setdiff1d(np.arange(H), members)] = 0.0
    return states


def run(name):
    x, data, network, theta0 = setting()
    start = time.perf_counter()
    staircase = agf_lib.alternating_gradient_flow(network, data, theta0, t_end=T_END, **RULES[name])
    seconds = time.perf_counter() - start
    states = active_states(staircase)
    return staircase, states, modular.output_power(network, states, data[0]), seconds


def main(names):
    x, data, network, theta0 = setting()
    saved = dict(np.load(OUT)) if OUT.exists() else {}
    info = json.loads(OUT.with_suffix(".json").read_text()) if OUT.with_suffix(".json").exists() else {}
    saved.update(template=x, theta0=theta0, rules=np.array(list(RULES)))
    for k, name in enumerate(RULES):
        if names and name not in names:
            continue
        staircase, states, power, seconds = run(name)
        saved.update({f"r{k}_times": staircase.times, f"r{k}_losses": staircase.losses,
                      f"r{k}_order": np.array(staircase.order), f"r{k}_states": states, f"r{k}_power": power})
        info[name] = {"seconds": round(seconds, 1), "jumps": staircase.num_jumps,
                      "stop_reason": staircase.stop_reason, "evaluations": int(staircase.evaluations)}
        print(f"{name}: {staircase.num_jumps} jumps in {seconds:.0f} s; levels {np.round(staircase.losses, 4)}",
              flush=True)
        np.savez_compressed(OUT, **saved)
        info["machine"] = f"Python {platform.python_version()}, {os.cpu_count()} CPUs"
        info["date"] = time.strftime("%Y-%m-%d")
        OUT.with_suffix(".json").write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
