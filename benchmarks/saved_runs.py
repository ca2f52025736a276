"""What the saved research-scale runs share (research_scale.py, research_scale_groups.py): gradient flow
at the adaptive rate sampled on given times, and the files a chapter loads back.

Kept apart from common.py so that a chapter importing a run's script does not import torch.
"""

from __future__ import annotations

import json

import numpy as np

import agf_lib

TOLERANCES = dict(rtol=1e-7, atol=1e-10)


def sampled_flow(network, data, theta0, times, times_until=None):
    """Gradient flow at the adaptive rate on ``times`` (their first ``times_until``), parameters recorded."""
    times = times if times_until is None else times[:times_until]
    return agf_lib.gradient_flow(network, data, theta0, float(times[-1]), adaptive_rate=True, times=times,
                                 record_params=True, **TOLERANCES)


def save(path, trajectory, seconds, **arrays):
    """``path`` (.npz): the run's times, losses, the first rows of θ₀ as the engine saw them (through its polar
    chart) and ``arrays``; beside it a .json with the wall time and the evaluations."""
    np.savez_compressed(path, times=trajectory.times, losses=trajectory.losses,
                        theta0_rows=trajectory.params[0, :3], **arrays)
    path.with_suffix(".json").write_text(json.dumps({"seconds": round(seconds, 1),
                                                     "evaluations": int(trajectory.evaluations)}) + "\n")
