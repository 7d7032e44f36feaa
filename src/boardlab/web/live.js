"use strict";
// boardlab serve, running campaigns: refetch the page's JSON twin every 2 s and rewrite the table's rows
// (text only: nothing fetched is ever parsed as HTML).
(function () {
  const live = document.getElementById("live");
  const table = document.querySelector("table tbody");
  if (!live || !table) return;
  const source = live.getAttribute("data-source");
  function render(d) {
    const rows = d.rows.map(function (cells, i) {
      const tr = document.createElement("tr");
      cells.forEach(function (text, k) {
        const td = document.createElement("td");
        if (k === 0) {
          const a = document.createElement("a");
          a.href = "/campaign/" + encodeURIComponent(String(d.campaigns[i].id));
          a.textContent = text;
          td.appendChild(a);
        } else {
          td.textContent = text;
        }
        tr.appendChild(td);
      });
      return tr;
    });
    table.replaceChildren.apply(table, rows);
    live.textContent = "updated " + new Date().toLocaleTimeString();
  }
  function tick() {
    fetch(source, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) { if (d) render(d); })
      .catch(function () { live.textContent = "not refreshed: the server did not answer"; })
      .finally(function () { setTimeout(tick, 2000); });
  }
  setTimeout(tick, 2000);
})();
