"""Specifications of agf_lib.book (the helpers chapters are written with) and of the α notation."""

import math

import numpy as np
import pytest

from agf_lib import book, plotting
from agf_lib.book import ClaimError, alpha_text, claim, format_seconds, number_text, table, timer


def test_claim_holds_a_value_from_both_sides():
    assert claim(None, 0.5, between=(0.4, 0.6)) is None
    claim(None, 0.4, between=(0.4, 0.6))            # the bounds are included
    with pytest.raises(ClaimError, match="not in"):
        claim(None, 0.39, between=(0.4, 0.6))
    with pytest.raises(ClaimError):
        claim(None, 0.61, between=(0.4, 0.6))
    claim(None, 9.4, close_to=9, atol=0.5)
    with pytest.raises(ClaimError, match="'err'"):
        claim("err", 9.6, close_to=9, atol=0.5)
    with pytest.raises(ClaimError):
        claim(None, 8.4, close_to=9, atol=0.5)
    claim(None, 1.1, close_to=1.0, rtol=0.1 + 1e-12)
    with pytest.raises(ClaimError):
        claim(None, 1.11, close_to=1.0, rtol=0.1)


def test_claim_checks_every_element_and_fails_on_nan():
    claim(None, np.array([1.0, 1.5, 2.0]), between=(1, 2))
    with pytest.raises(ClaimError):
        claim(None, np.array([1.0, 2.5]), between=(1, 2))
    with pytest.raises(ClaimError):
        claim(None, math.nan, between=(-math.inf, math.inf))
    with pytest.raises(ClaimError):
        claim(None, math.nan, close_to=0.0, atol=1.0)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({}, ValueError),                                          # neither form
        ({"between": (0, 1), "close_to": 0.5, "atol": 1}, ValueError),  # both
        ({"between": (1, 0)}, ValueError),                         # low > high
        ({"between": (0, 1), "rtol": 0.1}, ValueError),            # a tolerance with between
        ({"between": "ab"}, TypeError),
        ({"close_to": 1.0}, ValueError),                           # no tolerance
        ({"close_to": 1.0, "rtol": -0.1}, ValueError),
        ({"close_to": "1", "rtol": 0.1}, TypeError),
        ({"close_to": math.inf, "rtol": 0.1}, TypeError),
    ],
)
def test_a_malformed_claim_is_an_error_not_a_pass(kwargs, error):
    with pytest.raises(error):
        claim(None, 0.5, **kwargs)


@pytest.mark.parametrize("value", [True, "0.5", [], None])
def test_claim_rejects_what_is_not_a_real_number(value):
    with pytest.raises(TypeError, match="value"):
        claim(None, value, between=(0, 1))


def test_claim_names_must_be_glue_names():
    with pytest.raises(ValueError, match="name"):
        claim("two words", 0.5, between=(0, 1))
    with pytest.raises(ValueError, match="name"):
        timer("a-b")


def test_outside_a_notebook_nothing_is_glued_and_the_check_still_runs():
    claim("level", 0.25, close_to=0.25, atol=1e-12, fmt=".2f")
    with pytest.raises(ClaimError):
        claim("level", 0.3, close_to=0.25, atol=1e-12)


def test_timer_measures_its_block():
    with timer("wall") as clock:
        sum(range(1000))
    assert 0 <= clock.seconds < 5
    assert clock.name == "wall"
    across_cells = timer("page").start()
    assert 0 <= across_cells.stop() == across_cells.seconds < 5
    with pytest.raises(RuntimeError, match="started"):
        timer().stop()


@pytest.mark.parametrize("seconds, text", [(0.0431, "0.043"), (3.44, "3.4"), (12.3, "12"), (0.0, "0"), (0.016, "0.016")])
def test_wall_times_have_two_significant_digits_and_never_read_zero_point_zero(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    "value, digits, text",
    [(3.8e-12, 2, "3.8×10⁻¹²"), (1e-8, 2, "10⁻⁸"), (0.5, 2, "0.5"), (12.3, 2, "12"), (0.029, 2, "0.029"),
     (123456, 2, "1.2×10⁵"), (9.999e-5, 2, "10⁻⁴"), (2.5e-7, 3, "2.5×10⁻⁷"), (1e-100, 2, "10⁻¹⁰⁰"),
     (0.0, 2, "0"), (-3.8e-12, 2, "−3.8×10⁻¹²"), (-0.25, 2, "−0.25")],
)
def test_number_text_writes_powers_of_ten_out(value, digits, text):
    assert number_text(value, digits=digits) == text


@pytest.mark.parametrize(
    "alpha, text, label",
    [(1e-8, "10⁻⁸", r"$\alpha = 10^{-8}$"), (3e-5, "3×10⁻⁵", r"$\alpha = 3\times10^{-5}$"),
     (0.5, "0.5", r"$\alpha = 0.5$"), (1e-2, "0.01", r"$\alpha = 0.01$"), (1e-100, "10⁻¹⁰⁰", r"$\alpha = 10^{-100}$"),
     (1e-3, "10⁻³", r"$\alpha = 10^{-3}$")],
)
def test_alpha_is_written_one_way_in_text_and_in_figures(alpha, text, label):
    assert alpha_text(alpha) == text
    assert plotting.alpha_label(alpha) == label
    assert plotting.alpha_label(alpha, symbol=False) == "$" + label.split(" = ")[1]


@pytest.mark.parametrize("bad", [0, -1e-3, math.inf, math.nan, True, "1e-3"])
def test_alpha_text_rejects_what_is_not_a_scale(bad):
    with pytest.raises(ValueError, match="alpha"):
        alpha_text(bad)


@pytest.mark.parametrize("bad", [math.inf, math.nan, True, "1e-3"])
def test_number_text_rejects_what_is_not_a_finite_number(bad):
    with pytest.raises(ValueError, match="value"):
        number_text(bad)


def test_table_renders_html_with_the_formats_and_no_repr():
    styler = table({"α": [1e-3, 1e-6], "error": [0.1234, 0.05]}, formats={"α": alpha_text, "error": ".1%"})
    html = styler.to_html()
    assert 'class="agf-table"' in html
    assert "10⁻³" in html and "12.3%" in html and "5.0%" in html
    assert "0.1234" not in html and "array(" not in html
    assert ">0<" not in html                         # no index column by default
    wrapped = table({"claim": ["a long sentence"]}, wrap=True).to_html()
    assert 'class="agf-table agf-table-wrap"' in wrapped
    first, second = table({"a": [1]}).to_html(), table({"a": [1]}).to_html()
    assert first.split('id="')[1].split('"')[0] != second.split('id="')[1].split('"')[0], "two tables share an id"


def test_table_rejects_formats_for_missing_columns_and_bad_data():
    with pytest.raises(ValueError, match="formats"):
        table({"a": [1]}, formats={"b": ".2f"})
    with pytest.raises(TypeError, match="data"):
        table([[1, 2]])
    with pytest.raises(TypeError, match="formats"):
        table({"a": [1]}, formats={"a": 3})


def test_module_lists_its_public_names():
    assert set(book.__all__) == {"ClaimError", "claim", "timer", "format_seconds", "table", "alpha_text", "number_text"}
