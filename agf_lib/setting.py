"""The contract every setting of the book keeps: one :class:`Setting` type.

A *setting* is a family of learning problems the paper analyses (diagonal linear networks, fully
connected linear networks, attention, ReLU networks, modular addition, composition over a group): a
network, its data, the paper's initialization at scale α, and AGF's closed forms, at finite α and as
α → 0. Each setting module exposes one subclass with the same names and argument orders:

- ``network``: the :class:`~agf_lib.network.TwoLayerNetwork` trained;
- ``data()``: ``(X, y)``, inputs ``(n, d)`` and targets ``(n, c)``, float64;
- ``initial_theta(*, alpha, seed=0)``: the setting's initialization at scale α, shape ``(H, P)``;
- ``agf_staircase(*, alpha=None, initial_norms=None, seed=0)``: AGF's staircase at finite α in GF time
  ``t``, from the seeded initialization at ``alpha`` or from given dormant norms;
- ``limit_staircase()``: AGF's α → 0 staircase, in the rescaled time of its ``time_unit``;
- ``level_outputs(predictor)``: the network's outputs ``(n, c)`` on ``X`` when it computes the function of
  a level, ``predictor`` being ``Staircase.predictors[k]``;
- ``options`` and ``agf_options``: options both engines take, and AGF's own;
- ``exact``: whether ``agf_staircase`` is AGF itself at that α; ``has_closed_form``: whether the setting
  has ``agf_staircase`` at finite α at all.

:mod:`agf_lib.problems` builds the book's standard problems from settings, and one test
(``tests/test_settings.py``) checks this contract on every setting module. The library page's
section "Adding a setting" walks through writing a new one.
"""

from __future__ import annotations

import abc
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

import numpy as np

from .validation import check_bool, check_positive, real_array

__all__ = ["Setting", "largest_norm"]

NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})
ADAPTIVE_RATE: Mapping[str, Any] = MappingProxyType({"adaptive_rate": True})


def rate_options(adaptive_rate):
    """The engines' options of a setting run at the paper's adaptive rate (Appendix B.5), or at the plain one."""
    return ADAPTIVE_RATE if check_bool(adaptive_rate, "adaptive_rate") else NO_OPTIONS


def largest_norm(theta):
    """The largest row norm of ``theta``: the initial norm ν of the first neuron to escape, to leading order.

    The closed forms of the κ = 3 settings and of ReLU networks time the staircase of neurons aligned with
    their target from the start, at the largest initial norm; the first jump they give is a lower bound on
    the first jump of both engines.
    """
    return float(np.sqrt((np.asarray(theta, dtype=float) ** 2).sum(1)).max())


class Setting(abc.ABC):
    """A setting of the book: its network, its data, its initialization and AGF's closed forms.

    A subclass sets ``network`` in ``__init__`` and implements :meth:`data`, :meth:`finite_staircase`
    (unless ``has_closed_form`` is False), :meth:`limit_staircase` and :meth:`level_outputs`. It may
    override :meth:`initial_theta` (the default is the network's own) and set ``options``,
    ``agf_options``, ``exact``.

    Attributes
    ----------
    network : TwoLayerNetwork
    options : mapping
        Options both engines take in this setting (``adaptive_rate=True`` for a κ = 3 setting run at
        the paper's Appendix B.5 rate).
    agf_options : mapping
        Further options of :func:`agf_lib.alternating_gradient_flow` (a looser ``cost_tol`` where a cost
        step's loss approaches an infimum that no finite weights attain).
    exact : bool
        Whether :meth:`agf_staircase` is AGF itself at that α (diagonal networks). Otherwise it is the
        staircase of neurons aligned with their target from the start, with norm the largest initial norm.
    has_closed_form : bool
        Whether the setting has a closed-form staircase at finite α (fully connected linear networks do
        not: their jump times depend on the random initialization).
    """

    network: Any
    options: Mapping[str, Any] = NO_OPTIONS
    agf_options: Mapping[str, Any] = NO_OPTIONS
    exact: ClassVar[bool] = False
    has_closed_form: ClassVar[bool] = True

    @abc.abstractmethod
    def data(self):
        """``(X, y)``: inputs of shape ``(n, d)`` and targets of shape ``(n, c)``, float64."""

    def initial_theta(self, *, alpha, seed=0):
        """The setting's initialization at scale ``alpha``, seeded; shape ``(H, P)``."""
        return self.network.initial_theta(alpha=alpha, seed=seed)

    def agf_staircase(self, *, alpha=None, initial_norms=None, seed=0):
        """AGF's staircase at finite α, in GF time ``t``.

        Parameters
        ----------
        alpha : float, optional
            The initialization scale: the dormant norms are those of ``initial_theta(alpha=alpha,
            seed=seed)`` (its largest row norm, or the setting's own rule).
        initial_norms : float or sequence of floats, optional
            The dormant norms themselves: one number for every jump, or a sequence of one per jump (the
            largest dormant norm before each, ``Staircase.dormant_norms()``). Exactly
            one of ``alpha`` and ``initial_norms`` is given.
        seed : int, default 0
            The initialization's seed, with ``alpha``.

        Returns
        -------
        Staircase

        Raises
        ------
        TypeError
            If neither or both of ``alpha`` and ``initial_norms`` are given.
        NotImplementedError
            If the setting has no closed form at finite α (``has_closed_form`` is False).
        """
        if (alpha is None) == (initial_norms is None):
            raise TypeError("give exactly one of alpha and initial_norms")
        if not self.has_closed_form:
            raise NotImplementedError(f"{type(self).__name__} has no closed-form staircase at finite alpha")
        if initial_norms is None:
            return self.finite_staircase_at(check_positive(alpha, "alpha"), seed)
        return self.finite_staircase(check_norms(initial_norms))

    def finite_staircase_at(self, alpha, seed):
        """The closed form at a validated scale ``alpha``: by default ``finite_staircase`` from the dormant
        norm of the seeded initialization (``initial_norms``). A setting whose closed form takes α itself
        overrides it, so that no norm is computed and divided back."""
        return self.finite_staircase(self.initial_norms(alpha=alpha, seed=seed))

    def initial_norms(self, *, alpha, seed=0):
        """The dormant norm the closed form starts from at scale ``alpha``: the largest initial row norm."""
        return largest_norm(self.initial_theta(alpha=alpha, seed=seed))

    def finite_staircase(self, initial_norms):
        """The closed form at finite α from validated dormant norms (what ``agf_staircase`` returns)."""
        raise NotImplementedError(f"{type(self).__name__} has no closed-form staircase at finite alpha")

    @abc.abstractmethod
    def limit_staircase(self):
        """AGF's α → 0 staircase, in the rescaled time of its ``time_unit``."""

    @abc.abstractmethod
    def level_outputs(self, predictor):
        """The network's outputs ``(n, c)`` on ``X`` for a level's predictor (``Staircase.predictors[k]``)."""


def check_norms(initial_norms):
    """``initial_norms`` as a positive float or a 1-D array of positive floats; TypeError/ValueError naming it."""
    if isinstance(initial_norms, (np.ndarray, list, tuple)) or type(initial_norms).__module__.startswith("torch"):
        norms = real_array(initial_norms, "initial_norms", "a positive number or a 1-D sequence")
        if norms.ndim == 0:
            norms = float(norms)
        elif norms.ndim > 1 or norms.size == 0:
            raise ValueError(f"initial_norms must be a positive number or a 1-D sequence, got shape {norms.shape}")
    else:
        norms = check_positive(initial_norms, "initial_norms")
    if np.any(np.asarray(norms) <= 0):
        raise ValueError("initial_norms must be positive")
    return norms
