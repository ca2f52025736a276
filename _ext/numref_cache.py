"""Resolve numbered references without unpickling the target page once per reference.

Sphinx 7.4's standard domain resolves each ``{numref}`` (and each figure, table or equation reference that
becomes one) by reading the target document's doctree from its pickle, only to look the target node up
and read its type and number. The chapters refer to one another's figures and tables dozens of times,
and a chapter's doctree, with its outputs, takes tens of milliseconds to unpickle each time. This
replaces the standard domain by a subclass that, while it resolves a numbered reference, hands Sphinx's
resolver one unpickled copy per document, kept for the write phase of the build. The resolver only reads
the node; the copy is never the tree that Sphinx writes out. The copies are dropped when the documents are
read again and when the build ends.
"""

from __future__ import annotations

from sphinx.domains import std


class StandardDomain(std.StandardDomain):
    """Sphinx's standard domain, resolving numbered references against one cached doctree per document."""

    def _resolve_numref_xref(self, env, *args, **kwargs):
        cache = env.app.__dict__.setdefault("_numref_doctrees", {})
        original = env.get_doctree

        def cached(docname):
            if docname not in cache:
                cache[docname] = original(docname)
            return cache[docname]

        env.get_doctree = cached          # an attribute of this environment only, for this call
        try:
            return super()._resolve_numref_xref(env, *args, **kwargs)
        finally:
            del env.get_doctree


def _forget(app, *args):
    app.__dict__.pop("_numref_doctrees", None)


def setup(app):
    app.add_domain(StandardDomain, override=True)
    app.connect("env-updated", _forget)
    app.connect("build-finished", _forget)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
