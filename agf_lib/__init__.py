"""agf_lib: gradient flow and Alternating Gradient Flows (AGF) for two-layer networks.

The public names of the AGF book (described on the book's "Library" page, library.md): the result
types and their time unit, the network abstraction, the two engines, the escape-time theory
(``agf_lib.escape``), one module per setting (``agf_lib.diagonal``, ...), the standard problems
(``agf_lib.problems``), and the input checks every module shares (``agf_lib.validation``).
"""

from . import attention, book, deep_diagonal, dft, diagonal, escape, linear, modular, setting, validation
from . import groups, relu
from . import limits, problems
from .agf import CostStepError, alternating_gradient_flow
from .flow import PrecisionWarning, gradient_descent, gradient_flow
from .network import FeedForwardNetwork, TwoLayerNetwork, loss, utility
from .results import GF_TIME, LOG_TIME, Staircase, StaircaseComparison, TimeUnit, Trajectory

__all__ = [
    "TimeUnit",
    "GF_TIME",
    "LOG_TIME",
    "Trajectory",
    "Staircase",
    "StaircaseComparison",
    "TwoLayerNetwork",
    "FeedForwardNetwork",
    "loss",
    "utility",
    "gradient_flow",
    "gradient_descent",
    "PrecisionWarning",
    "alternating_gradient_flow",
    "CostStepError",
    "attention",
    "book",
    "dft",
    "diagonal",
    "deep_diagonal",
    "setting",
    "escape",
    "modular",
    "groups",
    "problems",
    "limits",
    "relu",
    "linear",
    "plotting",
    "validation",
]


def __getattr__(name):
    """``agf_lib.plotting`` on first use: matplotlib's pyplot costs about a second to import, and the engines,
    the tests and joblib's workers of a limit study do not draw."""
    if name == "plotting":
        import importlib

        return importlib.import_module(".plotting", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
