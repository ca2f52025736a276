"""agf_lib: gradient flow and Alternating Gradient Flows (AGF) for two-layer networks.

The public names of the AGF book (described on the book's "Library" page, library.md): the result
types, the network abstraction, the two engines, one module per setting (``agf_lib.diagonal``, ...),
and the standard problems (``agf_lib.problems``).
"""

from . import attention, dft, diagonal, linear, modular, plotting
from . import groups, relu
from . import problems
from .agf import CostStepError, alternating_gradient_flow
from .flow import gradient_descent, gradient_flow
from .network import FeedForwardNetwork, TwoLayerNetwork, loss, utility
from .results import Staircase, StaircaseComparison, Trajectory

__all__ = [
    "Trajectory",
    "Staircase",
    "StaircaseComparison",
    "TwoLayerNetwork",
    "FeedForwardNetwork",
    "loss",
    "utility",
    "gradient_flow",
    "gradient_descent",
    "alternating_gradient_flow",
    "CostStepError",
    "attention",
    "dft",
    "diagonal",
    "modular",
    "groups",
    "problems",
    "relu",
    "linear",
    "plotting",
]
