// nexus-gateway dashboard: live upstream health over server-sent events (/ui/events). No build step.
"use strict";

function applyHealth(rows) {
  for (const row of rows) {
    const tr = document.querySelector(`tr[data-upstream="${CSS.escape(row.name)}"]`);
    if (!tr) continue;
    for (const cell of tr.querySelectorAll("[data-field]")) {
      const value = String(row[cell.dataset.field] ?? "");
      if (cell.textContent !== value) cell.textContent = value;
      if (cell.dataset.field === "health") cell.className = `health ${value}`;
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const live = document.getElementById("live");
  if (!live || !window.EventSource) return;
  const events = new EventSource(document.body.dataset.events);
  events.addEventListener("health", (event) => {
    applyHealth(JSON.parse(event.data));
    live.textContent = "live";
    live.dataset.updated = String(Date.now());
  });
  events.addEventListener("error", () => { live.textContent = "reconnecting…"; });
});
