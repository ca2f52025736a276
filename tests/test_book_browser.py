"""tests/book_browser.py on pages made here: one Chromium process measures several pages, each at every width,
and gives each page its own errors and sizes (skipped without Chromium)."""

import shutil

import pytest

from book_browser import measure_pages

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head>
<body><article class="bd-article"><p>{name}</p>{body}</article></body></html>"""


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    return path


def test_each_page_of_one_process_reports_its_own_errors_and_layout_at_each_width(chromium, tmp_path):
    (tmp_path / "sub").mkdir()
    pages = [tmp_path / "clean.html", tmp_path / "sub" / "broken.html", tmp_path / "wide.html"]
    pages[0].write_text(PAGE.format(name="clean", body=""))
    pages[1].write_text(PAGE.format(name="broken", body='<script>console.error("logged"); missingFunction();</script>'))
    pages[2].write_text(PAGE.format(name="wide", body='<pre style="width: 600px">x</pre>'
                                    '<span class="math notranslate">\\(x\\)</span><div class="math">\\[y\\]</div>'))
    reports = measure_pages(chromium, pages, [(1280, 900), (390, 844)], tmp_path / "profile")
    assert list(reports) == pages and all(list(reports[page]) == [1280, 390] for page in pages)
    for width in (1280, 390):
        assert reports[pages[0]][width]["errors"] == [] and reports[pages[2]][width]["errors"] == []
        errors = reports[pages[1]][width]["errors"]
        assert any("console.error: logged" in error for error in errors)
        assert any("missingFunction" in error for error in errors)
        assert reports[pages[0]][width]["viewport"] == width
    # the 600-px block fits at 1280 px and runs off a 390-px screen; only the first width reports the math:
    # without MathJax, the two formulas are left as raw TeX
    assert reports[pages[2]][1280]["overflow"] == [] and len(reports[pages[2]][390]["overflow"]) == 1
    assert reports[pages[2]][1280]["math"] == {"typeset": 0, "errors": [], "undefined": [], "untypeset": 2}
    assert reports[pages[0]][1280]["math"]["untypeset"] == 0 and "math" not in reports[pages[2]][390]
    assert not list(tmp_path.rglob(".probe-*")), "the probed copies and the frame page are removed"


def test_a_page_without_a_body_is_refused_by_name(chromium, tmp_path):
    page = tmp_path / "fragment.html"
    page.write_text("<p>no head, no body</p>")
    with pytest.raises(RuntimeError, match="fragment.html: no <head> or </body>"):
        measure_pages(chromium, [page], [(1280, 900)], tmp_path / "profile")


def test_a_page_that_never_finishes_is_named_with_the_pages_it_held_up(chromium, tmp_path, monkeypatch):
    monkeypatch.setattr("book_browser.VIRTUAL_TIME_PER_PAGE_MS", 2000)
    pages = [tmp_path / name for name in ("first.html", "stuck.html", "last.html")]
    for page in pages:
        page.write_text(PAGE.format(name=page.stem, body=""))
    # MathJax's startup promise, which the probe waits for, never settles
    pages[1].write_text(PAGE.format(name="stuck", body="").replace(
        "</head>", "<script>window.MathJax = {startup: {promise: new Promise(function () {})}};</script></head>"))
    with pytest.raises(RuntimeError, match="stuck.html never finished, so last.html after it did not load") as error:
        measure_pages(chromium, pages, [(1280, 900)], tmp_path / "profile")
    assert "first.html" not in str(error.value).split("(exit")[0]
