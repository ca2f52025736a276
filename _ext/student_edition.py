"""Sphinx extension: the student edition, built without solutions (``hide_solutions = True``).

sphinx-exercise's own ``hide_solutions`` drops a ``{solution}`` directive, but of the gated form
(``{solution-start}`` ... ``{solution-end}``, used when a solution has code cells) it drops only the
opening directive: the cells up to ``{solution-end}`` stay on the page, with no dropdown around
them. Here, with ``hide_solutions`` on, ``{solution-start}`` leaves a marker, and a transform removes
everything from the marker to its ``{solution-end}``.

The page's download button offers the notebook itself (``_sources/chapters/NN_slug.ipynb``): once the
build is done, the copies under ``_sources`` lose their solutions too (:func:`strip_solutions`).

Build the student edition with ``python tools/build_student_edition.py`` (see README.md).
"""

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx_exercise.directive import SolutionStartDirective
from sphinx_exercise.nodes import solution_end_node


class hidden_solution_start(nodes.Element):
    """Where a gated solution began; removed with everything up to its solution-end."""


class HidableSolutionStartDirective(SolutionStartDirective):
    def run(self):
        produced = super().run()
        if not self.env.app.config.hide_solutions:
            return produced
        return [hidden_solution_start()]


class RemoveHiddenGatedSolutions(SphinxTransform):
    # Before sphinx-exercise merges gated directives (priority 10).
    default_priority = 9

    def apply(self):
        for marker in list(self.document.findall(hidden_solution_start)):
            parent = marker.parent
            start = parent.index(marker)
            end = next(
                (i for i in range(start + 1, len(parent.children)) if isinstance(parent.children[i], solution_end_node)),
                None,
            )
            if end is None:
                raise ValueError(f"{self.env.docname}: a solution-start has no solution-end after it")
            del parent.children[start : end + 1]


SOLUTION_BLOCK = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}.*?^(?P=fence)[ \t]*$\n?", re.M | re.S)
GATE_START = re.compile(r"^(`{3,}|:{3,})\{solution-start\}", re.M)
GATE_END = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-end\}[^\n]*\n(?P=fence)[ \t]*$\n?", re.M)


def strip_solutions(cells):
    """The notebook ``cells`` without solutions: ``{solution}`` blocks, and everything (text and code
    cells) from a ``{solution-start}`` to its ``{solution-end}``."""
    kept, inside = [], False
    for cell in cells:
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] != "markdown":
            if not inside:
                kept.append(cell)
            continue
        out = ""
        while text:
            if inside:
                end = GATE_END.search(text)
                if end is None:
                    text = ""
                    break
                text, inside = text[end.end():], False
                continue
            start = GATE_START.search(text)
            head = text if start is None else text[: start.start()]
            out += SOLUTION_BLOCK.sub("", head)
            if start is None:
                break
            text, inside = text[start.start():], True
        if out.strip():
            kept.append({**cell, "source": out})
    return kept


def strip_downloadable_solutions(app, exception):
    if exception is not None or not app.config.hide_solutions or app.builder.format != "html":
        return
    for path in Path(app.outdir, "_sources").rglob("*.ipynb"):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        notebook["cells"] = strip_solutions(notebook["cells"])
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False), encoding="utf-8")


def setup(app):
    app.setup_extension("sphinx_exercise")
    app.add_directive("solution-start", HidableSolutionStartDirective, override=True)
    app.add_transform(RemoveHiddenGatedSolutions)
    app.add_node(hidden_solution_start)
    app.connect("build-finished", strip_downloadable_solutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
