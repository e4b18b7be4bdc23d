// Times are served in UTC (<time datetime=... title="... UTC">); show them in the reader's
// time zone WITH its offset ("2025-05-01 17:30:00 UTC+05:30", a form the filters read back)
// and keep UTC and the zone's name on hover. Filters with a hidden `tz` field get the
// browser's zone, which their hint names (.zone-name): a time typed without an offset is in it.
// Runs again after htmx swaps a fragment in.
(function () {
  "use strict";
  var pad = function (n) { return String(n).padStart(2, "0"); };
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";

  // The offset of the reader's zone at that moment (it changes with daylight saving time).
  function offset(date) {
    var minutes = -date.getTimezoneOffset();
    if (minutes === 0) { return "UTC"; }
    var sign = minutes < 0 ? "-" : "+";
    minutes = Math.abs(minutes);
    return "UTC" + sign + pad(Math.floor(minutes / 60)) + ":" + pad(minutes % 60);
  }

  function local(date) {
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) +
      " " + pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) +
      " " + offset(date);
  }

  function convert(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      if (el.dataset.local) { return; }
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) { return; }
      if (!el.title) { el.title = el.textContent.trim() + " UTC"; }
      if (zone) { el.title += " · shown in " + zone; }
      el.textContent = local(date);
      el.dataset.local = "1";
    });
  }

  // The chart's hour ticks (SVG text cannot hold a <time>): "HH:00 UTC" becomes local, and
  // the chart's zone note (.chart-zone) says which zone.
  function convertTicks(root) {
    root.querySelectorAll("svg text[data-at]").forEach(function (el) {
      var date = new Date(el.getAttribute("data-at"));
      if (isNaN(date.getTime()) || el.dataset.local) { return; }
      el.textContent = pad(date.getHours()) + ":" + pad(date.getMinutes());
      el.dataset.local = "1";
    });
    root.querySelectorAll(".chart-zone").forEach(function (el) {
      el.textContent = zone ? zone + " (" + offset(new Date()) + ")" : offset(new Date());
    });
  }

  // A filter's zone: the browser's, unless the URL named one (a link from a colleague).
  function zoneFields(root) {
    root.querySelectorAll("input[type=hidden][name=tz]").forEach(function (input) {
      if (!input.value && zone) { input.value = zone; }
      var form = input.form;
      if (!form) { return; }
      form.querySelectorAll(".zone-name").forEach(function (el) {
        el.textContent = input.value ? input.value + ", now " + offset(new Date()) : "UTC";
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    zoneFields(document);
    convert(document);
    convertTicks(document);
  });
  document.addEventListener("htmx:afterSettle", function (event) { convert(event.target); });
})();
