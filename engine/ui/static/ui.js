// The inspector's own script: draws Mermaid graphs, again after htmx refreshes them.
// Loaded as a file (the Content-Security-Policy forbids inline scripts).
(function () {
  "use strict";
  function draw() {
    if (!window.mermaid) return;
    var nodes = document.querySelectorAll("pre.mermaid:not([data-processed])");
    if (nodes.length === 0) return;
    window.mermaid.run({ nodes: nodes }).catch(function (err) {
      nodes.forEach(function (n) { n.setAttribute("data-error", String(err)); });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (window.mermaid) {
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral" });
    }
    draw();
  });
  document.addEventListener("htmx:beforeSwap", function (evt) {
    // A graph that has not changed is not drawn again (no flicker every refresh).
    var target = evt.detail.target;
    if (target && target.id === "graph") {
      var old = target.querySelector("pre.source");
      var fresh = new DOMParser().parseFromString(evt.detail.serverResponse, "text/html");
      var next = fresh.querySelector("pre.source");
      if (old && next && old.textContent === next.textContent) evt.detail.shouldSwap = false;
    }
  });
  document.addEventListener("htmx:afterSettle", draw);
})();
