"""Open built pages of the book in headless Chromium and report what a reader's browser sees.

`measure_pages` copies each page next to itself with a probe script injected (so that every relative link
still resolves) and lets one Chromium process load the copies one after another, offline, with a virtual
time budget, in a frame of the first width asked for. Once a page's MathJax and images are done, the probe
measures it, narrows the frame to the next width (the theme's layout follows its CSS breakpoints; MathJax 3
sets math without line breaks, so nothing is typeset again), lets it lay out and measures again; after the
last width the frame page resets the frame and loads the next page. For each page and width it reads back:

- ``errors``: uncaught exceptions, unhandled rejections, ``console.error`` calls and failed resource
  loads, caught by a listener installed before any of the page's own scripts (those of the page's one
  load, so every width reports them all);
- ``remote``: every resource the page requested from outside the build (``performance`` entries);
- ``images``: for each ``<img>`` in the article, its file, figure number and label, natural and
  displayed width;
- ``viewport``, ``scroll_width``, ``column_width``, and ``overflow``: visible elements of the article
  that reach past the right edge of the window without a scrolling or clipping container of their
  own (what a phone reader loses off screen), and display equations overlapping their number;
- ``wide_code``: code and output blocks whose lines, and tables whose columns, are wider than the
  block that holds them (cut off, or left to a sideways scroll);
- ``code_fonts``: the font size (CSS px) of every visible code and output block;
- ``clipped_math``: display equations wider than their box that show no scroll cue;
- ``orphaned_punctuation``: punctuation that starts a line right after an inline formula;
- ``math`` (the first width's report only): what MathJax made of the page's math: ``typeset``, the number
  of typeset formulas; ``errors``, MathJax's messages for TeX it could not parse; ``undefined``, the macros
  it did not know (shown in red); ``untypeset``, the math elements of the page still holding raw TeX.

Chromium's own console log (``--enable-logging=stderr``) is read as well: an "Uncaught" message there
counts as an error even if the probe missed it, of the page it names, or of every page of the process
where its source is a shared script. One load of each page serves every width, and one process serves
many pages: Chromium starts once, and the theme's and MathJax's scripts are compiled once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

PROBE_ID = "agf-probe-result"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    # lets a frame page report to its parent (both are file: URLs), for widths under Chromium's minimum
    "--allow-file-access-from-files",
    "--enable-logging=stderr",
    "--v=0",
    "--dump-dom",
]
VIRTUAL_TIME_PER_PAGE_MS = 20000

# Installed first in <head>: records every error the page's own scripts raise.
EARLY_PROBE = """<script>
window.__agfErrors = [];
window.addEventListener("error", function (event) {
  var target = event.target;
  if (target && target !== window && (target.src || target.href)) {
    window.__agfErrors.push("failed to load " + (target.src || target.href));
  } else {
    window.__agfErrors.push((event.message || "error") + " at " + (event.filename || "?") + ":" + (event.lineno || "?"));
  }
}, true);
window.addEventListener("unhandledrejection", function (event) {
  window.__agfErrors.push("unhandled rejection: " + event.reason);
});
(function () {
  var original = console.error;
  console.error = function () {
    window.__agfErrors.push("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
    return original.apply(console, arguments);
  };
})();
</script>"""

# Appended at the end of <body>: waits for MathJax and the images, then measures.
LATE_PROBE = """<script>
(function () {
  function scrolls(element) {
    var style = getComputedStyle(element);
    return ["auto", "scroll"].indexOf(style.overflowX) >= 0;
  }
  function describe(element) {
    var name = element.tagName.toLowerCase();
    if (element.id) name += "#" + element.id;
    if (element.classList.length) name += "." + Array.prototype.slice.call(element.classList, 0, 3).join(".");
    var text = (element.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 60);
    return name + " \\"" + text + "\\"";
  }
  function measure(width) {
    var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    var viewport = document.documentElement.clientWidth;
    var overflow = [];
    var candidates = article.querySelectorAll("mjx-container, div.math, table, pre, img, .cell_output, p, li, dl, figure");
    Array.prototype.forEach.call(candidates, function (element) {
      var rect = element.getBoundingClientRect();
      if (rect.width === 0 || rect.right <= viewport + 1) return;
      // Only a container inside the article counts: the theme lets the whole article scroll sideways.
      for (var parent = element.parentElement; parent && parent !== article; parent = parent.parentElement) {
        if (scrolls(parent) && parent.getBoundingClientRect().right <= viewport + 1) return;
      }
      if (scrolls(element) && element.clientWidth <= viewport) return;
      overflow.push(describe(element) + " right edge at " + Math.round(rect.right) + " px");
    });
    var overlaps = [];
    Array.prototype.forEach.call(article.querySelectorAll("div.math"), function (block) {
      var number = block.querySelector(".eqno");
      var equation = block.querySelector("mjx-container mjx-math");
      if (!number || !equation) return;
      var a = number.getBoundingClientRect(), b = equation.getBoundingClientRect();
      var visible = block.getBoundingClientRect();
      var right = Math.min(b.right, visible.right);
      if (a.left < right - 1 && b.left < a.right - 1 && a.top < b.bottom && b.top < a.bottom) {
        overlaps.push(number.textContent.trim() + " overlaps its equation");
      }
    });
    var images = Array.prototype.map.call(article.querySelectorAll("img"), function (image) {
      var figure = image.closest("figure");
      var number = figure && figure.querySelector(".caption-number");
      return {
        src: image.getAttribute("src"),
        figure: figure ? ((number ? number.textContent.trim() + " " : "") + (figure.id ? "(" + figure.id + ")" : "")) : "",
        complete: image.complete,
        natural_width: image.naturalWidth,
        displayed_width: image.getBoundingClientRect().width
      };
    });
    // code and printed output wider than their block: lines cut off (they scroll sideways inside it)
    var wide_code = [];
    Array.prototype.forEach.call(article.querySelectorAll("div.cell_input pre, div.cell_output pre"), function (pre) {
      if (pre.clientWidth > 0 && pre.scrollWidth > pre.clientWidth + 1) {
        var line = (pre.textContent || "").split("\\n").reduce(function (a, b) { return b.length > a.length ? b : a; }, "");
        wide_code.push(pre.scrollWidth + " px in " + pre.clientWidth + " px: " + line.trim().slice(0, 80));
      }
    });
    // tables wider than the block that holds them: the right-hand columns are cut off (or scroll)
    Array.prototype.forEach.call(article.querySelectorAll("table"), function (table) {
      var holder = table.parentElement;
      var width = table.getBoundingClientRect().width;
      if (holder && holder.clientWidth > 0 && width > holder.clientWidth + 1) {
        var head = (table.querySelector("tr") || table).textContent.replace(/\\s+/g, " ").trim();
        wide_code.push("table " + Math.round(width) + " px in " + holder.clientWidth + " px: " + head.slice(0, 80));
      }
    });
    // font sizes of the code and output blocks a reader sees
    var code_fonts = [];
    Array.prototype.forEach.call(article.querySelectorAll("div.cell_input pre, div.cell_output pre"), function (pre) {
      if (pre.clientWidth > 0) code_fonts.push(parseFloat(getComputedStyle(pre).fontSize));
    });
    // display equations wider than their box, with no cue (the edge shadows of _static/math.css)
    var clipped_math = [];
    Array.prototype.forEach.call(article.querySelectorAll('mjx-container[display="true"]'), function (math) {
      if (math.clientWidth > 0 && math.scrollWidth > math.clientWidth + 1 &&
          getComputedStyle(math).backgroundImage.indexOf("gradient") < 0) {
        clipped_math.push(describe(math) + " " + math.scrollWidth + " px in " + math.clientWidth + " px");
      }
    });
    // punctuation that starts a line right after an inline formula ("), and ..." on a line of its own)
    var orphaned_punctuation = [];
    Array.prototype.forEach.call(article.querySelectorAll('mjx-container:not([display="true"])'), function (math) {
      var holder = math.parentElement && math.parentElement.classList.contains("math") ? math.parentElement : math;
      var next = holder.nextSibling;
      if (!next || next.nodeType !== 3 || !/^[)\\],.;:!?]/.test(next.textContent)) return;
      var range = document.createRange();
      range.setStart(next, 0);
      range.setEnd(next, 1);
      if (range.getBoundingClientRect().top > math.getBoundingClientRect().bottom - 4) {
        orphaned_punctuation.push(describe(holder.parentElement) + ": " + next.textContent.slice(0, 20));
      }
    });
    var remote = performance.getEntriesByType("resource").map(function (entry) { return entry.name; })
      .filter(function (name) { return !/^(file|data|blob|about):/.test(name); });
    var result = {
      errors: window.__agfErrors.slice(),
      remote: remote,
      images: images,
      viewport: viewport,
      scroll_width: document.documentElement.scrollWidth,
      column_width: article.getBoundingClientRect().width,
      wide_code: wide_code,
      code_fonts: code_fonts,
      clipped_math: clipped_math,
      orphaned_punctuation: orphaned_punctuation,
      overflow: overflow.concat(overlaps)
    };
    if (first) {
      // what MathJax made of the page's math (the first width only: math is not typeset again)
      var raw = /^\\s*(\\\\\\(|\\\\\\[|\\$)/;
      var texts = function (selector, attribute) {
        return Array.prototype.map.call(document.querySelectorAll(selector), function (element) {
          return attribute ? element.getAttribute(attribute) || "" : element.textContent;
        });
      };
      result.math = {
        typeset: document.querySelectorAll("mjx-container").length,
        errors: texts("mjx-merror", "data-mjx-error"),
        undefined: texts('mtext[mathcolor="red"]'),
        untypeset: Array.prototype.filter.call(document.querySelectorAll('span[class^="math"], div[class^="math"]'),
          function (element) {
            var text = element.firstChild;
            return text !== null && text.nodeType === 3 && raw.test(text.data);
          }).length
      };
    }
    // The report goes to the top document (the frame page of measure_pages), which Chromium dumps;
    // "<" is escaped so that no closing tag inside it ends the element early.
    var host = window.parent.document;
    var output = host.createElement("script");
    output.type = "application/json";
    output.id = "%s-" + window.parent.__agfPage + "-" + width;
    output.textContent = JSON.stringify(result).replace(/</g, "\\\\u003c");
    host.body.appendChild(output);
  }
  // Measure at each size the frame page lists (the frame has the first), narrowing the frame in between;
  // then the frame page loads its next page.
  var first = true;
  function measureAll(sizes) {
    measure(sizes[0][0]);
    first = false;
    if (sizes.length < 2) { window.parent.__agfNextPage(); return; }
    var frame = window.frameElement;
    frame.width = sizes[1][0];
    frame.height = sizes[1][1];
    setTimeout(function () { measureAll(sizes.slice(1)); }, 200);   // (headless Chromium draws no frames)
  }
  function whenReady() {
    var math = window.MathJax && MathJax.startup && MathJax.startup.promise ? MathJax.startup.promise : Promise.resolve();
    var images = Array.prototype.map.call(document.images, function (image) {
      return image.complete ? Promise.resolve() : new Promise(function (done) { image.onload = image.onerror = done; });
    });
    var sizes = window.parent.__agfSizes;
    Promise.all([math].concat(images)).then(function () { setTimeout(function () { measureAll(sizes); }, 200); });
  }
  if (document.readyState === "complete") whenReady(); else window.addEventListener("load", whenReady);
})();
</script>""" % PROBE_ID

# Headless Chromium does not make windows narrower than this; the pages are measured in a frame.
MIN_WINDOW_WIDTH = 500
# Loads the probed copies one after another into its frame, at the first size, each once the previous one
# has reported at every size (the probe calls __agfNextPage); __agfPage is the index of the page loaded.
FRAME_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><script>
window.__agfSizes = {sizes};
window.__agfPage = -1;
window.__agfNextPage = function () {{
  var pages = {pages}, frame = document.getElementById("page");
  window.__agfPage += 1;
  if (window.__agfPage >= pages.length) return;
  frame.width = window.__agfSizes[0][0];
  frame.height = window.__agfSizes[0][1];
  frame.src = pages[window.__agfPage];
}};
</script></head>
<body style="margin:0" onload="__agfNextPage()"><iframe id="page" style="border:0;display:block"></iframe></body></html>"""

UNCAUGHT = re.compile(r'INFO:CONSOLE[^\]]*\] "(Uncaught [^"]*)", source: (\S+)')


def measure_pages(chromium, pages, sizes, profile_dir, timeout_s=120):
    """Open each of ``pages`` (built HTML files of one book) once, in one Chromium process, and measure it at
    each ``(width, height)`` of ``sizes`` (CSS px, distinct widths, in the order given; the first one's report
    holds ``math``). Returns ``{page: {width: report}}``, keyed by the paths given.

    ``timeout_s`` is per page. Raises ``RuntimeError`` naming the pages that gave no report for some width
    (Chromium failed, or a page never finished loading).
    """
    pages = [Path(page) for page in pages]
    sizes = [(int(width), int(height)) for width, height in sizes]
    root = Path(os.path.commonpath([page.resolve().parent for page in pages]))
    copies = []
    try:
        for page in pages:
            html = page.read_text(encoding="utf-8")
            head = re.search(r"<head[^>]*>", html)
            if head is None or "</body>" not in html:
                raise RuntimeError(f"{page.name}: no <head> or </body> to put the probe in")
            probed = html[: head.end()] + EARLY_PROBE + html[head.end():]
            copies.append(page.resolve().with_name(f".probe-{page.name}"))
            copies[-1].write_text(probed.replace("</body>", LATE_PROBE + "</body>", 1), encoding="utf-8")
        # a name of its own, for measure_pages running on other pages of the same book at the same time
        frame = root / f".probe-frame-{uuid.uuid4().hex}.html"
        copies.append(frame)
        sources = [copy.relative_to(root).as_posix() for copy in copies[:-1]]
        frame.write_text(FRAME_PAGE.format(sizes=json.dumps(sizes), pages=json.dumps(sources)), encoding="utf-8")
        window = (max(max(w for w, _ in sizes), MIN_WINDOW_WIDTH), max(h for _, h in sizes))
        completed = subprocess.run(
            [chromium, *FLAGS, f"--virtual-time-budget={VIRTUAL_TIME_PER_PAGE_MS * len(pages)}",
             f"--window-size={window[0]},{window[1]}", f"--user-data-dir={profile_dir}", frame.as_uri()],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s * len(pages),
        )
    finally:
        for copy in copies:
            copy.unlink(missing_ok=True)
    dom = completed.stdout
    uncaught = UNCAUGHT.findall(completed.stderr)
    reports, missing = {}, []
    for index, page in enumerate(pages):
        reports[page] = {}
        for width, _ in sizes:
            found = re.search(rf'<script type="application/json" id="{PROBE_ID}-{index}-{width}">(.*?)</script>', dom,
                              flags=re.DOTALL)
            if completed.returncode != 0 or found is None:
                missing.append(f"{page.name} at {width} px")
                continue
            report = json.loads(found.group(1))
            for message, source in uncaught:
                named = [other for other in pages if source.endswith(f"/.probe-{other.name}")]
                if (not named or page in named) and not any(message in error for error in report["errors"]):
                    report["errors"].append(f"{message} at {source}")
            reports[page][width] = report
    if missing:
        # the pages load one after another: a page that never reports keeps the ones after it from loading
        unreached = [page.name for page in pages if not reports[page]]
        after = (f"; {unreached[0]} never finished, so {', '.join(unreached[1:])} after it did not load"
                 if len(unreached) > 1 else "")
        raise RuntimeError(f"chromium gave no report for {', '.join(missing)}{after} (exit {completed.returncode}):\n"
                           f"{completed.stderr[-3000:]}")
    return reports

