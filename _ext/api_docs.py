"""Sphinx extension: the API reference of library.md shows agf_lib's docstrings as they are written.

agf_lib's docstrings are plain text with Unicode mathematics (``|x̂[k]|``, ``‖θ_i‖``, ``E[x_i r]``) and
numpy-style sections, not reStructuredText: read as reST, every ``|...|`` is a substitution and every
indented formula a block quote. Each docstring is therefore shown verbatim, as a literal block, and
signatures without type hints (their ``np.ndarray`` would be references to nowhere).
"""


def _verbatim(app, what, name, obj, options, lines):
    if lines:
        lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.config.autodoc_typehints = "none"
    app.connect("autodoc-process-docstring", _verbatim)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
