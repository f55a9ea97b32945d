// The overview tab: leaderboard, validity table and chart, heatmaps, runs (common.js first).
// --------------------------------------------------------------------------- overview
// Metric columns a leaderboard shows before "show more": what fits 1400 px beside the model.
const LEADERBOARD_COLUMNS = 5;

function renderLeaderboard() {
  const box = $("leaderboard");
  const tables = [];
  for (const [gk, recs] of groupBy(D.leaderboard, (r) => `${r.dataset}\u0000${r.method}`)) {
    const [dataset, method] = gk.split("\u0000");
    const m = D.methods[method];
    const metrics = [...new Set(recs.map((r) => r.metric))];
    const rows = [...groupBy(recs, (r) => `${r.model}\u0000${r.setting}`).values()].map((rs) => ({
      model: rs[0].model, setting: rs[0].setting,
      cells: Object.fromEntries(rs.map((r) => [r.metric, r]))}));
    const cols = [{label: "model", value: (r) => r.model, cell: (r) => r.model}];
    if (m.contexts) cols.push({label: "context", value: (r) => r.setting, cell: (r) => r.setting});
    // the main number and the next few in the method's order; the rest behind a button
    const first = [m.main, ...metrics.filter((x) => x !== m.main)].slice(0, LEADERBOARD_COLUMNS);
    for (const name of metrics) {
      const lower = m.lower_is_better.includes(name);
      cols.push({label: m.labels[name], cls: first.includes(name) ? "num" : "num secondary",
        descFirst: !lower,
        value: (r) => r.cells[name]?.value ?? null,
        cell: (r) => { const c = r.cells[name]; return c && c.value !== null ? el("span", {class: "lb-cell",
          "data-dataset": dataset, "data-method": method,
          "data-setting-name": settingName(r.model, r.setting), "data-metric": name,
          "data-value": c.value, "data-ci-low": c.ci_low, "data-ci-high": c.ci_high,
          title: c.n === null ? "" : `n = ${c.n}`}, c.text) : "–"; }});   // as report.md
    }
    const main = metrics.indexOf(m.main);
    const t = sortableTable(cols, rows, {cls: "leaderboard",
      sortCol: main >= 0 ? main + (m.contexts ? 2 : 1) : -1,
      desc: !m.lower_is_better.includes(m.main),
      filter: (r) => r.model.toLowerCase().includes($("leaderboard-filter").value.toLowerCase())});
    tables.push(t);
    box.append(el("h3", {}, `${method} on ${dataset}`), fitted(t));
  }
  $("leaderboard-filter").addEventListener("input", () => tables.forEach((t) => t.redraw()));
}

function renderValidity() {
  $("margin").textContent = D.familiarity_margin;
  // a planted model that did not learn its facts: at the top of the page and above the table
  for (const w of D.planted_warnings || []) {
    $("summary").after(el("p", {class: "bad planted-warning"}, `Warning. ${w}`));
    $("validity").before(el("p", {class: "bad planted-warning"}, `Warning. ${w}`));
  }
  const rows = D.validity;
  if (!rows.length) {
    $("validity").append(el("p", {class: "hint",
      text: "No run has a planted-knowledge model (planted.json beside the model)."}));
    return;
  }
  const nullCell = (r) => {
    if (r.null_auroc_value === null) return r.null_reason ? "– (see below)" : "no null pass";
    return r.text.null_auroc + (r.familiarity ? " (!)" : "");
  };
  const cols = [
    {label: "method", value: (r) => r.method, cell: (r) => r.method},
    {label: "dataset", value: (r) => r.dataset, cell: (r) => r.dataset},
    {label: "model", value: (r) => settingName(r.model, r.setting),
      cell: (r) => settingName(r.model, r.setting)},
    {label: "estimator", value: (r) => r.estimator, cell: (r) => r.estimator},
    ...["planted", "held_out", "difference", "auroc"].map((k) => ({
      label: {planted: "planted", held_out: "held-out", difference: "difference",
        auroc: "AUROC"}[k], cls: k === "difference" ? "num secondary" : "num", descFirst: true,
      value: (r) => r[`${k}_value`], cell: (r) => {
        const flagged = k === "held_out" && r.guess_flag;
        return el("span", {"data-validity": k, "data-value": r[`${k}_value`],
          class: flagged ? "bad" : ""}, r.text[k] + (flagged ? " (!)" : ""));
      }})),
    {label: "subject-blind AUROC", cls: "num", value: (r) => r.null_auroc_value,
      cell: (r) => el("span", {"data-validity": "null_auroc", "data-value": r.null_auroc_value,
        class: r.familiarity ? "bad" : ""}, nullCell(r))},
    {label: "link-shuffle AUROC", cls: "num", value: (r) => r.shuffle_auroc_value,
      cell: (r) => el("span", {"data-validity": "shuffle_auroc",
        "data-value": r.shuffle_auroc_value, class: r.shuffle_flag ? "bad" : ""},
        r.shuffle_auroc_value === null ? (r.shuffle_reason ? "– (see below)" : "–")
          : r.text.shuffle_auroc + (r.shuffle_flag ? " (!)" : ""))},
    {label: "subject-only AUROC ('.' / own)", cls: "num", value: (r) => r.period_auroc_value,
      cell: (r) => el("span", {"data-validity": "subject_only", class: r.subject_flag ? "bad" : ""},
        r.period_auroc_value === null && r.own_auroc_value === null ? "–"
          : `${r.text.period_auroc} / ${r.text.own_auroc}` + (r.subject_flag ? " (!)" : ""))},
    {label: "n (planted / held-out)", cls: "num secondary", value: (r) => r.n_planted,
      cell: (r) => `${r.n_planted ?? "–"} / ${r.n_held_out ?? "–"}`},
    // a sentence, not a number: behind the button, and given room when shown
    {label: "score", cls: "secondary text", value: (r) => r.score_means,
      cell: (r) => r.score_means || ""},
  ];
  $("validity").append(fitted(sortableTable(cols, rows, {cls: "validity"})));
  for (const r of rows) {
    const where = `${r.method} on ${r.dataset}, ${settingName(r.model, r.setting)}, ${r.estimator}`;
    if (r.guess_flag) $("validity-flags").append(el("li", {}, el("b", {}, where),
      `: ${r.guess_flag}`));
    if (r.familiarity) $("validity-flags").append(el("li", {}, el("b", {}, where),
      `: ${r.null_flag}`));
    else if (r.null_auroc_value === null && r.null_reason)
      $("validity-flags").append(el("li", {}, `${where}: no subject-blind null (${r.null_reason}).`));
    if (r.subject_flag) $("validity-flags").append(el("li", {}, el("b", {}, where),
      `: ${r.subject_flag}`));
    if (r.shuffle_flag) $("validity-flags").append(el("li", {}, el("b", {}, where),
      `: ${r.shuffle_flag}`));
    else if (r.shuffle_auroc_value === null && r.shuffle_reason)
      $("validity-flags").append(el("li", {}, `${where}: no link-shuffle null (${r.shuffle_reason}).`));
  }
  const pts = [];
  for (const r of rows) {
    const name = `${r.method}: ${settingName(r.model, r.setting)} · ${r.estimator}`;
    pts.push({run: name, kind: "validity AUROC", value: r.auroc_value, lo: r.auroc_ci_low,
      hi: r.auroc_ci_high});
    if (r.null_auroc_value !== null) pts.push({run: name, kind: "subject-blind AUROC (null)",
      value: r.null_auroc_value, lo: r.null_auroc_ci_low, hi: r.null_auroc_ci_high});
  }
  embed($("validity-chart"), {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    data: {values: pts.filter((p) => p.value !== null)}, width: 420,
    height: {step: 16},
    encoding: {y: {field: "run", type: "nominal", title: null, axis: {labelLimit: 360}},
      yOffset: {field: "kind"}, color: {field: "kind", type: "nominal", title: null,
        scale: {range: ["#2f5fa7", "#d08a2e"]}, legend: {orient: "bottom"}}},
    layer: [
      {mark: {type: "rule"}, encoding: {x: {field: "lo", type: "quantitative",
        scale: {domain: [0, 1]}, title: "AUROC (planted vs held-out), 95% interval"},
        x2: {field: "hi"}}},
      {mark: {type: "point", filled: true, size: 50}, encoding: {x: {field: "value",
        type: "quantitative"}, tooltip: [{field: "run"}, {field: "kind"},
        {field: "value", format: ".3f"}, {field: "lo", format: ".3f"}, {field: "hi", format: ".3f"}]}},
      {data: {values: [{x: 0.5}]}, mark: {type: "rule", strokeDash: [4, 3], color: "#888"},
        encoding: {x: {field: "x", type: "quantitative"}, y: {value: 0}, y2: {value: "height"},
          yOffset: null, color: null}},
    ]});
}

function renderHeatmaps() {
  const box = $("heatmaps");
  for (const [gk, recs] of groupBy(D.per_relation, (r) => `${r.dataset}\u0000${r.method}`)) {
    const [dataset, method] = gk.split("\u0000");
    const m = D.methods[method];
    const lower = m.lower_is_better.includes(m.main);
    const values = recs.filter((r) => r.value !== null).map((r) => ({
      relation: r.relation_id, setting: settingName(r.model, r.setting), value: r.value,
      text: r.text, n: r.n, dataset}));
    const vs = values.map((v) => v.value);
    const mid = vs.length ? (Math.min(...vs) + Math.max(...vs)) / 2 : 0;
    const div = el("div", {class: "chart heatmap", "data-dataset": dataset, "data-method": method});
    box.append(el("h3", {}, `${m.labels[m.main]}: ${method} on ${dataset}`), div);
    const view = embed(div, {
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      data: {values}, width: {step: 64}, height: {step: 24},
      encoding: {x: {field: "relation", type: "nominal", title: null, axis: {labelAngle: -30}},
        y: {field: "setting", type: "nominal", title: null, axis: {labelLimit: 300}}},
      layer: [
        {mark: {type: "rect", cursor: "pointer"}, encoding: {color: {field: "value",
          type: "quantitative", title: m.labels[m.main] + (lower ? " (lower = better)" : ""),
          scale: {scheme: "blues", reverse: lower}},
          tooltip: [{field: "relation"}, {field: "setting"}, {field: "text", title: m.labels[m.main]},
            {field: "n"}]}},
        // white on the darker half of the scale, so every number stays readable
        {mark: {type: "text", fontSize: 11}, encoding: {text: {field: "value", format: ".2f"},
          color: {condition: {test: `datum.value ${lower ? "<" : ">"} ${mid}`, value: "white"},
            value: "#222"}}},
      ]});
    if (view) view.then((res) => res.view.addEventListener("click", (_, item) => {
      if (item && item.datum && item.datum.relation) openRelation(dataset, item.datum.relation);
    }));
  }
}

function renderRuns() {
  const cols = ["dataset", "method", "model", "path", "rows", "planted"].map((k) => ({
    label: k === "path" ? "run folder" : k === "planted" ? "planted.json" : k,
    value: (r) => r[k], cell: (r) => (r[k] === null ? "–" : String(r[k]))}));
  $("runs").append(fitted(sortableTable(cols, D.runs, {cls: "runs"})));
  if (!D.notes.length) $("notes-block").hidden = true;
  for (const n of D.notes) $("notes").append(el("li", {}, n));
}

