"""Specifications of the result types `Trajectory` and `Staircase` on synthetic data with known answers."""

import math

import numpy as np
import pytest

from agf_lib import Staircase, StaircaseComparison, Trajectory
from agf_lib.results import GF_TIME, LOG_TIME, TimeUnit

JUMP_TIMES = np.array([0.0, 2.0, 5.0, 9.0])
LEVELS = np.array([1.0, 0.5, 0.1, 0.02])
DROP_WIDTH = 0.02  # each drop is a logistic of this width, negligible (e^{-100}) one time unit away
SPACING = 0.013  # sample spacing, not commensurate with the jump times


@pytest.fixture
def staircase():
    return Staircase(JUMP_TIMES, LEVELS, order=[3, 0, 1], states=[None] * 4, active=[(), (3,), (0, 3), (0, 1, 3)])


def smoothed_staircase(times, shift=0.0):
    """A loss that drops from LEVELS[k−1] to LEVELS[k] as a logistic centred at JUMP_TIMES[k] + shift: it crosses
    the midpoint of the two levels exactly there."""
    loss = np.full_like(times, LEVELS[-1])
    for k in range(1, len(JUMP_TIMES)):
        loss += (LEVELS[k - 1] - LEVELS[k]) / (1.0 + np.exp((times - JUMP_TIMES[k] - shift) / DROP_WIDTH))
    return loss


def test_level_at_holds_each_level_on_its_half_open_interval(staircase):
    assert staircase.level_at(0.0) == 1.0
    assert staircase.level_at(1.999) == 1.0
    assert staircase.level_at(2.0) == 0.5
    assert staircase.level_at(8.99) == 0.1
    assert staircase.level_at(1e9) == 0.02
    np.testing.assert_array_equal(staircase.level_at([0.5, 2.5, 5.0, 100.0]), [1.0, 0.5, 0.1, 0.02])
    assert staircase.num_jumps == 3


def test_rescale_time_multiplies_jump_times_and_renames_the_unit(staircase):
    rescaled = staircase.rescale_time(0.25, unit="t / 4")
    np.testing.assert_array_equal(rescaled.times, JUMP_TIMES * 0.25)
    np.testing.assert_array_equal(rescaled.losses, LEVELS)
    assert str(rescaled.time_unit) == "t / 4" and rescaled.order == staircase.order
    assert str(staircase.time_unit) == "t" and staircase.times[1] == 2.0  # the original is untouched
    assert str(staircase.rescale_time(2.0).time_unit) == "2·t"
    trajectory = Trajectory(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.7, 0.6]))
    np.testing.assert_array_equal(trajectory.rescale_time(3.0, unit="3t").times, [0.0, 3.0, 9.0])
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="^factor must be a finite positive number"):
            staircase.rescale_time(bad)
        with pytest.raises(ValueError, match="^factor must be a finite positive number"):
            trajectory.rescale_time(bad)


def test_in_units_log_time_divides_by_log_one_over_alpha_and_converts_back(staircase):
    alpha = 1e-100  # log(1/α) = 100 log 10: no overflow, no underflow
    rescaled = staircase.in_units(LOG_TIME, alpha)
    np.testing.assert_allclose(rescaled.times, JUMP_TIMES / (100.0 * math.log(10.0)), rtol=1e-15, atol=0)
    assert rescaled.time_unit == LOG_TIME and str(rescaled.time_unit) == "t/log(1/α)"
    np.testing.assert_allclose(rescaled.in_units(GF_TIME, alpha).times, JUMP_TIMES, rtol=1e-15, atol=0)
    assert staircase.time_unit == GF_TIME
    np.testing.assert_array_equal(staircase.in_units(GF_TIME, 0.3).times, JUMP_TIMES)


def test_in_units_alpha_power_multiplies_by_the_power_of_alpha():
    trajectory = Trajectory(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.7, 0.6]))
    cubic = TimeUnit.alpha_power(1)
    assert str(cubic) == "t·α" and str(TimeUnit.alpha_power(2)) == "t·α^2"
    np.testing.assert_allclose(trajectory.in_units(cubic, 0.01).times, [0.0, 0.01, 0.03], rtol=1e-15, atol=0)
    # from one rescaled unit to another: t·α = (t/log(1/α))·α·log(1/α)
    np.testing.assert_allclose(trajectory.in_units(LOG_TIME, 0.01).in_units(cubic, 0.01).times,
                               [0.0, 0.01, 0.03], rtol=1e-15, atol=0)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="^power must be a positive integer"):
            TimeUnit.alpha_power(bad)


def test_standard_labels_parse_to_the_standard_units_spaces_ignored(staircase):
    assert TimeUnit.parse("t / log(1/α)") == LOG_TIME == TimeUnit.parse("t/log(1/α)")
    assert TimeUnit.parse("t") == GF_TIME and TimeUnit.parse("t · α^3") == TimeUnit.alpha_power(3)
    times = np.arange(0.0, 10.0, SPACING)
    labelled = Trajectory(times, smoothed_staircase(times), time_unit="t / log(1/α)")
    assert labelled.time_unit == LOG_TIME
    comparison = staircase.in_units(LOG_TIME, math.exp(-1.0)).compare(labelled)  # log(1/α) = 1
    np.testing.assert_allclose(comparison.trajectory_jump_times, JUMP_TIMES[1:], rtol=0, atol=SPACING)


def test_in_units_refuses_hand_made_units_and_alpha_outside_zero_one(staircase):
    with pytest.raises(ValueError, match="set by hand and cannot be converted"):
        staircase.rescale_time(2.0).in_units(GF_TIME, 0.1)
    for alpha in (1.0, 2.0, 0.0, -0.5):
        with pytest.raises(ValueError, match=r"^alpha must lie in \(0, 1\)"):
            staircase.in_units(LOG_TIME, alpha)
    with pytest.raises(TypeError, match="^alpha must be a real number"):
        staircase.in_units(LOG_TIME, "0.1")
    with pytest.raises(TypeError, match="^unit must be a TimeUnit or a str"):      # in_units' argument is unit
        staircase.in_units(3, 0.1)


def test_steps_trace_the_staircase_up_to_t_end(staircase):
    t, loss = staircase.steps()
    np.testing.assert_array_equal(t, [0.0, 2.0, 5.0, 9.0, 11.25])  # default: a quarter past the last jump
    np.testing.assert_array_equal(loss, [1.0, 0.5, 0.1, 0.02, 0.02])
    t, loss = staircase.steps(t_end=3.0)
    np.testing.assert_array_equal(t, [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(loss, [1.0, 0.5, 0.5])
    t, loss = staircase.steps(t_end=1e-9)  # before the first jump: the initial level alone
    np.testing.assert_array_equal(t, [0.0, 1e-9])
    np.testing.assert_array_equal(loss, [1.0, 1.0])


@pytest.mark.parametrize("t_end", [0.0, -1.0, np.nan, np.inf])
def test_steps_refuse_a_t_end_that_is_not_a_positive_time(staircase, t_end):
    with pytest.raises(ValueError, match="^t_end must be a finite positive time"):
        staircase.steps(t_end)


@pytest.mark.parametrize("t_end", ["abc", [1.0], True])
def test_steps_refuse_a_t_end_that_is_not_a_number(staircase, t_end):
    with pytest.raises(TypeError, match="^t_end must be a real number"):
        staircase.steps(t_end)
    t, loss = Staircase([0.0], [0.3], order=[]).steps()
    np.testing.assert_array_equal(t, [0.0, 1.0])
    np.testing.assert_array_equal(loss, [0.3, 0.3])


def test_compare_finds_the_midpoint_crossings_and_plateau_losses(staircase):
    times = np.arange(0.0, 12.0, SPACING)
    comparison = staircase.compare(Trajectory(times, smoothed_staircase(times)))
    assert isinstance(comparison, StaircaseComparison)
    np.testing.assert_array_equal(comparison.jump_times, JUMP_TIMES[1:])
    np.testing.assert_allclose(comparison.trajectory_jump_times, JUMP_TIMES[1:], rtol=0, atol=SPACING)
    assert np.all(comparison.time_errors <= SPACING / JUMP_TIMES[1:])
    np.testing.assert_allclose(comparison.plateau_losses, LEVELS, rtol=1e-12)
    assert np.all(comparison.level_errors < 1e-12)
    assert "jump" in str(comparison) and "level" in str(comparison)


def test_compare_measures_a_delayed_trajectory(staircase):
    times = np.arange(0.0, 12.0, SPACING)
    comparison = staircase.compare(Trajectory(times, smoothed_staircase(times, shift=0.3)))
    np.testing.assert_allclose(comparison.trajectory_jump_times, JUMP_TIMES[1:] + 0.3, rtol=0, atol=SPACING)
    assert np.all(np.abs(comparison.time_errors - 0.3 / JUMP_TIMES[1:]) <= SPACING / JUMP_TIMES[1:])


def test_compare_reports_an_unreached_drop_as_infinite_error(staircase):
    times = np.arange(0.0, 7.0, SPACING)  # ends before the third drop
    comparison = staircase.compare(Trajectory(times, smoothed_staircase(times)))
    np.testing.assert_allclose(comparison.trajectory_jump_times[:2], JUMP_TIMES[1:3], rtol=0, atol=SPACING)
    assert comparison.trajectory_jump_times[2] == np.inf and comparison.time_errors[2] == np.inf
    assert np.isnan(comparison.plateau_losses[3]) and comparison.level_errors[3] == np.inf
    # the last plateau reached is read at the trajectory's final time
    np.testing.assert_allclose(comparison.plateau_losses[2], LEVELS[2], rtol=1e-12)


def test_compare_measures_a_zero_final_level_in_absolute_terms():
    staircase = Staircase([0.0, 1.0], [2.0, 0.0], order=[0])
    times = np.linspace(0.0, 3.0, 301)
    loss = 2.0 / (1.0 + np.exp((times - 1.0) / DROP_WIDTH)) + 1e-13
    comparison = staircase.compare(Trajectory(times, loss))
    np.testing.assert_allclose(comparison.level_errors[1], 1e-13 / (1e-12 * 2.0), rtol=1e-6)


def test_compare_refuses_different_time_units_and_non_trajectories(staircase):
    times = np.linspace(0.0, 10.0, 50)
    trajectory = Trajectory(times, smoothed_staircase(times))
    with pytest.raises(ValueError, match="time units differ"):
        staircase.in_units(LOG_TIME, math.exp(-2.0)).compare(trajectory)
    with pytest.raises(TypeError, match="trajectory must be a Trajectory"):
        staircase.compare((times, smoothed_staircase(times)))


def test_trajectory_loss_at_interpolates_linearly():
    trajectory = Trajectory(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.5, 0.1]))
    np.testing.assert_allclose(trajectory.loss_at([0.5, 2.0, 3.0]), [0.75, 0.3, 0.1], rtol=1e-15)
    assert trajectory.params is None and trajectory.log_norms is None and str(trajectory.time_unit) == "t"


@pytest.mark.parametrize("times, losses, order, message", [
    ([0.0, 2.0, 1.0], [1.0, 0.5, 0.2], [0, 1], "^times must start at 0 and be non-decreasing"),
    ([0.5, 1.0], [1.0, 0.5], [0], "^times must start at 0"),
    ([], [], [], "^times must start at 0"),
    ([0.0, 1.0], [1.0, 0.5, 0.2], [0], r"^times and losses must be 1-D of equal length, got \(2,\) and \(3,\)"),
    ([[0.0, 1.0]], [[1.0, 0.5]], [0], "^times and losses must be 1-D"),
    ([0.0, 1.0, 2.0], [1.0, 0.5, 0.2], [0], r"^order must have one entry per jump \(2\), got 1"),
    ([0.0, 1.0], [1.0, 0.5], [0, 1], r"^order must have one entry per jump \(1\), got 2"),
])
def test_staircase_rejects_inconsistent_inputs(times, losses, order, message):
    with pytest.raises(ValueError, match=message):
        Staircase(times, losses, order)


def test_staircase_stores_float_arrays():
    staircase = Staircase([0, 1, 3], [4, 2, 1], order=["a", "b"])
    assert staircase.times.dtype == np.float64 and staircase.losses.dtype == np.float64
    assert staircase.deactivated == [] and staircase.states is None


@pytest.mark.parametrize("times, losses, message", [
    ([0.0, 2.0, 1.0], [1.0, 0.5, 0.2], r"^times must be finite and sorted \(non-decreasing\)"),
    ([0.0, np.nan, 1.0], [1.0, 0.5, 0.2], "^times must be finite and sorted"),
    ([], [], r"^times must be a non-empty 1-D array, got shape \(0,\)"),
    ([[0.0, 1.0]], [[1.0, 0.5]], r"^times must be a non-empty 1-D array, got shape \(1, 2\)"),
    ([0.0, 1.0], [1.0, 0.5, 0.2], r"^losses must have the shape of times \(2,\), got \(3,\)"),
    ([0.0, 1.0], [1.0, np.nan], "^losses contains NaN or infinite values"),
])
def test_trajectory_rejects_unsorted_times_and_mismatched_losses(times, losses, message):
    """Unsorted times would make ``loss_at`` and ``compare`` interpolate wrongly without a word."""
    with pytest.raises(ValueError, match=message):
        Trajectory(np.array(times), np.array(losses))


def test_trajectory_checks_the_shapes_of_params_and_log_norms():
    times, losses = np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.5, 0.2])
    with pytest.raises(ValueError, match=r"^params must have shape \(T, H, P\) with T = 3 samples, got \(2, 4, 2\)"):
        Trajectory(times, losses, params=np.zeros((2, 4, 2)))
    with pytest.raises(ValueError, match=r"^params must have shape \(T, H, P\)"):
        Trajectory(times, losses, params=np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"^log_norms must have shape \(T, H\) = \(3, 4\), got \(3, 5\)"):
        Trajectory(times, losses, params=np.zeros((3, 4, 2)), log_norms=np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"^log_norms must have shape \(T, H\) = \(3, H\), got \(2, 4\)"):
        Trajectory(times, losses, log_norms=np.zeros((2, 4)))
    trajectory = Trajectory(times.tolist(), losses.tolist(), params=np.zeros((3, 4, 2)).tolist(),
                            log_norms=np.zeros((3, 4)))
    assert trajectory.times.dtype == np.float64 and trajectory.params.shape == (3, 4, 2)


def test_dormant_norms_are_the_largest_norm_outside_each_active_set(staircase):
    states = [np.array([[3.0, 4.0], [0.0, 0.1], [0.2, 0.0]]), np.array([[3.0, 4.0], [0.0, 1.0], [0.0, 0.3]])]
    engine = Staircase([0.0, 1.0], [1.0, 0.5], order=[0], states=states, active=[(), (0,)])
    np.testing.assert_array_equal(engine.dormant_norms(), [5.0, 1.0])
    with pytest.raises(ValueError, match="^dormant_norms needs a staircase of the AGF engine"):
        staircase.dormant_norms()
