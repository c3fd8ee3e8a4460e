// The Portcullis UI's own script. Pages work without it; it adds the
// CodeMirror editor, the decisions chart and confirmations. It is loaded
// from the gateway (no inline scripts: the CSP forbids them).
(function () {
  "use strict";
  var editors = new WeakMap();

  function initEditors(root) {
    if (!window.PortcullisCM) return;
    root.querySelectorAll("textarea[data-editor]").forEach(function (ta) {
      if (editors.has(ta)) return;
      var label = (document.querySelector('label[for="' + ta.id + '"]') || {}).textContent || "YAML";
      var view = window.PortcullisCM.fromTextarea(ta, label);
      // The editor's text is a contenteditable element, in the tab order
      // even when read-only (EditorState.readOnly keeps it editable), and
      // the keys that move its cursor scroll the editor. Assistive tools
      // read the tab order from tabindex, not from contenteditable, and
      // took a long policy's scrolling region for one no keyboard reaches
      // (axe: scrollable-region-focusable). tabindex="0" says what the
      // browser does already: it adds no stop to the tab order.
      view.contentDOM.setAttribute("tabindex", "0");
      editors.set(ta, view);
    });
  }

  function initCharts(root) {
    if (!window.uPlot) return;
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      if (el.dataset.drawn) return;
      el.dataset.drawn = "1";
      var d = JSON.parse(el.dataset.chart);
      if (!d.t || d.t.length === 0) { el.textContent = "No data in this range."; return; }
      var width = Math.max(320, Math.min(el.clientWidth || 900, 1100));
      new window.uPlot({
        width: width, height: 240,
        series: [{}, { label: "requests", stroke: "#2563eb", width: 2 }, { label: "denials", stroke: "#b91c1c", width: 2 }],
        axes: [{}, { label: "count" }],
      }, [d.t, d.requests || [], d.denials || []], el);
    });
  }

  // markErrors shows Validate's errors in the editor, at their lines.
  function markErrors() {
    var ta = document.getElementById("yaml");
    var view = ta && editors.get(ta);
    var check = document.getElementById("check");
    if (!view || !check || !window.PortcullisCM.showErrors) return;
    var errors = Array.prototype.map.call(check.querySelectorAll("a[data-line]"), function (a) {
      return { line: parseInt(a.dataset.line, 10), message: a.dataset.message || "" };
    });
    window.PortcullisCM.showErrors(view, errors);
  }

  function init(root) { initEditors(root); initCharts(root); markErrors(); }

  // Confirmation before a destructive form is sent. The server asks on a
  // page of its own unless the form says it was confirmed here.
  document.addEventListener("submit", function (ev) {
    var f = ev.target;
    if (!f.dataset || !f.dataset.confirm) return;
    if (!window.confirm(f.dataset.confirm)) { ev.preventDefault(); return; }
    if (!f.querySelector('input[name="confirmed"]')) {
      var c = document.createElement("input");
      c.type = "hidden"; c.name = "confirmed"; c.value = "yes";
      f.appendChild(c);
    }
  }, true);

  // "line N" links of a validation error move the editor's cursor there.
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a[data-line]");
    if (!a) return;
    var ta = document.getElementById("yaml");
    var view = ta && editors.get(ta);
    if (!view) return;
    ev.preventDefault();
    window.PortcullisCM.goToLine(view, parseInt(a.dataset.line, 10));
  });

  document.addEventListener("DOMContentLoaded", function () {
    init(document);
    if (window.htmx) window.htmx.onLoad(function (el) { init(el); });
  });
})();
