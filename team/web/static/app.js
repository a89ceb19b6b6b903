// team web: the live stream and the actions. Hand-written, no dependencies.
// The server sends fragments of its own templates (already escaped there); this file
// only places them: a task card in its column, an agent's row, a row of a table.
"use strict";
(function () {
  const seen = (window.teamSeen = { task: {}, count: 0 }); // for tests and the bench
  const $ = (sel, root) => (root || document).querySelector(sel);

  function fromHTML(html) {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function flash(line, ok) {
    const box = $("#flash");
    if (!box) return;
    box.textContent = line;
    box.className = ok ? "ok" : "bad";
  }

  function counts() {
    document.querySelectorAll(".column").forEach((col) => {
      const c = $(".count", col);
      if (c) c.textContent = String(col.querySelectorAll(".task").length);
    });
  }

  const charts = {};
  function refreshChart(agent) {
    const box = $("#timeline-" + CSS.escape(agent) + " .chart-box");
    if (!box || charts[agent]) return;
    charts[agent] = setTimeout(() => {
      charts[agent] = null;
      fetch(box.dataset.src, { credentials: "same-origin" })
        .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
        .then((html) => {
          const svg = fromHTML(html);
          if (!svg) return;
          box.replaceChildren(svg);
          const count = $("#timeline-" + CSS.escape(agent) + " .mcount");
          if (count && svg.dataset.marks) count.textContent = svg.dataset.marks;
        })
        .catch(() => {});
    }, 200);
  }

  const handlers = {
    ready() {
      const live = $("#live");
      if (live) {
        live.textContent = "● live";
        live.className = "live on";
      }
      document.body.dataset.live = "1";
    },
    task(d) {
      seen.task[d.id] = Date.now();
      const old = document.getElementById("task-" + d.id);
      const col = document.getElementById("col-" + d.status);
      if (!col) {
        if (old) old.remove();
        return;
      }
      const card = fromHTML(d.html);
      card.classList.add("fresh");
      if (old && old.parentElement === col) old.replaceWith(card);
      else {
        if (old) old.remove();
        const head = $("h2", col);
        head ? head.after(card) : col.prepend(card);
      }
      counts();
    },
    agent(d) {
      const row = document.getElementById("agent-" + d.name);
      if (row) row.replaceWith(fromHTML("<table><tbody>" + d.html + "</tbody></table>").querySelector("tr"));
    },
    agent_event(d) {
      const list = $("#agent-events");
      if (!list) return;
      list.prepend(fromHTML(d.html));
      while (list.children.length > 50) list.lastElementChild.remove();
    },
    delivery(d) {
      const body = $("#deliveries tbody");
      if (!body) return;
      body.prepend(fromHTML("<table><tbody>" + d.html + "</tbody></table>").querySelector("tr"));
      while (body.children.length > 200) body.lastElementChild.remove();
    },
    compaction(d) {
      const pick = $("nav.picker a[data-agent='" + CSS.escape(d.agent) + "'] .ccount");
      if (pick && d.success) pick.textContent = String(Number(pick.textContent) + 1);
      const table = $("#comp-" + CSS.escape(d.agent));
      if (!table) return;
      const body = $("tbody", table);
      if (table.dataset.live === "1" && body) {
        body.prepend(fromHTML("<table><tbody>" + d.html + "</tbody></table>").querySelector("tr"));
        while (body.children.length > 200) body.lastElementChild.remove();
        const none = $(".none", table.parentElement);
        if (none) none.remove();
      }
      refreshChart(d.agent);
    },
    reload() {
      window.location.reload();
    },
  };

  function connect() {
    const es = new EventSource("/events");
    for (const [name, fn] of Object.entries(handlers)) {
      es.addEventListener(name, (e) => {
        seen.count += 1;
        fn(JSON.parse(e.data));
      });
    }
    es.onerror = () => {
      const live = $("#live");
      if (live) {
        live.textContent = "○ reconnecting";
        live.className = "live off";
      }
    };
  }

  function actions() {
    document.querySelectorAll("form.action").forEach((form) => {
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
        const body = new URLSearchParams(new FormData(form));
        fetch("/action/" + form.dataset.action, {
          method: "POST",
          body,
          credentials: "same-origin",
          headers: { "X-Team-Action": "1" },
        })
          .then((r) => r.json().catch(() => ({ ok: false, line: "HTTP " + r.status })))
          .then((d) => {
            flash(d.line, d.ok);
            if (d.ok) form.reset();
          })
          .catch((e) => flash(String(e), false));
      });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    counts();
    actions();
    connect();
  });
})();
