"""One figure style for the whole book, and the plots every chapter draws: loss curves with a staircase on top."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .results import Staircase, Trajectory

__all__ = ["use_style", "alpha_colors", "plot_staircase", "plot_losses", "mark_jumps"]

STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "figure.figsize": (7.0, 3.6),
    "figure.constrained_layout.use": True,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
}

STAIRCASE_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.3}


def use_style():
    """Apply the book's matplotlib style (call once, in a chapter's imports cell)."""
    mpl.rcParams.update(STYLE)


def alpha_colors(alphas, cmap="viridis"):
    """One color per initialization scale, darker for smaller α (ordered by log α)."""
    logs = -np.log10(np.asarray(alphas, dtype=float))
    span = np.ptp(logs) if logs.size > 1 else 1.0
    positions = 0.85 - 0.7 * (logs - logs.min()) / (span or 1.0)
    return [mpl.colormaps[cmap](p) for p in positions]


def plot_staircase(ax, staircase, t_end=None, label="AGF", **style):
    """Draw ``staircase`` as a step function up to ``t_end`` (default: a quarter past the last jump)."""
    if not isinstance(staircase, Staircase):
        raise TypeError(f"staircase must be a Staircase, got {type(staircase).__name__}")
    t, levels = staircase.steps(t_end)
    return ax.step(t, levels, where="post", label=label, **{**STAIRCASE_STYLE, **style})


def mark_jumps(ax, times, **style):
    """Thin vertical lines at the given jump times."""
    for t in np.atleast_1d(times):
        ax.axvline(t, **{"color": "0.5", "linewidth": 0.8, "linestyle": ":", **style})


def plot_losses(trajectories, labels=None, colors=None, staircase=None, ax=None, logy=True, t_end=None,
                staircase_label="AGF"):
    """Loss curves of several trajectories, with a staircase overlaid; returns the axes.

    The x axis is labelled with the trajectories' time unit; all of them (and the staircase) must
    share it.
    """
    trajectories = list(trajectories)
    if not trajectories or not all(isinstance(tr, Trajectory) for tr in trajectories):
        raise TypeError("trajectories must be a non-empty sequence of Trajectory")
    units = {tr.time_unit for tr in trajectories} | ({staircase.time_unit} if staircase is not None else set())
    if len(units) > 1:
        raise ValueError(f"trajectories and staircase use different time units: {sorted(units)}")
    if ax is None:
        _, ax = plt.subplots()
    labels = labels if labels is not None else [None] * len(trajectories)
    colors = colors if colors is not None else [None] * len(trajectories)
    for tr, label, color in zip(trajectories, labels, colors):
        keep = tr.times <= (t_end if t_end is not None else np.inf)
        ax.plot(tr.times[keep], tr.losses[keep], label=label, color=color)
    if staircase is not None:
        end = t_end if t_end is not None else max(tr.times[-1] for tr in trajectories)
        plot_staircase(ax, staircase, end, label=staircase_label)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(trajectories[0].time_unit)
    ax.set_ylabel("loss")
    if any(label is not None for label in labels) or staircase is not None:
        ax.legend()
    return ax
