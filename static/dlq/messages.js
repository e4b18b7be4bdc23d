/* Messages and bulk review pages: 400 answers shown, select a whole page. Times: localtime.js. */
(function () {
  "use strict";

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
})();
