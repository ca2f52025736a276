"""Sphinx extension: the API reference of library.md shows agf_lib's docstrings as they are written.

agf_lib's docstrings are plain text with Unicode mathematics (``|x̂[k]|``, ``‖θ_i‖``, ``E[x_i r]``) and
numpy-style sections, not reStructuredText: read as reST, every ``|...|`` is a substitution and every
indented formula a block quote. Each docstring is therefore shown verbatim, as a literal block, and
signatures without type hints (their ``np.ndarray`` would be references to nowhere). Roles such as
``:func:`~agf_lib.flow.gradient_flow``` become the plain name.
"""


import re

# :func:`~agf_lib.flow.gradient_flow` -> gradient_flow, :func:`scipy.integrate.solve_ivp` -> the same
# name: in a literal block a role is only noise, and at the start of a line it reads as an option
ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def _plain(match):
    return match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)


def _verbatim(app, what, name, obj, options, lines):
    if lines:
        lines[:] = ["::", ""] + ["    " + ROLE.sub(_plain, line) for line in lines] + [""]


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.config.autodoc_typehints = "none"
    app.connect("autodoc-process-docstring", _verbatim)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
