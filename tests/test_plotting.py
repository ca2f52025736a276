"""Specifications of agf_lib.plotting: the book's figure standard and its plotting helpers."""

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib as mpl  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from agf_lib import plotting  # noqa: E402
from agf_lib.results import Staircase, Trajectory  # noqa: E402

# The text column of the built book, measured in Chromium: 672 px at a 1280 px window, 342 px at 390 px.
COLUMN_PX_AT_1280 = 672
COLUMN_PX_AT_390 = 342


@pytest.fixture(autouse=True)
def book_style():
    with mpl.rc_context():
        plotting.use_style()
        yield
    plt.close("all")


def labelled_figure(nrows=1):
    fig, axes = plotting.figure(nrows=nrows, squeeze=False)
    for ax in axes.flat:
        ax.plot([0, 1], [1, 0], label="gradient flow")
        ax.plot([0, 1], [0.5, 0.5], label="AGF")
        ax.set_xlabel("t")
        ax.set_ylabel("loss")
    return fig, axes.ravel()


def overlap(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_style_text_is_at_least_12_px_on_a_desktop_and_8_px_on_a_phone():
    sizes = [mpl.rcParams[key] for key in plotting.STYLE if key.endswith("size") and "fig" not in key.split(".")[1]]
    smallest_pt = min(mpl.font_manager.FontProperties(size=size).get_size_in_points() for size in sizes)
    assert smallest_pt == plotting.MIN_FONT_PT
    natural_px = plotting.COLUMN_WIDTH_IN * plotting.DPI
    for column_px, at_least in ((min(COLUMN_PX_AT_1280, plotting.MAX_SHOWN_PX), 12.0), (COLUMN_PX_AT_390, 8.0)):
        shown_px = smallest_pt / 72 * plotting.DPI * column_px / natural_px
        assert shown_px >= at_least


def test_figure_is_column_wide_at_the_book_dpi_with_one_row_of_panels_per_panel_height():
    fig, axes = plotting.figure(nrows=3, sharex=True)
    assert isinstance(fig, plotting.BookFigure)
    assert fig.get_size_inches() == pytest.approx((plotting.COLUMN_WIDTH_IN, 3 * plotting.PANEL_HEIGHT_IN))
    assert fig.dpi == plotting.DPI
    assert axes.shape == (3,)
    assert fig.get_layout_engine() is not None


def test_figure_accepts_two_columns_and_a_narrower_width():
    fig, axes = plotting.figure(2, 2, width=5.0, panel_height=2.0)
    assert axes.shape == (2, 2)
    assert fig.get_size_inches() == pytest.approx((5.0, 4.0))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ncols": 3}, "stack them in rows"),
        ({"nrows": 0}, "nrows must be a positive integer"),
        ({"nrows": True}, "nrows must be a positive integer"),
        ({"ncols": 1.5}, "ncols must be a positive integer"),
        ({"width": 9.0}, "at most the column width"),
        ({"width": -1.0}, "width must be a positive number"),
        ({"panel_height": float("nan")}, "panel_height must be a positive number"),
    ],
)
def test_figure_rejects_layouts_that_would_not_read_in_the_column(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plotting.figure(**kwargs)


def test_smallest_font_counts_every_visible_text():
    fig, (ax,) = labelled_figure()
    assert plotting.smallest_font_pt(fig) == plotting.MIN_FONT_PT
    ax.annotate("tiny", (0.5, 0.5), fontsize=5)
    assert plotting.smallest_font_pt(fig) == 5
    ax.texts[-1].set_visible(False)
    assert plotting.smallest_font_pt(fig) == plotting.MIN_FONT_PT


def test_smallest_font_rejects_a_figure_without_text_and_a_non_figure():
    fig = plt.figure()
    with pytest.raises(ValueError, match="no visible text"):
        plotting.smallest_font_pt(fig)
    with pytest.raises(TypeError, match="Figure"):
        plotting.smallest_font_pt("not a figure")


def test_png_carries_dpi_and_smallest_font_and_stays_within_the_column():
    fig, (ax,) = labelled_figure()
    plotting.legend_outside(ax)
    ax.annotate("note", (0.2, 0.2), fontsize=plotting.MIN_FONT_PT + 0.5)
    with Image.open(io.BytesIO(plotting.png_bytes(fig))) as png:
        info, width = dict(png.info), png.width
    assert float(info[plotting.MIN_FONT_KEY]) == plotting.MIN_FONT_PT
    assert info["dpi"][0] == pytest.approx(plotting.DPI, rel=1e-3)
    assert width <= plotting.COLUMN_WIDTH_IN * plotting.DPI + 2


def test_use_style_makes_a_notebook_display_book_figures_with_the_metadata():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        plotting.use_style()
        fig, _ = labelled_figure()
        data, _ = shell.display_formatter.format(fig)
        with Image.open(io.BytesIO(data["image/png"])) as png:
            assert float(png.info[plotting.MIN_FONT_KEY]) == plotting.MIN_FONT_PT
    finally:
        InteractiveShell.clear_instance()


def test_use_style_shares_parsed_math_text_between_figures_and_renders_it_unchanged(monkeypatch):
    """Each renderer has its own math-text parser; with the style applied they share one cache, so a label
    that a second figure repeats is parsed once, and the figure's pixels are those of matplotlib's own
    per-parser cache."""
    from matplotlib.mathtext import MathTextParser

    def draw():
        fig, ax = plotting.figure()
        ax.semilogy([1, 2], [1e-3, 1e-1])
        ax.set_xlabel(r"$t/\log(1/\alpha)$ and $\sum_i \|\theta_i\|^2$")
        pixels = np.asarray(Image.open(io.BytesIO(plotting.png_bytes(fig))))
        plt.close(fig)
        return pixels

    plotting.use_style()
    first, second = MathTextParser("path"), MathTextParser("path")
    prop = matplotlib.font_manager.FontProperties(size=9)
    assert first.parse(r"$\alpha^2$", 200, prop) is second.parse(r"$\alpha^2$", 200, prop)
    assert first.parse(r"$\alpha^2$", 200, prop) is not MathTextParser("agg").parse(r"$\alpha^2$", 200, prop)
    shared = draw()
    monkeypatch.setattr(MathTextParser, "_parse_cached", MathTextParser._unshared_parse_cached)
    assert first.parse(r"$\alpha^2$", 200, prop) is not second.parse(r"$\alpha^2$", 200, prop)
    np.testing.assert_array_equal(draw(), shared)


@pytest.mark.parametrize("where", ["right", "below"])
def test_legend_outside_covers_no_axes(where):
    fig, (ax,) = labelled_figure()
    legend = plotting.legend_outside(ax, where=where)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert not overlap(legend.get_window_extent(renderer), ax.get_window_extent(renderer))
    assert [text.get_text() for text in legend.get_texts()] == ["gradient flow", "AGF"]


@pytest.mark.parametrize("where", ["right", "below"])
def test_figure_legend_outside_lists_each_label_once_and_covers_no_panel(where):
    fig, axes = labelled_figure(nrows=2)
    legend = plotting.legend_outside(fig, where=where)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert [text.get_text() for text in legend.get_texts()] == ["gradient flow", "AGF"]
    for ax in axes.flat:
        assert not overlap(legend.get_window_extent(renderer), ax.get_window_extent(renderer))


def test_legend_outside_rejects_bad_arguments():
    fig, (ax,) = labelled_figure()
    with pytest.raises(ValueError, match="where"):
        plotting.legend_outside(ax, where="inside")
    with pytest.raises(TypeError, match="Axes or Figure"):
        plotting.legend_outside("axes")
    _, bare = plotting.figure()
    with pytest.raises(ValueError, match="no artist has a label"):
        plotting.legend_outside(bare)


def test_alpha_colors_are_darker_for_smaller_alpha():
    colors = plotting.alpha_colors([1e-2, 1e-6, 1e-12])
    luminance = [0.2126 * r + 0.7152 * g + 0.0722 * b for r, g, b, _ in colors]
    assert len(colors) == 3
    assert luminance[0] > luminance[1] > luminance[2]
    assert len(plotting.alpha_colors([1e-3])) == 1


def staircase(unit="t"):
    return Staircase(times=np.array([0.0, 1.0, 2.5]), losses=np.array([1.0, 0.4, 0.1]), order=[0, 1], time_unit=unit)


def trajectory(unit="t"):
    times = np.linspace(0.0, 3.0, 31)
    return Trajectory(times=times, losses=np.exp(-times), time_unit=unit)


def test_plot_staircase_draws_the_levels_and_rejects_other_types():
    _, ax = plotting.figure()
    (line,) = plotting.plot_staircase(ax, staircase(), t_end=3.0)
    assert set(np.round(line.get_ydata(), 12)) == {1.0, 0.4, 0.1}
    with pytest.raises(TypeError, match="Staircase"):
        plotting.plot_staircase(ax, [0, 1])


def test_mark_jumps_draws_one_line_per_time():
    _, ax = plotting.figure()
    plotting.mark_jumps(ax, [1.0, 2.5])
    assert len(ax.lines) == 2


def test_plot_losses_makes_a_book_figure_with_log_axis_and_outside_legend():
    ax = plotting.plot_losses([trajectory()], labels=["GF"], staircase=staircase())
    assert isinstance(ax.figure, plotting.BookFigure)
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "t"
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    assert not overlap(ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer))


def test_plot_losses_rejects_mixed_time_units_and_non_trajectories():
    with pytest.raises(ValueError, match="different time units"):
        plotting.plot_losses([trajectory("t")], staircase=staircase("t / log(1/α)"))
    with pytest.raises(TypeError, match="Trajectory"):
        plotting.plot_losses([np.zeros(3)])


def test_every_heatmap_gets_a_labelled_colorbar():
    fig, ax = plotting.figure()
    image = ax.imshow(np.arange(12.0).reshape(3, 4))
    bar = plotting.colorbar(image, ax, label="power share")
    assert bar.ax.get_ylabel() == "power share"
    below = plotting.colorbar(image, ax, label="phase", where="below")
    assert below.orientation == "horizontal" and below.ax.get_xlabel() == "phase"
    with pytest.raises(ValueError, match="label"):
        plotting.colorbar(image, ax, label=" ")
    with pytest.raises(ValueError, match="where"):
        plotting.colorbar(image, ax, label="x", where="left")
    with pytest.raises(TypeError, match="ax"):
        plotting.colorbar(image, fig, label="x")


def test_a_legend_below_an_axes_leaves_its_x_label_uncovered():
    fig, (ax,) = labelled_figure()
    legend = plotting.legend_outside(ax)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    assert not overlap(legend.get_window_extent(renderer), ax.xaxis.label.get_window_extent(renderer))
    assert legend.get_window_extent(renderer).y1 <= ax.xaxis.label.get_window_extent(renderer).y0 + 1


def test_a_legend_below_an_axes_whose_shared_x_axis_shows_nothing_sits_right_under_it():
    fig, (top, bottom) = plotting.figure(nrows=2, sharex=True)
    for ax in (top, bottom):
        ax.plot([0, 1], [1, 0], label="gradient flow")
    bottom.set_xlabel("t")
    legend = plotting.legend_outside(top)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    assert legend.get_window_extent(renderer).y1 <= top.get_window_extent(renderer).y0


def test_importing_agf_lib_does_not_load_pyplot():
    """agf_lib.plotting is imported on first use: the engines and joblib's workers do not pay for pyplot."""
    import subprocess
    import sys
    code = "import sys, agf_lib; print('matplotlib.pyplot' in sys.modules, agf_lib.plotting.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "agf_lib.plotting"]
