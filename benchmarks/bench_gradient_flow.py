"""Gradient flow vs gradient descent on the diagonal-network example: wall time and loss accuracy.

Runs, on the seeded problem of ``common.py`` at α = 1e-12 over the horizon T = 1.2 × the last jump
time of the closed-form AGF staircase:

(a) ``agf_lib.gradient_flow`` with its default options (DOP853 in per-neuron polar coordinates);
(b) ``agf_lib.gradient_descent`` with η = 1e-3, the paper's notebooks' way (≈ T/η autograd steps);
(c) ``agf_lib.diagonal.gradient_flow`` with rtol = 1e-12, atol = 1e-14, the exact flow in ψ
    coordinates, sampled at the sample times of (a) and of (b), as the reference.

Prints wall times, work (RHS evaluations, GD steps), the max relative loss error of (a) and (b)
against (c) over the whole run, and ends with the speed ratio (b)/(a).

    python benchmarks/bench_gradient_flow.py            # full run (GD alone takes minutes)
    python benchmarks/bench_gradient_flow.py --quick    # smoke run, seconds
"""

from __future__ import annotations

import argparse
import math
import sys


import agf_lib
from agf_lib import diagonal

from common import describe_problem, diagonal_problem, machine, max_relative_error, table, timed

ALPHA = 1e-12
HORIZON_FACTOR = 1.2
GD_ETA = 1e-3
REF_TOL = dict(rtol=1e-12, atol=1e-14)
TARGET_SPEEDUP = 10.0
TARGET_GF_ERROR = 1e-3
GD_SAMPLES = 20000  # GD's loss is recorded every ~T/GD_SAMPLES of GF time (about 0.04 here), fine enough to
                    # resolve each drop, so that its max error is not understated by coarse sampling


class CountingDiagonalNetwork(diagonal.DiagonalLinearNetwork):
    """The diagonal network, counting calls of ``chart_utility_gradient``: one per RHS evaluation of
    ``agf_lib.gradient_flow`` (its velocity field calls it exactly once). Overhead: one Python
    attribute increment per call, against a few hundred µs of torch work."""

    calls = 0

    def chart_utility_gradient(self, phi, X, residual):  # what the engines call, in the network's chart
        self.calls += 1
        return super().chart_utility_gradient(phi, X, residual)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: horizon 1.2 × the 2nd jump and GD with η = 1e-2 (seconds, not minutes)")
    args = parser.parse_args(argv)

    X, y = diagonal_problem()
    d = X.shape[1]
    staircase, t_closed = timed(diagonal.agf, X, y, ALPHA)
    last = staircase.times[2] if args.quick else staircase.times[-1]
    t_end = HORIZON_FACTOR * last
    eta = 1e-2 if args.quick else GD_ETA
    theta0 = diagonal.initial_theta(d, ALPHA)

    print("bench_gradient_flow" + ("  [--quick: smoke run, not the benchmark]" if args.quick else ""))
    print(f"  problem : {describe_problem()}")
    print(f"  alpha   : {ALPHA:g}; closed-form AGF jumps at t = "
          + ", ".join(f"{t:.2f}" for t in staircase.times[1:]) + f" ({t_closed * 1e3:.1f} ms)")
    print(f"  horizon : T = {HORIZON_FACTOR} × {last:.2f} = {t_end:.2f}"
          + (" (2nd jump: --quick)" if args.quick else " (last jump)"))
    print(f"  machine : {machine()}")
    print(flush=True)

    # (a) gradient flow, default options
    network = CountingDiagonalNetwork(d)
    gf, t_gf = timed(agf_lib.gradient_flow, network, (X, y), theta0, t_end)
    gf_evals = network.calls
    print(f"(a) gradient_flow: {t_gf:.2f} s, {gf_evals} RHS evaluations", flush=True)

    # (b) gradient descent; first a short calibration run to say how long the real one will take
    num_steps = int(math.ceil(t_end / eta))
    calib_steps = min(2000, num_steps)
    _, t_calib = timed(agf_lib.gradient_descent, network, (X, y), theta0, calib_steps * eta, eta=eta)
    print(f"(b) gradient_descent: {num_steps} steps of η = {eta:g}, "
          f"estimated {t_calib / calib_steps * num_steps:.0f} s from {calib_steps} steps ...", flush=True)
    gd, t_gd = timed(agf_lib.gradient_descent, network, (X, y), theta0, t_end, eta=eta, num_samples=GD_SAMPLES)
    print(f"    done in {t_gd:.1f} s", flush=True)

    # (c) reference, sampled at the times of each run
    ref_gf, t_ref = timed(diagonal.gradient_flow, X, y, ALPHA, t_end, times=gf.times, **REF_TOL)
    ref_gd = diagonal.gradient_flow(X, y, ALPHA, max(t_end, gd.times[-1]), times=gd.times, **REF_TOL)
    # the reference's own error, estimated against a ten times tighter run
    tighter = diagonal.gradient_flow(X, y, ALPHA, t_end, times=gf.times, rtol=1e-13, atol=1e-15)
    ref_err, _ = max_relative_error(ref_gf.losses, tighter.losses)

    err_gf, k_gf = max_relative_error(gf.losses, ref_gf.losses)
    err_gd, k_gd = max_relative_error(gd.losses, ref_gd.losses)
    final_gf, _ = max_relative_error(gf.losses[-1:], ref_gf.losses[-1:])
    final_gd, _ = max_relative_error(gd.losses[-1:], ref_gd.losses[-1:])
    speedup = t_gd / t_gf

    print()
    rows = [
        ["(a) agf_lib.gradient_flow (DOP853, rtol 1e-9, atol 1e-12)", f"{t_gf:.2f}", f"{gf_evals} RHS evals",
         f"{1e6 * t_gf / gf_evals:.0f}", gf.times.size, f"{err_gf:.2e}", f"{gf.times[k_gf]:.2f}", f"{final_gf:.1e}"],
        [f"(b) agf_lib.gradient_descent (η = {eta:g})", f"{t_gd:.2f}", f"{num_steps} steps",
         f"{1e6 * t_gd / num_steps:.0f}", gd.times.size, f"{err_gd:.2e}", f"{gd.times[k_gd]:.2f}", f"{final_gd:.1e}"],
        ["(c) diagonal.gradient_flow reference (rtol 1e-12, atol 1e-14)", f"{t_ref:.2f}", "-", "-",
         ref_gf.times.size, f"~{ref_err:.0e}*", "-", "-"],
    ]
    print(table(["run", "wall [s]", "work", "µs/eval", "samples", "max rel. loss err", "at t", "final err"], rows))
    print("  loss errors are max over all samples of |L − L_ref| / L_ref, with the reference (c) sampled at the"
          " same times;\n  * (c)'s own error: its max deviation from a run at rtol 1e-13, atol 1e-15."
          " µs/eval includes sampling the loss.\n"
          f"  (b)'s loss is recorded every {gd.times[1] - gd.times[0]:.3g} time units; (a) samples on its own steps"
          " plus a linear and a log grid.")
    print()
    verdict = ("not meaningful in --quick (short horizon, larger η)" if args.quick
               else "met" if speedup >= TARGET_SPEEDUP else "MISSED")
    print(f"speed ratio (b)/(a)             : {speedup:.1f}×   (target ≥ {TARGET_SPEEDUP:g}×: {verdict})")
    print(f"max relative loss error, (a)    : {err_gf:.2e}   (target ≤ {TARGET_GF_ERROR:g}: "
          f"{'met' if err_gf <= TARGET_GF_ERROR else 'MISSED'})")
    print(f"max relative loss error, (b)    : {err_gd:.2e}")
    if not args.quick and t_gd > 120:
        print(f"note: the gradient-descent baseline alone took {t_gd / 60:.1f} min at the full horizon "
              f"(over the ~2 min budget); the horizon was not shortened.")
    print()
    print(f"KEY RATIO  gradient descent / gradient flow wall time = {speedup:.1f}×"
          f"  (GF loss error {err_gf:.1e}, GD loss error {err_gd:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
