"""The heavy runs of the appendix page "The paper's experiments" (chapters/11_experiments.ipynb).

The paper's five public notebooks (github.com/danielkunin/alternating-gradient-flows) train for up to
10^7 steps. This script runs the library at their settings, in gradient-flow time, and saves the losses
in the notebooks' own units (their step counter on x, their loss normalization on y) to
``benchmarks/paper_experiments_<setting>.npz``, with the setting arrays it used, so that the page can check that it
builds the same settings and compare the saved runs with AGF. Wall times and the machine go to
``benchmarks/paper_experiments_<setting>.json``.

What runs (t is gradient-flow time of the library's loss L = E[½‖y − f‖²]; the conversions are derived on
the page):

* diagonal (d = 5, n = 20, legacy NumPy seed 10): ``diagonal.exact_flow`` at their eight α up to their
  horizon t = 10^6 · 10^-3, and their full-batch descent (η = 10^-3, 10^6 steps), written out below as a
  vectorized NumPy loop over the eight α (the notebook's update rule, not library code).
* fully connected linear (d = c = H = 10, legacy seed 0, their α = 10^-15): ``linear.matrix_flow`` on the
  population loss from their initial weights, up to t = 2 · 10^-3 · 10^7; and their online descent (fresh
  Gaussian batches of 1000, η = 10^-3), shortened to 2 · 10^4 of their 10^7 steps.
* linear attention (d = 4, N = 32, H = 5, torch seed 0, their α = 10^-3): ``agf_lib.gradient_flow`` on
  ``attention.population_data`` up to t = 10^-2 · 10^5; their online descent (8192 fresh prompts a step,
  η = 10^-2), shortened to 5000 of their 10^5 steps.
* modular addition (p = 20, H = 18, torch seed 0, their α = 10^-2): ``agf_lib.gradient_flow`` on the full
  data set up to t = 600 (their epoch 6 · 10^4 of the 10^6 they ran: the first two frequencies; the
  third, which their printout shows dropping between epochs 1.2 · 10^5 and 2 · 10^5, is not run).
* ReLU (CIFAR-10 in the notebook; not bundled, so scikit-learn's digits, whitened as they whiten):
  ``agf_lib.gradient_descent`` on the true ReLU network with their minibatches (256, shuffled) and step,
  2000 epochs, widths 1, 2, 3 from α = 10^-20 (seed 0), and AGF on the surrogate at H = 1, 2, 3 (its first H
  jumps; cost steps stopped at cost_tol 1e-3, at 1e-5 the second cost step at H = 2 does not converge; at
  H = 3 the third cost step ends at the next activation by AGF's default cost_horizon="auto", where with
  the rules alone it ran over 4 minutes).

Run from the repository root: ``python benchmarks/paper_experiments.py [setting ...]`` (settings
diagonal, linear, attention, modular, relu; all by default, one after the other).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time

import numpy as np

import agf_lib
from agf_lib import attention, diagonal, linear, modular, relu

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paper_experiments")


# ----------------------------------------------------------------------------------- the settings
def diagonal_setting():
    rs = np.random.RandomState(10)
    X = rs.multivariate_normal(np.zeros(5), np.diag(1 / np.arange(1, 6)), size=20)
    y = X @ (10 * rs.randn(5))
    return X, y


def linear_setting():
    rs = np.random.RandomState(0)
    d = c = H = 10
    rs.randn(d, d)                                  # drawn, then overwritten, in the notebook
    left, _ = np.linalg.qr(rs.randn(d, d))
    right, _ = np.linalg.qr(rs.randn(d, d))
    root = left @ np.diag(1 / np.arange(1, d + 1)) @ right
    B = rs.randn(c, d)
    _, _, Vt = np.linalg.svd(B)
    Sigma_xx = Vt.T @ np.diag(np.linalg.svd(root @ root.T, compute_uv=False)) @ Vt
    A0 = rs.randn(c, H) * 1e-15 / math.sqrt(c)
    W0 = rs.randn(H, d) * 1e-15 / math.sqrt(d)
    return Sigma_xx, B @ Sigma_xx, B, np.hstack([W0, A0.T])


def attention_setting():
    import torch

    torch.manual_seed(0)
    d, H = 4, 5
    lam = 1 / torch.arange(1, d + 1, dtype=torch.float32)
    lam = lam / lam.sum() * 2
    rotation, _ = torch.linalg.qr(torch.randn(d, d))
    Sigma = (rotation @ torch.diag(lam) @ rotation.T).double().numpy()
    W_Q, W_K = torch.randn(H, 1, d + 1), torch.randn(H, 1, d + 1)
    W_V = torch.randn(H, d + 1, d + 1).abs()
    theta0 = 1e-3 * np.hstack([W_V[:, -1, -1:].double().numpy(), W_K[:, 0, :d].double().numpy(),
                               W_Q[:, 0, :d].double().numpy()])
    return (Sigma + Sigma.T) / 2, theta0


def modular_setting():
    import torch

    p, H, alpha = 20, 18, 1e-2
    spectrum = np.zeros(p, complex)
    for k, a in ((1, 10.0), (3, 5.0), (5, 2.5)):
        spectrum[k] = spectrum[-k] = a
    x = np.fft.ifft(spectrum).real
    x -= x.mean()
    torch.manual_seed(0)
    U = alpha * torch.randn(H, p) / math.sqrt(2 * p)
    V = alpha * torch.randn(H, p) / math.sqrt(2 * p)
    W = alpha * torch.randn(H, p) / math.sqrt(p)
    return x, np.hstack([U.double().numpy(), V.double().numpy(), W.double().numpy()])


def relu_setting():
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = digits.data / 16.0
    centred = pixels - pixels.mean(0)
    U, S, Vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(S > 1e-10 * S[0]))
    n = centred.shape[0]
    X = U[:, :rank] @ Vt[:rank] * math.sqrt(n / rank)
    Y = np.eye(10)[digits.target] - 0.1
    return X, Y


# ------------------------------------------------------------------------------------- the runs
def run_diagonal():
    X, y = diagonal_setting()
    alphas = np.array([0.99, 0.9, 0.5, 1e-1, 1e-2, 1e-4, 1e-8, 1e-16])
    eta, steps = 1e-3, 10**6
    out = {"diag_X": X, "diag_y": y, "diag_alphas": alphas}
    record = np.unique(np.geomspace(1, steps, 600).astype(int))
    start = time.perf_counter()
    out["diag_gf_losses"] = np.array([
        diagonal.exact_flow(X, y, steps * eta, alpha=a, times=record * eta).losses for a in alphas])
    out["diag_steps"] = record
    wall_gf = time.perf_counter() - start
    # the notebook's descent on (u, v), u = sqrt(2) alpha, v = 0, all eight alpha at once
    start = time.perf_counter()
    u = np.sqrt(2) * alphas[:, None] * np.ones(5)
    v = np.zeros_like(u)
    gd = np.empty((alphas.size, record.size))
    take = 0
    for k in range(steps + 1):
        if k == record[take]:
            gd[:, take] = 0.5 * np.mean((X @ (u * v).T - y[:, None]) ** 2, axis=0)
            take += 1
            if take == record.size:
                break
        g_beta = (X.T @ (X @ (u * v).T - y[:, None])).T / len(y)
        u, v = u - eta * g_beta * v, v - eta * g_beta * u
    out["diag_gd_losses"] = gd
    return out, {"diagonal_flow_s": wall_gf, "diagonal_descent_s": time.perf_counter() - start}


def run_linear():
    Sigma_xx, Sigma_yx, B, theta0 = linear_setting()
    out = {"lin_Sigma_xx": Sigma_xx, "lin_Sigma_yx": Sigma_yx, "lin_theta0": theta0}
    steps = np.unique(np.geomspace(1, 1e7, 500).astype(int))
    start = time.perf_counter()
    flow = linear.matrix_flow(Sigma_xx, Sigma_yx, theta0, 2e-3 * 1e7, times=2e-3 * steps,
                              method="LSODA")
    out["lin_steps"], out["lin_gf_losses"] = steps, flow.losses
    wall_gf = time.perf_counter() - start
    chol = np.linalg.cholesky(Sigma_xx)

    def sampler(rng, b):
        x = rng.standard_normal((b, 10)) @ chol.T
        return x, x @ B.T

    start = time.perf_counter()
    X, Y = linear.population_data(Sigma_xx, Sigma_yx)
    online = agf_lib.gradient_descent(linear.FullyConnectedLinearNetwork(10, 10, 10), (X, Y), theta0,
                                      2e-3 * 2e4, eta=2e-3, batch_size=1000, sampler=sampler, seed=0,
                                      num_samples=500)
    out["lin_sgd_times"], out["lin_sgd_losses"] = online.times, online.losses
    return out, {"linear_flow_s": wall_gf, "linear_online_s": time.perf_counter() - start}


def run_attention():
    Sigma, theta0 = attention_setting()
    N = 32
    out = {"att_Sigma": Sigma, "att_theta0": theta0}
    X, Y = attention.population_data(Sigma, N)
    network = attention.LinearAttentionNetwork(4, 5)
    steps = np.unique(np.geomspace(1, 1e5, 500).astype(int))
    start = time.perf_counter()
    flow = agf_lib.gradient_flow(network, (X, Y), theta0, 1e-2 * 1e5, times=1e-2 * steps)
    out["att_steps"], out["att_gf_losses"] = steps, flow.losses
    wall_gf = time.perf_counter() - start
    root = np.linalg.cholesky(Sigma)

    def sampler(rng, b):
        xs = rng.standard_normal((b, N + 1, 4)) @ root.T
        beta = rng.standard_normal((b, 4))
        ys = np.einsum("bnd,bd->bn", xs[:, :N], beta)
        context = np.einsum("bn,bnd->bd", ys, xs[:, :N])           # S beta
        Phi = context[:, :, None] * xs[:, N, None, :]             # S beta x_q^T
        return Phi.reshape(b, 16), np.einsum("bd,bd->b", xs[:, N], beta)

    start = time.perf_counter()
    online = agf_lib.gradient_descent(network, (X, Y), theta0, 1e-2 * 5000, eta=1e-2,
                                      batch_size=8192, sampler=sampler, seed=0, num_samples=300)
    out["att_sgd_times"], out["att_sgd_losses"] = online.times, online.losses
    return out, {"attention_flow_s": wall_gf, "attention_online_s": time.perf_counter() - start}


def run_modular():
    x, theta0 = modular_setting()
    out = {"mod_x": x, "mod_theta0": theta0}
    X, Y = modular.dataset(x)
    network = modular.QuadraticModularNetwork(20, 18)
    steps = np.unique(np.geomspace(10, 6e4, 400).astype(int))
    start = time.perf_counter()
    flow = agf_lib.gradient_flow(network, (X, Y), theta0, 1e-2 * steps[-1], times=1e-2 * steps,
                                 rtol=1e-7, atol=1e-10)
    out["mod_steps"], out["mod_gf_losses"] = steps, flow.losses
    return out, {"modular_flow_s": time.perf_counter() - start}


def run_relu():
    X, Y = relu_setting()
    n, d = X.shape
    out = {"relu_X_rows": X[:5], "relu_X_singular": np.linalg.svd(X, compute_uv=False)}
    wall = {}
    steps_per_epoch = math.ceil(n / 256)
    for H in (1, 2, 3):
        # their torch init: every entry of W and A is N(0, alpha^2); seed 0 here
        theta0 = 1e-20 * np.random.default_rng(0).standard_normal((H, d + 10))
        start = time.perf_counter()
        run = agf_lib.gradient_descent(relu.ReLUNetwork(d, H, 10), (X, Y), theta0,
                                       2.0 * 2000 * steps_per_epoch, eta=2.0, batch_size=256,
                                       seed=0, num_samples=2000)
        wall[f"relu_descent_H{H}_s"] = time.perf_counter() - start
        out[f"relu_gd_times_H{H}"], out[f"relu_gd_losses_H{H}"] = run.times, run.losses
        print(f"relu H = {H}: descent {wall[f'relu_descent_H{H}_s']:.0f} s", flush=True)
        start = time.perf_counter()
        staircase = agf_lib.alternating_gradient_flow(
            relu.SmoothReLUNetwork(d, H, 10, eps=1e-2), (X, Y), theta0, method="LSODA", rtol=1e-7,
            cost_tol=1e-3, cost_method="RK23", max_jumps=H)
        wall[f"relu_agf_H{H}_s"] = time.perf_counter() - start
        out[f"relu_agf_times_H{H}"] = np.asarray(staircase.times)
        out[f"relu_agf_losses_H{H}"] = np.asarray(staircase.losses)
        print(f"relu H = {H}: AGF {wall[f'relu_agf_H{H}_s']:.0f} s, {staircase.times}", flush=True)
    return out, wall


def main(names):
    jobs = {"modular": run_modular, "attention": run_attention, "linear": run_linear,
            "diagonal": run_diagonal, "relu": run_relu}
    names = names or list(jobs)
    for name in names:
        out, wall = jobs[name]()
        np.savez_compressed(f"{OUT}_{name}.npz", **out)
        wall["machine"] = f"Python {platform.python_version()}, {os.cpu_count()} CPUs"
        wall["date"] = time.strftime("%Y-%m-%d")
        with open(f"{OUT}_{name}.json", "w") as handle:
            json.dump(wall, handle, indent=1)
        print(name, json.dumps(wall), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
