"""Where the piece staircase of composition over a group is the α → 0 limit: limit studies of gradient flow
on several templates with unequal singular values (issue 29).

For each template, gradient flow (``groups.CompositionNetwork``, k = 2, seed 0, the adaptive rate, rtol 1e-7,
atol 1e-10) runs at each α of a ladder to 1.1 × the last jump of ``groups.limit_staircase`` (the piece
staircase, in t/log(1/α)), sampled on 2 001 times; ``limits.limit_study`` reads each run's crossing of the
middle of each of the piece staircase's drops and extrapolates it linearly in 1/log(1/α). Printed per
template: the pieces of each step, the piece staircase's times, the measured limit with its error bars, the
gradient-flow time from each drop to the next at each α, and which drops merge with the one before in the
limit: within 10% of its time, and (stricter) a fixed gradient-flow time after it. These and the fits' residuals, each run's
crossings and the levels are kept in ``group_limits.json`` next to this file, which chapter 09 loads.

For the templates with E alone it also predicts the limit of the third drop from a mode of the active network
(``mode_time``): every neuron is active after the first jump, and pieces (2,1) and (2,2) grow inside them as one
unstable mode of the flow linearized at the fit of (1,1) and (1,2). Until (1,2) is fitted that mode grows at
the rate of piece (2,1)'s utility, 1/τ₂₁ in t/log(1/α), from amplitude α, so it holds α^e with e = 1 − τ₁₂/τ₂₁
when (1,2) is fitted at τ₁₂; then it grows at the largest rate μ of the linearized flow
(``limits.growth_rates``, at the plateau between the second and third drops of the run at α = 1e-12) and
reaches order one at τ₁₂ + e/μ.

The templates: x̂[ρ] = Q₁ diag(σ) Q₂ on one real irrep (Q orthogonal, drawn with seed 1) and zero elsewhere,
plus chapter 09's own (D3, x̂[E] with singular values 2 and 1, x̂[A2] = 1.26).

    python benchmarks/group_limits.py            # about two minutes on one core
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from agf_lib import groups, limits
from agf_lib import gradient_flow

SHALLOW = (1e-6, 1e-9, 1e-12, 1e-16)      # with E alone the runs depend on rounding below 1e-12 or so
DEEP = (1e-24, 1e-36, 1e-48)       # the other templates pass gradient flow's rounding check down to 1e-48 (at 1e-12
                                   # A4's last three drops are not yet a fixed time after the first: see README)
SAMPLES = 2001
OUT = Path(__file__).with_name("group_limits.json")
_TURN = np.array([[0.6, -0.8], [0.8, 0.6]])


def one_irrep(G, dim, sigma, a2=None):
    """A template with ``x̂[ρ] = Q₁ diag(sigma) Q₂`` on the first real irrep class of dimension ``dim``; with
    ``a2``, chapter 09's D3 template instead (x̂[E] = R diag(2, 1) Rᵀ diag(1, −1), x̂[A2] = a2)."""
    blocks = [np.zeros((G.dims[r], G.dims[r])) for r in range(len(G.irreps))]
    if a2 is not None:
        blocks[1] = np.full((1, 1), a2)
        blocks[2] = _TURN @ np.diag([2.0, 1.0]) @ _TURN.T @ np.diag([1.0, -1.0])
        return groups.inverse_fourier(blocks, G)
    c = next(c for c in range(G.num_classes) if G.class_dims[c] == dim and G.class_types[c] == "real")
    rng = np.random.default_rng(1)
    Q1, Q2 = (np.linalg.qr(rng.normal(size=(dim, dim)))[0] for _ in range(2))
    blocks[G.irrep_classes[c][0]] = Q1 @ np.diag(sigma) @ Q2
    return groups.inverse_fourier(blocks, G)


TEMPLATES = {           # name: (group, H, template options, ladder of α)
    "D3, E alone, σ = (2, 1)": (groups.dihedral(3), 24, dict(dim=2, sigma=(2.0, 1.0)), SHALLOW),
    "D5, E1 alone, σ = (2, 1)": (groups.dihedral(5), 20, dict(dim=2, sigma=(2.0, 1.0)), SHALLOW),
    "D3, E σ = (2, 1) and A2 = 1.26 (chapter 09)": (groups.dihedral(3), 24, dict(dim=2, sigma=None, a2=1.26), DEEP),
    "A4, standard irrep, σ = (3, 2, 1)": (groups.alternating4(), 36, dict(dim=3, sigma=(3.0, 2.0, 1.0)), DEEP),
    "D3, E alone, σ = (3, 2)": (groups.dihedral(3), 24, dict(dim=2, sigma=(3.0, 2.0)), SHALLOW),
    "D3, E alone, σ = (4, 1)": (groups.dihedral(3), 24, dict(dim=2, sigma=(4.0, 1.0)), SHALLOW),
    "D3, E alone, σ = (1.2, 1)": (groups.dihedral(3), 24, dict(dim=2, sigma=(1.2, 1.0)), SHALLOW),
    **{f"D3, E alone, σ = (2, 1), H = {H}": (groups.dihedral(3), H, dict(dim=2, sigma=(2.0, 1.0)), SHALLOW)
       for H in (12, 48)},
}


def setting(G, H, options):
    """``(x, network, (X, Y), pieces, t_end)``: the template, the network, the data, the piece staircase and
    the horizon."""
    x = one_irrep(G, **options)
    pieces = groups.limit_staircase(x, G, adaptive_rate=True)
    return x, groups.CompositionNetwork(G, H), groups.dataset(x, G), pieces, 1.1 * float(pieces.times[-1])


def flow(G, H, options, alpha, record_params=False):
    """Gradient flow on one template at one α, sampled on ``SAMPLES`` times to the horizon."""
    _, network, data, _, t_end = setting(G, H, options)
    scale = math.log(1 / alpha)
    return gradient_flow(network, data, network.initial_theta(alpha=alpha, seed=0), t_end * scale,
                         adaptive_rate=True, rtol=1e-7, atol=1e-10, times=np.linspace(0, t_end, SAMPLES) * scale,
                         record_params=record_params)


def mode_time(G, H, options, alpha=1e-12, run=None):
    """``(τ₁₂ + e/μ, μ)``: the third drop's α → 0 time predicted from the unstable mode at the second plateau of the
    run at ``alpha`` (module docstring), for a template with E alone. ``run``: that run, with its parameters
    recorded, if already made (by ``study``); otherwise it is run here."""
    _, network, data, pieces, _ = setting(G, H, options)
    t12, t21 = pieces.times[2:4]
    run = flow(G, H, options, alpha, record_params=True) if run is None else run
    times = run.in_units(pieces.time_unit, alpha).times
    middles = [0.5 * (pieces.losses[k - 1] + pieces.losses[k]) for k in (2, 3)]
    plateau = np.mean([times[np.argmax(run.losses < middle)] for middle in middles])
    mu = limits.growth_rates(network, data, run.params[np.searchsorted(times, plateau)], adaptive_rate=True)[0].real
    return float(t12 + (1 - t12 / t21) / mu), float(mu)


def study(G, H, options, ladder):
    """The limit study of one template (``TEMPLATES``' entries): a dict of what ``group_limits.json`` keeps."""
    x, _, _, pieces, _ = setting(G, H, options)
    with_mode = options.get("a2") is None and options["dim"] == 2      # E alone: the mode's prediction too
    runs = {}

    def run(alpha):      # the run at 1e-12 keeps its parameters, for mode_time
        runs[alpha] = flow(G, H, options, alpha, record_params=with_mode and alpha == 1e-12)
        return runs[alpha]

    start = time.perf_counter()
    measured = limits.limit_study(run, ladder, pieces)
    seconds = time.perf_counter() - start
    steps = [[f"{G.class_names()[p.irrep_class]} {tuple(i + 1 for i in p.chain)}" for p in step]
             for step in groups.learning_steps(x, G)]
    times = measured.limit.times
    # drops the limit merges with the one before: within 10% of its time (the tolerance); and those that
    # follow it by a fixed gradient-flow time: between the two smallest α that resolve both, the time between
    # them grows by less than a quarter of what log(1/α) grows by (in t/log(1/α) their gap then vanishes)
    merged = [k for k in range(2, times.size) if times[k] < 1.1 * times[k - 1]]
    crossings = np.array(measured.jump_times)
    scale = np.log(1 / np.array(ladder))
    lags = np.diff(np.column_stack([np.zeros(len(ladder)), crossings]), axis=1) * scale[:, None]
    fixed_lag = []
    for k in range(1, lags.shape[1]):
        a, b = np.flatnonzero(np.isfinite(lags[:, k]))[-2:]
        if lags[b, k] / lags[a, k] - 1 < 0.25 * (scale[b] / scale[a] - 1):
            fixed_lag.append(k + 1)
    mode = mode_time(G, H, options, run=runs.get(1e-12)) if with_mode else (None, None)
    return dict(mode_time=mode[0], mode_rate=mode[1], group=G.name, H=H, steps=steps, piece_times=pieces.times.tolist(), levels=pieces.losses.tolist(),
                limit_times=times.tolist(), time_errors=measured.time_errors.tolist(),
                residuals=measured.residuals.tolist(), limit_levels=measured.limit.losses.tolist(),
                refused=list(measured.refused), merged_drops=merged, lags=lags.tolist(),
                fixed_lag_drops=fixed_lag, seconds=seconds, ladder=list(ladder),
                jump_times=measured.jump_times.tolist())


def main():
    results = {}
    for name, (G, H, options, ladder) in TEMPLATES.items():
        r = results[name] = study(G, H, options, ladder)
        print(f"\n{name}: H = {H}, ladder {list(ladder)}, {r['seconds']:.1f} s, refused {r['refused']}")
        print(f"  steps: {' | '.join(', '.join(s) for s in r['steps'])}")
        print(f"  piece staircase: {np.round(r['piece_times'][1:], 3).tolist()}")
        print(f"  measured limit:  {np.round(r['limit_times'][1:], 3).tolist()}")
        print(f"  error bars:      {np.round(r['time_errors'], 3).tolist()}")
        print(f"  gradient-flow time after the drop before, at each α: {np.round(r['lags'], 1).tolist()}")
        print(f"  drops merged with the one before (within 10%): {r['merged_drops']}; a fixed GF time after it: "
              f"{r['fixed_lag_drops']}")
        if r["mode_time"] is not None:
            print(f"  third drop from the mode at the second plateau: {r['mode_time']:.3f} (rate {r['mode_rate']:.4f})")
    OUT.write_text(json.dumps(results, indent=1))
    print(f"\nsaved {OUT}")


if __name__ == "__main__":
    main()
