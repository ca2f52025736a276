"""Sphinx extension: the API reference of library.md, agf_lib's docstrings rendered as text.

The docstrings are reStructuredText in the numpydoc layout (``Parameters``, ``Returns``, ``Raises``
sections, read by ``sphinx.ext.napoleon``), with their mathematics in Unicode (``|x̂[k]|``,
``‖θ_i‖``, ``E[x_i r]``). Three characters of that mathematics mean something else in reST, so they
are escaped outside inline literals and roles before the docstring is parsed: ``|`` (a substitution),
a trailing ``_`` (a reference, as in ``theta_``) and a lone ``*`` (emphasis, as in ``*args`` or
``a * b``; ``**bold**`` stays bold). Long signatures put one parameter on a line.
"""

import re

# ``literal`` and :role:`target` are left alone; the text between them is escaped
LITERAL_OR_ROLE = re.compile(r"(``.+?``|:[a-z:]+:`[^`]+`)")
TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=\W|$)")
LONE_STAR = re.compile(r"(?<!\*)\*(?!\*)")


ROLE = re.compile(r":(?P<role>[a-z:]+):`(?P<tilde>~?)(?P<target>[^`<]+)`")
EXTERNAL = ("scipy.", "numpy.", "np.", "matplotlib.", "mpl.", "torch.", "sympy.", "pandas.", "myst_nb.")


def _canonical(path):
    """Where a public name of agf_lib is documented: ``agf_lib.gradient_flow`` -> ``agf_lib.flow.gradient_flow``."""
    import importlib

    module, _, rest = path.partition(".")
    obj = importlib.import_module(module)
    for part in rest.split(".") if rest else []:
        obj = getattr(obj, part, None)
        if obj is None:
            return path
    home, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{home}.{qualname}" if home and qualname and home.startswith("agf_lib") else path


def _role(match):
    """A role to a public name of agf_lib, made findable: by the module it is documented in, or by its
    last components (``.Staircase``). A role to a private name becomes a literal (it has no entry to
    link to); one to an outside package stays (the offline book cannot link there, and
    ``nitpick_ignore_regex`` says so)."""
    role, tilde, target = match.group("role"), match.group("tilde"), match.group("target")
    if target.startswith(EXTERNAL):
        return match.group(0)
    if any(part.startswith("_") for part in target.lstrip(".").split(".")):
        return f"``{target.rsplit('.', 1)[-1] if tilde else target}``"
    if target.startswith("agf_lib."):
        return f":{role}:`~{_canonical(target)}`" if tilde else f":{role}:`{target} <{_canonical(target)}>`"
    if target.startswith(".") or role in ("meth", "attr"):   # a method or attribute: of the class at hand
        return match.group(0)
    return f":{role}:`{tilde}.{target}`"


def escape_math(text):
    """``text`` with ``|``, trailing ``_`` and lone ``*`` escaped outside literals and roles."""
    parts = LITERAL_OR_ROLE.split(text)
    for i in range(0, len(parts), 2):
        part = parts[i].replace("\\", "\\\\").replace("|", "\\|")
        part = TRAILING_UNDERSCORE.sub(r"\\_", part)
        parts[i] = LONE_STAR.sub(r"\\*", part)
    return ROLE.sub(_role, "".join(parts))


def _escape_docstring(app, what, name, obj, options, lines):
    lines[:] = [escape_math(line) for line in lines]


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    app.config.autodoc_typehints = "none"
    app.config.napoleon_google_docstring = False
    # parameters and return values in one field each, their types as text: a type such as
    # "(H, P) array" is a description, not a class to link
    app.config.napoleon_use_param = False
    app.config.napoleon_use_keyword = False
    app.config.napoleon_use_rtype = False
    app.config.nitpick_ignore_regex = [
        ("py:.*", r"(scipy|numpy|np|matplotlib|mpl|torch|sympy|pandas|myst_nb)\..*"),
        # the words of a type description ("(T, H) array", "callable", "K+1") are not classes
        ("py:class", r"[^.]*"),
    ]
    app.config.maximum_signature_line_length = 70
    # before napoleon turns the sections into fields (its handler has the default priority, 500)
    app.connect("autodoc-process-docstring", _escape_docstring, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
