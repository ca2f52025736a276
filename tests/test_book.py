"""Specifications of the book as a whole.

- Chapters are committed without outputs, and every chapter is in the table of contents.
- The README's test command is the one CI runs.
- The book builds with `jupyter-book build -W -n --keep-going` without a single warning, its pages
  load no script from the network, and headless Chromium renders their math offline.

The build re-executes every chapter, so its tests carry the `book` marker (deselect them with
`-m "not book"`); they share one build, made once per session in a temporary directory.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
BUILD_TIMEOUT_S = 1200
BROWSER_TIMEOUT_S = 120

# ipykernel logs this at every kernel start; it is not a Sphinx warning and says nothing about the book.
KERNEL_TRANSPORT_NOTICE = re.compile(r"^\[IPKernelApp\] WARNING \| Kernel is running over TCP without encryption")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
REMOTE_URL = re.compile(r"^(https?:)?//", re.IGNORECASE)
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc=[\"']([^\"']+)[\"']", re.IGNORECASE)
STYLESHEET_HREF = re.compile(r"<link\b[^>]*\brel=[\"']stylesheet[\"'][^>]*\bhref=[\"']([^\"']+)[\"']", re.IGNORECASE)
# A math element whose content still starts with a TeX delimiter was never typeset.
UNTYPESET_MATH = re.compile(r"<(?:span|div) class=\"math[^\"]*\"[^>]*>\s*(?:\\\(|\\\[|\$)")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--dump-dom",
    "--virtual-time-budget=15000",
]


def toc_files():
    """Every `file:` entry of _toc.yml, in order, root first."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({key: value for key, value in toc.items() if key != "root"})
    return files


def readme_code_blocks():
    return re.findall(r"```[a-z]*\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)


def find_chromium():
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def find_jupyter_book():
    return shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or shutil.which("jupyter-book")


# ---------------------------------------------------------------------------------------------
# Cheap checks of what is committed


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.name for path in CHAPTERS])
def test_chapter_is_committed_without_outputs_or_execution_counts(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    dirty = [
        index
        for index, cell in enumerate(cells)
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{notebook.name}: code cells {dirty} carry outputs or execution counts; clear them before committing "
        f"(e.g. `jupyter nbconvert --clear-output --inplace {notebook.relative_to(ROOT)}`)"
    )


def test_every_chapter_is_in_the_table_of_contents():
    listed = set(toc_files())
    missing = [path.name for path in CHAPTERS if f"chapters/{path.stem}" not in listed]
    assert not missing, f"chapters missing from _toc.yml (only_build_toc_files skips them silently): {missing}"


def test_every_toc_entry_exists():
    missing = [
        entry
        for entry in toc_files()
        if not any((ROOT / entry).with_suffix(suffix).exists() for suffix in (".md", ".ipynb"))
    ]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_ci_runs_exactly_the_readme_test_command():
    blocks = [block.strip() for block in readme_code_blocks()]
    assert len(blocks) >= 2, "README.md must open with two code blocks: build the book, run the tests"
    test_command = blocks[1]
    ci_script = (ROOT / ".ci" / "run").read_text()
    assert test_command in (line.strip() for line in ci_script.splitlines()), (
        f".ci/run does not run the README's test command {test_command!r} on a line of its own"
    )


# ---------------------------------------------------------------------------------------------
# The built book


@pytest.fixture(scope="session")
def book_build(tmp_path_factory):
    """Build the book from the work tree into a temporary directory; return (returncode, log, html_dir)."""
    jupyter_book = find_jupyter_book()
    if jupyter_book is None:
        pytest.fail("jupyter-book is not installed (pip install -r requirements.txt)")
    output = tmp_path_factory.mktemp("book")
    completed = subprocess.run(
        [jupyter_book, "build", str(ROOT), "--path-output", str(output), "-W", "-n", "--keep-going", "--all"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    log = ANSI_ESCAPE.sub("", completed.stdout + completed.stderr)
    return completed.returncode, log, output / "_build" / "html"


@pytest.mark.book
def test_book_builds_without_warnings(book_build):
    returncode, log, _ = book_build
    warnings = [
        line for line in log.splitlines() if ("WARNING" in line or "ERROR" in line) and not KERNEL_TRANSPORT_NOTICE.match(line)
    ]
    assert returncode == 0 and not warnings, f"jupyter-book build failed (exit {returncode}):\n" + (
        "\n".join(warnings) or log[-5000:]
    )


@pytest.mark.book
def test_every_toc_page_is_built(book_build):
    _, _, html = book_build
    missing = [entry for entry in toc_files() if not (html / f"{entry}.html").is_file()]
    assert not missing, f"pages missing from the built book: {missing}"


@pytest.mark.book
def test_pages_load_no_script_or_stylesheet_from_the_network(book_build):
    _, _, html = book_build
    pages = sorted(html.rglob("*.html"))
    assert pages, "the build produced no HTML"
    remote = {
        f"{page.relative_to(html)}: {url}"
        for page in pages
        for url in SCRIPT_SRC.findall(page.read_text()) + STYLESHEET_HREF.findall(page.read_text())
        if REMOTE_URL.match(url)
    }
    assert not remote, "pages load resources from the network:\n" + "\n".join(sorted(remote))
    assert (html / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not bundled in _static/mathjax"
    assert "_static/mathjax/tex-chtml.js" in (html / "intro.html").read_text(), "intro.html does not load the bundled MathJax"


@pytest.mark.book
@pytest.mark.parametrize("page", ["intro"] + [entry for entry in toc_files() if entry.startswith("chapters/")])
def test_math_renders_offline_in_headless_chromium(book_build, page, tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    _, _, html = book_build
    path = html / f"{page}.html"
    assert path.is_file(), f"{page}.html was not built"
    completed = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", path.as_uri()],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_S,
    )
    dom = completed.stdout
    assert completed.returncode == 0 and "</html>" in dom, f"chromium failed on {page}:\n{completed.stderr[-3000:]}"
    assert dom.count("<mjx-container") > 0, f"{page}: MathJax typeset nothing (is MathJax loaded?)"
    assert "<mjx-merror" not in dom, f"{page}: MathJax reports a TeX error: " + ", ".join(
        sorted(set(re.findall(r'data-mjx-error="([^"]*)"', dom)))
    )
    undefined = sorted(set(re.findall(r'<mtext mathcolor="red">(\\[A-Za-z]+)</mtext>', dom)))
    assert not undefined, f"{page}: undefined TeX macros {undefined} (add them to mathjax3_config in _config.yml)"
    untypeset = UNTYPESET_MATH.findall(dom)
    assert not untypeset, f"{page}: {len(untypeset)} math elements were left as raw TeX"
