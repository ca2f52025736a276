"""``agf_lib.gradient_flow`` against the fastest honest baselines, as speed ratios at equal accuracy.

Three problems, each with an independent reference flow:

* ``diagonal``: the book's standard diagonal problem (``common.py``; d = 5, n = 20) at α = 1e-12, over
  T = 1.2 × the last jump of the closed-form AGF; reference ``diagonal.exact_flow`` (exact ψ
  coordinates) at rtol 1e-12.
* ``modular``: chapter 06's plain κ = 3 run (p = 11, H = 16, α = 0.05, seed 2, t up to 22/α);
  reference: the raw flow below at rtol 1e-13, atol 1e-16.
* ``linear``: a fully connected linear network (d = 6, H = 2, c = 3) on population data of a random
  non-commuting problem (seed 7), α = 1e-8, over 1.5 × the second jump of greedy low-rank learning;
  reference ``linear.matrix_flow`` (matrix form, its own code) at rtol 1e-12.

Runs on each problem, one after the other in one process:

(a) ``agf_lib.gradient_flow`` with its defaults (DOP853, rtol 1e-9, atol 1e-12; polar coordinates, or the
    diagonal network's log chart), and at looser rtol;
(b) fixed-step gradient descent with η = 1e-3 as the paper's public notebooks train, written as a
    plain vectorized NumPy loop on the raw parameters (no library code);
(c) a plain ``scipy.integrate.solve_ivp`` DOP853 on the raw parameters with a NumPy right-hand side,
    at the same rtol/atol as (a) and at tighter ones, its loss sampled on as many points as (a)'s
    (its steps plus a linear and a logarithmic grid), which the timing includes, as it does for (a).

Each run's loss is compared with the reference at the run's own sample times (max relative error).
Printed ratios: (b)/(a) at the defaults and at equal accuracy (the loosest (a) whose error is at most
(b)'s and at most 1e-3), and (a)/(c) at the same tolerances and at equal accuracy (the loosest (c)
whose error is at most (a)'s). Wall times vary with the machine's load; the ratios come from runs made
one after the other in the same process, (a) and (c) each the best of at least three runs and of as many
as fit in 0.3 s (``common.best_of``), (b) run once (it takes seconds).

    python benchmarks/bench_gradient_flow.py            # full run, about a minute
    python benchmarks/bench_gradient_flow.py --quick    # smoke run: short horizons, seconds
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
from scipy.integrate import solve_ivp

import agf_lib
from agf_lib import dft, diagonal, linear, modular

from common import best_of, describe_problem, diagonal_problem, machine, max_relative_error, table, timed

GD_ETA = 1e-3
REPEATS = 3            # timings of (a) and (c): best of at least this many runs (common.best_of)
GD_SAMPLES = 20000     # loss recorded every ~T/GD_SAMPLES of GF time, fine enough to resolve each drop
REFERENCE_TOL = dict(rtol=1e-12, atol=1e-14)
GF_RTOLS = (1e-9, 1e-7, 1e-5, 1e-4)
GF_MAX_ERROR = 1e-3    # "equal accuracy" against GD: the loosest (a) whose error is at most (b)'s and at most this
RAW_TOLS = ((1e-9, 1e-12), (1e-9, 1e-20), (1e-11, 1e-24), (1e-12, 1e-28))


# ---------------------------------------------------------------------------------------------
# the problems: network, data, θ₀, horizon, a raw-coordinate RHS and loss, a reference loss


def diagonal_setup(quick, data=None, describe=None, max_t_end=math.inf):
    """The diagonal problem (by default the book's standard one) at α = 1e-12, up to 1.2 × its last
    closed-form jump or ``max_t_end``."""
    X, y = diagonal_problem() if data is None else data
    n, d = X.shape
    alpha = 1e-12
    staircase = diagonal.agf_staircase(X, y, alpha=alpha)
    t_end = min(1.2 * (staircase.times[2] if quick else staircase.times[-1]), max_t_end)
    theta0 = diagonal.initial_theta(d, alpha=alpha)

    def raw_rhs(t, z):
        u, v = z[:d], z[d:]
        g = X.T @ (y - X @ (u * v)) / n
        return np.concatenate([v * g, u * g])

    def raw_loss(z):  # z of shape (2d, T)
        r = y[:, None] - X @ (z[:d] * z[d:])
        return 0.5 * np.mean(r**2, axis=0)

    def gd(eta, num_steps, every):
        u, v = theta0[:, 0].copy(), theta0[:, 1].copy()
        losses = []
        for step in range(num_steps + 1):
            r = y - X @ (u * v)
            if step % every == 0:
                losses.append(0.5 * (r @ r) / n)
            g = X.T @ r / n
            u, v = u + eta * v * g, v + eta * u * g
        return np.arange(0, num_steps + 1, every) * eta, np.array(losses)

    def reference(times):
        return diagonal.exact_flow(X, y, times[-1], alpha=alpha, times=times, **REFERENCE_TOL).losses

    return dict(name="diagonal", describe=f"{describe or describe_problem()}, α = {alpha:g}", alpha=alpha,
                network=diagonal.DiagonalLinearNetwork(d), data=(X, y), theta0=theta0, t_end=t_end,
                raw0=theta0.T.ravel(), raw_rhs=raw_rhs, raw_loss=raw_loss, gd=gd, reference=reference,
                closed=staircase)


def linear_setup(quick):
    d, H, c, alpha = 6, 2, 3, 1e-8      # H = 2 < rank 3: the last level is positive, relative errors stay meaningful
    rng = np.random.default_rng(7)
    A = rng.normal(size=(d, d))
    Sigma_xx = A @ A.T / d + 0.2 * np.eye(d)
    Sigma_yx = rng.normal(size=(c, d)) @ Sigma_xx
    X, Y = linear.population_data(Sigma_xx, Sigma_yx)
    n = X.shape[0]
    staircase = linear.limit_staircase(Sigma_xx, Sigma_yx, rank=H)
    scale = math.log(1 / alpha)
    t_end = 1.5 * scale * (staircase.times[1] if quick else staircase.times[-1])
    network = linear.FullyConnectedLinearNetwork(d, H, c)
    theta0 = network.initial_theta(alpha=alpha, seed=0)

    def raw_rhs(t, z):
        W, A_ = z[: H * d].reshape(H, d), z[H * d :].reshape(c, H)
        R = (Y - X @ W.T @ A_.T).T @ X / n              # E[r xᵀ], (c, d)
        return np.concatenate([(A_.T @ R).ravel(), (R @ W.T).ravel()])

    def raw_loss(z):
        losses = []
        for k in range(z.shape[1]):
            W, A_ = z[: H * d, k].reshape(H, d), z[H * d :, k].reshape(c, H)
            r = Y - X @ W.T @ A_.T
            losses.append(0.5 * np.sum(r**2) / n)
        return np.array(losses)

    def gd(eta, num_steps, every):
        W, A_ = theta0[:, :d].copy(), theta0[:, d:].T.copy()
        losses = []
        for step in range(num_steps + 1):
            r = Y - X @ W.T @ A_.T
            if step % every == 0:
                losses.append(0.5 * np.sum(r**2) / n)
            R = r.T @ X / n
            W, A_ = W + eta * A_.T @ R, A_ + eta * R @ W.T
        return np.arange(0, num_steps + 1, every) * eta, np.array(losses)

    def reference(times):
        return linear.matrix_flow(Sigma_xx, Sigma_yx, theta0, times[-1], times=times, **REFERENCE_TOL).losses

    raw0 = np.concatenate([theta0[:, :d].ravel(), theta0[:, d:].T.ravel()])
    return dict(name="linear", describe=f"fully connected linear, d = {d}, H = {H}, c = {c}, population data "
                f"(n = {n}), seed 7, α = {alpha:g}", network=network, data=(X, Y), theta0=theta0, t_end=t_end,
                raw0=raw0, raw_rhs=raw_rhs, raw_loss=raw_loss, gd=gd, reference=reference)


def modular_setup(quick):
    p, H, alpha = 11, 16, 0.05
    magnitudes = np.zeros((p - 1) // 2)
    magnitudes[[4, 1, 3]] = [1.0, 0.8, 0.45]
    x = dft.template(p, magnitudes, seed=1)
    x /= np.linalg.norm(x)
    X, Y = modular.dataset(x)
    n = X.shape[0]
    network = modular.QuadraticModularNetwork(p, H)
    theta0 = network.initial_theta(alpha=alpha, seed=2)
    t_end = (12.0 if quick else 22.0) / alpha

    def raw_rhs(t, z):
        theta = z.reshape(H, 3 * p)
        zz = theta[:, : 2 * p] @ X.T                                  # (H, n)
        r = Y - (zz * zz).T @ theta[:, 2 * p :]
        s = theta[:, 2 * p :] @ r.T
        return np.concatenate([(2.0 / n) * (zz * s) @ X, (zz * zz) @ r / n], axis=1).ravel()

    def raw_loss(z):
        losses = []
        for k in range(z.shape[1]):
            theta = z[:, k].reshape(H, 3 * p)
            zz = theta[:, : 2 * p] @ X.T
            r = Y - (zz * zz).T @ theta[:, 2 * p :]
            losses.append(0.5 * np.sum(r**2) / n)
        return np.array(losses)

    def gd(eta, num_steps, every):
        theta, losses = theta0.copy(), []
        for step in range(num_steps + 1):
            zz = theta[:, : 2 * p] @ X.T
            r = Y - (zz * zz).T @ theta[:, 2 * p :]
            if step % every == 0:
                losses.append(0.5 * np.sum(r**2) / n)
            s = theta[:, 2 * p :] @ r.T
            theta = theta + eta * np.concatenate([(2.0 / n) * (zz * s) @ X, (zz * zz) @ r / n], axis=1)
        return np.arange(0, num_steps + 1, every) * eta, np.array(losses)

    def reference(times):  # the raw flow far tighter than any run here: its own code, not the library's
        sol = solve_ivp(raw_rhs, (0.0, times[-1]), theta0.ravel(), method="DOP853", rtol=1e-13, atol=1e-16,
                        dense_output=True)
        return raw_loss(sol.sol(times))

    return dict(name="modular", describe=f"quadratic modular network (κ = 3, plain rate), p = {p}, H = {H}, "
                f"n = {n}, seed 2, α = {alpha:g} (chapter 06's plain run)", network=network, data=(X, Y),
                theta0=theta0, t_end=t_end, raw0=theta0.ravel(), raw_rhs=raw_rhs, raw_loss=raw_loss, gd=gd,
                reference=reference)


# ---------------------------------------------------------------------------------------------


def raw_solve(setup, t_end, rtol, atol):
    """The raw-coordinate solve and its loss curve, sampled like (a): its steps plus 2000 + 1000 points."""
    sol = solve_ivp(setup["raw_rhs"], (0.0, t_end), setup["raw0"], method="DOP853", rtol=rtol, atol=atol,
                    dense_output=True)
    times = np.unique(np.concatenate([sol.t, np.linspace(0.0, t_end, 2000), np.geomspace(t_end * 1e-6, t_end, 1000)]))
    return sol, times, setup["raw_loss"](sol.sol(times))


def error_against(reference, times, losses):
    return max_relative_error(losses, reference(times))[0]


def run_problem(setup, quick):
    t_end, reference = setup["t_end"], setup["reference"]
    print(f"== {setup['name']}: {setup['describe']}; horizon T = {t_end:.2f}", flush=True)
    rows = []

    gf_runs = {}
    for rtol in GF_RTOLS:
        trajectory, seconds = best_of(REPEATS, agf_lib.gradient_flow, setup["network"], setup["data"], setup["theta0"],
                                      t_end, rtol=rtol)
        gf_runs[rtol] = (seconds, error_against(reference, trajectory.times, trajectory.losses))
        rows.append([f"(a) agf_lib.gradient_flow, rtol {rtol:g}" + (" (default)" if rtol == 1e-9 else ""),
                     f"{seconds:.3f}", f"{trajectory.evaluations} evals", f"{gf_runs[rtol][1]:.1e}"])

    eta = 1e-2 if quick else GD_ETA
    num_steps = int(math.ceil(t_end / eta))
    (gd_times, gd_losses), gd_seconds = timed(setup["gd"], eta, num_steps, max(1, num_steps // GD_SAMPLES))
    gd_error = error_against(reference, gd_times, gd_losses)
    rows.append([f"(b) NumPy gradient descent, η = {eta:g}", f"{gd_seconds:.3f}", f"{num_steps} steps",
                 f"{gd_error:.1e}"])

    raw_runs = {}
    for rtol, atol in RAW_TOLS:
        (sol, times, losses), seconds = best_of(REPEATS, raw_solve, setup, t_end, rtol, atol)
        raw_runs[rtol, atol] = (seconds, error_against(reference, times, losses))
        rows.append([f"(c) SciPy DOP853, raw coordinates, rtol {rtol:g}, atol {atol:g}", f"{seconds:.3f}",
                     f"{sol.nfev} evals", f"{raw_runs[rtol, atol][1]:.1e}"])
    print(table(["run", "wall [s]", "work", "max rel. loss error"], rows))

    default_seconds, default_error = gf_runs[1e-9]
    matching_gd = [r for r in GF_RTOLS if gf_runs[r][1] <= min(gd_error, GF_MAX_ERROR)]
    gf_at_gd = gf_runs[max(matching_gd)] if matching_gd else gf_runs[1e-9]
    matching_raw = [key for key in RAW_TOLS if raw_runs[key][1] <= default_error]
    raw_same = raw_runs[RAW_TOLS[0]]
    raw_equal = raw_runs[matching_raw[0]] if matching_raw else None
    ratios = dict(gd_default=gd_seconds / default_seconds, gd_equal=gd_seconds / gf_at_gd[0],
                  raw_same=default_seconds / raw_same[0],
                  raw_equal=default_seconds / raw_equal[0] if raw_equal else float("nan"))
    print(f"  (b)/(a): {ratios['gd_default']:.1f}× at the defaults (errors {gd_error:.1e} vs {default_error:.1e}); "
          f"{ratios['gd_equal']:.1f}× at equal accuracy (loosest (a) with error ≤ (b)'s and ≤ {GF_MAX_ERROR:g}: "
          f"{gf_at_gd[1]:.1e})")
    print(f"  (a)/(c): {ratios['raw_same']:.2f}× at the same tolerances (errors {default_error:.1e} vs "
          f"{raw_same[1]:.1e}); " + (f"{ratios['raw_equal']:.2f}× at equal accuracy ((c) error {raw_equal[1]:.1e})"
                                     if raw_equal else "no (c) run reached (a)'s accuracy"))
    print(flush=True)
    return ratios


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: short horizons and η = 1e-2 for GD")
    args = parser.parse_args(argv)
    print("bench_gradient_flow" + ("  [--quick: smoke run, not the benchmark]" if args.quick else ""))
    print(f"  machine : {machine()}")
    print("  errors  : max over the run's samples of |L − L_ref| / L_ref against the problem's reference flow")
    print(flush=True)
    results = {name: run_problem(setup(args.quick), args.quick)
               for name, setup in (("diagonal", diagonal_setup), ("linear", linear_setup),
                                   ("modular", modular_setup))}
    for name, r in results.items():
        print(f"KEY RATIO  {name}: NumPy GD / gradient_flow = {r['gd_default']:.1f}× (defaults), "
              f"{r['gd_equal']:.1f}× (equal accuracy); gradient_flow / raw SciPy DOP853 = {r['raw_same']:.2f}× "
              f"(same tolerances), {r['raw_equal']:.2f}× (equal accuracy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
