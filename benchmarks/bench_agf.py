"""Numerical AGF (``agf_lib.alternating_gradient_flow``) against the closed form and against gradient flow.

On the book's standard diagonal-network problem (``common.py``), at α = 1e-6 and α = 1e-12:

(i)  the generic AGF engine against the closed form ``agf_lib.diagonal.agf_staircase`` (Corollary C.5):
     activation order, max relative errors of jump times and loss levels, and wall times;
(ii) the AGF staircase against the full gradient-flow trajectory (``agf_lib.gradient_flow``, default
     options, up to 1.2 × the last jump): time to get the staircase vs time to get the trajectory,
     and ``Staircase.compare(trajectory)``, the per-jump time and level errors of GF against AGF.

Each timing is the best of at least ``--repeats`` runs, and of as many as fit in 0.3 s
(``common.best_of``; the closed form, under a millisecond, of at least 50).
Ends by printing the key ratio: gradient-flow time / numerical-AGF time at α = 1e-12.

    python benchmarks/bench_agf.py            # full run, ~5 s
    python benchmarks/bench_agf.py --quick    # smoke run: α = 1e-6 only, one repeat
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

import agf_lib
from agf_lib import diagonal

from common import best_of, describe_problem, diagonal_problem, machine, table

ALPHAS = (1e-6, 1e-12)
HORIZON_FACTOR = 1.2
CLOSED_FORM_REPEATS = 50


def counted(repeats, fn, *args, **kwargs):
    """``(result, best seconds, ∇U evaluations per run)``: the engines count their own evaluations."""
    result, seconds = best_of(repeats, fn, *args, **kwargs)
    return result, seconds, result.evaluations


def relative_errors(values, reference):
    values, reference = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    scale = np.maximum(np.abs(reference), 1e-12 * np.abs(reference).max())
    return np.abs(values - reference) / scale


def run_alpha(X, y, alpha, repeats):
    d = X.shape[1]
    theta0 = diagonal.initial_theta(d, alpha=alpha)
    network = diagonal.DiagonalLinearNetwork(d)

    closed, t_closed = best_of(CLOSED_FORM_REPEATS, diagonal.agf_staircase, X, y, alpha=alpha)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numeric, t_agf, agf_evals = counted(repeats, agf_lib.alternating_gradient_flow, network, (X, y), theta0)
    t_end = HORIZON_FACTOR * closed.times[-1]
    trajectory, t_gf, gf_evals = counted(repeats, agf_lib.gradient_flow, network, (X, y), theta0, t_end)

    k = min(numeric.num_jumps, closed.num_jumps)
    time_err = relative_errors(numeric.times[1:k + 1], closed.times[1:k + 1])
    level_err = relative_errors(numeric.losses[:k + 1], closed.losses[:k + 1])
    comparison = numeric.compare(trajectory)

    print(f"α = {alpha:g}   (GF horizon T = {HORIZON_FACTOR} × {closed.times[-1]:.2f} = {t_end:.2f})")
    print(f"  (i) numerical AGF vs closed form: {numeric.num_jumps} vs {closed.num_jumps} jumps, "
          f"order {numeric.order} vs {closed.order} ({'same' if list(numeric.order) == list(closed.order) else 'DIFFERENT'}), "
          f"deactivations {sum(map(len, numeric.deactivated))} vs {sum(map(len, closed.deactivated))}")
    rows = [[f"τ({j})", f"{c:.10g}", f"{n:.10g}", f"{e:.2e}"]
            for j, (c, n, e) in enumerate(zip(closed.times[1:k + 1], numeric.times[1:k + 1], time_err), 1)]
    rows += [[f"ℓ({j})", f"{c:.10g}", f"{n:.10g}", f"{e:.2e}"]
             for j, (c, n, e) in enumerate(zip(closed.losses[:k + 1], numeric.losses[:k + 1], level_err))]
    print("  " + table(["", "closed form", "numerical AGF", "rel. error"], rows).replace("\n", "\n  "))
    if caught:
        print(f"  numerical AGF raised {len(caught)} warning(s): " + "; ".join(sorted({str(w.message) for w in caught})))
    print("  (ii) Staircase.compare(trajectory): numerical AGF staircase vs agf_lib.gradient_flow")
    print("  " + str(comparison).replace("\n", "\n  "))
    print(flush=True)
    return dict(alpha=alpha, t_closed=t_closed, t_agf=t_agf, t_gf=t_gf, agf_evals=agf_evals, gf_evals=gf_evals,
                time_err=float(time_err.max()) if k else float("nan"), level_err=float(level_err.max()),
                gf_time_err=float(np.max(comparison.time_errors)),
                gf_level_err=float(np.max(comparison.level_errors[:-1])),
                gf_last_level_err=float(comparison.level_errors[-1]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: α = 1e-6 only, one repeat")
    parser.add_argument("--repeats", type=int, default=None, help="timing repeats of AGF and GF (default 3; 1 in --quick)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    alphas = ALPHAS[:1] if args.quick else ALPHAS

    X, y = diagonal_problem()
    print("bench_agf" + ("  [--quick: smoke run, not the benchmark]" if args.quick else ""))
    print(f"  problem : {describe_problem()}")
    print(f"  timing  : best of {repeats} (AGF, GF), best of {CLOSED_FORM_REPEATS} (closed form); time.perf_counter")
    print(f"  machine : {machine()}")
    print(flush=True)

    results = [run_alpha(X, y, alpha, repeats) for alpha in alphas]

    rows = [[f"{r['alpha']:g}", f"{1e3 * r['t_closed']:.2f}", f"{1e3 * r['t_agf']:.1f}", f"{1e3 * r['t_gf']:.1f}",
             f"{r['agf_evals']} / {r['gf_evals']}", f"{r['t_gf'] / r['t_agf']:.2f}×",
             f"{r['t_agf'] / r['t_closed']:.0f}×", f"{r['time_err']:.1e}", f"{r['level_err']:.1e}",
             f"{r['gf_time_err']:.1e}", f"{r['gf_level_err']:.1e}"] for r in results]
    print("summary")
    print(table(["α", "closed [ms]", "AGF [ms]", "GF [ms]", "∇U evals AGF / GF", "GF/AGF", "AGF/closed",
                 "AGF-vs-closed τ err", "ℓ err", "GF-vs-AGF τ err", "ℓ err*"], rows))
    print("  errors are max relative errors over all jumps / levels; * GF-vs-AGF level error over the plateaus"
          " before the last jump\n  (the last level is read at the GF horizon, where GF may still be converging: "
          + ", ".join(f"α = {r['alpha']:g}: {r['gf_last_level_err']:.1e}" for r in results) + ")")
    print()
    key = results[-1]
    print(f"KEY RATIO  at α = {key['alpha']:g}: full GF trajectory / numerical AGF staircase wall time = "
          f"{key['t_gf'] / key['t_agf']:.2f}× ({1e3 * key['t_gf']:.1f} ms vs {1e3 * key['t_agf']:.1f} ms); "
          f"closed form {1e3 * key['t_closed']:.2f} ms, {key['t_agf'] / key['t_closed']:.0f}× faster than numerical AGF, "
          f"which matches it to {max(key['time_err'], key['level_err']):.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
