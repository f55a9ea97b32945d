// factprobe report explorer (common part): renders the overview from the inlined report tables and loads a
// relation's drill-down data (explorer/data/...js) with a <script> tag when it is opened
// (Chromium blocks fetch() of file:// URLs). No framework: the page must open from disk.
"use strict";
const D = JSON.parse(document.getElementById("fp-data").textContent);
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
const f3 = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(3));
const settingName = (model, setting) => (setting ? `${model} (${setting})` : model);

// ------------------------------------------------------------------ sortable tables
// columns: [{label, value(row) -> sort key, cell(row) -> node|string, cls}]
function sortableTable(columns, rows, opts = {}) {
  const table = el("table", {class: opts.cls});
  const head = el("tr");
  const body = el("tbody");
  let sortCol = opts.sortCol ?? -1, desc = opts.desc ?? false;
  const draw = () => {
    let r = rows.slice();
    if (sortCol >= 0) {
      const v = columns[sortCol].value;
      r.sort((a, b) => {
        const x = v(a), y = v(b);
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;        // missing values last
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * (desc ? -1 : 1);
      });
    }
    if (opts.filter) r = r.filter(opts.filter);
    const limit = opts.limit || Infinity;
    body.replaceChildren(...r.slice(0, limit).map((row) => {
      const tr = el("tr", opts.rowAttrs ? opts.rowAttrs(row) : {},
        columns.map((c) => el("td", {class: c.cls}, c.cell(row))));
      if (opts.onclick) { tr.classList.add("clickable"); tr.addEventListener("click", () => opts.onclick(row, tr)); }
      return tr;
    }));
    head.querySelectorAll("th").forEach((th, i) => {
      th.classList.toggle("sorted-asc", i === sortCol && !desc);
      th.classList.toggle("sorted-desc", i === sortCol && desc);
    });
    if (opts.counted) opts.counted(Math.min(r.length, limit), r.length);
  };
  columns.forEach((c, i) => head.append(el("th", {class: c.cls, onclick: () => {
    desc = sortCol === i ? !desc : !!c.descFirst; sortCol = i; draw();
  }}, c.label)));
  table.append(el("thead", {}, head), body);
  table.redraw = draw;
  draw();
  return table;
}

// A wide table fits the page: its secondary columns (class "secondary") start hidden, a button
// shows them, and the table then scrolls inside its own box, never the page.
function fitted(table) {
  const n = table.querySelectorAll("thead th.secondary").length;
  const box = el("div", {class: "table-wrap collapsed"}, table);
  if (!n) return box;
  const more = `show ${n} more column${n === 1 ? "" : "s"}`;
  const button = el("button", {class: "more-columns", type: "button"}, more);
  button.addEventListener("click", () => {
    const open = box.classList.toggle("collapsed") === false;
    button.textContent = open ? "fewer columns" : more;
  });
  return el("div", {class: "fitted"}, box, button);
}

function groupBy(rows, key) {
  const m = new Map();
  for (const r of rows) { const k = key(r); if (!m.has(k)) m.set(k, []); m.get(k).push(r); }
  return m;
}

function embed(target, spec) {
  if (typeof vegaEmbed === "undefined") {
    target.append(el("p", {class: "warn", text: "charts need explorer/vendor/ beside index.html"}));
    return;
  }
  return vegaEmbed(target, spec, {actions: false, renderer: "svg"});
}

