// Punctuation stays on the line of the formula it follows ("$x$)," never leaves "),"" to start the
// next line), and an opening bracket on the line of the formula after it. A typeset formula is a box,
// and the browser may break a line on either side of a box: each inline formula and the punctuation
// that touches it are put in one span that does not break (.agf-nobreak in math.css).
function agfKeepPunctuationWithMath() {
  document.querySelectorAll("span.math").forEach(function (math) {
    var next = math.nextSibling, previous = math.previousSibling;
    var after = next && next.nodeType === Node.TEXT_NODE ? /^[)\]}.,;:!?’”]+/.exec(next.textContent) : null;
    var before = previous && previous.nodeType === Node.TEXT_NODE ? /[(\[{‘“]+$/.exec(previous.textContent) : null;
    if (!after && !before) return;
    var wrapper = document.createElement("span");
    wrapper.className = "agf-nobreak";
    math.parentNode.insertBefore(wrapper, math);
    if (before) {
      previous.textContent = previous.textContent.slice(0, before.index);
      wrapper.appendChild(document.createTextNode(before[0]));
    }
    wrapper.appendChild(math);
    if (after) {
      next.textContent = next.textContent.slice(after[0].length);
      wrapper.appendChild(document.createTextNode(after[0]));
    }
  });
}
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", agfKeepPunctuationWithMath);
} else {
  agfKeepPunctuationWithMath();
}
