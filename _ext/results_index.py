"""Sphinx extension: an index of the book's results, and their names in the general index.

- Every numbered sphinx-proof directive (definition, lemma, proposition, theorem, algorithm, ...)
  that has a title gets an entry in the general index under that title (titles with math are left
  out: an index entry is plain text and would show raw TeX).
- The directive ``{results-index}`` lists every numbered result, chapter by chapter, as
  "Theorem 2.3 (title)" linked to the result; results.md puts it in the back matter.
- sphinx-proof's own index page (prf-prf.html) lists bare labels such as ``thm-fw-polar`` and is not
  written: the results index replaces it.
- The book's key terms (:data:`KEY_TERMS`) are indexed where each chapter first uses them: an entry
  per term and chapter, pointing at the first paragraph of the chapter's text that names the term.
"""

import re

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


def _detached(node):
    """A deep copy of ``node`` that does not point to its page: docutils copies keep the page's document,
    which the environment would otherwise pickle whole with each title, once per process that reads."""
    copy = node.deepcopy()
    for part in copy.findall():
        part._document = None
    return copy


def collect_results(env, doctree):
    results = _results(env)
    for seq, node in enumerate(list(doctree.findall(nodes.Element))):
        if "countertype" not in node.attributes or not node.get("label") or not node["ids"]:
            continue
        if type(node).__name__ == "unenumerable_node":
            continue
        title = next(iter(node.findall(nodes.title)), None)
        title_children = [_detached(child) for child in title.children] if title is not None else []
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


# index entry -> pattern of the words that name it in the text (case-insensitive, whole words)
KEY_TERMS = {
    "Alternating Gradient Flows (AGF)": r"alternating gradient flows?|AGF",
    "utility": r"utility|utilities",
    "utility, accumulated": r"accumulated utility",
    "utility maximization": r"utility maximi[sz]ation",
    "cost minimization": r"cost minimi[sz]ation|cost step",
    "dormant neuron": r"dormant",
    "active neuron": r"active (neuron|set|head|coordinate)s?",
    "return to dormancy": r"returns? to dormancy",
    "jump time": r"jump times?",
    "plateau": r"plateaus?",
    "staircase": r"staircases?",
    "saddle-to-saddle dynamics": r"saddle-to-saddle",
    "initialization scale α": r"initiali[sz]ation scale|small initiali[sz]ation",
    "homogeneous neuron (degree κ)": r"homogeneous|homogeneity",
    "polar coordinates": r"polar coordinates|log-norm",
    "adaptive rate": r"adaptive rate",
    "gradient flow": r"gradient flow",
    "gradient descent": r"gradient descent",
    "Pesme–Flammarion algorithm": r"Pesme[–-]Flammarion|Pesme and Flammarion",
    "greedy low-rank learning": r"greedy low-rank",
    "reduced-rank regression": r"reduced-rank regression",
    "principal component regression": r"principal component regression|PCR",
    "Fourier feature": r"Fourier features?|dominant frequenc(y|ies)",
    "irreducible representation (irrep)": r"irreducible representations?|irreps?",
    "kernel regime (lazy training)": r"kernel regime|lazy (regime|training)|neural tangent kernel|NTK",
    "ReLU network": r"ReLU",
}
_KEY_PATTERNS = {entry: re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE) for entry, pattern in KEY_TERMS.items()}


def _first_paragraphs(doctree):
    """Paragraphs of the running text, in order (not inside code, math, captions or tables)."""
    skip = (nodes.literal_block, nodes.math_block, nodes.caption, nodes.table, nodes.title, nodes.container)
    for paragraph in doctree.findall(nodes.paragraph):
        parent, inside = paragraph.parent, False
        while parent is not None:
            if isinstance(parent, skip):
                inside = True
                break
            parent = parent.parent
        if not inside:
            yield paragraph


class IndexKeyTerms(SphinxTransform):
    """Index each key term at its first use in every chapter."""

    default_priority = 800

    def apply(self):
        if not self.env.docname.startswith("chapters/"):
            return
        pending = dict(_KEY_PATTERNS)
        for paragraph in _first_paragraphs(self.document):
            if not pending:
                break
            text = "".join(node.astext() for node in paragraph.findall(nodes.Text)
                           if not isinstance(node.parent, (nodes.math, nodes.literal)))
            found = [entry for entry, pattern in pending.items() if pattern.search(text)]
            if not found:
                continue
            target_id = f"index-term-{self.env.new_serialno('index')}"
            target = nodes.target("", "", ids=[target_id])
            entry = addnodes.index(entries=[("single", name, target_id, "", None) for name in found])
            position = paragraph.parent.index(paragraph)
            paragraph.parent.insert(position, target)
            paragraph.parent.insert(position, entry)
            for name in found:
                del pending[name]


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
    # The titles bring math the page's source does not have: Sphinx loads MathJax only on pages its math
    # domain saw math on when they were read.
    if any(True for _ in doctree.findall(nodes.math)):
        env.get_domain("math").data["has_equations"][fromdocname] = True


def setup(app):
    app.setup_extension("sphinx_proof")
    # The results index replaces sphinx-proof's page of bare labels.
    ProofDomain.indices = []
    app.add_node(results_index_placeholder)
    app.add_directive("results-index", ResultsIndexDirective)
    app.add_transform(CollectResults)
    app.add_transform(IndexKeyTerms)
    app.connect("env-purge-doc", purge_results)
    app.connect("env-merge-info", merge_results)
    app.connect("doctree-resolved", render_results_index)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
