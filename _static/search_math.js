// Search results quote each page's text, read from its HTML, where math is still TeX source
// (MathJax typesets it only on the page itself): a snippet would show "\(\log(1/\alpha)\)".
// Math is cut from the text the snippets are drawn from, and an ellipsis left in its place.
// Jupyter Book loads every script in _static on every page, before Sphinx's searchtools.js on the
// search page: the patch waits for the page to be parsed, and does nothing where there is no search.
//
// Opened from disk (file://), the browser refuses the page fetches the snippets come from: results
// are then listed without snippets instead of raising an error for each.
function agfSearchWithoutMath() {
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
  if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }
  const htmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".math").forEach((el) => el.replaceWith("…"));
    return htmlToText(page.documentElement.outerHTML, anchor);
  };
}
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", agfSearchWithoutMath);
} else {
  agfSearchWithoutMath();
}
