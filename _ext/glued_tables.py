"""Sphinx extension: a table glued with ``{glue:figure}`` and named ``tab-...`` is numbered as a table.

A chapter shows a computed table (``agf_lib.book.table(..., name=...)``) with a caption through
myst-nb's ``{glue:figure}``, which makes a figure: its caption would read "Fig. 10.3" and the figures
after it would count it. Here such a figure, recognised by its label (``:name: tab-...``), becomes a
node that Sphinx numbers among the tables ("Table 10.1", and ``{numref}`` says so too) and that is
written as the same ``<figure>`` element, with the class ``agf-glued-table``.
"""

from docutils import nodes
from sphinx.transforms import SphinxTransform


class glued_table(nodes.figure):
    """A captioned table from a glued output, numbered as a table (a figure in every other respect)."""


def _caption_text(node):
    caption = next(iter(node.findall(nodes.caption)), None)
    return caption.astext() if caption is not None else ""


class NumberGluedTablesAsTables(SphinxTransform):
    # After the document is parsed, before Sphinx collects the numbered nodes (environment, after reading).
    default_priority = 500

    def apply(self):
        for figure in list(self.document.findall(nodes.figure)):
            if not any(name.startswith("tab-") for name in figure["names"]):
                continue
            table = glued_table("", *figure.children, ids=figure["ids"], names=figure["names"],
                                classes=[*figure["classes"], "agf-glued-table"])
            table.source, table.line = figure.source, figure.line
            figure.replace_self(table)
            for node_id in table["ids"]:        # {numref} looks its target up by id
                self.document.ids[node_id] = table


def visit_glued_table(self, node):
    self.body.append(self.starttag(node, "figure"))


def depart_glued_table(self, node):
    self.body.append("</figure>\n")


def setup(app):
    app.add_enumerable_node(glued_table, "table", _caption_text, html=(visit_glued_table, depart_glued_table))
    app.add_transform(NumberGluedTablesAsTables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
