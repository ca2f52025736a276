"""A property sweep of the public functions' arguments: every bad value gets a named error or a finite answer.

For each public function a valid call is given, and hypothesis replaces one argument at a time by values
drawn from wrong types, NaN, ±inf, empty arrays, zero, negative numbers and wrong shapes. The property: the
call either raises a ``TypeError`` or ``ValueError`` whose message names the argument, or returns an answer
whose numbers are all finite; and it returns within ``CALL_SECONDS`` (a call that hangs is a failure, not a
slow test). Some of the values drawn are valid (a negative phase, a zero seed): those must give a finite
answer. Finite numbers are drawn up to 1e6 in size (overflowing float64 is not what this sweep is after), the
engines' times, rates and data up to 10 (larger ones are valid runs that take minutes, see :func:`times`).

Deterministic (``derandomize=True``, no example database), and small: the whole file runs in well under a
minute on one core.
"""

import contextlib
import math
import re
import signal
import threading
import warnings
from dataclasses import dataclass

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from agf_lib import (GF_TIME, LOG_TIME, Staircase, Trajectory, TimeUnit, alternating_gradient_flow, attention, dft,
                     diagonal, escape, gradient_descent, gradient_flow, linear, loss, modular, plotting, relu, utility,
                     validation)

CALL_SECONDS = 5.0          # a generous bound: every valid call below takes well under 0.5 s
EXAMPLES = 12               # per argument of each function

SWEEP = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                 phases=[Phase.explicit, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                        HealthCheck.filter_too_much])


class CallTimeout(BaseException):
    """Raised by the alarm inside a call that overran ``CALL_SECONDS`` (a BaseException, so that no
    ``except Exception`` in the library swallows it)."""


@contextlib.contextmanager
def time_limit(seconds):
    """Interrupt the block after ``seconds`` with :class:`CallTimeout` (SIGALRM: pytest-xdist runs each
    worker's tests in its main thread, where signals are delivered)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("the time limit needs the main thread")

    def interrupt(signum, frame):
        raise CallTimeout(f"the call ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# Bad values


NAN, INF = math.nan, math.inf
SPECIAL_FLOATS = [NAN, INF, -INF, 0.0, -0.0, -1.0, -1e6, 1e-300, np.float64(NAN)]
WRONG_TYPES = [None, "1", True, False, 1j, [1.0], {}, object()]

finite_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def numbers():
    """Real numbers that are wrong somewhere: NaN, ±inf, zero, negative, tiny, and values of the wrong type."""
    return st.one_of(st.sampled_from(SPECIAL_FLOATS + WRONG_TYPES), finite_floats,
                     st.integers(min_value=-1000, max_value=1000))


def counts():
    """Sizes: zero, negative, fractional, bool, and values of the wrong type (sizes too large to allocate are
    not drawn)."""
    return st.one_of(st.sampled_from([0, -1, 2.5, NAN, INF, True, None, "3", np.int64(-2), [3]]),
                     st.integers(min_value=-20, max_value=20))


def integers():
    """Integers that are not sizes (frequencies, multipliers, seeds): also huge ones, beyond int64."""
    return st.one_of(counts(), st.sampled_from([10**30, -(10**30), np.int64(2**62)]))


def times():
    """Numbers for times and rates of the engines: as :func:`numbers`, finite ones at most 10 in size (a valid
    run over t_end·eta = 10⁶ takes minutes: slow, not hung)."""
    return st.one_of(st.sampled_from(SPECIAL_FLOATS + WRONG_TYPES), st.floats(min_value=-10, max_value=10))


def flags():
    return st.sampled_from(["yes", "no", 1, 0, None, 1.0, [True], np.bool_(True), True, False])


def names():
    return st.sampled_from(["", "nope", None, 3, "DOP", b"RK45", ["RK45"]])


def elements(bound):
    return st.one_of(st.floats(min_value=-bound, max_value=bound), st.sampled_from([NAN, INF, -INF, 0.0, -1.0]))


def arrays(shape, bound=1e6):
    """Arrays that are wrong for an argument of ``shape``: the right shape with NaN, ±inf, zero or negative
    entries, other shapes (empty, 0-d, an axis more or less), wrong dtypes and things that are not arrays.
    Finite entries are at most ``bound`` in size: the engines' data at most 10 (data of size 10⁶ make a flow
    whose rates are 10¹², which an explicit solver crosses in 10¹² steps: slow, not hung)."""
    right_shape = hnp.arrays(np.float64, shape, elements=elements(bound))
    other_shape = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
                             elements=elements(bound))
    constant = st.sampled_from([0.0, -1.0, NAN, INF]).map(lambda v: np.full(shape, v))
    odd = st.sampled_from([None, "abc", 3.0, [], [[1.0, 2.0], [3.0]], {}, np.array(["a"] * max(1, shape[0])),
                           np.ones(shape, dtype=complex), np.zeros((0,) + tuple(shape[1:])), np.zeros(shape[:-1])])
    return st.one_of(right_shape, other_shape, constant, odd)


def objects(*valid):
    """Values that are not the object an argument wants (plus, from ``valid``, some that are)."""
    return st.sampled_from([None, 3, "x", [], (1, 2), np.zeros(3), object(), *valid])


# ---------------------------------------------------------------------------------------------
# The finite-answer half of the property


def all_finite(result):
    """Whether every number in ``result`` (arrays, numbers, sequences, results of the library) is finite."""
    if result is None or isinstance(result, (str, bytes, bool, TimeUnit, matplotlib.artist.Artist,
                                             matplotlib.figure.FigureBase)):
        return True
    if isinstance(result, (Trajectory, Staircase)):
        return all_finite(result.times) and all_finite(result.losses)
    if isinstance(result, int):
        return True
    if isinstance(result, (float, complex, np.number)):
        return bool(np.isfinite(result))
    if isinstance(result, np.ndarray):
        return result.dtype.kind not in "fc" or bool(np.all(np.isfinite(result)))
    if isinstance(result, (list, tuple)):
        return all(all_finite(item) for item in result)
    if isinstance(result, dict):
        return all(all_finite(item) for item in result.values())
    return True


def check_call(call, name, value, aliases=(), failures=None):
    """Call ``call(value)``: a TypeError/ValueError must name ``name`` (or one of ``aliases``); an answer must be
    finite; neither may take longer than ``CALL_SECONDS``. ``failures``, ``(exception, regex)``: a documented
    error of the function on a valid but extreme value (a solver's RuntimeError for an ``atol`` of 1e-309, an
    OverflowError where the answer exceeds float64), accepted with a message matching the regex."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with time_limit(CALL_SECONDS):
                result = call(value)
    except (TypeError, ValueError) as error:
        message = str(error)
        named = [n for n in (name, *aliases) if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message)]
        assert named, f"{type(error).__name__} for {name} = {value!r} does not name it: {message}"
        return
    except (RuntimeError, ArithmeticError) as error:
        if failures is None or not isinstance(error, failures[0]) or not re.search(failures[1], str(error)):
            raise
        return
    except CallTimeout:
        pytest.fail(f"{name} = {value!r}: the call did not return within {CALL_SECONDS} s")
    finally:
        plt.close("all")
    assert all_finite(result), f"{name} = {value!r} gave an answer that is not finite: {result!r}"


# ---------------------------------------------------------------------------------------------
# Valid calls, and the arguments to spoil


@dataclass(frozen=True, repr=False)
class Case:
    """``function(**valid)`` is a valid call; each of ``spoil``'s arguments is replaced in turn by values of its
    strategy. ``aliases`` lists other names a message may give an argument (an argument checked as part of
    another)."""

    name: str
    function: object
    valid: dict
    spoil: dict
    aliases: dict = None
    failures: tuple = None

    def __repr__(self):
        return self.name


rng = np.random.default_rng(0)
X3 = rng.normal(size=(12, 3))
Y3 = X3 @ np.array([1.0, -0.5, 0.2])
DIAGONAL = diagonal.DiagonalLinearNetwork(3)
THETA_DIAGONAL = diagonal.initial_theta(3, alpha=1e-3)
SIGMA = np.diag([1.0, 0.5])
SIGMA_YX = np.array([[1.0, 0.2]])
TEMPLATE = dft.template(7, [3.0, 2.0, 1.0])
QUADRATIC = modular.QuadraticModularNetwork(7, 2)
X_MODULAR = modular.dataset(TEMPLATE)[0]
STAIRCASE = Staircase([0.0, 1.0, 2.5], [1.0, 0.4, 0.1], [0, 1])
TRAJECTORY = Trajectory([0.0, 1.0, 2.0, 3.0], [1.0, 0.5, 0.2, 0.1])


SOLVER_FAILED = (RuntimeError, r"integration failed|failed at t =|stalled at t =|left float64")
"""The documented RuntimeError of the engines' solvers (an ``atol`` of 1e-309 is positive, and not met)."""


def _with_data(function, **fixed):
    """``function`` with ``data = (X, y)`` spelled as two arguments, so that each can be spoilt."""
    return lambda X, y, **kw: function(DIAGONAL, (X, y), **{**fixed, **kw})


def _figure_axes():
    return plotting.figure()[1]


CASES = [
    # engines (t_end bounded so that a valid call is short)
    Case("gradient_flow", lambda **kw: gradient_flow(**kw),
         dict(network=DIAGONAL, data=(X3, Y3), theta0=THETA_DIAGONAL, t_end=2.0, num_samples=20),
         dict(network=objects(), data=objects(), theta0=arrays((3, 2)), t_end=times(), eta=times(),
              method=names(), rtol=numbers(), atol=numbers(), num_samples=counts(), times=arrays((4,)),
              record_params=flags(), adaptive_rate=flags(), progress=flags(), check_rounding=flags()),
         aliases=dict(data=("X", "y")), failures=SOLVER_FAILED),
    Case("gradient_flow data", _with_data(gradient_flow, theta0=THETA_DIAGONAL, t_end=2.0, num_samples=20),
         dict(X=X3, y=Y3), dict(X=arrays((12, 3), 10), y=arrays((12,), 10))),
    Case("gradient_descent", lambda **kw: gradient_descent(**kw),
         dict(network=DIAGONAL, data=(X3, Y3), theta0=THETA_DIAGONAL, t_end=0.05, eta=1e-2, num_samples=5),
         dict(network=objects(), data=objects(), theta0=arrays((3, 2)), t_end=times(),
              eta=times(), num_samples=counts(), record_params=flags(),
              momentum=numbers(), batch_size=counts(), seed=integers(), sampler=objects()),
         aliases=dict(data=("X", "y")), failures=SOLVER_FAILED),
    Case("alternating_gradient_flow", lambda **kw: alternating_gradient_flow(**kw),
         dict(network=DIAGONAL, data=(X3, Y3), theta0=THETA_DIAGONAL, max_jumps=2),
         dict(network=objects(), data=objects(), theta0=arrays((3, 2)), eta=times(), t_end=times(),
              max_jumps=counts(), method=names(), cost_method=names(), rtol=numbers(), atol=numbers(),
              cost_rtol=numbers(), adaptive_rate=flags(), dormancy_threshold=numbers(), cost_tol=numbers(),
              utility_tol=numbers(), max_cost_time=numbers(), cost_horizon=names(), check_rounding=flags()),
         aliases=dict(data=("X", "y")), failures=SOLVER_FAILED),
    Case("alternating_gradient_flow data", _with_data(alternating_gradient_flow, theta0=THETA_DIAGONAL,
                                                      max_jumps=2),
         dict(X=X3, y=Y3), dict(X=arrays((12, 3), 10), y=arrays((12,), 10))),
    Case("loss", lambda **kw: loss(**kw), dict(network=DIAGONAL, theta=THETA_DIAGONAL, X=X3, y=Y3),
         dict(network=objects(), theta=arrays((3, 2)), X=arrays((12, 3)), y=arrays((12,)))),
    Case("utility", lambda **kw: utility(**kw), dict(network=DIAGONAL, theta=THETA_DIAGONAL, X=X3, residual=Y3),
         dict(network=objects(), theta=arrays((3, 2)), X=arrays((12, 3)), residual=arrays((12,)))),
    # diagonal networks
    Case("diagonal.initial_theta", lambda **kw: diagonal.initial_theta(**kw), dict(d=3, alpha=1e-3),
         dict(d=counts(), alpha=numbers())),
    Case("diagonal.agf_staircase", lambda **kw: diagonal.agf_staircase(**kw), dict(X=X3, y=Y3, alpha=1e-3),
         dict(X=arrays((12, 3)), y=arrays((12,)), alpha=numbers(), max_jumps=counts(), tol=numbers())),
    Case("diagonal.limit_staircase", lambda **kw: diagonal.limit_staircase(**kw), dict(X=X3, y=Y3),
         dict(X=arrays((12, 3)), y=arrays((12,)), max_jumps=counts(), tol=numbers())),
    Case("diagonal.exact_flow", lambda **kw: diagonal.exact_flow(**kw),
         dict(X=X3, y=Y3, t_end=2.0, alpha=1e-3, num_samples=20),
         dict(X=arrays((12, 3), 10), y=arrays((12,), 10), t_end=times(), alpha=times(), method=names(), rtol=numbers(),
              atol=numbers(), num_samples=counts(), times=arrays((4,)), record_params=flags()),
         failures=SOLVER_FAILED),
    Case("diagonal.activation_threshold", lambda **kw: diagonal.activation_threshold(**kw), dict(alpha=1e-3),
         dict(alpha=numbers())),
    Case("diagonal.sign_constrained_least_squares", lambda **kw: diagonal.sign_constrained_least_squares(**kw),
         dict(X=X3, y=Y3, signs=[1, -1, 0]), dict(X=arrays((12, 3)), y=arrays((12,)), signs=arrays((3,)))),
    Case("diagonal.beta_of_psi", lambda **kw: diagonal.beta_of_psi(**kw), dict(psi=[0.5, -1.0], alpha=1e-3),
         dict(psi=arrays((2,)), alpha=numbers()), failures=(OverflowError, "exceeds the largest float64")),
    Case("diagonal.log_cosh", lambda **kw: diagonal.log_cosh(**kw), dict(x=[0.5, -1.0]), dict(x=arrays((2,)))),
    # fully connected linear networks
    Case("linear.initial_theta", lambda **kw: linear.initial_theta(**kw), dict(d=2, H=3, c=1, alpha=1e-3),
         dict(d=counts(), H=counts(), c=counts(), alpha=numbers(), seed=integers())),
    Case("linear.population_loss", lambda **kw: linear.population_loss(**kw),
         dict(beta=np.zeros((1, 2)), Sigma_xx=SIGMA, Sigma_yx=SIGMA_YX),
         dict(beta=arrays((1, 2)), Sigma_xx=arrays((2, 2)), Sigma_yx=arrays((1, 2)), Sigma_yy=arrays((1, 1)))),
    Case("linear.theta_from_factors", lambda **kw: linear.FullyConnectedLinearNetwork(2, 3, 1).theta_from_factors(**kw),
         dict(W=np.ones((3, 2)), A=np.ones((1, 3))), dict(W=arrays((3, 2)), A=arrays((1, 3)))),
    Case("linear.limit_staircase", lambda **kw: linear.limit_staircase(**kw), dict(Sigma_xx=SIGMA, Sigma_yx=SIGMA_YX),
         dict(Sigma_xx=arrays((2, 2)), Sigma_yx=arrays((1, 2)), rank=integers(), Sigma_yy=arrays((1, 1)),
              tol=numbers())),
    Case("linear.reduced_rank_regression", lambda **kw: linear.reduced_rank_regression(**kw),
         dict(Sigma_xx=SIGMA, Sigma_yx=SIGMA_YX, rank=1),
         dict(Sigma_xx=arrays((2, 2)), Sigma_yx=arrays((1, 2)), rank=integers())),
    # modular addition and the DFT
    Case("dft.dft", lambda **kw: dft.dft(**kw), dict(u=TEMPLATE), dict(u=arrays((7,)))),
    Case("dft.power_spectrum", lambda **kw: dft.power_spectrum(**kw), dict(u=TEMPLATE), dict(u=arrays((7,)))),
    Case("dft.frequencies", lambda **kw: dft.frequencies(**kw), dict(p=7), dict(p=counts())),
    Case("dft.dominant_frequencies", lambda **kw: dft.dominant_frequencies(**kw), dict(x=TEMPLATE),
         dict(x=arrays((7,)), tol=numbers())),
    Case("dft.harmonic", lambda **kw: dft.harmonic(**kw), dict(p=7, k=2),
         dict(p=counts(), k=integers(), amplitude=numbers(), phase=numbers())),
    Case("dft.template", lambda **kw: dft.template(**kw), dict(p=7, magnitudes=[3.0, 2.0, 1.0]),
         dict(p=counts(), magnitudes=arrays((3,)), phases=arrays((3,)), seed=integers())),
    Case("dft.relabel", lambda **kw: dft.relabel(**kw), dict(u=TEMPLATE, m=3), dict(u=arrays((7,)), m=integers()),
         aliases=dict(u=("m",))),       # a u of length p = 3 makes m = 3 no unit mod p
    Case("modular.dataset", lambda **kw: modular.dataset(**kw), dict(x=TEMPLATE), dict(x=arrays((7,)))),
    Case("modular.initial_theta", lambda **kw: modular.initial_theta(**kw), dict(p=7, H=2, alpha=1e-3),
         dict(p=counts(), H=counts(), alpha=numbers(), seed=integers())),
    Case("modular.fourier_utility", lambda **kw: modular.fourier_utility(**kw),
         dict(theta=np.ones((2, 21)), x=TEMPLATE), dict(theta=arrays((2, 21)), x=arrays((7,)), learned=objects())),
    Case("modular.max_utility", lambda **kw: modular.max_utility(**kw), dict(x=TEMPLATE),
         dict(x=arrays((7,)), learned=objects((1,), (1, 2)))),
    Case("modular.utility_maximizer", lambda **kw: modular.utility_maximizer(**kw), dict(x=TEMPLATE),
         dict(x=arrays((7,)), xi=integers(), s_u=numbers(), s_v=numbers())),
    Case("modular.harmonic_neurons", lambda **kw: modular.harmonic_neurons(**kw), dict(x=TEMPLATE, xi=1),
         dict(x=arrays((7,)), xi=integers(), N=counts())),
    Case("modular.levels", lambda **kw: modular.levels(**kw), dict(x=TEMPLATE), dict(x=arrays((7,)))),
    Case("modular.agf_staircase", lambda **kw: modular.agf_staircase(**kw), dict(x=TEMPLATE, initial_norm=1e-3),
         dict(x=arrays((7,)), initial_norm=st.one_of(numbers(), arrays((2,))), eta=numbers(), adaptive_rate=flags())),
    Case("modular.limit_staircase", lambda **kw: modular.limit_staircase(**kw), dict(x=TEMPLATE),
         dict(x=arrays((7,)), eta=numbers(), adaptive_rate=flags())),
    Case("modular.output_power", lambda **kw: modular.output_power(**kw),
         dict(network=QUADRATIC, theta=np.ones((2, 21)), X=X_MODULAR),
         dict(network=objects(), theta=arrays((2, 21)), X=arrays((49, 14)))),
    # linear attention
    Case("attention.population_moments", lambda **kw: attention.population_moments(**kw), dict(Sigma=SIGMA, N=3),
         dict(Sigma=arrays((2, 2)), N=counts())),
    Case("attention.population_data", lambda **kw: attention.population_data(**kw), dict(Sigma=SIGMA, N=3),
         dict(Sigma=arrays((2, 2)), N=counts())),
    Case("attention.population_loss", lambda **kw: attention.population_loss(**kw),
         dict(M=np.zeros((2, 2)), Sigma=SIGMA, N=3), dict(M=arrays((2, 2)), Sigma=arrays((2, 2)), N=counts())),
    Case("attention.optimal_map", lambda **kw: attention.optimal_map(**kw), dict(Sigma=SIGMA, N=3),
         dict(Sigma=arrays((2, 2)), N=counts())),
    Case("attention.sample_prompts", lambda **kw: attention.sample_prompts(**kw),
         dict(Sigma=SIGMA, N=3, num_prompts=5), dict(Sigma=arrays((2, 2)), N=counts(), num_prompts=counts(),
                                                      seed=integers())),
    Case("attention.agf_staircase", lambda **kw: attention.agf_staircase(**kw),
         dict(Sigma=SIGMA, N=3, initial_norm=1e-3),
         dict(Sigma=arrays((2, 2)), N=counts(), initial_norm=st.one_of(numbers(), arrays((2,))), eta=numbers(),
              adaptive_rate=flags())),
    Case("attention.initial_theta", lambda **kw: attention.initial_theta(**kw), dict(d=2, H=3, alpha=1e-3),
         dict(d=counts(), H=counts(), alpha=numbers(), seed=integers())),
    # escape times
    Case("escape.threshold", lambda **kw: escape.threshold(**kw), dict(initial_norm=1e-3, kappa=3),
         dict(initial_norm=numbers(), kappa=counts(), adaptive_rate=flags()), aliases=dict(kappa=("κ",))),
    Case("escape.escape_times", lambda **kw: escape.escape_times(**kw),
         dict(utility=[1.0, 0.5], kappa=2, initial_norm=1e-3),
         dict(utility=arrays((2,)), kappa=counts(), initial_norm=numbers(), eta=numbers(), adaptive_rate=flags()),
         aliases=dict(kappa=("κ",))),            # kappa and initial_norm together overflow float64's range
    Case("escape.jump_times", lambda **kw: escape.jump_times(**kw),
         dict(utility=[1.0, 0.5], kappa=2, initial_norm=[1e-3, 1e-2]),
         dict(utility=arrays((2,)), kappa=counts(), initial_norm=arrays((2,)), eta=numbers(), adaptive_rate=flags()),
         aliases=dict(utility=("initial_norm",), kappa=("κ",))),   # fewer utilities than the norms given
    # ReLU networks
    Case("relu.xor_staircase", lambda **kw: relu.xor_staircase(**kw), dict(magnitudes=[1.0, 2.0, 3.0, 4.0]),
         dict(magnitudes=arrays((4,)))),
    Case("relu.orthogonal_staircase", lambda **kw: relu.orthogonal_staircase(**kw), dict(targets=[1.0, -2.0, -3.0, 0.5]),
         dict(targets=arrays((4,)))),
    # results
    Case("Trajectory", lambda **kw: Trajectory(**kw), dict(times=[0.0, 1.0], losses=[1.0, 0.5]),
         dict(times=arrays((2,)), losses=arrays((2,)), params=arrays((2, 1, 2)), log_norms=arrays((2, 1)),
              time_unit=objects("t", LOG_TIME), evaluations=counts())),
    Case("Staircase", lambda **kw: Staircase(**kw), dict(times=[0.0, 1.0], losses=[1.0, 0.5], order=[0]),
         dict(times=arrays((2,)), losses=arrays((2,)), order=objects([0]), states=objects([1, 2]),
              active=objects([(), (0,)]), time_unit=objects("t"))),
    Case("Staircase.level_at", lambda **kw: STAIRCASE.level_at(**kw), dict(t=1.5),
         dict(t=st.one_of(numbers(), arrays((3,))))),
    Case("Staircase.steps", lambda **kw: STAIRCASE.steps(**kw), dict(t_end=3.0), dict(t_end=numbers())),
    Case("Staircase.compare", lambda **kw: STAIRCASE.compare(**kw), dict(trajectory=TRAJECTORY),
         dict(trajectory=objects(STAIRCASE))),
    Case("Staircase.in_units", lambda **kw: STAIRCASE.in_units(**kw), dict(unit=LOG_TIME, alpha=1e-3),
         dict(unit=objects("t·α", "t/log(1/α)"), alpha=numbers())),
    Case("Staircase.rescale_time", lambda **kw: STAIRCASE.rescale_time(**kw), dict(factor=2.0),
         dict(factor=numbers(), unit=objects("s"))),
    Case("Trajectory.loss_at", lambda **kw: TRAJECTORY.loss_at(**kw), dict(t=1.5),
         dict(t=st.one_of(numbers(), arrays((3,))))),
    Case("TimeUnit.factor", lambda **kw: LOG_TIME.factor(**kw), dict(alpha=1e-3), dict(alpha=numbers())),
    Case("GF_TIME.factor", lambda **kw: GF_TIME.factor(**kw), dict(alpha=1e-3), dict(alpha=numbers())),
    Case("TimeUnit.alpha_power", lambda **kw: TimeUnit.alpha_power(**kw), dict(power=1), dict(power=counts())),
    # plotting helpers
    Case("plotting.figure", lambda **kw: plotting.figure(**kw), dict(),
         dict(nrows=counts(), ncols=counts(), width=numbers(), panel_height=numbers())),
    Case("plotting.alpha_colors", lambda **kw: plotting.alpha_colors(**kw), dict(alphas=[1e-3, 1e-6]),
         dict(alphas=arrays((2,)), cmap=names())),
    Case("plotting.plot_losses", lambda **kw: plotting.plot_losses(**kw), dict(trajectories=[TRAJECTORY, TRAJECTORY]),
         dict(trajectories=objects([TRAJECTORY]), labels=objects(["a"], ["a", "b"]), colors=objects(["r"]),
              staircase=objects(STAIRCASE), logy=flags(), t_end=numbers())),
    Case("plotting.plot_staircase", lambda **kw: plotting.plot_staircase(**kw),
         dict(ax=None, staircase=STAIRCASE), dict(staircase=objects(TRAJECTORY), t_end=numbers())),
    Case("plotting.mark_jumps", lambda **kw: plotting.mark_jumps(**kw), dict(ax=None, times=[1.0, 2.0]),
         dict(times=st.one_of(numbers(), arrays((2,))))),
    # validation
    Case("validation.check_positive", lambda **kw: validation.check_positive(name="value", **kw), dict(value=1.0),
         dict(value=numbers())),
    Case("validation.check_real", lambda **kw: validation.check_real(name="value", **kw), dict(value=1.0),
         dict(value=numbers())),
    Case("validation.check_fraction", lambda **kw: validation.check_fraction(name="value", **kw), dict(value=0.5),
         dict(value=numbers())),
    Case("validation.check_int", lambda **kw: validation.check_int(name="value", **kw), dict(value=1),
         dict(value=counts())),
    Case("validation.check_bool", lambda **kw: validation.check_bool(name="value", **kw), dict(value=True),
         dict(value=flags())),
    Case("validation.real_array", lambda **kw: validation.real_array(name="value", **kw), dict(value=[1.0]),
         dict(value=arrays((2,)))),
    Case("validation.check_max_jumps", lambda **kw: validation.check_max_jumps(**kw), dict(max_jumps=1),
         dict(max_jumps=counts())),
    Case("validation.check_num_samples", lambda **kw: validation.check_num_samples(**kw), dict(num_samples=2),
         dict(num_samples=counts())),
]

AXES_CASES = {"plotting.plot_staircase", "plotting.mark_jumps"}      # their valid ax is made per call
PARAMETERS = [(case, argument) for case in CASES for argument in case.spoil]


def test_every_valid_call_returns_a_finite_answer():
    """The baseline of the sweep: unspoilt, every call is valid (so an error in the sweep is the spoilt argument's)."""
    for case in CASES:
        valid = dict(case.valid, ax=_figure_axes()) if case.name in AXES_CASES else case.valid
        with time_limit(CALL_SECONDS):
            result = case.function(**valid)
        assert all_finite(result), case.name
        plt.close("all")


@pytest.mark.parametrize("case, argument", PARAMETERS, ids=[f"{case.name}-{argument}" for case, argument in PARAMETERS])
@SWEEP
@given(data=st.data())
def test_a_bad_argument_gets_an_error_naming_it_or_a_finite_answer(case, argument, data):
    value = data.draw(case.spoil[argument], label=argument)
    aliases = (case.aliases or {}).get(argument, ())

    def call(value):
        valid = dict(case.valid, ax=_figure_axes()) if case.name in AXES_CASES else case.valid
        return case.function(**{**valid, argument: value})

    check_call(call, argument, value, aliases, case.failures)
