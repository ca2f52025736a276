"""Execute the chapters in parallel: Sphinx reads documents in ``min(cpu_count, 4)`` processes (HTML builds).

jupyter-book 1.x runs Sphinx without a ``-j`` option, and myst-nb executes a notebook while Sphinx reads it,
so the chapters would run one after another on one core. This sets what ``sphinx-build -j N`` sets, the
application's ``parallel``, before the read starts. Each kernel gets one BLAS thread, the processes already
sharing the cores.

Sphinx would cut the documents into contiguous chunks of ``len(docnames) // N`` and read each chunk in a
process of its own, N at a time, which fixes before the read which chapters run one after another: with the
chapters' times known only in proxy, one process was left alone with the last 10 to 13 s of chapters (the
README's build on the 2-core machine, 2026-12-06). Here each document is a chunk of its own, so a process that
ends takes the next document: the heaviest ``N`` start first, and the rest are queued lightest first, since
Sphinx starts queued chunks last in, first out (``sphinx.util.parallel.ParallelTasks``). A document's weight,
the length of its code plus a constant for its kernel, only orders the queue. Each extra chunk costs a fork
and its environment pickled both ways, 0.7 MB (``detach_exercise_copies``), about 0.01 s each way.

Sphinx then writes in ``N - 1`` child processes while the main one resolves each document. With ``N = 2``
that is one child, which only adds the pickling of every doctree to a serial write: the write took 12.2 s
that way against 8.1 s serially (2-core machine, 2026-12-06, the book's 19 documents), so two processes read
in parallel and write serially.

Sphinx reads in parallel only when every extension declares itself safe. Three that the book loads do not
declare it and are safe for HTML (see ``SAFE_UNDECLARED``); sphinx_proof declares it but its domain lacks
the merge Sphinx then calls, which is supplied below. Other builders (the PDF) and builds that execute no
notebook read serially, and so does every build with ``AGF_BOOK_PROCESSES=1`` in the environment (any
positive integer sets the number; the test run's build, whose chapters come from nbval's runs, sets 1). The
build log says ``parallel_read: reading in N processes``; the book test reports the build's wall time with it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import sphinx.builders
import sphinx.util.parallel
from sphinx.util import logging

logger = logging.getLogger(__name__)

MAX_PROCESSES = 4


def processes():
    """``AGF_BOOK_PROCESSES`` if set (1 reads serially), else one process per core, at most ``MAX_PROCESSES``."""
    chosen = os.environ.get("AGF_BOOK_PROCESSES", "").strip()
    if chosen:
        if not chosen.isdigit() or int(chosen) < 1:
            raise ValueError(f"AGF_BOOK_PROCESSES must be a positive integer, got {chosen!r}")
        return int(chosen)
    return max(1, min(os.cpu_count() or 1, MAX_PROCESSES))


KERNEL_CHARS = 7000
"""A notebook's kernel start and imports, in characters of code: about 2 s, at the 0.28 ms a character that
the chapters' code took to run on the 2-core machine (2026-12-06, 4.9 to 18.2 s a chapter)."""

CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _cost(env, docname):
    """A document's execution time, in proxy: the characters of its code cells plus ``KERNEL_CHARS``, for a
    notebook (``.ipynb``) or a MyST notebook (``{code-cell}`` blocks); 0 for a page without code."""
    path = Path(env.doc2path(docname))
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        code = ["".join(cell.get("source", "")) for cell in cells if cell.get("cell_type") == "code"]
    elif path.suffix == ".md":
        code = CODE_CELL.findall(path.read_text(encoding="utf-8"))
    else:
        code = []
    return sum(map(len, code)) + KERNEL_CHARS if code else 0


def _one_document_each(arguments, nproc, maxbatch=10):
    """``sphinx.util.parallel.make_chunks`` for the read: every document a chunk of its own."""
    return [[argument] for argument in arguments]


def schedule_documents(app, env, docnames):
    """Read each document in a process of its own, the heaviest first: reorder ``docnames`` in place (the
    ``nproc`` heaviest, then the rest lightest first, for Sphinx's last-in first-out queue) and give Sphinx's
    read single-document chunks until the read ends (``restore_chunks``)."""
    nproc = app.parallel
    if nproc < 2 or len(docnames) <= 5:      # Sphinx reads five documents or fewer serially
        return
    ranked = sorted(docnames, key=lambda name: -_cost(env, name))
    docnames[:] = ranked[:nproc] + ranked[nproc:][::-1]
    sphinx.builders.make_chunks = _one_document_each


def restore_chunks(app, env):
    """After the read: Sphinx's own chunks again (for a parallel write)."""
    sphinx.builders.make_chunks = sphinx.util.parallel.make_chunks


def detach_exercise_copies(app, doctree):
    """sphinx-exercise keeps every exercise and solution node of a page in the environment: exercises as
    copies, solutions as the nodes themselves. Both point into the page (docutils' copies keep its
    document), so pickled, each drags its whole page along: 580 kB for one solution of chapter 09, 3.9 of
    the environment's 6.6 MB. Every reading process pickles its environment for the main one to merge, so
    once a page is read, its entries become copies that point nowhere. For HTML, sphinx-exercise reads only
    their attributes and children (its LaTeX path walks ``parent``: other builders keep the nodes)."""
    env = app.env
    if app.builder.format != "html":
        return
    for entry in getattr(env, "sphinx_exercise_registry", {}).values():
        if entry.get("docname") == env.docname:
            entry["node"] = copy = entry["node"].deepcopy()
            for part in copy.findall():
                part._document = None


def write_serially_with_one_writer(app, builder):
    """Sphinx's parallel write with ``app.parallel = 2`` has one child process: write serially instead."""
    if app.parallel <= 2:
        builder.parallel_ok = False


# Extensions the book loads that do not declare themselves parallel-read safe but are, for the HTML builder
# (read in their pinned versions): jupyter-book's sphinx_multitoc_numbering only replaces
# TocTreeCollector.assign_section_numbers, which numbers the sections on the merged environment after the
# read; sphinx-mathjax-offline only sets mathjax_path and copies MathJax at build-finished;
# sphinx_jupyterbook_latex acts only under a LaTeX builder. None keeps state while documents are read.
SAFE_UNDECLARED = ("sphinx_multitoc_numbering", "sphinx-mathjax-offline", "sphinx_jupyterbook_latex")


def declare_safe(app):
    """HTML builds that execute notebooks read in parallel; others (the PDF, or a build that executes
    nothing, such as the student edition's quick look) keep Sphinx's serial read: reading alone, the
    processes' forks and merges cost more than they save (7.0 core-s and 7.1 s serially against 8.6 core-s and
    7.4 s in two processes for the student edition's chapters, 2-core machine, 2026-12-06)."""
    if app.builder.format != "html" or getattr(app.config, "nb_execution_mode", None) == "off":
        app.parallel = 1
        return
    if app.parallel > 1:
        logger.info(f"parallel_read: reading in {app.parallel} processes")
    for name in SAFE_UNDECLARED:
        extension = app.extensions.get(name)
        if extension is not None and extension.parallel_read_safe is None:
            extension.parallel_read_safe = True
    # sphinx_proof declares itself safe, but its domain ("prf") lacks merge_domaindata, which Sphinx calls
    # when it merges the processes' environments. The domain keeps nothing per document in its data (its
    # proofs live in env.proof_list, which sphinx_proof merges itself), so there is nothing to merge.
    proof_domain = app.env.domains.get("prf")
    if proof_domain is not None and set(proof_domain.data) <= {"version"}:
        proof_domain.merge_domaindata = lambda docnames, otherdata: None


def setup(app):
    if app.parallel <= 1:
        app.parallel = processes()
    if app.parallel > 1:
        # one BLAS thread per kernel: the processes already share the cores (kernels start with this
        # environment; a variable the caller set is kept)
        for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
    app.connect("builder-inited", declare_safe)
    app.connect("env-before-read-docs", schedule_documents)
    app.connect("env-updated", restore_chunks)
    app.connect("doctree-read", detach_exercise_copies)
    app.connect("write-started", write_serially_with_one_writer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
