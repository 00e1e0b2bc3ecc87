/* The model page's answers by load: buttons pick a load (requests x context) and an order (price, cost per token);
   the matching table, rendered into the page with the others, is shown and the rest hidden. No network. */
(function () {
  "use strict";
  var root = document.getElementById("loads");
  if (!root) { return; }
  var state = { load: "0", sort: "price" };
  function show() {
    root.querySelectorAll(".load-answer").forEach(function (el) {
      el.hidden = !(el.dataset.load === state.load && el.dataset.sort === state.sort);
    });
    root.querySelectorAll("button[data-load]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.load === state.load));
    });
    root.querySelectorAll("button[data-sort]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.sort === state.sort));
    });
  }
  root.addEventListener("click", function (event) {
    var button = event.target.closest("button");
    if (!button) { return; }
    if (button.dataset.load !== undefined) { state.load = button.dataset.load; }
    if (button.dataset.sort !== undefined) { state.sort = button.dataset.sort; }
    show();
  });
  show();
})();
