/* Messages and bulk review pages: 400 answers shown, select a whole page. Times: localtime.js.
   The message page's forms: a custom target's fields only for "custom", header rows added. */
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
    if (event.target.id === "select-page") {
      document.querySelectorAll("input.row-select").forEach(function (box) {
        box.checked = event.target.checked;
      });
    }
    if (event.target.name && /target$/.test(event.target.name)) showCustom(event.target.form);
  });

  // CSS hides the custom fields; disabled, a value left in them is not sent either.
  function showCustom(form) {
    var custom = form.querySelector('input[name$="target"][value="custom"]');
    form.querySelectorAll(".custom-target input").forEach(function (input) {
      input.disabled = !(custom && custom.checked);
    });
  }

  // The blank row first (the page always has one); a new row only once it is used.
  function addHeaderRow() {
    var list = document.getElementById("header-row-list");
    var blank = Array.prototype.find.call(list.querySelectorAll("tr"), function (row) {
      return !row.querySelector('[name$="-was"]').value &&
        !row.querySelector('[name$="-name"]').value;
    });
    if (blank) {
      blank.querySelector('input[type="text"]').focus();
      return;
    }
    var template = document.getElementById("header-row-template");
    var next = list.querySelectorAll("tr").length;
    while (document.querySelector('[name="edit-h-' + next + '-name"]')) next += 1;
    var row = template.content.firstElementChild.cloneNode(true);
    row.querySelectorAll("[name]").forEach(function (field) {
      field.name = field.name.replace("__i__", String(next));
    });
    list.appendChild(row);
    row.querySelector('input[type="text"]').focus();
  }

  function ready() {
    document.querySelectorAll(".custom-target").forEach(function (fields) {
      showCustom(fields.closest("form"));
    });
    var add = document.getElementById("add-header");
    if (add) {
      add.hidden = false;
      add.addEventListener("click", addHeaderRow);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
