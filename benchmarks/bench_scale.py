"""Cost against size: modular addition from p = 11 to p = 113 and composition over the groups C_n, D_n, A4, S4
and A5, structured against dense gradient flow and against fixed-step gradient descent written in torch
(issue 32, item 3).

The problem at each p: the quadratic network (``modular.QuadraticModularNetwork``), H = 3p neurons, the
paper's initialization at α = 1e-6 (seed 0), the adaptive rate η‖θ_i‖^{2−κ} (Appendix B.5), a template with
frequencies 2, 9, 20 at magnitudes 1, .8, .6 (those at most ⌊p/2⌋; ``dft.template``, seed 0, scaled to
‖x‖ = 1), all p² pairs, horizon T = 2 × the last jump of ``modular.agf_staircase`` at the initial norm
(its jumps are lower bounds; at p = 47 gradient flow reaches the last level near 1.8 × it, and L(T) is 3e-4
of L(0) = 0.5): the full staircase of one, two or three frequencies. The loss is sampled on 401 equally
spaced times.

Runs, one after the other in one process, BLAS and torch on one thread, each timed in wall and CPU seconds:

(a) ``agf_lib.gradient_flow`` with the structured population loss (``structured=True``), at its defaults
    (DOP853, rtol 1e-9, atol 1e-12), and at looser rtol where (c) runs;
(b) the same with the dense closed forms (``structured=False``, O(Hp³) an evaluation), at the defaults;
    skipped where its predicted time (evaluations of (a) × a measured dense evaluation) exceeds
    ``--dense-limit`` seconds, except at p = 47 (the issue's bar), where (a) is timed once more right after
    (b) and the slower of its two runs is reported (on a shared machine the load changes between runs);
(c) fixed-step gradient descent as the paper's notebooks train: torch, full batch, autograd, the same
    adaptive rate (θ_i ← θ_i − h ∇_{θ_i}L/‖θ_i‖), step h = T/4000 (ten steps per sample); skipped where its
    predicted time exceeds ``--gd-limit`` seconds.

Reference: (a) at rtol 1e-11, atol 1e-14. Errors are the max over the samples of |L − L_ref|/L_ref.
"Equal accuracy" compares (c) with the loosest (a) whose error is at most (c)'s.

The group rows (``groups.CompositionNetwork``, k = 2) run the same three ways on the same terms: H = 3|G|,
α = 1e-6 (seed 0), the adaptive rate, all |G|² pairs, ``structured=True`` / ``False`` forced (by default the
library takes the structured path from 2 000 rows, |G| ≥ 45). The template (``template_for``) has x̂[ρ]
equal to s times an orthogonal matrix (a unit complex number and its conjugate on a complex pair) on three
nontrivial irrep classes, s = 1, .8, .6 (A4: two classes, 1 and .8), zero elsewhere, scaled to ‖x‖ = 1: on
C_n the classes of frequencies 2, 9, 20 (those at most n/2), as in the modular rows, elsewhere the three
widest classes, the last in the library's order first. Horizon T = 2 × the last jump of
``groups.agf_staircase`` at the initial norm, 401 samples.

Printed: a table per family, the exponents of time ∝ size^e fitted over the sizes run (p, or |G| across
the groups), a log-log plot (``bench_scale.png`` next to this file), and ``KEY`` lines. The timings are
kept in ``bench_scale.json`` next to this file, one entry per family, so that a run of one family
redraws the plot with the other family's last measured timings.

    python benchmarks/bench_scale.py                 # full: the modular rows about 15 minutes, the group rows
                                                     # 33 minutes (a 2-core machine under load 7-10)
    python benchmarks/bench_scale.py --quick         # p = 11, 23 and A4, D6 only: minutes
    python benchmarks/bench_scale.py --family groups # the group rows only
    python benchmarks/bench_scale.py --family modular --sizes 97 --dense-limit 3000 --gd-limit 3000
                                                     # one row, dense and descent included; it replaces that
                                                     # row of bench_scale.json and keeps the others
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import agf_lib  # noqa: E402
from agf_lib import dft, groups, modular  # noqa: E402

from common import machine, table, timed  # noqa: E402

ALPHA = 1e-6
FREQUENCIES, MAGNITUDES = (2, 9, 20), (1.0, 0.8, 0.6)
SIZES = (11, 23, 47, 97, 113)
SAMPLES = 401
GF_RTOLS = (1e-9, 1e-7, 1e-5, 1e-4)
REFERENCE_TOL = dict(rtol=1e-11, atol=1e-14)
GD_STEPS_PER_SAMPLE = 10
HORIZON = 2.0          # × the last jump of agf_staircase: gradient flow's last drop ends near 1.8× it at p = 47
BAR_P = 47
GROUPS = ("A4", "D6", "C24", "D12", "S4", "A5")
GROUP_SCALES = (1.0, 0.8, 0.6)
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_scale.json")


def problem(p):
    """Template, data, θ₀ (seed 0), horizon and sample times of the modular problem at ``p``."""
    magnitudes = np.zeros(p // 2)
    for k, m in zip(FREQUENCIES, MAGNITUDES):
        if k <= p // 2:
            magnitudes[k - 1] = m
    x = dft.template(p, magnitudes, seed=0)
    x /= np.linalg.norm(x)
    X, Y = modular.dataset(x)
    theta0 = modular.initial_theta(p, 3 * p, alpha=ALPHA, seed=0)
    nu = float(np.linalg.norm(theta0, axis=1).max())
    staircase = modular.agf_staircase(x, initial_norm=nu, adaptive_rate=True)
    t_end = HORIZON * float(staircase.times[-1])
    network = lambda structured: modular.QuadraticModularNetwork(p, 3 * p, structured=structured)
    return dict(label=f"p = {p}", size=p, width=p, network=network, X=X, Y=Y, theta0=theta0, t_end=t_end,
                times=np.linspace(0.0, t_end, SAMPLES), jumps=len(staircase.times) - 1, bar=p == BAR_P)


def finite_group(name):
    """``A4``, ``S4``, ``A5``, ``C<n>`` (cyclic) or ``D<n>`` (dihedral of order 2n)."""
    fixed = {"A4": groups.alternating4, "S4": groups.symmetric4, "A5": groups.alternating5}
    if name in fixed:
        return fixed[name]()
    if name[:1] in "CD" and name[1:].isdigit():
        return (groups.cyclic if name[0] == "C" else groups.dihedral)(int(name[1:]))
    raise ValueError(f"group must be A4, S4, A5, C<n> or D<n>, got {name!r}")


def template_for(G, cyclic):
    """A centred template with x̂[ρ] = s·(orthogonal matrix) on three nontrivial classes (module docstring)."""
    nontrivial = [c for c, members in enumerate(G.irrep_classes) if not np.allclose(G.irreps[members[0]], 1.0)]
    if cyclic:
        chosen = [c for c in (2, 9, 20) if c <= G.order // 2]
    else:
        chosen = sorted(nontrivial, key=lambda c: (G.class_dims[c], c), reverse=True)[:3]
    scale = dict(zip(chosen, GROUP_SCALES))
    rng = np.random.default_rng(0)
    blocks = [None] * len(G.irreps)
    for c in range(G.num_classes):
        members = G.irrep_classes[c]
        d = G.dims[members[0]]
        if c not in scale:
            for r in members:
                blocks[r] = np.zeros((d, d))
            continue
        if len(members) == 1:             # a real irrep (the groups here have no quaternionic one)
            blocks[members[0]] = scale[c] * np.linalg.qr(rng.normal(size=(d, d)))[0]
        else:                             # a complex pair: a unitary coefficient and its conjugate
            r, s_ = members
            if not np.allclose(G.irreps[s_], G.irreps[r].conj(), atol=1e-12):
                raise ValueError(f"{G.name}: irreps {r} and {s_} are not each other's conjugates")
            z = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
            blocks[r] = scale[c] * np.linalg.qr(z)[0]
            blocks[s_] = blocks[r].conj()
    x = groups.inverse_fourier(blocks, G)
    return x / np.linalg.norm(x)


def group_problem(name):
    """The group row ``name``: template, data, θ₀ (seed 0), horizon and sample times (module docstring)."""
    G = finite_group(name)
    x = template_for(G, cyclic=name.startswith("C"))
    X, Y = groups.dataset(x, G)
    theta0 = groups.initial_theta(G, 3 * G.order, alpha=ALPHA, seed=0)
    nu = float(np.linalg.norm(theta0, axis=1).max())
    staircase = groups.agf_staircase(x, G, initial_norm=nu, adaptive_rate=True)
    t_end = HORIZON * float(staircase.times[-1])
    network = lambda structured: groups.CompositionNetwork(G, 3 * G.order, structured=structured)
    return dict(label=name, size=G.order, width=G.order, network=network, X=X, Y=Y, theta0=theta0, t_end=t_end,
                times=np.linspace(0.0, t_end, SAMPLES), jumps=len(staircase.times) - 1, bar=False,
                dims=sorted({G.dims[r] for r in range(len(G.irreps))}))


def flow(case, *, structured, **tolerances):
    return agf_lib.gradient_flow(case["network"](structured), (case["X"], case["Y"]), case["theta0"],
                                 case["t_end"], adaptive_rate=True, times=case["times"], check_rounding=False,
                                 **tolerances)


def clocked(fn, *args, **kwargs):
    """``(result, wall seconds, CPU seconds of this process)``: on a shared machine the CPU time is the work
    (BLAS and torch run on one thread here), the wall time adds the waits for the other processes."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def dense_seconds_per_evaluation(case, repeats=3):
    gradient = case["network"](False).gradient_function(case["X"], case["Y"])
    theta0 = case["theta0"]
    phi = theta0 / np.linalg.norm(theta0, axis=1)[:, None]
    weights = np.linalg.norm(theta0, axis=1) ** 3
    return min(timed(gradient, phi, weights)[1] for _ in range(repeats))


def torch_descent(case, steps, *, max_steps=None):
    """Full-batch fixed-step descent in torch with the adaptive rate; the loss at every ``steps/(SAMPLES−1)``-th
    step (the sample times). With ``max_steps``, stops there (a timing probe) and returns the losses so far.
    The network is the quadratic one, ``Σ_i w_i (⟨u_i, a⟩ + ⟨v_i, b⟩)²``, of both families (``X = [a, b]``)."""
    torch.set_num_threads(1)
    X, Y, p = case["X"], case["Y"], case["width"]
    Xa = torch.from_numpy(X[:, :p].copy())
    Xb = torch.from_numpy(X[:, p:].copy())
    Yt = torch.from_numpy(Y)
    theta = torch.from_numpy(case["theta0"].copy()).requires_grad_(True)
    h, every = case["t_end"] / steps, steps // (SAMPLES - 1)
    losses = []
    for step in range(steps + 1 if max_steps is None else max_steps):
        u, v, w = theta[:, :p], theta[:, p : 2 * p], theta[:, 2 * p :]
        z = u @ Xa.T + v @ Xb.T                                       # (H, n)
        loss = 0.5 * ((Yt - (z * z).T @ w) ** 2).sum() / Xa.shape[0]
        if step % every == 0:
            losses.append(loss.item())
        if step == steps:
            break
        (grad,) = torch.autograd.grad(loss, theta)
        with torch.no_grad():
            theta -= h * grad / theta.norm(dim=1, keepdim=True)
    return np.array(losses)


def relative_error(losses, reference):
    return float(np.max(np.abs(losses - reference) / reference))


def run_case(case, args, rows):
    """Runs (a), (b), (c) on one problem; appends its table row and returns its timings."""
    reference = flow(case, structured=True, **REFERENCE_TOL).losses
    structured = {}

    def structured_run(rtol):
        run, seconds, cpu = clocked(flow, case, structured=True, rtol=rtol)
        structured[rtol] = (run, seconds, relative_error(run.losses, reference), cpu)

    structured_run(GF_RTOLS[0])
    run_a, t_a, err_a, cpu_a = structured[GF_RTOLS[0]]
    per_eval = dense_seconds_per_evaluation(case)
    predicted_dense = per_eval * run_a.evaluations
    t_b = err_b = diff_b = cpu_b = evaluations_b = None
    if case["bar"] or predicted_dense <= args.dense_limit:
        run_b, t_b, cpu_b = clocked(flow, case, structured=False)
        err_b = relative_error(run_b.losses, reference)
        diff_b = float(np.max(np.abs(run_b.losses - run_a.losses)))
        evaluations_b = run_b.evaluations
        if case["bar"]:          # (a) once more, right after (b): the bar's ratio takes the slower of the two
            _, t_again, cpu_again = clocked(flow, case, structured=True)
            t_a, cpu_a = max(t_a, t_again), max(cpu_a, cpu_again)
    steps = GD_STEPS_PER_SAMPLE * (SAMPLES - 1)
    probe_losses, probe = timed(torch_descent, case, steps, max_steps=20)
    # the same loss, written independently: torch's at θ₀ against the engine's first sample
    assert abs(probe_losses[0] / reference[0] - 1) < 1e-12, (probe_losses[0], reference[0])
    predicted_gd = probe / 20 * steps
    t_c = err_c = cpu_c = None
    equal = None
    if predicted_gd <= args.gd_limit:
        gd, t_c, cpu_c = clocked(torch_descent, case, steps)
        err_c = relative_error(gd, reference)
        for rtol in GF_RTOLS[1:]:                 # the looser runs, for the comparison at equal accuracy
            structured_run(rtol)
        fits = [r for r in GF_RTOLS if structured[r][2] <= err_c]
        equal = max(fits) if fits else None
    n_params = case["theta0"].size
    rows.append([
        case["label"], n_params, case["jumps"], f"{case['t_end']:.0f}", f"{run_a.losses[-1]:.1e}",
        run_a.evaluations, f"{t_a:.2f} / {cpu_a:.2f}", f"{err_a:.1e}",
        f"{t_b:.1f} / {cpu_b:.1f}" if t_b is not None else f"(~{predicted_dense:.0f}, skipped)",
        f"{t_b / t_a:.1f}x / {cpu_b / cpu_a:.1f}x" if t_b is not None else f"~{predicted_dense / t_a:.0f}x",
        f"{diff_b:.1e}" if diff_b is not None else "-",
        f"{t_c:.1f} / {cpu_c:.1f}" if t_c is not None else f"(~{predicted_gd:.0f}, skipped)",
        f"{err_c:.1e}" if err_c is not None else "-",
        (f"{t_c / structured[equal][1]:.1f}x (rtol {equal:g})" if equal is not None else "-") if t_c else "-",
    ])
    print(f"{case['label']}: structured {t_a:.2f} s ({run_a.evaluations} evaluations), dense "
          f"{'%.1f s' % t_b if t_b is not None else 'skipped (~%.0f s)' % predicted_dense}, descent "
          f"{'%.1f s' % t_c if t_c is not None else 'skipped (~%.0f s)' % predicted_gd}", flush=True)
    return dict(size=case["size"], structured=t_a, dense=t_b, dense_predicted=predicted_dense, gd=t_c,
                gd_predicted=predicted_gd, cpu_a=cpu_a, cpu_b=cpu_b, cpu_c=cpu_c, diff_b=diff_b, evaluations=run_a.evaluations,
                evaluations_b=evaluations_b,
                equal_rtol=equal, gd_over_equal=(t_c / structured[equal][1]) if t_c and equal is not None else None)


def fit_exponent(ps, seconds):
    ps, seconds = np.asarray(ps, float), np.asarray(seconds, float)
    if np.unique(ps).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(ps), np.log(seconds), 1)[0])


SERIES = (("structured", "gradient flow, structured", "o"), ("dense", "gradient flow, dense", "s"),
          ("gd", "torch descent, h = T/4000", "^"))


def plot(results, path):
    """Wall time against size, one panel per family in ``results`` (``{family: {label: timings}}``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = [f for f in ("modular", "groups") if results.get(f)]       # "notes" is not a family
    fig, axes = plt.subplots(len(families), 1, figsize=(5, 3.4 * len(families)), squeeze=False)
    for ax, family in zip(axes[:, 0], families):
        timings = sorted(results[family].values(), key=lambda r: r["size"])
        for key, label, marker in SERIES:
            measured = [(r["size"], r[key]) for r in timings if r[key] is not None]
            color = None
            if measured:
                q, t = zip(*measured)
                line, = ax.loglog(q, t, marker=marker, linestyle="-" if family == "modular" else "none",
                                  markersize=4, label=f"{label} (size^{fit_exponent(q, t):.1f})")
                color = line.get_color()
            predicted = [(r["size"], r[key + "_predicted"]) for r in timings
                         if key != "structured" and r[key] is None]
            if predicted:
                q, t = zip(*predicted)
                ax.loglog(q, t, marker=marker, linestyle="none", fillstyle="none", markersize=4, color=color,
                          label=f"{label}, predicted (skipped)")
        sizes = sorted({r["size"] for r in timings})
        ax.set_xticks(sizes, [str(q) for q in sizes], minor=False)
        ax.set_xticks([], minor=True)
        if family == "groups":
            for r_label, r in results[family].items():     # name the groups beside their structured point
                ax.annotate(r_label, (r["size"], r["structured"]), xytext=(4, 0), textcoords="offset points",
                            fontsize=7, va="center")
        ax.set_xlabel("p" if family == "modular" else "|G|", fontsize=9)
        ax.set_ylabel("wall time (s)", fontsize=9)
        ax.set_title("modular addition" if family == "modular" else "groups (C_n, D_n, A4, S4, A5)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.subplots_adjust(hspace=0.9)
    fig.savefig(path, dpi=150, bbox_inches="tight")


def load_results():
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            return json.load(f)
    return {}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="p = 11, 23 and A4, D6 only")
    parser.add_argument("--family", choices=("modular", "groups", "both"), default="both")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="the modular sizes p")
    parser.add_argument("--groups", nargs="+", default=None, help="the groups, e.g. A4 D6 C24 S4 A5")
    parser.add_argument("--dense-limit", type=float, default=120.0, help="skip dense runs predicted longer")
    parser.add_argument("--gd-limit", type=float, default=120.0, help="skip descent runs predicted longer")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--no-save", action="store_true", help="do not write bench_scale.json")
    args = parser.parse_args(argv)
    print(machine())
    header = ["problem", "parameters", "jumps", "T", "L(T)", "evaluations", "(a) wall / CPU s", "(a) error",
              "(b) wall / CPU s", "(b)/(a) wall / CPU", "|L_b - L_a|", "(c) wall / CPU s", "(c) error",
              "(c)/(a) equal acc."]
    results = load_results()
    families = ("modular", "groups") if args.family == "both" else (args.family,)
    for family in families:
        if family == "modular":
            cases = [problem(p) for p in (args.sizes or ((11, 23) if args.quick else SIZES))]
        else:
            cases = [group_problem(name) for name in (args.groups or (("A4", "D6") if args.quick else GROUPS))]
        rows, measured = [], {}
        for case in cases:
            measured[case["label"]] = run_case(case, args, rows)
        print(table(header, rows))
        for key, _, _ in SERIES:
            points = [(r["size"], r[key]) for r in measured.values() if r[key] is not None]
            if len(points) >= 2:
                print(f"KEY EXPONENT {family} {key} {fit_exponent(*zip(*points)):.2f} over sizes "
                      f"{[q for q, _ in points]}")
        for label, r in measured.items():
            if r["dense"] is not None:
                print(f"KEY RATIO {family} dense/structured {label} wall {r['dense'] / r['structured']:.1f} cpu "
                      f"{r['cpu_b'] / r['cpu_a']:.1f} loss_diff {r['diff_b']:.1e} evaluations "
                      f"{r['evaluations']} / {r['evaluations_b']}")
        if args.sizes or args.groups:              # a partial run updates its own rows of the saved family
            results.setdefault(family, {}).update(measured)
        elif not args.quick:                        # a full family replaces its saved timings
            results[family] = measured
    if not args.no_save and not args.quick:
        with open(RESULTS, "w") as f:
            json.dump(results, f, indent=1)
    if not args.no_plot and results:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_scale.png")
        plot(results, path)
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
