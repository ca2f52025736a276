"""Sphinx extension: every page's scripts, each once, and none that points at the network.

- Sphinx 7.4 lists an inline script (``app.add_js_file(None, body=...)``) added after the builder
  started twice on every page: once from the registry, once as added to the builder, because one
  copy has the file name ``None`` and the other ``''``. sphinx-thebe and sphinx-togglebutton add such
  scripts; the duplicate of sphinx-thebe's ``const THEBE_JS_URL = ...`` is a SyntaxError in every
  page's console. Duplicates are dropped here.
- Jupyter Book always loads sphinx-thebe. With Thebe off (``launch_buttons.thebe: false`` in
  _config.yml), its script, stylesheet, inline configuration (which names a thebe bundle on
  unpkg.com) and per-page kernel settings serve nothing, and are dropped too.
- The launch button (Binder) of _config.yml needs ``repository.url``: the book theme fails on
  every notebook page when a launch URL is set without it. While it is empty, the launch URLs are
  cleared, so setting ``repository.url`` is all it takes to turn the button on.
"""

import re

THEBE_BODY_SCRIPTS = re.compile(
    r'\s*<script type="text/x-thebe-config">.*?</script>\s*<script>kernelName = [^<]*</script>', re.DOTALL
)


def _thebe_on(app):
    return bool((app.config.html_theme_options or {}).get("launch_buttons", {}).get("thebe"))


def _is_thebe_asset(asset):
    filename = getattr(asset, "filename", asset) or ""
    body = getattr(asset, "attributes", {}).get("body", "") if hasattr(asset, "attributes") else ""
    return filename.endswith(("sphinx-thebe.js", "sphinx-thebe.css")) or "THEBE_JS_URL" in body


def clean_page_assets(app, pagename, templatename, context, doctree):
    thebe_on = _thebe_on(app)
    seen, scripts = set(), []
    for script in context.get("script_files", []):
        key = (getattr(script, "filename", script) or "", repr(sorted(getattr(script, "attributes", {}).items())))
        if key in seen or (not thebe_on and _is_thebe_asset(script)):
            continue
        seen.add(key)
        scripts.append(script)
    context["script_files"] = scripts
    if not thebe_on:
        context["css_files"] = [css for css in context.get("css_files", []) if not _is_thebe_asset(css)]
        if "body" in context:
            context["body"] = THEBE_BODY_SCRIPTS.sub("", context["body"])


LAUNCH_KEYS = ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url", "jupyterlite_url")


def hold_launch_buttons_without_repository(app, config):
    options = config.html_theme_options or {}
    if options.get("repository_url"):
        return
    launch = dict(options.get("launch_buttons") or {})
    for key in LAUNCH_KEYS:
        launch.pop(key, None)
    options["launch_buttons"] = launch
    config.html_theme_options = options


def setup(app):
    app.connect("config-inited", hold_launch_buttons_without_repository)
    # Late, after the theme and the extensions have filled the page's context.
    app.connect("html-page-context", clean_page_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
