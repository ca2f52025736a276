"""pytest plugin (loaded with ``-p chapter_runs``): nbval's runs of the chapters, kept for the book build.

``python -m pytest`` collects ``chapters/`` with nbval (one test per code cell, ``chapters/NN_slug.ipynb::Cell k``,
one kernel per chapter) and ``tests/``. nbval executes each chapter once and keeps nothing; this plugin puts
each cell's outputs (``item.test_outputs``, the messages nbval read from the kernel) back into the notebook
nbval read, and once every code cell of a chapter has run, writes the executed notebook to a directory shared
by the test workers (``executed_dir``), with ``NN_slug.json`` beside it: the seconds its cells took (kernel
start and stop included) and the cells that failed. tests/test_book.py builds the book from these notebooks
(jupyter-book's ``execute_notebooks: cache``, the cache filled with them) instead of executing the chapters a
second time.

nbval's kernel runs each cell with the kernel's history on, as Jupyter and nbclient do (nbval turns it off:
then a cell ending in ``f(...);`` would show its result, and the book would show it too).

Order: the chapters are collected first (heaviest first), then the book build's tests, then the student
edition's and the launch buttons' tests (units of their own, ``APART``: they execute no chapter), then the
unit tests, and xdist keeps that order (``--dist loadfile --no-loadscope-reorder``, with the scheduler below):
every chapter is handed to a worker before the book tests are, so the worker running the book tests waits
at most for the chapters still running on the other worker (and never for one queued behind itself), while
the other worker goes on to the rest. Where not every chapter's cells are in the session (a chapter or
``-k`` on the command line, ``tests/`` alone), ``chapters_in_session`` is empty and the
book build executes the chapters itself, as the README's build command does. If a chapter's run never
arrives (no new one for 600 s), the build executes the missing ones itself. ``AGF_EXECUTED_CHAPTERS=DIR``
keeps the executed notebooks in DIR after the run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS_DIR = ROOT / "chapters"
DIR_KEY = "agf_executed_chapters"      # the shared directory's path, in xdist's workerinput
KEEP_VARIABLE = "AGF_EXECUTED_CHAPTERS"  # a directory to write them to and keep (default: a temporary one)
_CHAPTERS = pytest.StashKey[frozenset]()
_DIR = pytest.StashKey[Path]()
_OWNS_DIR = pytest.StashKey[bool]()
_RUNS = pytest.StashKey[dict]()


def _is_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "cell_num")


def _is_chapter_cell(item) -> bool:
    return _is_cell(item) and Path(str(item.fspath)).parent == CHAPTERS_DIR


def _is_book_test(item) -> bool:
    return Path(str(item.fspath)).name == "test_book.py"


def executed_dir(config) -> Path:
    """The directory where the chapters' executed copies are written (shared by the xdist workers)."""
    return config.stash[_DIR]


def chapters_in_session(config) -> frozenset:
    """Stems of the chapters all of whose code cells this session runs with nbval (empty where some chapter's
    cells are not all in the session: the book build then executes the chapters itself)."""
    return config.stash.get(_CHAPTERS, frozenset())


def wait_for_executed_chapters(config, stems, stall_timeout_s=600.0, poll_s=0.5):
    """``{stem: (notebook path, {"seconds", "failed"})}`` once every chapter of ``stems`` has been written by its
    nbval run, or as many as were written when none arrived for ``stall_timeout_s`` seconds (the build then
    executes the missing ones itself)."""
    folder, found = executed_dir(config), {}
    last_progress = time.monotonic()
    while True:
        for stem in sorted(set(stems) - set(found)):
            notebook = folder / f"{stem}.ipynb"
            if notebook.is_file():          # written after its .json, each by an atomic rename
                found[stem] = (notebook, json.loads((folder / f"{stem}.json").read_text()))
                last_progress = time.monotonic()
        if len(found) == len(stems) or time.monotonic() - last_progress > stall_timeout_s:
            return found
        time.sleep(poll_s)


def _execute_as_jupyter_does(self, cell_input, allow_stdin=None):
    """nbval's RunningKernel.execute_cell_input, with the kernel's history on (``store_history=True``), as
    Jupyter and nbclient (the book build's executor) run a cell: IPython reads a cell's trailing ``;`` (no
    result shown) from that history, so without it every cell ending in ``f(...);`` would show its result."""
    return self.kc.execute(cell_input, store_history=True, allow_stdin=allow_stdin, stop_on_error=False)


def pytest_configure(config):
    from nbval.kernel import RunningKernel

    RunningKernel.execute_cell_input = _execute_as_jupyter_does
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and DIR_KEY in workerinput:
        config.stash[_DIR] = Path(workerinput[DIR_KEY])
        config.stash[_OWNS_DIR] = False
    elif os.environ.get(KEEP_VARIABLE):     # kept after the run, to read the executed notebooks
        config.stash[_DIR] = Path(os.environ[KEEP_VARIABLE]).resolve()
        config.stash[_DIR].mkdir(parents=True, exist_ok=True)
        for stale in [*config.stash[_DIR].glob("*.ipynb"), *config.stash[_DIR].glob("*.json")]:
            stale.unlink()      # an earlier run's notebooks must not stand for this run's
        config.stash[_OWNS_DIR] = False
    else:   # the xdist controller, or a run without workers: a fresh directory, removed at the end
        config.stash[_DIR] = Path(tempfile.mkdtemp(prefix="agf-executed-chapters-"))
        config.stash[_OWNS_DIR] = True
    config.stash[_RUNS] = {}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist (controller): the workers write to, and read from, the controller's directory."""
    node.workerinput[DIR_KEY] = str(executed_dir(node.config))


def pytest_unconfigure(config):
    if config.stash.get(_OWNS_DIR, False):
        shutil.rmtree(config.stash[_DIR], ignore_errors=True)


def pytest_itemcollected(item):
    """The chapters' cells carry the marker ``book`` (before -m selects): ``-m "not book"`` runs the unit
    tests alone, ``-m book`` the chapters and the book built from them."""
    if _is_chapter_cell(item):
        item.add_marker(pytest.mark.book)


# Units of tests/test_book.py that need no execution of the chapters: xdist may run them on either worker,
# apart from the book build (each builds a book of its own, without executing a chapter).
APART = ("test_student_edition_has_every_exercise_and_no_solution", "test_launch_buttons_appear_once_repository_url_is_set")


def _apart(nodeid):
    """The unit of its own that a test of tests/test_book.py runs in, or None (the book build's unit)."""
    if not nodeid.startswith("tests/test_book.py::"):
        return None
    name = nodeid.split("::", 1)[1].split("[", 1)[0]
    return name if name in APART else None


def _code_length(notebook):
    """A chapter's execution cost, in proxy: the characters of its code (as _ext/parallel_read.py weighs it, less the
    constant it adds for every kernel)."""
    return sum(len(cell.source) for cell in notebook.nb.cells if cell.cell_type == "code")


@pytest.hookimpl(trylast=True)      # after -m/-k deselection: `items` is what this session runs
def pytest_collection_modifyitems(config, items):
    """The chapters first, heaviest first (so that the last chapter running beside the book test's wait is a
    short one), then the book build's tests, the book tests that run apart, and the rest in their order."""
    chapters = [item for item in items if _is_chapter_cell(item)]
    chapters.sort(key=lambda item: -_code_length(item.parent))        # stable: cells keep their order
    book = [item for item in items if _is_book_test(item) and _apart(item.nodeid) is None]
    apart = [item for item in items if _is_book_test(item) and _apart(item.nodeid) is not None]
    others = [item for item in items if not _is_chapter_cell(item) and not _is_book_test(item)]
    items[:] = chapters + book + apart + others
    # a chapter is in the session when every one of its code cells is
    cells = {}
    for item in chapters:
        cells.setdefault(item.parent, set()).add(item.cell_num)
    complete = {Path(str(notebook.fspath)).stem for notebook, numbers in cells.items()
                if len(numbers) == sum(cell.cell_type == "code" for cell in notebook.nb.cells)}
    every = {path.stem for path in CHAPTERS_DIR.glob("*.ipynb")}
    config.stash[_CHAPTERS] = frozenset(complete) if complete == every else frozenset()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with the tests of ``APART`` in units of their own (xdist's own scheduler otherwise:
    one unit per file, handed out in the order collected under ``--no-loadscope-reorder``)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class BookScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return _apart(nodeid) or super()._split_scope(nodeid)

    return BookScheduling(config, log)


def _run(item):
    """What this process knows of the run of ``item``'s chapter: seconds so far, cells run, cells failed."""
    return item.config.stash[_RUNS].setdefault(item.parent, {"seconds": 0.0, "cells": set(), "failed": []})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if _is_chapter_cell(item) and report.failed and item.name not in _run(item)["failed"]:
        _run(item)["failed"].append(item.name)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _is_chapter_cell(item):
        return (yield)
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        run = _run(item)
        run["seconds"] += time.perf_counter() - start
        run["cells"].add(item.cell_num)
        # nbval filled item.test_outputs with what the kernel sent (None where the cell did not run)
        item.cell.outputs = [nbformat.from_dict(dict(output)) for output in (item.test_outputs or [])]
        item.cell.execution_count = item.cell_num + 1
        for output in item.cell.outputs:
            if output.output_type == "execute_result":
                output.execution_count = item.cell.execution_count
        if nextitem is None or nextitem.parent is not item.parent:
            _write_executed(item.config, item.parent, run)


def _write_executed(config, notebook, run):
    total = sum(cell.cell_type == "code" for cell in notebook.nb.cells)
    if len(run["cells"]) != total:      # some cells were deselected: no complete run to keep
        return
    path = Path(str(notebook.fspath))
    executed = nbformat.from_dict(notebook.nb)
    # the metadata a kernel reports (nbclient writes it into a notebook it executes; myst-nb picks the code
    # lexer, ipython3, from it)
    from ipykernel.ipkernel import IPythonKernel

    executed.metadata["language_info"] = dict(IPythonKernel.language_info)
    folder = executed_dir(config)
    _atomic_write(folder / f"{path.stem}.json", json.dumps({"seconds": run["seconds"], "failed": run["failed"]}))
    _atomic_write(folder / path.name, nbformat.writes(executed))


def _atomic_write(path, text):
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
