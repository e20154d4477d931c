// MathJax 3 settings for pymdownx.arithmatex (generic mode): \( ... \) inline, \[ ... \] display.
// mkdocs-material's documented recipe; MathJax itself is loaded by the reader's browser (mkdocs.yml,
// extra_javascript), so `mkdocs build` downloads nothing.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex"
  }
};

// Typeset again after each instant-navigation page change of mkdocs-material.
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (window.MathJax && MathJax.typesetPromise) {
      MathJax.startup.output.clearCache();
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
