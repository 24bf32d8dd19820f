/* The trace view's one behaviour: follow a row across stages.
   Hovering any [data-ref] element highlights every element of the same ref; clicking pins it and writes the
   row's journey (the view's data-journeys, computed from the trace) in the view's bar. Text is set with
   textContent only: nothing from the trace or a record is ever parsed as markup. */
(function () {
  "use strict";
  var pinned = null;

  function same(ref) {
    var out = [];
    document.querySelectorAll("[data-ref]").forEach(function (node) {
      if (node.getAttribute("data-ref") === ref) { out.push(node); }
    });
    return out;
  }

  function refOf(target) {
    var node = target && target.closest ? target.closest("[data-ref]") : null;
    return node ? node.getAttribute("data-ref") : null;
  }

  function journey(ref, from) {
    var view = (from && from.closest && from.closest(".trace-view")) || document.querySelector(".trace-view");
    if (!view) { return; }
    var bar = view.querySelector(".journey");
    var steps = [];
    try { steps = (JSON.parse(view.getAttribute("data-journeys") || "{}")[ref]) || []; } catch (e) { steps = []; }
    if (bar) {
      bar.textContent = ref === null ? "Click a ref to follow it through the stages."
        : ref + ": " + (steps.length ? steps.join("  \u2192  ") : "not in this trace");
    }
  }

  function follow(ref, from) {
    if (pinned !== null) { same(pinned).forEach(function (n) { n.classList.remove("pin"); }); }
    pinned = ref === pinned ? null : ref;
    if (pinned !== null) { same(pinned).forEach(function (n) { n.classList.add("pin"); }); }
    journey(pinned, from);
  }

  document.addEventListener("mouseover", function (event) {
    var ref = refOf(event.target);
    if (ref !== null) { same(ref).forEach(function (n) { n.classList.add("hl"); }); }
  });
  document.addEventListener("mouseout", function (event) {
    var ref = refOf(event.target);
    if (ref !== null) { same(ref).forEach(function (n) { n.classList.remove("hl"); }); }
  });
  document.addEventListener("click", function (event) {
    var ref = refOf(event.target);
    if (ref !== null && !(event.target.closest && event.target.closest("button, a, input, textarea, select"))) {
      follow(ref, event.target);
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && event.target.classList && event.target.classList.contains("ref")) {
      follow(event.target.getAttribute("data-ref"), event.target);
    }
  });
  window.cuedrecallTrace = { follow: follow };
}());
