// The explore tab: relation data loaded on demand, the fact table and a fact's panel per
// method, and the page's start (common.js and overview.js first).
// --------------------------------------------------------------------------- explorer
const loaded = {}, waiting = {};
window.FP_LOADED = (key, data) => { loaded[key] = data; (waiting[key] || []).forEach((f) => f(data)); };
function loadRelation(dsIndex, rel) {
  const ds = D.datasets[dsIndex];
  const key = `${ds.name}|${rel.id}`;
  if (loaded[key]) return Promise.resolve(loaded[key]);
  return new Promise((resolve, reject) => {
    (waiting[key] = waiting[key] || []).push(resolve);
    if (waiting[key].length > 1) return;
    const s = el("script", {src: rel.file});
    s.onerror = () => reject(new Error(`cannot load ${rel.file}`));
    document.body.append(s);
  });
}

const state = {ds: 0, rel: null, fact: null, data: null, table: null};

function showTab(name) {
  for (const t of ["overview", "explore"]) {
    $(t).hidden = t !== name;
    $(`tab-${t}`).classList.toggle("active", t === name);
  }
}

function setHash() {
  const ds = D.datasets[state.ds];
  const parts = [ds ? ds.name : "", state.rel || "", state.fact || ""].map(encodeURIComponent);
  history.replaceState(null, "", "#explore=" + parts.join("/"));
}

function fillDatasets() {
  $("dataset").replaceChildren(...D.datasets.map((d, i) => el("option", {value: i}, d.name)));
  $("dataset").addEventListener("change", () => selectDataset(Number($("dataset").value)));
  $("relation").addEventListener("change", () => selectRelation($("relation").value));
  for (const id of ["fact-filter", "filter-setting", "filter-outcome", "filter-conf-min",
    "filter-conf-max", "filter-planted"]) $(id).addEventListener("input", () => state.table && state.table.redraw());
}

function selectDataset(i, rel, fact) {
  state.ds = i;
  const ds = D.datasets[i];
  $("dataset").value = i;
  $("dataset-note").textContent = ds.note || "";
  $("relation").replaceChildren(...ds.relations.map((r) => el("option", {value: r.id},
    `${r.id}${r.label ? " – " + r.label : ""} (${r.facts})`)));
  $("filter-setting").replaceChildren(...ds.settings.map((s) => el("option", {value: s.id}, s.name)));
  return selectRelation(rel || (ds.relations[0] && ds.relations[0].id), fact);
}

async function selectRelation(relId, factId) {
  const ds = D.datasets[state.ds];
  const rel = ds.relations.find((r) => r.id === relId);
  if (!rel) return;
  $("relation").value = relId;
  state.rel = relId; state.fact = null;
  $("facts").replaceChildren(el("p", {class: "hint", text: "loading…"}));
  const data = await loadRelation(state.ds, rel);
  if (state.rel !== relId) return;
  state.data = data;
  renderFacts(ds, data);
  if (factId) selectFact(factId); else { $("fact-detail").replaceChildren(el("p", {class: "hint",
    text: "Pick a fact."})); setHash(); }
}

function openRelation(dataset, relation) {
  const i = D.datasets.findIndex((d) => d.name === dataset);
  if (i < 0) return;
  showTab("explore");
  selectDataset(i, relation);
}

function resultCell(res) {
  if (!res || res.correct === null || res.correct === undefined) return "–";
  const c = res.correct;
  const text = c === 1 ? "✓" : c === 0 ? "✗" : c.toFixed(2);
  return el("span", {class: c >= 0.5 ? "ok" : "bad", title: res.confidence === null ? "" :
    `confidence ${f3(res.confidence)}`}, text);
}

function renderFacts(ds, data) {
  const settings = ds.settings.filter((s) => data.facts.some((f) => f.results[s.id]));
  const cols = [
    {label: "subject", value: (f) => f.subject.toLowerCase(), cell: (f) => f.subject || f.id},
    {label: "gold", value: (f) => f.gold.toLowerCase(), cell: (f) => f.gold},
  ];
  const anyPlanted = data.facts.some((f) => Object.keys(f.planted).length);
  if (anyPlanted) cols.push({label: "planted", value: (f) => Object.values(f.planted)[0] || "",
    cell: (f) => Object.values(f.planted)[0] || ""});
  for (const s of settings) {
    cols.push({label: s.name, cls: "num", descFirst: true,
      value: (f) => f.results[s.id]?.correct ?? null, cell: (f) => resultCell(f.results[s.id])});
    if (data.facts.some((f) => f.results[s.id]?.confidence !== null && f.results[s.id]?.confidence !== undefined))
      cols.push({label: "conf.", cls: "num", descFirst: true,
        value: (f) => f.results[s.id]?.confidence ?? null, cell: (f) => f3(f.results[s.id]?.confidence)});
  }
  const keep = (f) => {
    const q = $("fact-filter").value.toLowerCase();
    if (q && !(f.subject.toLowerCase().includes(q) || f.gold.toLowerCase().includes(q) ||
      f.id.includes(q))) return false;
    const res = f.results[$("filter-setting").value];
    const outcome = $("filter-outcome").value;
    if (outcome !== "all") {
      if (!res || res.correct === null) return false;
      if ((outcome === "correct") !== (res.correct >= 0.5)) return false;
    }
    const lo = parseFloat($("filter-conf-min").value), hi = parseFloat($("filter-conf-max").value);
    if ((lo > 0 || hi < 1) && res) {
      if (res.confidence === null || res.confidence === undefined) return false;
      if (res.confidence < (isNaN(lo) ? 0 : lo) || res.confidence > (isNaN(hi) ? 1 : hi)) return false;
    }
    const p = $("filter-planted").value;
    if (p !== "all" && !Object.values(f.planted).includes(p)) return false;
    return true;
  };
  state.table = sortableTable(cols, data.facts, {cls: "facts", filter: keep, limit: 1000,
    rowAttrs: (f) => ({"data-fact": f.id, class: f.id === state.fact ? "selected" : null}),
    onclick: (f) => selectFact(f.id),
    counted: (shown, all) => { $("fact-count").textContent = `${all} of ${data.facts.length} facts` +
      (shown < all ? ` (first ${shown} shown; filter to narrow)` : ""); }});
  $("facts").replaceChildren(state.table);
}

function selectFact(fid) {
  const data = state.data;
  const fact = data.facts.find((f) => f.id === fid);
  if (!fact) return;
  state.fact = fid;
  document.querySelectorAll("#facts tr.selected").forEach((t) => t.classList.remove("selected"));
  const row = document.querySelector(`#facts tr[data-fact="${fid}"]`);
  if (row) row.classList.add("selected");
  renderFact(data, fact);
  setHash();
}

function aliasList(xs) {
  return xs && xs.length ? el("span", {class: "aliases"}, ` (also: ${xs.join("; ")})`) : null;
}

function promptBox(data, run, pid) {
  const text = (data.prompts[run] || {})[pid];
  return el("pre", {class: "prompt", "data-prompt-id": pid},
    text === undefined ? `(prompt ${pid}: prompts.parquet not found)` : text);
}

function ok(v) {
  if (v === null || v === undefined) return el("span", {class: "key"}, "not scored");
  return el("span", {class: v ? "ok" : "bad"}, v ? "✓ correct" : "✗ wrong");
}

function keyText(k) {
  return Object.entries(k || {}).map(([a, b]) => `${a} ${b}`).join(" · ");
}

const RENDER = {
  "zp-lke": renderMC, prompt: renderMC, belief: renderBelief, "belief-icl": renderICL,
  monitor: renderMonitor,
};

function renderMC(data, run, d) {
  const out = [];
  for (const q of d.questions || []) {
    const best = Math.max(...q.options.map((o) => o.prob || 0));
    out.push(el("div", {class: "question"},
      el("div", {}, el("span", {class: "key"}, keyText(q.key)), " ", ok(q.correct),
        el("span", {class: "key"}, ` · gold probability ${f3(q.gold_prob)}`)),
      promptBox(data, run, q.prompt),
      el("table", {class: "options"}, el("tr", {}, el("th", {}, "#"), el("th", {}, "option"),
        el("th", {}, "log-prob"), el("th", {}, "prob. (over options)")),
      q.options.map((o, i) => el("tr", {class: o.gold ? "gold-option" : null, "data-gold": o.gold ? "1" : null},
        el("td", {class: "num"}, i + 1), el("td", {}, o.text, o.gold ? " ★ gold" : ""),
        el("td", {class: "num"}, o.logprob === null ? "–" : o.logprob.toFixed(3)),
        el("td", {class: "num"}, el("span", {class: "bar", style: `width:${Math.round(80 * (o.prob || 0) / (best || 1))}px`}),
          " ", f3(o.prob)))))));
  }
  if ((d.responses || []).length) {
    out.push(el("h4", {}, "response test (greedy continuation contains the gold?)"));
    for (const r of d.responses) out.push(el("div", {class: "question"},
      el("span", {class: "key"}, keyText(r.key)), " ", ok(r.correct), promptBox(data, run, r.prompt),
      el("div", {}, "→ ", el("code", {}, JSON.stringify(r.text)))));
  }
  return out;
}

function bare(t) { return t.replace(/^[\u0120\u2581#]+/, "").toLowerCase(); }

function renderBelief(data, run, d, fact) {
  const golds = new Set([fact.gold, ...(fact.aliases || []), ...(fact.answers || [])].map((g) => g.toLowerCase()));
  return (d.prompts || []).map((p) => el("div", {class: "question"},
    el("span", {class: "key"}, p.template_id), " ", ok(p.correct),
    el("span", {class: "key"}, ` · gold probability at the mask ${f3(p.gold_prob)}`),
    promptBox(data, run, p.prompt),
    el("div", {}, el("span", {class: "key"}, "mask top-k: "), p.top.map(([t, pr]) =>
      el("span", {class: "chip" + (golds.has(bare(t)) ? " gold" : "")}, `${t} ${f3(pr)}`)))));
}

function renderICL(data, run, d) {
  const out = [];
  for (const [ctx, gens] of groupBy(d.generations || [], (g) => g.context)) {
    out.push(el("h4", {}, `context: ${ctx}`));
    for (const g of gens) out.push(el("div", {class: "question"},
      el("span", {class: "key"}, g.template_id), " ", ok(g.correct),
      g.one_word ? null : el("span", {class: "key"}, " · not one word"),
      promptBox(data, run, g.prompt),
      el("div", {}, "greedy → ", el("code", {}, JSON.stringify(g.text))),
      g.samples.length ? el("div", {}, el("span", {class: "key"}, "samples: "),
        g.samples.map(([t, n, m]) => el("span", {class: "chip" + (m ? " gold" : "")},
          `${JSON.stringify(t)} ×${n}${m ? " ✓" : ""}`))) : null));
  }
  return out;
}

function renderMonitor(data, run, d) {
  const out = [];
  if (d.anchor) out.push(el("div", {class: "question"},
    el("b", {}, "anchor "), ok(d.anchor.matched),
    el("span", {class: "key"}, ` · probability over the object's tokens ${f3(d.anchor.prob)}`),
    promptBox(data, run, d.anchor.prompt), el("div", {}, "→ ", el("code", {}, JSON.stringify(d.anchor.text)))));
  if (d.scores) out.push(el("div", {}, `PFD ${f3(d.scores.pfd)} · IRD ${f3(d.scores.ird)} · ` +
    `MONITOR ${f3(d.scores.monitor)}`));
  if ((d.frames || []).length) out.push(el("table", {class: "frames"},
    el("tr", {}, ["prompt", "frame", "template", "text", "answer", ""].map((h) => el("th", {}, h))),
    d.frames.map((f) => el("tr", {}, el("td", {}, f.key), el("td", {}, f.frame),
      el("td", {}, f.template_id), el("td", {}, promptBox(data, run, f.prompt)),
      el("td", {}, el("code", {}, JSON.stringify(f.text))), el("td", {}, ok(f.correct))))));
  return out;
}

function renderFact(data, fact) {
  const box = $("fact-detail");
  const head = el("div", {class: "fact-head", "data-fact": fact.id},
    el("div", {}, el("span", {class: "subject"}, fact.subject || "(subject not known)"),
      aliasList(fact.subject_aliases)),
    el("div", {}, el("span", {class: "key"}, `${data.relation.id}${data.relation.label ? " – " + data.relation.label : ""}: `),
      el("span", {class: "gold"}, fact.gold), aliasList(fact.aliases)),
    el("div", {class: "key"}, `fact ${fact.id}`));
  const runs = [];
  for (const [run, d] of Object.entries(data.details[fact.id] || {})) {
    const r = D.runs[Number(run)];
    const status = fact.planted[run];
    const results = Object.entries(fact.results).filter(([k]) => k.split(":")[0] === run)
      .map(([k, v]) => el("span", {class: "key"}, ` ${k.split(":").slice(1).join(":") || "result"}: `, resultCell(v)));
    runs.push(el("div", {class: "run", "data-run": run},
      el("h3", {}, `${r.method} · ${r.model}`, status ? el("span", {class: `badge ${status}`}, status) : null, results),
      (RENDER[r.method] || (() => []))(data, run, d, fact)));
  }
  box.replaceChildren(head, ...runs);
}

// The explorer's first view: the first dataset and relation whose facts have results, among
// them a planted model's listed facts (taught or held out) and some a method got right, then
// less of that; else the first relation.
function firstView() {
  for (const want of [(r) => r.correct && r.listed, (r) => r.with_results && r.listed,
    (r) => r.with_results]) {
    for (const [i, d] of D.datasets.entries()) {
      const rel = d.relations.find(want);
      if (rel) return [i, rel.id];
    }
  }
  return [0, undefined];
}

// ------------------------------------------------------------------------------- start
function start() {
  const n = D.runs.length;
  $("summary").textContent = `${n} run${n === 1 ? "" : "s"}. Intervals are 95% bootstrap ` +
    `intervals over facts (${D.options.resamples} resamples, seed ${D.options.seed}).`;
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => {
    showTab(b.dataset.tab);
    if (b.dataset.tab === "explore" && state.rel === null && D.datasets.length)
      selectDataset(...firstView());
  }));
  renderLeaderboard();
  renderValidity();
  renderHeatmaps();
  renderRuns();
  fillDatasets();
  const m = location.hash.match(/^#explore=(.*)$/);
  if (m) {
    const [ds, rel, fact] = m[1].split("/").map(decodeURIComponent);
    const i = D.datasets.findIndex((d) => d.name === ds);
    if (i >= 0) { showTab("explore"); selectDataset(i, rel, fact); }
  }
}
start();
