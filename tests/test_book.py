"""Specifications of the book as a whole.

Cheap checks of what is committed:
- chapters are committed without outputs, and every chapter is in the table of contents;
- the reader's path (library.md, "Writing a chapter"): visible code cells of at most 15 lines of 80
  characters with no check, glue or timer in them; checks in hidden cells behind "Show the checks";
  every exercise titled with its difficulty and time (the teacher's guide lists them);
- the README's test command is the one CI runs, and its build command the one the publishing
  workflow (.github/workflows/book.yml) runs before deploying to GitHub Pages;
- the default test run executes each chapter once, with nbval (chapters/ in testpaths), and the book
  build reuses those runs (tests/chapter_runs.py);
- _config.yml: launch buttons ready for repository.url, Thebe off, solutions shown.

The built book (marker `book`; one build per session, in a temporary directory). In `python -m pytest`
nbval has executed every chapter (a failing cell fails `chapters/NN_slug.ipynb::Cell k` with its source
and traceback) and the build takes the outputs from those runs, executing nothing; with the book tests
alone (this file, `tests/`) the build executes every chapter itself:
- every chapter executes once: in nbval's run, without a failing cell, and the build took its outputs from
  it; or, in a build that executes, a failing cell fails `test_chapter_executes[NN_slug]` with the cell's
  index, source and traceback; each chapter's execution time is printed after the test summary
  (tests/book_report.py);
- the build is warning-free under `-W -n --keep-going`;
- no rendered page shows raw MyST or Sphinx markup;
- no printed output a reader sees is a raw numpy, tuple or dict repr;
- no page loads anything from the network, and, in headless Chromium (skipped without it), no page
  logs a JavaScript error, MathJax typesets every page's math offline (results.md included), code is
  set at 13 px or more, the smallest text of every figure is at least 8 px at 1280 px and at 390 px,
  and at 390 px (a phone) no page is wider than the screen, nothing runs off it, no equation runs
  under its number and none is cut off without a scroll cue; no line starts with the punctuation
  that follows a formula;
- the student edition (tools/build_student_edition.py) has every exercise and no solution, on its
  pages and in the notebooks it offers for download;
- with repository.url set, the chapters get their Binder and Colab launch buttons.
"""

import ast
import html as html_lib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import yaml

import chapter_runs
from book_browser import measure_pages
from book_report import BUILD_PROPERTY, EXECUTION_PROPERTY

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
BUILD_TIMEOUT_S = 1200
BROWSER_TIMEOUT_S = 120
DESKTOP = (1280, 900)
PHONE = (390, 844)
MIN_FIGURE_TEXT_PX = 8.0
MIN_CODE_PX = 13.0
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
REMOTE_URL = re.compile(r"^(https?:)?//", re.IGNORECASE)
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc=[\"']([^\"']+)[\"']", re.IGNORECASE)
STYLESHEET_HREF = re.compile(r"<link\b[^>]*\brel=[\"']stylesheet[\"'][^>]*\bhref=[\"']([^\"']+)[\"']", re.IGNORECASE)
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)
READ_PROCESSES = re.compile(r"parallel_read: reading in (?P<n>\d+) processes")
EXECUTED = re.compile(r"^(?P<path>\S+\.ipynb): Executed notebook in (?P<seconds>[0-9.]+) seconds", re.MULTILINE)
EXECUTION_FAILED = re.compile(r"^(?P<path>\S+\.ipynb): WARNING: Executing notebook failed", re.MULTILINE)
# What MyST or Sphinx syntax looks like when it was not parsed: it must never reach a reader.
RAW_MARKUP = [
    (re.compile(r"(```|:::)\{"), "a directive fence (```{ or :::{)"),
    (re.compile(r"\{(glue|cite|prf)[:}]"), "a role ({glue:...}, {cite:...}, {prf:...})"),
    (re.compile(r"\{(numref|doc|eq|ref|math|term|download|abbr)\}"), "a role ({numref}, {doc}, {eq}, {ref}, ...)"),
    (re.compile(r"^\s*:(name|label|class|caption|align|width|nonumber|dropdown):", re.MULTILINE), "a directive option line"),
]
DOLLAR = re.compile(r"\$")


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
def test_chapter_cells_have_unique_ids(notebook):
    """nbformat 4.5 gives every cell an id (nbformat warns on a missing one, and will refuse it)."""
    ids = [cell.get("id") for cell in json.loads(notebook.read_text())["cells"]]
    missing = [index for index, cell_id in enumerate(ids) if not cell_id]
    assert not missing, f"{notebook.name}: cells {missing} have no id (nbformat.validator.normalize adds them)"
    assert len(set(ids)) == len(ids), f"{notebook.name}: repeated cell ids"


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


# The reader's path (library.md, "Writing a chapter"): visible cells short, narrow and free of checks.
HIDDEN_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
MAX_VISIBLE_LINES = 15
MAX_CODE_WIDTH = 80          # at 13 px, 80 characters fit the code column at a 1280 px window
SCAFFOLDING = re.compile(r"^\s*(assert\b|np\.testing\.|glue\(|.*\bperf_counter\(\))", re.MULTILINE)
CHECKS_PROMPT = "Show the checks"
EXERCISE_TITLE = re.compile(r"^(`{3,}|:{3,})\{exercise(?:-start)?\}(?P<title>.*)$", re.MULTILINE)
EXERCISE_LEVEL = re.compile(r"^\S.* \((★{1,3}), [1-9]\d* min\)$")


def code_cells(notebook):
    """(index, tags, metadata, source) of every code cell."""
    for index, cell in enumerate(json.loads(notebook.read_text())["cells"]):
        if cell["cell_type"] == "code":
            metadata = cell.get("metadata", {})
            yield index, set(metadata.get("tags", [])), metadata, "".join(cell["source"])


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_code_lines_fit_and_visible_cells_are_short_and_free_of_checks(notebook):
    problems = []
    for index, tags, _, source in code_cells(notebook):
        lines = source.rstrip("\n").splitlines()
        width = max((len(line) for line in lines), default=0)
        if width > MAX_CODE_WIDTH:          # hidden cells open on a click: they must fit too
            problems.append(f"cell {index}: a line of {width} characters (at most {MAX_CODE_WIDTH})")
        if tags & HIDDEN_TAGS:
            continue
        imports = all(isinstance(statement, (ast.Import, ast.ImportFrom)) or ast.unparse(statement) == "plotting.use_style()"
                      for statement in ast.parse(source).body)
        if len(lines) > MAX_VISIBLE_LINES and not imports:     # the imports cell may be longer
            problems.append(f"cell {index}: {len(lines)} lines (at most {MAX_VISIBLE_LINES}): {lines[0]!r}")
        scaffolding = SCAFFOLDING.findall(source)
        if scaffolding:
            problems.append(f"cell {index}: {len(scaffolding)} checks, glue or timer lines in a visible cell: "
                            "move them to a check cell or use agf_lib.book.claim / timer")
    assert not problems, f"{notebook.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_check_cells_are_hidden_behind_show_the_checks_and_print_nothing(notebook):
    """A cell whose toggle says "Show the checks" checks something and prints nothing a reader would
    have to open it to see."""
    problems, checks = [], 0
    for index, tags, metadata, source in code_cells(notebook):
        prompt = metadata.get("mystnb", {}).get("code_prompt_show")
        if prompt != CHECKS_PROMPT:
            continue
        checks += 1
        if "hide-input" not in tags:
            problems.append(f"cell {index}: says {CHECKS_PROMPT!r} but is not tagged hide-input")
        if not re.search(r"\bassert\b|np\.testing\.|\bclaim\(|raise\b", source):
            problems.append(f"cell {index}: a check cell that checks nothing")
        if re.search(r"^\s*print\(|^\s*display\(", source, re.MULTILINE):
            problems.append(f"cell {index}: a check cell that prints")
    assert not problems, f"{notebook.name}:\n" + "\n".join(problems)
    assert checks > 0, f"{notebook.name}: no check cell (tag hide-input, prompt {CHECKS_PROMPT!r})"


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_every_exercise_title_gives_its_difficulty_and_time(notebook):
    """The teacher's guide lists the exercises from these titles: "Title (★★, 20 min)"."""
    text = "\n".join("".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
                     if cell["cell_type"] == "markdown")
    titles = [match.group("title").strip() for match in EXERCISE_TITLE.finditer(text)]
    assert titles, f"{notebook.name}: no exercises"
    bad = [title for title in titles if not EXERCISE_LEVEL.match(title)]
    assert not bad, f"{notebook.name}: exercise titles without '(★★, 20 min)': {bad}"


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


def readme_build_command():
    return readme_code_blocks()[0].strip()


def load_tool(name, folder="tools"):
    """A script of tools/ (or a Sphinx extension of _ext/) as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def strip_ansi(text):
    return ANSI_ESCAPE.sub("", text)


def article_html(page_html):
    """The page's article (its own content, without the navigation), scripts and styles removed."""
    found = re.search(r"<article\b[^>]*bd-article[^>]*>(.*)</article>", page_html, flags=re.DOTALL)
    body = found.group(1) if found else page_html
    return re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.DOTALL | re.IGNORECASE)


def visible_text(fragment):
    """The text a reader sees in an HTML fragment, one line per block element."""
    fragment = re.sub(r"<(p|div|li|h[1-6]|pre|br|tr|dt|dd|section|table|figcaption)\b", r"\n<\1", fragment)
    return html_lib.unescape(re.sub(r"<[^>]+>", "", fragment))


def rendered_text(page_html):
    """(all visible text of the article, its prose alone): prose has no math, code or output."""
    body = article_html(page_html)
    body = re.sub(r'<span class="math[^"]*"[^>]*>.*?</span>', " ", body, flags=re.DOTALL)
    body = re.sub(r'<div class="math[^"]*"[^>]*>.*?</div>', "\n", body, flags=re.DOTALL)
    prose = re.sub(r"<(pre|code)\b.*?</\1>", " ", body, flags=re.DOTALL | re.IGNORECASE)
    return visible_text(body), visible_text(prose)


def execution_times(log):
    """{chapter stem: seconds, or None if its execution failed} from the build log."""
    times = {Path(match["path"]).stem: float(match["seconds"]) for match in EXECUTED.finditer(log)}
    times.update({Path(match["path"]).stem: None for match in EXECUTION_FAILED.finditer(log)})
    return times


def describe_execution_failure(notebook, report):
    """Which cell of ``notebook`` raised, from myst-nb's report (nbclient's CellExecutionError text)."""
    report = strip_ansi(report)
    found = re.search(r"^-{10,}\n(.*?)\n-{10,}\n", report, flags=re.DOTALL | re.MULTILINE)
    where = "a cell"
    if found:
        source = found.group(1).strip()
        cells = json.loads(notebook.read_text())["cells"]
        index = next((i for i, cell in enumerate(cells) if "".join(cell["source"]).strip() == source), None)
        first_line = source.splitlines()[0] if source else ""
        where = f"cell {index} ({first_line!r})" if index is not None else f"the cell starting {first_line!r}"
    # myst-nb's report starts with the executor's own frames; the cell's error comes after them.
    start = report.find("An error occurred while executing the following cell")
    tail = report[max(start, 0):][-4000:]
    return f"{notebook.name}: {where} raised during the book build:\n{tail}"


def source_exercises(notebook):
    """(number of exercises, solution fingerprints) of a chapter: fingerprints are lines of its
    solutions (prose without markup, code) that a student edition must not show."""
    exercises, fingerprints, elsewhere = 0, [], set()
    gated = False  # between {solution-start} and {solution-end}, which may span cells
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            if gated:
                fingerprints += [line.strip() for line in source.splitlines() if len(line.strip()) >= 25]
            else:
                elsewhere.update(line.strip() for line in source.splitlines())
            continue
        exercises += len(re.findall(r"^(?:`{3,}|:{3,})\{exercise(?:-start)?\}", source, flags=re.MULTILINE))
        fence = None  # the closing fence of an open {solution} block
        for line in source.splitlines():
            opener = re.match(r"^(`{3,}|:{3,})\{(solution|solution-start|solution-end)\}", line)
            if opener:
                kind = opener.group(2)
                if kind == "solution":
                    fence = opener.group(1)
                else:
                    gated = kind == "solution-start"
                continue
            if fence is not None and line.strip() == fence:
                fence = None
                continue
            plain = line.strip()
            if (gated or fence is not None) and len(plain) >= 40 and not re.search(r"[`$*{}\\\[\]_|:<>]", plain):
                fingerprints.append(plain)
            elif not gated and fence is None:
                elsewhere.add(plain)
    # a line that the chapter also has outside its solutions (alone, or in a longer line) says nothing
    # about a leak
    outside = " ".join(" ".join(line.split()) for line in elsewhere)
    return exercises, [line for line in fingerprints if " ".join(line.split()) not in outside]


def chromium_or_skip():
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    return chromium


def built_page(html, page):
    path = html / f"{page}.html"
    assert path.is_file(), f"{page}.html was not built"
    return path


def run_build(args, timeout=BUILD_TIMEOUT_S, processes=None):
    """Run a build command; ``processes`` sets AGF_BOOK_PROCESSES for it (_ext/parallel_read.py)."""
    env = None if processes is None else {**os.environ, "AGF_BOOK_PROCESSES": str(processes)}
    completed = subprocess.run(args, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout, env=env)
    return completed.returncode, strip_ansi(completed.stdout + completed.stderr)


# ---------------------------------------------------------------------------------------------
# Cheap checks of the configuration


def test_default_test_run_executes_each_chapter_once_with_nbval():
    """`python -m pytest` collects chapters/ (nbval, --nbval-lax) before tests/, keeps each file on one worker
    in that order (so a chapter's cells share a kernel, and every chapter is handed out before the book
    tests), and loads tests/chapter_runs.py, which keeps nbval's runs for the book build."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["chapters", "tests"], options["testpaths"]
    addopts = options["addopts"].split()
    for option in ("--nbval-lax", "--nbval-current-env", "--no-loadscope-reorder", "chapter_runs", "book_report"):
        assert option in addopts, f"{option} missing from addopts"
    assert " ".join(addopts).count("--dist loadfile") == 1, "a chapter's cells must share one worker (and kernel)"
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "force", "the README's build must execute every chapter itself"


def test_the_book_tests_that_run_apart_exist():
    """tests/chapter_runs.py schedules these tests apart from the book build: a renamed one would silently
    fall back into the build's unit (and lengthen the run)."""
    names = {node.name for node in ast.parse(Path(__file__).read_text()).body if isinstance(node, ast.FunctionDef)}
    assert set(chapter_runs.APART) <= names, set(chapter_runs.APART) - names


def test_nbval_runs_a_cell_as_jupyter_does_so_a_trailing_semicolon_hides_its_result():
    """The book shows nbval's runs: tests/chapter_runs.py has nbval's kernel keep its history, from which
    IPython reads a cell's trailing ``;`` (nbval alone runs cells without it, and ``f();`` shows a result)."""
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, RunningKernel

    kernel = RunningKernel(CURRENT_ENV_KERNEL_NAME, cwd=str(ROOT / "chapters"))
    try:
        results = {}
        for source in ("1 + 1;", "2 + 2"):
            msg_id = kernel.execute_cell_input(source, allow_stdin=False)
            kernel.await_reply(msg_id, timeout=60)
            while True:
                message = kernel.get_message("iopub", timeout=10)
                if message["parent_header"].get("msg_id") != msg_id:
                    continue
                if message["msg_type"] == "execute_result":
                    results[source] = message["content"]["data"]["text/plain"]
                if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                    break
    finally:
        kernel.stop()
    assert results == {"2 + 2": "4"}, results


def test_config_has_launch_buttons_ready_and_no_thebe():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    launch = config["launch_buttons"]
    assert launch.get("binderhub_url"), "the Binder launch URL must be configured"
    assert not launch.get("colab_url"), "Colab opens a chapter without agf_lib installed: no Colab button"
    assert launch.get("thebe") is False, "Thebe loads its code from a CDN: keep it off"
    assert "url" in config["repository"], "repository.url (empty until the book is published) turns the buttons on"
    assert config["execute"]["execute_notebooks"] == "force", "a cache would keep stale results after agf_lib changes"
    assert config["sphinx"]["config"].get("hide_solutions") is False, "the book shows its solutions"
    for name, folder in config["sphinx"]["local_extensions"].items():
        assert (ROOT / folder / f"{name}.py").is_file(), f"local extension {name} not found in {folder}/"


def test_publishing_workflow_builds_with_the_readme_command_and_deploys_to_pages():
    assert WORKFLOW.is_file(), f"{WORKFLOW.relative_to(ROOT)} is missing"
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "main" in triggers["push"]["branches"], "the book is published from main"
    assert workflow["permissions"].get("pages") == "write" and workflow["permissions"].get("id-token") == "write", (
        "deploy-pages needs the permissions pages: write and id-token: write"
    )
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    runs = [line.strip() for step in steps for line in step.get("run", "").splitlines()]
    assert readme_build_command() in runs, (
        f"the workflow does not run the README's build command {readme_build_command()!r} on a line of its own"
    )
    uses = [step.get("uses", "") for step in steps]
    assert any(use.startswith("actions/upload-pages-artifact@") for use in uses), "no actions/upload-pages-artifact step"
    assert any(use.startswith("actions/deploy-pages@") for use in uses), "no actions/deploy-pages step"
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"].rstrip("/") == "_build/html", "the workflow must upload the built HTML, _build/html"


def test_parallel_read_starts_the_heaviest_documents_first_one_per_process(monkeypatch):
    """Each document is a chunk of its own, read by the next free process: the two heaviest start at once,
    and the rest are queued lightest first, as Sphinx starts its queue last in, first out. The single chunks
    last only until the read ends, and a build with two processes writes serially."""
    import sphinx.builders
    import sphinx.util.parallel

    parallel_read = load_tool("parallel_read", folder="_ext")
    sizes = {f"chapters/{k:02d}": size for k, size in enumerate([111, 96, 88, 84, 82, 57, 51, 49, 34, 30], 1)}
    pages = ["intro", "library", "references", "results"]
    monkeypatch.setattr(parallel_read, "_cost", lambda env, name: sizes.get(name, 0))
    monkeypatch.setattr(sphinx.builders, "make_chunks", sphinx.util.parallel.make_chunks)
    app = type("App", (), {"parallel": 2})()
    docnames = sorted(pages) + sorted(sizes)
    parallel_read.schedule_documents(app, None, docnames)
    assert docnames[:2] == ["chapters/01", "chapters/02"]
    queue = [sizes.get(name, 0) for name in docnames[2:]]
    assert queue == sorted(queue) and sorted(docnames) == sorted(list(sizes) + pages)
    assert sphinx.builders.make_chunks(docnames, 2) == [[name] for name in docnames]
    # Sphinx's queue: the first two start, then the last queued starts whenever a process is free
    tasks = sphinx.util.parallel.ParallelTasks(2)
    started = []
    tasks._join_one = lambda: None
    for name in docnames:
        tasks.add_task(lambda docs: None, [name])
    while tasks._precvsWaiting:
        started.append(tasks._args[tasks._precvsWaiting.popitem()[0]][0])
    assert [sizes.get(name, 0) for name in started][:8] == [88, 84, 82, 57, 51, 49, 34, 30]
    parallel_read.restore_chunks(app, None)
    assert sphinx.builders.make_chunks is sphinx.util.parallel.make_chunks
    builder = type("Builder", (), {"parallel_ok": True})()
    parallel_read.write_serially_with_one_writer(app, builder)
    assert builder.parallel_ok is False
    app.parallel, builder.parallel_ok = 3, True
    parallel_read.write_serially_with_one_writer(app, builder)
    assert builder.parallel_ok is True
    monkeypatch.setenv("AGF_BOOK_PROCESSES", "3")
    assert parallel_read.processes() == 3
    monkeypatch.setenv("AGF_BOOK_PROCESSES", "0")
    with pytest.raises(ValueError, match="AGF_BOOK_PROCESSES must be a positive integer"):
        parallel_read.processes()


def test_the_code_a_document_runs_weighs_its_place_in_the_read(tmp_path):
    """A notebook weighs the characters of its code cells plus a kernel's start, a MyST notebook the same
    of its code-cell blocks, a page without code nothing."""
    parallel_read = load_tool("parallel_read", folder="_ext")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("text"),
                                               nbformat.v4.new_code_cell("print(x)")])
    nbformat.write(notebook, tmp_path / "chapter.ipynb")
    (tmp_path / "page.md").write_text("# A page\n\n```{code-cell} ipython3\nimport numpy\n```\n\n```python\nnot run\n```\n")
    (tmp_path / "text.md").write_text("# Text\n\n```python\nnot run\n```\n")
    env = type("Env", (), {"doc2path": lambda self, name: str(tmp_path / name)})()
    kernel = parallel_read.KERNEL_CHARS
    assert parallel_read._cost(env, "chapter.ipynb") == len("x = 1") + len("print(x)") + kernel
    assert parallel_read._cost(env, "page.md") == len("import numpy\n") + kernel
    assert parallel_read._cost(env, "text.md") == 0


def test_the_environment_keeps_exercises_and_result_titles_without_their_page():
    """sphinx-exercise's entries and the results index's titles are kept as copies that do not point into
    their page, so pickling the environment does not pickle the page with them; the copies keep the nodes'
    text and attributes."""
    import pickle

    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    parallel_read = load_tool("parallel_read", folder="_ext")
    results_index = load_tool("results_index", folder="_ext")
    document = new_document("page", get_default_settings(Parser))
    document += nodes.paragraph(text="x" * 100_000)
    solution = nodes.container(ids=["sol-1"], label="sol-1")
    solution += nodes.paragraph(text="the solution")
    document += solution
    solution.document = document
    registry = {"sol-1": {"type": "solution-start", "docname": "page", "node": solution},
                "other": {"type": "exercise", "docname": "elsewhere", "node": solution}}
    env = type("Env", (), {"docname": "page", "sphinx_exercise_registry": registry})()
    app = type("App", (), {"env": env, "builder": type("Builder", (), {"format": "html"})()})()
    parallel_read.detach_exercise_copies(app, document)
    kept = registry["sol-1"]["node"]
    assert kept is not solution and kept.astext() == "the solution" and kept["label"] == "sol-1"
    assert len(pickle.dumps(kept)) < 2_000 < 100_000 < len(pickle.dumps(solution))
    assert registry["other"]["node"] is solution and solution.parent is document
    title = results_index._detached(solution.children[0])
    assert title.astext() == "the solution" and len(pickle.dumps(title)) < 2_000
    app.builder.format = "latex"
    registry["sol-1"]["node"] = solution
    parallel_read.detach_exercise_copies(app, document)
    assert registry["sol-1"]["node"] is solution


def test_student_edition_tool_hides_solutions_and_nothing_else():
    tool = load_tool("build_student_edition")
    book = yaml.safe_load((ROOT / "_config.yml").read_text())
    student = tool.student_config()
    assert student["sphinx"]["config"]["hide_solutions"] is True
    student["sphinx"]["config"]["hide_solutions"] = False
    student["title"] = book["title"]
    assert student == book, "the student edition must differ from the book only by its title and hidden solutions"


# ---------------------------------------------------------------------------------------------
# The built book


BUILD_SECONDS = []    # (the book build's wall time, the seconds it waited for nbval's runs), for the report
REUSED = {}           # {chapter stem: (executed notebook, {"seconds", "failed"})} of nbval's runs the build used


@pytest.fixture(scope="session")
def book_build(request, tmp_path_factory):
    """Build the book from the work tree into a temporary directory; return (returncode, log, html_dir).

    Where this session runs every chapter with nbval (``python -m pytest``), the build reuses those runs:
    it waits for their executed notebooks (tests/chapter_runs.py) and reads the outputs from them, through
    jupyter-book's cache, instead of executing the chapters again. Otherwise (this file or ``tests/`` alone)
    the build executes every chapter itself, as the README's build command does.
    """
    jupyter_book = find_jupyter_book()
    if jupyter_book is None:
        pytest.fail("jupyter-book is not installed (pip install -r requirements.txt)")
    output = tmp_path_factory.mktemp("book")
    command = [jupyter_book, "build", str(ROOT), "--path-output", str(output), "-W", "-n", "--keep-going", "--all"]
    stems = chapter_runs.chapters_in_session(request.config)
    start, processes = time.perf_counter(), None
    if stems:
        REUSED.update(chapter_runs.wait_for_executed_chapters(request.config, stems))
        command += ["--config", str(config_reusing_executions(output, REUSED))]
        # Only library.md and teaching.md execute then: one process reads the book with ~4 core-s less
        # than two (their forks and merges), and the test run's two cores are busy anyway.
        processes = 1
    waited, start = time.perf_counter() - start, time.perf_counter()
    returncode, log = run_build(command, processes=processes)
    BUILD_SECONDS.append((time.perf_counter() - start, waited))
    return returncode, log, output / "_build" / "html"


def config_reusing_executions(folder, executed):
    """A copy of _config.yml, written into ``folder``, whose build takes the outputs of the chapters in
    ``executed`` from a jupyter-cache filled with their executed notebooks (``execute_notebooks: cache``: a
    chapter missing from it is executed by the build). Its path for ``jupyter-book build --config``."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(folder / "jupyter_cache")
    for stem, (path, run) in executed.items():
        notebook = nbformat.read(path, as_version=4)
        cache.cache_notebook_bundle(CacheBundleIn(notebook, str(path), data={"execution_seconds": run["seconds"]}),
                                    check_validity=False, overwrite=True)
    _, path = book_config(folder, execute_notebooks="cache", cache=str(folder / "jupyter_cache"))
    return path


@pytest.mark.book
@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_chapter_executes(book_build, notebook, record_property):
    """The chapter executed without error, once: in nbval's run (its cells are tests of their own, and
    REUSED holds the run) or, without nbval in the session, in the book build."""
    _, log, html = book_build
    if notebook.stem in REUSED:
        _, run = REUSED[notebook.stem]
        record_property(EXECUTION_PROPERTY, (notebook.stem, run["seconds"]))
        assert f"{notebook.stem}.ipynb: Using cached notebook" in log, (
            f"{notebook.name}: the build did not take nbval's run of the chapter from its cache")
        assert notebook.stem not in execution_times(log), f"{notebook.name}: the build executed it a second time"
        assert not run["failed"], (f"{notebook.name}: nbval's run failed at {', '.join(run['failed'])} "
                                   f"(see chapters/{notebook.name}::{run['failed'][0]}); the book shows that run")
        return
    seconds = execution_times(log).get(notebook.stem, "missing")
    record_property(EXECUTION_PROPERTY, (notebook.stem, seconds if seconds != "missing" else None))
    report = html / "reports" / "chapters" / f"{notebook.stem}.err.log"
    if report.is_file():
        pytest.fail(describe_execution_failure(notebook, report.read_text()), pytrace=False)
    assert seconds not in (None, "missing"), f"{notebook.name}: the build log has no record of its execution"


@pytest.mark.book
def test_book_builds_without_warnings(book_build, record_property):
    returncode, log, _ = book_build
    processes = READ_PROCESSES.search(log)
    seconds, waited = BUILD_SECONDS[-1]
    record_property(BUILD_PROPERTY, (seconds, int(processes["n"]) if processes else 1, len(execution_times(log)), waited))
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    # ipykernel's notice at every kernel start is not a Sphinx warning and says nothing about the book; nor
    # is tornado's report of a kernel message that arrived as its client closed, seen once in a CI run
    # whose chapters all executed (each chapter's execution is checked by test_chapter_executes).
    noise = ("[IPKernelApp] WARNING", "ERROR:tornado.general:Uncaught exception in ZMQStream callback")
    warnings = [line for line in warnings if not line.startswith(noise)]
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
    remote = set()
    for page in pages:
        text = page.read_text()
        for url in SCRIPT_SRC.findall(text) + STYLESHEET_HREF.findall(text):
            if REMOTE_URL.match(url):
                remote.add(f"{page.relative_to(html)}: {url}")
        for body in INLINE_SCRIPT.findall(text):
            for url in re.findall(r"https?://[^\s\"'<>]+", body):
                remote.add(f"{page.relative_to(html)}: inline script names {url}")
    assert not remote, "pages load (or are set up to load) resources from the network:\n" + "\n".join(sorted(remote))
    assert (html / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not bundled in _static/mathjax"
    assert "_static/mathjax/tex-chtml.js" in (html / "intro.html").read_text(), "intro.html does not load the bundled MathJax"


@pytest.mark.book
@pytest.mark.parametrize("page", toc_files())
def test_no_raw_markup_in_rendered_text(book_build, page):
    _, _, html = book_build
    text, prose = rendered_text(built_page(html, page).read_text())
    found = []
    for pattern, what in RAW_MARKUP:
        for match in pattern.finditer(text):
            line = text[text.rfind("\n", 0, match.start()) + 1 : text.find("\n", match.end())].strip()
            found.append(f"{what}: {line[:120]!r}")
    for match in DOLLAR.finditer(prose):
        context = prose[max(0, match.start() - 50) : match.end() + 50].replace("\n", " ")
        found.append(f"a $ outside math: {context!r}")
    assert not found, f"{page}: unparsed MyST/Sphinx markup on the page:\n" + "\n".join(found[:20])


# What a raw repr looks like in a printed output; a reader sees tables and sentences instead.
REPR_PATTERNS = [
    (re.compile(r"\barray\(|\bnp\.(float|int)\d*\("), "a numpy repr"),
    (re.compile(r"^[^\n]*\[\s*[-+]?(\d|\.\d)[\d.e+-]*\.?\s+[-+]?(\d|\.\d)", re.MULTILINE), "a printed numpy array"),
    (re.compile(r"\[\((\)|[-+\d'])|^\s*\(\s*[-+]?\d[\d.e+-]*,\s*[-+]?\d", re.MULTILINE), "a printed tuple"),
    (re.compile(r"\{\s*(['\"][^'\"]*['\"]|\d+):\s"), "a printed dict"),
    (re.compile(r"\b(inf|nan)\s*%|\b1 lines\b|\btook 0\.0 s\b"), "a number that reads wrong"),
    (re.compile(r"\A\s*(['\"]).*\1\s*\Z", re.DOTALL), "a printed string (a cell's last call returned it)"),
]
CELL_OUTPUT = re.compile(r'<div class="cell_output[^"]*">(.*?)</div>\s*</div>\s*</div>', re.DOTALL)


@pytest.mark.book
@pytest.mark.parametrize("page", [entry for entry in toc_files() if entry.startswith("chapters/")])
def test_outputs_show_no_raw_reprs(book_build, page):
    _, _, html = book_build
    outputs = CELL_OUTPUT.findall(built_page(html, page).read_text())
    problems = []
    for output in outputs:
        text = visible_text(re.sub(r"<table\b.*?</table>", "", output, flags=re.DOTALL))
        for pattern, what in REPR_PATTERNS:
            found = pattern.search(text)
            if found:
                problems.append(f"{what}: {text[max(found.start() - 40, 0):found.end() + 40].strip()!r}")
    assert not problems, f"{page}: outputs a reader sees as raw reprs:\n" + "\n".join(problems[:20])


@pytest.mark.book
def test_glued_tables_are_numbered_as_tables(book_build):
    """A table shown with {glue:figure} and named tab-... reads "Table N.k", not "Fig." (_ext/glued_tables.py)."""
    _, _, html = book_build
    found = 0
    for page in [entry for entry in toc_files() if entry.startswith("chapters/")]:
        text = built_page(html, page).read_text()
        for figure in re.findall(r'<figure[^>]*id="tab-[^"]*"[^>]*>(.*?)</figure>', text, flags=re.DOTALL):
            found += 1
            number = re.search(r'<span class="caption-number">([^<]*)</span>', figure)
            assert number and number.group(1).startswith("Table"), f"{page}: a glued table numbered {number and number.group(1)!r}"
    assert found >= 2, "the chapters' glued tables (tab-att-jumps, tab-claims-verdicts) were not found"


# ---------------------------------------------------------------------------------------------
# The built book in a browser


BROWSER_PAGES = toc_files() + ["genindex"]


@pytest.fixture(scope="session")
def browser_reports(book_build, tmp_path_factory):
    """{(page, width): Chromium's report} for every built page, at a desktop and a phone width (one load of
    each page measured at both, tests/book_browser.py), from two Chromium processes side by side, each
    loading half of the pages (halves of about equal size in bytes, which is what typesetting them costs)."""
    chromium = find_chromium()
    if chromium is None:
        return None
    _, _, html = book_build
    profiles = tmp_path_factory.mktemp("chromium")
    files = sorted((html / f"{page}.html" for page in BROWSER_PAGES if (html / f"{page}.html").is_file()),
                   key=lambda path: -path.stat().st_size)
    halves = ([], [])
    for path in files:           # the largest page first, each to the half with fewer bytes so far
        min(halves, key=lambda half: sum(page.stat().st_size for page in half)).append(path)

    def measure(index):
        return measure_pages(chromium, halves[index], (DESKTOP, PHONE), profiles / str(index), BROWSER_TIMEOUT_S)

    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = [item for result in pool.map(measure, [i for i, half in enumerate(halves) if half])
                    for item in result.items()]
    return {(path.relative_to(html).with_suffix("").as_posix(), width): report
            for path, reports in measured for width, report in reports.items()}


def report_for(browser_reports, book_build, page, width):
    chromium_or_skip()
    _, _, html = book_build
    if not (html / f"{page}.html").is_file():
        if page in toc_files():
            pytest.fail(f"{page}.html was not built")
        pytest.skip(f"{page}.html is not part of this build")
    return browser_reports[(page, width)]


@pytest.mark.book
@pytest.mark.parametrize("page", BROWSER_PAGES)
def test_no_javascript_error_and_no_network_request_in_chromium(book_build, browser_reports, page):
    problems = []
    for width in (DESKTOP[0], PHONE[0]):
        report = report_for(browser_reports, book_build, page, width)
        problems += [f"at {width} px: {error}" for error in report["errors"]]
        problems += [f"at {width} px: requested {url}" for url in report["remote"]]
    assert not problems, f"{page}: the browser console reports:\n" + "\n".join(problems)


@pytest.mark.book
def test_the_index_lists_every_key_term_where_chapters_first_use_it(book_build):
    """_ext/results_index.py indexes each of KEY_TERMS at its first paragraph in every chapter that names it."""
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        from results_index import KEY_TERMS
    finally:
        sys.path.pop(0)
    _, _, html = book_build
    index = built_page(html, "genindex").read_text()
    entries = {html_lib.unescape(name): page for page, name in re.findall(
        r'<li><a href="([^"#]+)#index-term-\d+">([^<]+)</a>', index)}
    missing = sorted(set(KEY_TERMS) - set(entries))
    assert not missing, f"key terms with no index entry: {missing}"
    for name, page in entries.items():
        target = html / page
        assert target.is_file() and 'id="index-term-' in target.read_text(), f"{name}: {page} has no such target"
    assert entries["utility"].startswith("chapters/01_") and entries["irreducible representation (irrep)"].startswith(
        "chapters/09_"), "an index entry points at the wrong chapter"


SEARCH_PROBE = r"""<!doctype html><html><head><meta charset="utf-8">
<script src="_static/documentation_options.js"></script>
<script src="_static/doctools.js"></script>
<script src="_static/search_math.js"></script>
<script src="_static/searchtools.js"></script>
<script>
document.addEventListener("DOMContentLoaded", function () {
  var page = '<div role="main"><p>jump times scale like <span class="math notranslate nohighlight">' +
             '\\(\\log(1/\\alpha)\\)</span> as alpha shrinks</p></div>';
  var out = document.createElement("pre");
  out.id = "agf-snippet";
  out.textContent = Search.htmlToText(page, "");
  document.body.appendChild(out);
});
</script></head><body></body></html>"""


@pytest.mark.book
def test_search_snippets_show_no_tex_source(book_build, tmp_path):
    """Sphinx's search quotes a page's text from its HTML, where math is TeX until MathJax runs on the page:
    _static/search_math.js (loaded before searchtools.js on the search page) cuts math from the quote."""
    _, _, html = book_build
    search = (html / "search.html").read_text()
    assert 0 <= search.find("_static/search_math.js") < search.find("_static/searchtools.js"), \
        "search.html must load search_math.js before searchtools.js"
    chromium = chromium_or_skip()
    probe = html / "_agf_search_probe.html"
    probe.write_text(SEARCH_PROBE)
    try:
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                              f"--user-data-dir={tmp_path}", "--dump-dom", "--virtual-time-budget=5000",
                              probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    finally:
        probe.unlink()
    snippet = re.search(r'<pre id="agf-snippet">(.*?)</pre>', dom, re.DOTALL)
    assert snippet, f"the search probe page reported nothing:\n{dom[-2000:]}"
    text = html_lib.unescape(snippet.group(1))
    assert text == "jump times scale like … as alpha shrinks", text


@pytest.mark.book
@pytest.mark.parametrize("page", ["intro", "results"] + [entry for entry in toc_files() if entry.startswith("chapters/")])
def test_math_renders_offline_in_headless_chromium(book_build, browser_reports, page):
    math = report_for(browser_reports, book_build, page, DESKTOP[0])["math"]
    assert math["typeset"] > 0, f"{page}: MathJax typeset nothing (is MathJax loaded?)"
    assert not math["errors"], f"{page}: MathJax reports a TeX error: " + ", ".join(sorted(set(math["errors"])))
    undefined = sorted({text for text in math["undefined"] if re.fullmatch(r"\\[A-Za-z]+", text)})
    assert not undefined, f"{page}: undefined TeX macros {undefined} (add them to mathjax3_config in _config.yml)"
    assert not math["untypeset"], f"{page}: {math['untypeset']} math elements were left as raw TeX"


@pytest.mark.book
@pytest.mark.parametrize("page", [entry for entry in toc_files() if entry.startswith("chapters/")])
def test_figure_text_is_at_least_8_px_at_1280_and_at_390_px(book_build, browser_reports, page):
    """Each figure's smallest text, in CSS px as shown: its size in points (written into the PNG by
    agf_lib.plotting) × the PNG's dpi / 72 × displayed width / natural width, on a desktop and a phone."""
    from PIL import Image

    from agf_lib.plotting import MIN_FONT_KEY

    _, _, html = book_build
    page_dir = (html / page).parent
    problems = []
    for width in (DESKTOP[0], PHONE[0]):
        report = report_for(browser_reports, book_build, page, width)
        for image in report["images"]:
            path = (page_dir / image["src"]).resolve()
            if path.suffix.lower() != ".png":
                continue
            name = f"at {width} px: {image['figure'] or 'unnumbered figure'} {path.name[:12]}…"
            if not image["complete"] or not image["natural_width"]:
                problems.append(f"{name}: not loaded")
                continue
            with Image.open(path) as png:
                info = dict(png.info)
            if MIN_FONT_KEY not in info or "dpi" not in info:
                problems.append(f"{name}: not drawn with agf_lib.plotting.figure() after plotting.use_style() "
                                f"(no {MIN_FONT_KEY} in the PNG); its text size is unknown")
                continue
            scale = image["displayed_width"] / image["natural_width"]
            smallest_px = float(info[MIN_FONT_KEY]) / 72.0 * float(info["dpi"][0]) * scale
            if smallest_px < MIN_FIGURE_TEXT_PX:
                problems.append(
                    f"{name}: smallest text {smallest_px:.1f} px ({info[MIN_FONT_KEY]} pt at "
                    f"{float(info['dpi'][0]):.0f} dpi, {image['natural_width']} px shown at {image['displayed_width']:.0f} px)"
                )
    assert not problems, f"{page}: figure text under {MIN_FIGURE_TEXT_PX:g} px:\n" + "\n".join(problems)


@pytest.mark.book
@pytest.mark.parametrize("page", toc_files())
def test_code_is_set_at_a_readable_size(book_build, browser_reports, page):
    fonts = report_for(browser_reports, book_build, page, DESKTOP[0])["code_fonts"]
    small = sorted({size for size in fonts if size < MIN_CODE_PX})
    assert not small, f"{page}: code or output set at {small} px (at least {MIN_CODE_PX:g} px)"


@pytest.mark.book
@pytest.mark.parametrize("page", toc_files())
def test_code_and_output_lines_fit_the_column_at_1280_px(book_build, browser_reports, page):
    """No code cell, printed output or table is wider than its block at a 1280 px window: a reader would
    see its lines or columns cut off (the book's lines are at most 100 characters; _static/outputs.css
    sizes them)."""
    wide = report_for(browser_reports, book_build, page, DESKTOP[0])["wide_code"]
    assert not wide, f"{page}: {len(wide)} code, output or table blocks wider than the column at {DESKTOP[0]} px:\n" + "\n".join(
        wide[:20]
    )


@pytest.mark.book
@pytest.mark.parametrize("page", toc_files())
def test_phone_layout_keeps_math_and_text_on_screen(book_build, browser_reports, page):
    report = report_for(browser_reports, book_build, page, PHONE[0])
    assert report["viewport"] == PHONE[0], f"the page was laid out {report['viewport']} px wide, not {PHONE[0]}"
    assert report["scroll_width"] <= PHONE[0], f"{page} at {PHONE[0]} px: the page is {report['scroll_width']} px wide"
    assert not report["clipped_math"], f"{page} at {PHONE[0]} px: equations cut off with no scroll cue:\n" + "\n".join(
        report["clipped_math"][:20]
    )
    assert not report["overflow"], f"{page} at {PHONE[0]} px: content off the screen or under an equation number:\n" + "\n".join(
        report["overflow"][:20]
    )


@pytest.mark.book
@pytest.mark.parametrize("page", toc_files())
def test_punctuation_after_a_formula_stays_on_its_line(book_build, browser_reports, page):
    """_static/math_punctuation.js binds each inline formula to the punctuation around it."""
    problems = []
    for width in (DESKTOP[0], PHONE[0]):
        report = report_for(browser_reports, book_build, page, width)
        problems += [f"at {width} px: {item}" for item in report["orphaned_punctuation"]]
    assert not problems, f"{page}: lines that start with punctuation after a formula:\n" + "\n".join(problems[:20])


# ---------------------------------------------------------------------------------------------
# The student edition and the launch buttons: quick builds without execution (only text is checked)


@pytest.fixture(scope="session")
def student_build(tmp_path_factory):
    """The student edition of the landing page and the chapters (the pages its tests read), not executed: the
    library page, the API reference and the back matter, which hold no exercise, are left out to save time."""
    output = tmp_path_factory.mktemp("student")
    toc = output / "_toc.yml"
    toc.write_text(yaml.safe_dump({"format": "jb-book", "root": "intro",
                                   "chapters": [{"file": f"chapters/{path.stem}"} for path in CHAPTERS]},
                                  sort_keys=False))
    returncode, log = run_build(
        [sys.executable, str(ROOT / "tools" / "build_student_edition.py"), "--no-execute", "--path-output", str(output),
         "--toc", str(toc), "--all"]
    )
    return returncode, log, output / "_build" / "html"


@pytest.mark.book
@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_student_edition_has_every_exercise_and_no_solution(student_build, notebook):
    """(It needs no execution of the chapters, and runs apart from the book build, on either test worker:
    tests/chapter_runs.py schedules it as a unit of its own.)"""
    returncode, log, html = student_build
    assert returncode == 0, f"the student edition failed to build:\n{log[-3000:]}"
    assert not READ_PROCESSES.search(log), "a build that executes nothing must read in one process"
    page = (html / "chapters" / f"{notebook.stem}.html").read_text()
    exercises, fingerprints = source_exercises(notebook)
    shown = len(re.findall(r'<div class="exercise\b', page))
    assert shown == exercises, f"{notebook.name}: {exercises} exercises in the chapter, {shown} in the student edition"
    assert 'class="solution' not in page, f"{notebook.name}: a solution block is in the student edition"
    text = " ".join(visible_text(article_html(page)).split())
    leaked = [line for line in fingerprints if " ".join(line.split()) in text]
    assert not leaked, f"{notebook.name}: solution text in the student edition:\n" + "\n".join(leaked[:10])
    # the page's download button offers the notebook: it must not carry the solutions either
    download = html / "_sources" / "chapters" / notebook.name
    assert download.is_file(), f"{notebook.name}: the student edition offers no notebook to download"
    cells = json.loads(download.read_text())["cells"]
    source = "\n".join("".join(cell["source"]) for cell in cells)
    assert not re.search(r"\{solution(-start|-end)?\}", source), f"{download.name}: a solution directive in the download"
    flat = " ".join(source.split())
    leaked = [line for line in fingerprints if " ".join(line.split()) in flat]
    assert not leaked, f"{download.name}: solution text in the downloadable notebook:\n" + "\n".join(leaked[:10])
    assert len(re.findall(r"\{exercise(?:-start)?\}", source)) == exercises, f"{download.name}: exercises lost"
    assert "student edition" in page


@pytest.mark.book
@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_the_solutions_that_the_student_edition_must_hide_are_on_the_book_pages(book_build, notebook):
    """The fingerprints that test_student_edition_has_every_exercise_and_no_solution looks for are text the
    book itself shows: otherwise that test would see no leak."""
    _, fingerprints = source_exercises(notebook)
    book_page = book_build[2] / "chapters" / f"{notebook.stem}.html"
    if not fingerprints or not book_page.is_file():
        pytest.skip(f"{notebook.name}: no solution text to look for" if not fingerprints else "page not built")
    book_text = " ".join(visible_text(article_html(book_page.read_text())).split())
    assert any(" ".join(line.split()) in book_text for line in fingerprints), (
        f"{notebook.name}: none of its solution lines is found in the book itself: the student edition's test "
        "would see no leak"
    )


def book_config(folder, **execute):
    """A copy of _config.yml written into ``folder`` (``execute`` keys replaced), for ``jupyter-book build
    --config``: its local extensions' folders, which jupyter-book reads relative to the configuration file,
    made absolute. Returns (the configuration, its path); write it again after changing it."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"].update(execute)
    config["sphinx"]["local_extensions"] = {name: str(ROOT / path) for name, path in
                                            config["sphinx"]["local_extensions"].items()}
    path = folder / "_config.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return config, path


@pytest.mark.book
def test_launch_buttons_appear_once_repository_url_is_set(tmp_path):
    """A build of the landing page and the first chapter alone (without execution) is enough to see the
    buttons: it takes seconds where the whole book takes a minute."""
    jupyter_book = find_jupyter_book()
    config, path = book_config(tmp_path, execute_notebooks="off")
    config["repository"]["url"] = "https://github.com/example-owner/example-book"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    toc = tmp_path / "_toc.yml"
    toc.write_text(yaml.safe_dump({"format": "jb-book", "root": "intro",
                                   "chapters": [{"file": f"chapters/{CHAPTERS[0].stem}"}]}, sort_keys=False))
    output = tmp_path / "book"
    returncode, log = run_build(
        [jupyter_book, "build", str(ROOT), "--config", str(path), "--toc", str(toc), "--path-output", str(output), "--all"]
    )
    assert returncode == 0, f"the build with repository.url set failed:\n{log[-3000:]}"
    page = (output / "_build" / "html" / "chapters" / f"{CHAPTERS[0].stem}.html").read_text()
    assert "mybinder.org/v2/gh/example-owner/example-book" in page, "no Binder launch button"
    assert "colab.research.google.com" not in page, "a Colab button, though Colab would lack agf_lib"
