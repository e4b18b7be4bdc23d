/* Messages pages: times in the reader's zone, 400 answers shown, select a whole page. */
(function () {
  "use strict";

  // The server writes UTC (kept in the title); show the reader's local time instead.
  function localTimes(root) {
    root.querySelectorAll("time.local-time").forEach(function (el) {
      var at = new Date(el.getAttribute("datetime"));
      if (isNaN(at.getTime())) return;
      el.textContent = at.toLocaleString(undefined, {
        year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
      });
    });
  }

  // htmx leaves 4xx answers unswapped; a bad filter's 400 page says what is wrong.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 400) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("change", function (event) {
    if (event.target.id !== "select-page") return;
    document.querySelectorAll("input.row-select").forEach(function (box) {
      box.checked = event.target.checked;
    });
  });

  if (window.htmx) {
    window.htmx.onLoad(localTimes);
  } else {
    document.addEventListener("DOMContentLoaded", function () { localTimes(document); });
  }
})();
