// Times are served in UTC (<time datetime=... title="... UTC">); show them in the reader's
// time zone and keep UTC on hover. Runs again after htmx swaps a fragment in.
(function () {
  "use strict";
  var pad = function (n) { return String(n).padStart(2, "0"); };

  function local(date) {
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) +
      " " + pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds());
  }

  function convert(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      if (el.dataset.local) { return; }
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) { return; }
      if (!el.title) { el.title = el.textContent.trim() + " UTC"; }
      el.textContent = local(date);
      el.dataset.local = "1";
    });
  }

  // The chart's hour ticks (SVG text cannot hold a <time>): "HH:00 UTC" becomes local.
  function convertTicks(root) {
    root.querySelectorAll("svg text[data-at]").forEach(function (el) {
      var date = new Date(el.getAttribute("data-at"));
      if (isNaN(date.getTime()) || el.dataset.local) { return; }
      el.textContent = pad(date.getHours()) + ":" + pad(date.getMinutes());
      el.dataset.local = "1";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    convert(document);
    convertTicks(document);
  });
  document.addEventListener("htmx:afterSettle", function (event) { convert(event.target); });
})();
