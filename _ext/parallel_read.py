"""Execute the chapters in parallel: Sphinx reads documents in ``min(cpu_count, 4)`` processes (HTML builds).

jupyter-book 1.x runs Sphinx without a ``-j`` option, and myst-nb executes a notebook while Sphinx reads it,
so the chapters would run one after another on one core. This sets what ``sphinx-build -j N`` sets, the
application's ``parallel``, before the read starts. Sphinx then cuts the documents into contiguous chunks of
equal length and reads each in a process of its own, N at a time. The documents are reordered first:
heaviest notebook first, each into the chunk with the least work so far (the length of a notebook's code
stands for its execution time; text pages count as nothing), so that no process is left alone with the slowest
chapters. Each kernel gets one BLAS thread, the processes already sharing the cores.

Sphinx reads in parallel only when every extension declares itself safe. Three that the book loads do not
declare it and are safe for HTML (see ``SAFE_UNDECLARED``); sphinx_proof declares it but its domain lacks
the merge Sphinx then calls, which is supplied below. Other builders (the PDF) read serially, and so does
every build with ``AGF_BOOK_PROCESSES=1`` in the environment (any positive integer sets the number). The
build log says ``parallel_read: reading in N processes``; the book test reports the build's wall time with it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

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


def _cost(env, docname):
    """A notebook's execution time, in proxy: the characters of its code cells (text pages: 0). On the book's
    eleven chapters this splits their measured times 78/74 s between two processes, where their sizes on disk
    (long prose weighs as much as code) split them 84/68 s."""
    path = Path(env.doc2path(docname))
    if path.suffix != ".ipynb":
        return 0
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    return sum(len("".join(cell.get("source", ""))) for cell in cells if cell.get("cell_type") == "code")


def balance_chunks(app, env, docnames):
    """Reorder ``docnames`` in place so that Sphinx's contiguous chunks carry about equal work."""
    nproc = app.parallel
    if nproc < 2 or len(docnames) <= 5:
        return
    size = len(docnames) // nproc            # Sphinx's chunk length (sphinx.util.parallel.make_chunks)
    if size < 1 or size >= 10:
        return
    full, rest = divmod(len(docnames), size)
    capacity = [size] * full + ([rest] if rest else [])
    chunks, load = [[] for _ in capacity], [0] * len(capacity)
    for docname in sorted(docnames, key=lambda name: -_cost(env, name)):
        open_chunks = [k for k in range(len(chunks)) if len(chunks[k]) < capacity[k]]
        k = min(open_chunks, key=lambda k: load[k])
        chunks[k].append(docname)
        load[k] += _cost(env, docname)
    docnames[:] = [name for chunk in chunks for name in chunk]


# Extensions the book loads that do not declare themselves parallel-read safe but are, for the HTML builder
# (read in their pinned versions): jupyter-book's sphinx_multitoc_numbering only replaces
# TocTreeCollector.assign_section_numbers, which numbers the sections on the merged environment after the
# read; sphinx-mathjax-offline only sets mathjax_path and copies MathJax at build-finished;
# sphinx_jupyterbook_latex acts only under a LaTeX builder. None keeps state while documents are read.
SAFE_UNDECLARED = ("sphinx_multitoc_numbering", "sphinx-mathjax-offline", "sphinx_jupyterbook_latex")


def declare_safe(app):
    """HTML builds read in parallel; others (the PDF) keep Sphinx's serial read."""
    if app.builder.format != "html":
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
    app.connect("env-before-read-docs", balance_chunks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
