"""One figure standard for the whole book, and the plots every chapter draws.

The standard, in numbers. A column-wide figure is laid out ``COLUMN_WIDTH_IN`` = 5 in wide and saved
at ``DPI`` = 200. The page shows it at most ``MAX_SHOWN_PX`` = 560 CSS px wide (``_static/outputs.css``)
and, on a phone, as wide as the text (about 342 px at a 390 px screen). Text of ``MIN_FONT_PT`` = 9 pt
is then 9 / 72 × 560 / 5 ≈ 14 px tall on a desktop and 9 / 72 × 342 / 5 ≈ 8.6 px on a phone;
``tests/test_book.py`` measures every image of the built book in Chromium at both widths and fails
below 8 px. Legends go below the panels by default, where they take no width from the data.

How a chapter draws a figure::

    from agf_lib import plotting
    plotting.use_style()                      # once, in the imports cell
    fig, ax = plotting.figure()               # one panel, column wide
    fig, axes = plotting.figure(nrows=2)      # two panels stacked: each stays column wide on a phone
    ...
    plotting.legend_outside(ax)               # legend below the data, never on top of it
    plotting.colorbar(image, ax, label="...") # every heatmap says what its colors measure

Figures made by :func:`figure` are :class:`BookFigure` objects. Once :func:`use_style` has run in a
notebook, they are displayed as PNG at ``DPI``, with the smallest font size of their text written into
the PNG's metadata (key ``MIN_FONT_KEY``), which the book test reads back.
"""

from __future__ import annotations

import io
import numbers
import struct
import zlib

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.text import Text

from .results import Staircase, Trajectory
from .validation import check_bool, check_positive, real_array

__all__ = [
    "COLUMN_WIDTH_IN",
    "DPI",
    "MIN_FONT_PT",
    "MIN_FONT_KEY",
    "STYLE",
    "BookFigure",
    "use_style",
    "figure",
    "legend_outside",
    "smallest_font_pt",
    "png_bytes",
    "alpha_colors",
    "alpha_label",
    "colorbar",
    "plot_staircase",
    "plot_losses",
    "mark_jumps",
]

COLUMN_WIDTH_IN = 5.0
"""Width of a column-wide figure in inches (shown at most ``MAX_SHOWN_PX`` wide, the text's width on a phone)."""

MAX_SHOWN_PX = 560
"""The widest a figure is shown on the page, in CSS px (``_static/outputs.css``)."""

DPI = 200
"""Pixels per inch of saved figures: sharp at ``MAX_SHOWN_PX`` on high-density screens."""

MIN_FONT_PT = 9.0
"""The smallest font size in the style (tick labels, legends): about 14 CSS px on a desktop, 8.6 on a phone."""

MIN_FONT_KEY = "agf-min-font-pt"
"""PNG text key under which a figure's smallest font size (pt) is stored."""

PANEL_HEIGHT_IN = 2.4
"""Default height of one row of panels."""

MAX_COLUMNS = 2
"""More panels side by side than this would be under 200 px wide on a phone: stack them instead."""

STYLE = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.figsize": (COLUMN_WIDTH_IN, PANEL_HEIGHT_IN),
    "figure.constrained_layout.use": True,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.04,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "legend.frameon": False,
    "figure.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.5,
}

STAIRCASE_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.3}


class BookFigure(Figure):
    """A matplotlib figure drawn to the book's standard (see the module docstring).

    The class only marks the figure: :func:`use_style` registers its notebook display, which writes
    the smallest font size into the PNG.
    """


def _drawn_font_sizes(fig):
    return [text.get_fontsize() for text in fig.findobj(Text) if text.get_visible() and text.get_text().strip()]


def smallest_font_pt(fig):
    """The smallest font size (pt) among the visible, non-empty texts of ``fig``.

    Tick labels, axis labels, titles, legends and annotations are all counted. Raises ``ValueError``
    for a figure without text: a figure must at least label its axes.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    fig.draw_without_rendering()  # tick labels exist only once the axes have been laid out
    sizes = _drawn_font_sizes(fig)
    if not sizes:
        raise ValueError("fig has no visible text; label its axes")
    return float(min(sizes))


def _png_text_chunk(key, value):
    """A PNG ``tEXt`` chunk holding ``key: value`` (Latin-1, as the format requires)."""
    data = key.encode("latin-1") + b"\0" + value.encode("latin-1")
    return struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))


def png_bytes(fig):
    """``fig`` as PNG bytes at ``DPI``, tightly cropped, with its smallest font size in the metadata.

    Saving draws the figure, after which its tick labels exist: their sizes are read then, and written
    into the PNG as a text chunk right after its header (where readers look before the pixels), so that
    the figure is drawn once for both."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.04, facecolor="white")
    sizes = _drawn_font_sizes(fig)
    if not sizes:
        raise ValueError("fig has no visible text; label its axes")
    png = buffer.getvalue()
    header = 8 + 4 + 4 + 13 + 4                   # signature, then IHDR: length, type, 13 bytes, CRC
    return png[:header] + _png_text_chunk(MIN_FONT_KEY, f"{min(sizes):g}") + png[header:]


def _share_mathtext_cache():
    """One cache of parsed math text for the whole process.

    Matplotlib caches parsed math text (``$...$`` labels, and the ``10^{-k}`` tick labels of every log
    axis) per parser, and every renderer brings its own parser: each figure drawn parses all its math
    again, at several milliseconds a string in pyparsing: the book's figures parsed hundreds of strings,
    most of them more than once. The parse depends only on its arguments and the parser's output type, so
    one cache keyed by both serves every parser (the test checks that figures render unchanged). Left
    alone where matplotlib's internals differ from the pinned version's.
    """
    from matplotlib import mathtext

    own = mathtext.MathTextParser._parse_cached
    parse = getattr(own, "__wrapped__", None)
    if parse is None or hasattr(mathtext.MathTextParser, "_unshared_parse_cached"):
        return
    cache = {}

    def parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):
        key = (self._output_type, s, dpi, prop, antialiased, load_glyph_flags)
        if key not in cache:
            if len(cache) >= 4096:
                cache.clear()
            cache[key] = parse(self, s, dpi, prop, antialiased, load_glyph_flags)
        return cache[key]

    mathtext.MathTextParser._unshared_parse_cached = own      # matplotlib's own, kept for the tests
    mathtext.MathTextParser._parse_cached = parse_cached


def use_style():
    """Apply the book's matplotlib style; in a notebook, also display :class:`BookFigure` by :func:`png_bytes`.

    Call once, in a chapter's imports cell.
    """
    mpl.rcParams.update(STYLE)
    _share_mathtext_cache()
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing is displayed
        return
    shell = get_ipython()
    if shell is None:
        return
    # A printer registered for the subclass wins over the inline backend's printer for Figure.
    shell.display_formatter.formatters["image/png"].for_type(BookFigure, png_bytes)


def figure(nrows=1, ncols=1, *, width=COLUMN_WIDTH_IN, panel_height=PANEL_HEIGHT_IN, **subplots_kw):
    """A :class:`BookFigure` with ``nrows × ncols`` panels, column wide; returns ``(fig, axes)`` like ``plt.subplots``.

    - ``width``: inches, at most ``COLUMN_WIDTH_IN`` (a wider figure is shrunk on the page and its text
      with it).
    - ``panel_height``: inches per row of panels.
    - ``ncols`` is at most ``MAX_COLUMNS``: more panels go in rows, which stay legible on a phone.
    - Other keywords (``sharex``, ``sharey``, ``squeeze``, ``subplot_kw``, ``gridspec_kw``, ...) go to
      ``Figure.subplots``.
    """
    for name, value in (("nrows", nrows), ("ncols", ncols)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if ncols > MAX_COLUMNS:
        raise ValueError(
            f"ncols must be at most {MAX_COLUMNS}, got {ncols}: side-by-side panels get too narrow to read on "
            f"a phone; stack them in rows (nrows={ncols * nrows}, or nrows={-(-ncols // MAX_COLUMNS) * nrows}, "
            f"ncols={MAX_COLUMNS})"
        )
    for name, value in (("width", width), ("panel_height", panel_height)):
        if not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive number of inches, got {value!r}")
    if width > COLUMN_WIDTH_IN:
        raise ValueError(
            f"width must be at most the column width {COLUMN_WIDTH_IN} in, got {width}: a wider figure is "
            "scaled down on the page and its text shrinks below the legible size"
        )
    fig = plt.figure(FigureClass=BookFigure, figsize=(width, panel_height * nrows), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, **subplots_kw)
    return fig, axes


def legend_outside(target, *, where="below", ncols=None, **legend_kw):
    """A legend that covers no data: below the figure's panels (``where="below"``, the default: it takes
    no width from the data on a phone; entries in ``ncols`` columns, at most 3 by default) or right of
    the axes (``where="right"``, for a legend of one or two short entries).

    ``target`` is an Axes (its own handles) or a Figure (the handles of all its axes, each label once).
    Returns the ``Legend``. Constrained layout makes room for it.
    """
    if where not in ("right", "below"):
        raise ValueError(f"where must be 'right' or 'below', got {where!r}")
    if isinstance(target, Figure):
        fig, axes = target, target.axes
    elif isinstance(target, mpl.axes.Axes):
        fig, axes = target.figure, [target]
    else:
        raise TypeError(f"target must be a matplotlib Axes or Figure, got {type(target).__name__}")
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if not handles:
        raise ValueError("nothing to put in a legend: no artist has a label")
    if where == "right":
        if isinstance(target, Figure):
            return fig.legend(handles, labels, loc="outside right upper", **legend_kw)
        return target.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                             **legend_kw)
    ncols = ncols if ncols is not None else min(len(handles), 3)
    if isinstance(target, Figure):
        return fig.legend(handles, labels, loc="outside lower center", ncols=ncols, **legend_kw)
    # below the axes' own tick labels and x label, a fixed distance in inches, which layout changes keep;
    # measured on the axis alone (its ticks and label), not by drawing the whole figure
    renderer = fig.canvas.get_renderer()
    axis = target.xaxis.get_tightbbox(renderer)        # None when the axis shows nothing (shared x)
    below = (target.get_window_extent(renderer).y0 - axis.y0 if axis is not None else 0.0) / fig.dpi + 0.05
    anchor = target.transAxes + mpl.transforms.ScaledTranslation(0, -below, fig.dpi_scale_trans)
    return target.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=anchor,
                         ncols=ncols, borderaxespad=0.0, **legend_kw)


def alpha_colors(alphas, *, cmap="viridis"):
    """One color per initialization scale, darker for smaller α (ordered by log α).

    Raises
    ------
    ValueError
        If ``alphas`` is empty, not 1-D, or holds a scale that is not finite and positive, or ``cmap``
        is not a matplotlib colormap name.
    TypeError
        If ``alphas`` is not a sequence of real numbers.
    """
    alphas = real_array(alphas, "alphas", "a 1-D array")
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-D array, got shape {alphas.shape}")
    if np.any(alphas <= 0):
        raise ValueError(f"alphas must be positive (initialization scales), got {float(alphas.min())!r}")
    if not isinstance(cmap, str) or cmap not in mpl.colormaps:
        raise ValueError(f"cmap must be the name of a matplotlib colormap, got {cmap!r}")
    logs = -np.log10(alphas)
    span = np.ptp(logs) if logs.size > 1 else 1.0
    positions = 0.85 - 0.7 * (logs - logs.min()) / (span or 1.0)
    return [mpl.colormaps[cmap](p) for p in positions]


def alpha_label(alpha, *, symbol=True):
    """An initialization scale in math text, one notation in every figure: ``$\\alpha = 10^{-8}$``.

    Exact powers of ten are written ``10^{k}``, other scales ``m\\times10^{k}``, scales between 0.01 and
    100 as decimals; ``symbol=False`` leaves out the ``\\alpha =``. Tables and sentences use
    :func:`agf_lib.book.alpha_text`, the same notation in plain text.
    """
    from .book import alpha_text

    text = alpha_text(alpha)
    mantissa, ten, exponent = text.rpartition("10")
    if ten and exponent and exponent.translate(_FROM_SUPERSCRIPT) != exponent:   # "m×10⁻ᵏ"
        text = mantissa.replace("×", r"\times") + "10^{" + exponent.translate(_FROM_SUPERSCRIPT) + "}"
    return f"$\\alpha = {text}$" if symbol else f"${text}$"


_FROM_SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def colorbar(mappable, ax, *, label, where="right"):
    """A labelled colorbar for a heatmap (``imshow``, ``pcolormesh``) beside ``ax`` or below it.

    Every heatmap of the book has one: a color means nothing without its scale. Returns the ``Colorbar``.
    """
    if not isinstance(label, str) or not label.strip():
        raise ValueError("label must say what the colors measure (a non-empty string)")
    if where not in ("right", "below"):
        raise ValueError(f"where must be 'right' or 'below', got {where!r}")
    if not isinstance(ax, mpl.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    orientation = "vertical" if where == "right" else "horizontal"
    return ax.figure.colorbar(mappable, ax=ax, label=label, orientation=orientation, shrink=0.9,
                              location="right" if where == "right" else "bottom")


def plot_staircase(ax, staircase, t_end=None, *, label="AGF", **style):
    """Draw ``staircase`` as a step function up to ``t_end`` (default: a quarter past the last jump)."""
    if not isinstance(ax, mpl.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    if not isinstance(staircase, Staircase):
        raise TypeError(f"staircase must be a Staircase, got {type(staircase).__name__}")
    t, levels = staircase.steps(t_end)
    return ax.step(t, levels, where="post", label=label, **{**STAIRCASE_STYLE, **style})


def mark_jumps(ax, times, **style):
    """Thin vertical lines at the given jump times (finite numbers)."""
    if not isinstance(ax, mpl.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    if isinstance(times, numbers.Real) and not isinstance(times, bool):
        times = [times]
    times = real_array(times, "times", "a number or a 1-D array")
    if times.ndim != 1:
        raise ValueError(f"times must be a number or a 1-D array, got shape {times.shape}")
    for t in times:
        ax.axvline(t, **{"color": "0.5", "linewidth": 0.8, "linestyle": ":", **style})


def plot_losses(trajectories, *, labels=None, colors=None, staircase=None, ax=None, logy=True, t_end=None,
                staircase_label="AGF"):
    """Loss curves of several trajectories, with a staircase overlaid; returns the axes.

    The x axis is labelled with the trajectories' time unit; all of them (and the staircase) must
    share it. Without ``ax``, a one-panel :func:`figure` is made. The legend goes right of the data.
    ``labels`` and ``colors``, where given, have one entry per trajectory.

    Raises
    ------
    TypeError
        If ``trajectories`` is not a non-empty sequence of :class:`~agf_lib.results.Trajectory`,
        ``staircase`` not a :class:`~agf_lib.results.Staircase`, ``ax`` not an Axes, or ``logy`` not
        ``True`` or ``False``.
    ValueError
        If the time units differ, ``labels`` or ``colors`` has not one entry per trajectory, or
        ``t_end`` is not a finite positive number.
    """
    if isinstance(trajectories, Trajectory) or not hasattr(trajectories, "__iter__"):
        raise TypeError(f"trajectories must be a non-empty sequence of Trajectory, got {type(trajectories).__name__}")
    trajectories = list(trajectories)
    if not trajectories or not all(isinstance(tr, Trajectory) for tr in trajectories):
        raise TypeError("trajectories must be a non-empty sequence of Trajectory")
    if staircase is not None and not isinstance(staircase, Staircase):
        raise TypeError(f"staircase must be a Staircase or None, got {type(staircase).__name__}")
    if ax is not None and not isinstance(ax, mpl.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    logy = check_bool(logy, "logy")
    if t_end is not None:
        t_end = check_positive(t_end, "t_end")
    units = {tr.time_unit for tr in trajectories} | ({staircase.time_unit} if staircase is not None else set())
    if len(units) > 1:
        raise ValueError(f"trajectories and staircase use different time units: {sorted(map(str, units))}")
    for name, values in (("labels", labels), ("colors", colors)):
        if values is None:
            continue
        if isinstance(values, str) or not hasattr(values, "__len__"):
            raise TypeError(f"{name} must be a sequence with one entry per trajectory, got {type(values).__name__}")
        if len(values) != len(trajectories):
            raise ValueError(f"{name} must have one entry per trajectory ({len(trajectories)}), got {len(values)}: "
                             "the curves without one would not be drawn")
    if ax is None:
        _, ax = figure()
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
    ax.set_xlabel(str(trajectories[0].time_unit))
    ax.set_ylabel("loss")
    if any(label is not None for label in labels) or staircase is not None:
        legend_outside(ax)
    return ax
