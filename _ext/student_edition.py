"""Sphinx extension: the student edition, built without solutions (``hide_solutions = True``).

sphinx-exercise's own ``hide_solutions`` drops a ``{solution}`` directive, but of the gated form
(``{solution-start}`` ... ``{solution-end}``, used when a solution has code cells) it drops only the
opening directive: the cells up to ``{solution-end}`` stay on the page, with no dropdown around
them. Here, with ``hide_solutions`` on, ``{solution-start}`` leaves a marker, and a transform removes
everything from the marker to its ``{solution-end}``.

Build the student edition with ``python tools/build_student_edition.py`` (see README.md).
"""

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


def setup(app):
    app.setup_extension("sphinx_exercise")
    app.add_directive("solution-start", HidableSolutionStartDirective, override=True)
    app.add_transform(RemoveHiddenGatedSolutions)
    app.add_node(hidden_solution_start)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
