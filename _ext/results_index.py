"""Sphinx extension: an index of the book's results, and their names in the general index.

- Every numbered sphinx-proof directive (definition, lemma, proposition, theorem, algorithm, ...)
  that has a title gets an entry in the general index under that title (titles with math are left
  out: an index entry is plain text and would show raw TeX).
- The directive ``{results-index}`` lists every numbered result, chapter by chapter, as
  "Theorem 2.3 (title)" linked to the result; results.md puts it in the back matter.
- sphinx-proof's own index page (prf-prf.html) lists bare labels such as ``thm-fw-polar`` and is not
  written: the results index replaces it.
"""

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util.docutils import SphinxDirective
from sphinx_proof.domain import ProofDomain


class results_index_placeholder(nodes.General, nodes.Element):
    """Replaced by the list of results once every number is known."""


class ResultsIndexDirective(SphinxDirective):
    has_content = False

    def run(self):
        return [results_index_placeholder()]


def _results(env):
    if not hasattr(env, "agf_results"):
        env.agf_results = {}
    return env.agf_results


class CollectResults(SphinxTransform):
    """Remember each numbered result of the page, and put its title into the general index."""

    # Before Sphinx's domains read the page's index entries (SphinxDomains, priority 850).
    default_priority = 800

    def apply(self):
        collect_results(self.env, self.document)


def collect_results(env, doctree):
    results = _results(env)
    for seq, node in enumerate(list(doctree.findall(nodes.Element))):
        if "countertype" not in node.attributes or not node.get("label") or not node["ids"]:
            continue
        if type(node).__name__ == "unenumerable_node":
            continue
        title = next(iter(node.findall(nodes.title)), None)
        title_children = [child.deepcopy() for child in title.children] if title is not None else []
        results[node["label"]] = {
            "docname": env.docname,
            "type": node["realtype"],
            "countertype": node["countertype"],
            "id": node["ids"][0],
            "title": title_children,
            "seq": seq,
        }
        name = title.astext().strip().strip("()").strip() if title is not None else ""
        if name and not any(True for _ in title.findall(nodes.math)):
            entry = addnodes.index(entries=[("single", name, node["ids"][0], "", None)])
            node.parent.insert(node.parent.index(node), entry)


def purge_results(app, env, docname):
    results = _results(env)
    for label in [label for label, result in results.items() if result["docname"] == docname]:
        del results[label]


def merge_results(app, env, docnames, other):
    _results(env).update({label: r for label, r in _results(other).items() if r["docname"] in docnames})


def render_results_index(app, doctree, fromdocname):
    placeholders = list(doctree.findall(results_index_placeholder))
    if not placeholders:
        return
    env = app.env
    numbered = []
    for result in _results(env).values():
        number = env.toc_fignumbers.get(result["docname"], {}).get(result["countertype"], {}).get(result["id"])
        if number is not None:
            numbered.append((tuple(number), result))
    # Chapter by chapter, in the order of the text.
    numbered.sort(key=lambda item: (item[0][:-1], item[1]["seq"]))
    content = []
    current_doc, items = None, None
    for number, result in numbered:
        if result["docname"] != current_doc:
            current_doc = result["docname"]
            heading = nodes.paragraph()
            heading += nodes.strong(text=env.titles[current_doc].astext())
            items = nodes.bullet_list()
            content += [heading, items]
        reference = nodes.reference(
            "", "", internal=True,
            refuri=app.builder.get_relative_uri(fromdocname, result["docname"]) + "#" + result["id"],
        )
        reference += nodes.Text(f"{result['type'].capitalize()} {'.'.join(map(str, number))}")
        paragraph = nodes.paragraph()
        paragraph += reference
        for child in result["title"]:
            paragraph += child.deepcopy()
        items += nodes.list_item("", paragraph)
    for placeholder in placeholders:
        placeholder.replace_self(content or [nodes.paragraph(text="No numbered results yet.")])


def setup(app):
    app.setup_extension("sphinx_proof")
    # The results index replaces sphinx-proof's page of bare labels.
    ProofDomain.indices = []
    app.add_node(results_index_placeholder)
    app.add_directive("results-index", ResultsIndexDirective)
    app.add_transform(CollectResults)
    app.connect("env-purge-doc", purge_results)
    app.connect("env-merge-info", merge_results)
    app.connect("doctree-resolved", render_results_index)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
