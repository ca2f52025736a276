"""Cost against size: modular addition from p = 11 to p = 113, structured against dense gradient flow and
against fixed-step gradient descent written in torch (issue 32, item 3).

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
    ``--dense-limit`` seconds, except at p = 47 (the issue's bar);
(c) fixed-step gradient descent as the paper's notebooks train: torch, full batch, autograd, the same
    adaptive rate (θ_i ← θ_i − h ∇_{θ_i}L/‖θ_i‖), step h = T/4000 (ten steps per sample); skipped where its
    predicted time exceeds ``--gd-limit`` seconds.

Reference: (a) at rtol 1e-11, atol 1e-14. Errors are the max over the samples of |L − L_ref|/L_ref.
"Equal accuracy" compares (c) with the loosest (a) whose error is at most (c)'s. Printed: a table, the
exponents of time ∝ p^e fitted over the sizes run, a log-log plot (``bench_scale.png`` next to this file),
and ``KEY`` lines.

    python benchmarks/bench_scale.py                 # full: about 10 minutes on a 2-core machine
    python benchmarks/bench_scale.py --quick         # p = 11, 23 only: seconds
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import agf_lib  # noqa: E402
from agf_lib import dft, modular  # noqa: E402

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


def problem(p):
    """Template, data, θ₀ (seed 0), horizon and sample times of the problem at ``p``."""
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
    return x, X, Y, theta0, t_end, np.linspace(0.0, t_end, SAMPLES), len(staircase.times) - 1


def flow(p, X, Y, theta0, t_end, times, *, structured, **tolerances):
    network = modular.QuadraticModularNetwork(p, 3 * p, structured=structured)
    return agf_lib.gradient_flow(network, (X, Y), theta0, t_end, adaptive_rate=True, times=times,
                                 check_rounding=False, **tolerances)


def clocked(fn, *args, **kwargs):
    """``(result, wall seconds, CPU seconds of this process)``: on a shared machine the CPU time is the work
    (BLAS and torch run on one thread here), the wall time adds the waits for the other processes."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def dense_seconds_per_evaluation(p, X, Y, theta0, repeats=3):
    network = modular.QuadraticModularNetwork(p, 3 * p, structured=False)
    gradient = network.gradient_function(X, Y)
    phi = theta0 / np.linalg.norm(theta0, axis=1)[:, None]
    weights = np.linalg.norm(theta0, axis=1) ** 3
    return min(timed(gradient, phi, weights)[1] for _ in range(repeats))


def torch_descent(p, X, Y, theta0, t_end, steps, *, max_steps=None):
    """Full-batch fixed-step descent in torch with the adaptive rate; the loss at every ``steps/(SAMPLES−1)``-th
    step (the sample times). With ``max_steps``, stops there (a timing probe) and returns the losses so far."""
    torch.set_num_threads(1)
    Xa = torch.from_numpy(X[:, :p].copy())
    Xb = torch.from_numpy(X[:, p:].copy())
    Yt = torch.from_numpy(Y)
    theta = torch.from_numpy(theta0.copy()).requires_grad_(True)
    h, every = t_end / steps, steps // (SAMPLES - 1)
    losses = []
    for step in range(steps + 1 if max_steps is None else max_steps):
        u, v, w = theta[:, :p], theta[:, p : 2 * p], theta[:, 2 * p :]
        z = u @ Xa.T + v @ Xb.T                                       # (H, p²)
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


def run_size(p, args, rows, timings):
    x, X, Y, theta0, t_end, times, jumps = problem(p)
    reference = flow(p, X, Y, theta0, t_end, times, structured=True, **REFERENCE_TOL).losses
    structured = {}

    def structured_run(rtol):
        run, seconds, cpu = clocked(flow, p, X, Y, theta0, t_end, times, structured=True, rtol=rtol)
        structured[rtol] = (run, seconds, relative_error(run.losses, reference), cpu)

    structured_run(GF_RTOLS[0])
    run_a, t_a, err_a, cpu_a = structured[GF_RTOLS[0]]
    per_eval = dense_seconds_per_evaluation(p, X, Y, theta0)
    predicted_dense = per_eval * run_a.evaluations
    t_b = err_b = diff_b = cpu_b = None
    if p == BAR_P or predicted_dense <= args.dense_limit:
        run_b, t_b, cpu_b = clocked(flow, p, X, Y, theta0, t_end, times, structured=False)
        err_b = relative_error(run_b.losses, reference)
        diff_b = float(np.max(np.abs(run_b.losses - run_a.losses)))
    steps = GD_STEPS_PER_SAMPLE * (SAMPLES - 1)
    _, probe = timed(torch_descent, p, X, Y, theta0, t_end, steps, max_steps=20)
    predicted_gd = probe / 20 * steps
    t_c = err_c = cpu_c = None
    equal = None
    if predicted_gd <= args.gd_limit:
        gd, t_c, cpu_c = clocked(torch_descent, p, X, Y, theta0, t_end, steps)
        err_c = relative_error(gd, reference)
        for rtol in GF_RTOLS[1:]:                 # the looser runs, for the comparison at equal accuracy
            structured_run(rtol)
        fits = [r for r in GF_RTOLS if structured[r][2] <= err_c]
        equal = max(fits) if fits else None
    timings[p] = dict(structured=t_a, dense=t_b, dense_predicted=predicted_dense, gd=t_c, gd_predicted=predicted_gd)
    rows.append([
        p, 3 * p * 3 * p, jumps, f"{t_end:.0f}", f"{run_a.losses[-1]:.1e}", run_a.evaluations,
        f"{t_a:.2f} / {cpu_a:.2f}", f"{err_a:.1e}",
        f"{t_b:.1f} / {cpu_b:.1f}" if t_b is not None else f"(~{predicted_dense:.0f}, skipped)",
        f"{t_b / t_a:.1f}x / {cpu_b / cpu_a:.1f}x" if t_b is not None else f"~{predicted_dense / t_a:.0f}x",
        f"{diff_b:.1e}" if diff_b is not None else "-",
        f"{t_c:.1f} / {cpu_c:.1f}" if t_c is not None else f"(~{predicted_gd:.0f}, skipped)",
        f"{err_c:.1e}" if err_c is not None else "-",
        (f"{t_c / structured[equal][1]:.0f}x (rtol {equal:g})" if equal is not None else "-") if t_c else "-",
    ])
    print(f"p = {p}: structured {t_a:.2f} s ({run_a.evaluations} evaluations), dense "
          f"{'%.1f s' % t_b if t_b is not None else 'skipped (~%.0f s)' % predicted_dense}, descent "
          f"{'%.1f s' % t_c if t_c is not None else 'skipped (~%.0f s)' % predicted_gd}", flush=True)
    return dict(p=p, t_a=t_a, t_b=t_b, cpu_a=cpu_a, cpu_b=cpu_b, diff_b=diff_b)


def fit_exponent(ps, seconds):
    ps, seconds = np.asarray(ps, float), np.asarray(seconds, float)
    if ps.size < 2:
        return float("nan")
    return float(np.polyfit(np.log(ps), np.log(seconds), 1)[0])


def plot(timings, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ps = sorted(timings)
    for key, label, marker in (("structured", "gradient flow, structured", "o"),
                               ("dense", "gradient flow, dense", "s"), ("gd", "torch descent, h = T/4000", "^")):
        measured = [(p, timings[p][key]) for p in ps if timings[p][key] is not None]
        if measured:
            q, t = zip(*measured)
            ax.loglog(q, t, marker=marker, label=f"{label} (p^{fit_exponent(q, t):.1f})")
        predicted = [(p, timings[p][key + "_predicted"]) for p in ps
                     if key != "structured" and timings[p][key] is None]
        if predicted:
            q, t = zip(*predicted)
            ax.loglog(q, t, marker=marker, linestyle="none", fillstyle="none", color=ax.lines[-1].get_color()
                      if measured else None, label=f"{label}, predicted (skipped)")
    ax.set_xlabel("p", fontsize=9)
    ax.set_ylabel("wall time (s)", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.savefig(path, dpi=150, bbox_inches="tight")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="p = 11 and 23 only")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--dense-limit", type=float, default=120.0, help="skip dense runs predicted longer")
    parser.add_argument("--gd-limit", type=float, default=120.0, help="skip descent runs predicted longer")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    sizes = args.sizes or ((11, 23) if args.quick else SIZES)
    print(machine())
    rows, timings, results = [], {}, []
    for p in sizes:
        results.append(run_size(p, args, rows, timings))
    header = ["p", "parameters", "jumps", "T", "L(T)", "evaluations", "(a) wall / CPU s", "(a) error", "(b) wall / CPU s",
              "(b)/(a) wall / CPU", "|L_b - L_a|", "(c) wall / CPU s", "(c) error", "(c)/(a) equal acc."]
    print(table(header, rows))
    measured = {key: [(p, timings[p][key]) for p in sizes if timings[p][key] is not None]
                for key in ("structured", "dense", "gd")}
    for key, points in measured.items():
        if len(points) >= 2:
            print(f"KEY EXPONENT {key} {fit_exponent(*zip(*points)):.2f} over p = {[q for q, _ in points]}")
    for r in results:
        if r["t_b"] is not None:
            print(f"KEY RATIO dense/structured p={r['p']} wall {r['t_b'] / r['t_a']:.1f} cpu "
                  f"{r['cpu_b'] / r['cpu_a']:.1f} loss_diff {r['diff_b']:.1e}")
    if not args.no_plot:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_scale.png")
        plot(timings, path)
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
