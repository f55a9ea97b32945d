"""``factprobe report --html`` on real runs (tiny models, ZP-LKE / BELIEF / BELIEF-ICL /
MONITOR with planted halves and the subject-blind null), opened in headless Chromium through
Playwright: the leaderboard in the DOM equals metrics.json, a fact's drill-down shows its
subject, gold and exact prompt, nothing leaves file://, and the output bytes repeat.

Skips, saying why, where Playwright or a Chromium binary is missing (.ci/run installs Debian's
chromium; Playwright comes with the test extra and is never asked to download a browser)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from factprobe.core.tables import file_sha256
from factprobe.evaluators.report.markdown import fmt
from tests.evaluators.report.test_report_cli import _files, _plan, cli

METHODS = ("zp-lke", "belief", "belief-icl", "monitor")


def _chromium() -> str | None:
    for c in (os.environ.get("FACTPROBE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if c and Path(c).is_file():
            return c
    return None


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_causal_dir, tiny_masked_dir):
    """One real run per method, each on its own dataset folder (so the page can show subjects
    and aliases), the model a planted one (planted.json beside it)."""
    from factprobe.evaluators.methods import METHODS as TABLE
    from factprobe.probes.backends import KINDS, BackendConfig
    from factprobe.probes.engine.runner import EvalConfig, run_eval
    from factprobe.probes.subject_blind import with_null_pass
    root = tmp_path_factory.mktemp("html")
    for method in METHODS:
        make, tables, cfg, halves = _plan(method)
        ds = root / "datasets" / method
        ds.mkdir(parents=True)
        tables["facts"].to_parquet(ds / "facts.parquet")
        plan = with_null_pass(make(tables), tables, halves, make)
        model = root / "models" / method
        shutil.copytree(tiny_masked_dir if method == "belief" else tiny_causal_dir, model)
        (model / "planted.json").write_text(json.dumps(halves), encoding="utf-8")
        kind = "hf-masked" if method == "belief" else "hf-causal"
        run_eval(EvalConfig(method, str(ds), str(root / "results" / method / "planted"),
                            progress=False),
                 BackendConfig(str(model), kind=kind), plan, cfg,
                 {"name": f"tiny-{method}", "facts_sha256": file_sha256(ds / "facts.parquet"),
                  "path": str(ds)}, kinds=KINDS,
                 metrics_fn=lambda o, m=method, h=halves, c=cfg:
                 TABLE[m].metrics.checked_compute(o, h, c))
    return root


@pytest.fixture(scope="module")
def page(runs):
    args = ["report", "--results", str(runs / "results"), "--quiet", "--no-plots", "--html",
            "--bootstrap", "50"]
    for out in ("one", "two"):
        proc = cli(*args, "--out", str(runs / out))
        assert proc.returncode == 0, proc.stderr
        assert "index.html" in proc.stdout + proc.stderr or (runs / out / "index.html").is_file()
    return runs / "one"


def test_html_bytes_repeat_and_are_owned(page):
    one, two = _files(page), _files(page.parent / "two")
    assert one.keys() == two.keys()
    assert not [k for k in one if one[k] != two[k]]
    assert "index.html" in one and any(k.startswith("explorer/data/") for k in one)
    owned = json.loads((page / "report.json").read_text())
    assert "index.html" in json.dumps(owned)           # a rerun may replace what it wrote
    html = one["index.html"].decode()
    assert "http://" not in html.replace("http://www.w3.org", "") and "cdn" not in html.lower()


def test_one_run(runs, tmp_path):
    proc = cli("report", "--results", str(runs / "results" / "monitor" / "planted"), "--out",
               str(tmp_path / "r"), "--quiet", "--no-plots", "--html", "--bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "index.html").is_file()
    assert len(list((tmp_path / "r" / "explorer" / "data").rglob("*.js"))) == 1   # one relation


def _browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e .[test])")
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium binary (apt-get install chromium, or set FACTPROBE_CHROMIUM)")
    return sync_playwright, exe


def test_page_in_chromium(page, runs, tmp_path):
    sync_playwright, exe = _browser()
    metrics = json.loads((page / "metrics.json").read_text())
    run = runs / "results" / "zp-lke" / "planted"
    facts = pd.read_parquet(runs / "datasets" / "zp-lke" / "facts.parquet")
    outputs = pd.read_parquet(run / "outputs.parquet")
    prompts = dict(pd.read_parquet(run / "prompts.parquet")[["prompt_id", "text"]].to_numpy())
    mc = outputs[(outputs["stage"] == "mc") & ~outputs["subject_blind"].astype(bool)]
    fact = facts[facts["fact_id"].isin(mc["fact_id"])].sort_values("fact_id").iloc[-1]
    mine = mc[mc["fact_id"] == fact["fact_id"]]
    want_prompts = {prompts[p] for p in mine["prompt_id"]}
    gold_option = mine.loc[mine["is_gold"].astype(bool), "option_text"].iloc[0].strip()

    requests, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        # anything not file:// is refused and recorded: the page must not need the network
        ctx.route(lambda url: not url.startswith("file://"),
                  lambda route: (requests.append(route.request.url), route.abort()))
        pg = ctx.new_page()
        pg.on("request", lambda r: requests.append(r.url))
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto((page / "index.html").as_uri())
        pg.wait_for_selector(".heatmap svg")                 # Vega drew the heatmaps

        cells = pg.eval_on_selector_all(".lb-cell", """cs => cs.map(c => [c.dataset.dataset,
            c.dataset.method, c.dataset.settingName, c.dataset.metric, c.dataset.value,
            c.textContent])""")
        want = {(d, m, s, k): v for d, by_m in metrics.items() for m, by_s in by_m.items()
                for s, by_k in by_s.items() for k, v in by_k.items()}
        got = {(d, m, s, k): (float(v), text) for d, m, s, k, v, text in cells}
        assert set(got) == set(want)
        for key, v in want.items():
            assert got[key][0] == v["value"], key
            assert got[key][1] == fmt(v["value"], v.get("ci_low"), v.get("ci_high")), key
        shot = tmp_path / "overview.png"
        pg.screenshot(path=str(shot), full_page=True)

        pg.click("#tab-explore")
        pg.select_option("#dataset", label="tiny-zp-lke")
        pg.select_option("#relation", value=str(fact["relation_id"]))
        pg.click(f'#facts tr[data-fact="{fact["fact_id"]}"]')
        head = pg.locator("#fact-detail .fact-head")
        assert head.locator(".subject").inner_text() == fact["subject"]
        assert head.locator(".gold").inner_text() == fact["object"]
        shown = set(pg.eval_on_selector_all('#fact-detail .run[data-run] pre.prompt',
                                            "ps => ps.map(p => p.textContent)"))
        assert want_prompts <= shown
        gold_rows = pg.locator("#fact-detail tr.gold-option").all_inner_texts()
        assert gold_rows and all(gold_option in t for t in gold_rows)
        assert "planted" in pg.locator("#fact-detail .badge").first.inner_text() or \
            "held-out" in pg.locator("#fact-detail .badge").first.inner_text()
        assert fact["fact_id"] in pg.url                      # a link to this fact

        pg.select_option("#filter-outcome", "wrong")           # filtering keeps wrong only
        wrong = pg.eval_on_selector_all("#facts tr[data-fact]", "rs => rs.length")
        pg.select_option("#filter-outcome", "correct")
        right = pg.eval_on_selector_all("#facts tr[data-fact]", "rs => rs.length")
        pg.select_option("#filter-outcome", "all")
        total = pg.eval_on_selector_all("#facts tr[data-fact]", "rs => rs.length")
        assert wrong + right == total and total == mc[mc["relation_id"] == fact["relation_id"]][
            "fact_id"].nunique()

        shot_fact = tmp_path / "fact.png"
        pg.screenshot(path=str(shot_fact))
        browser.close()
    print(f"screenshots: {shot} {shot_fact}")
    assert not errors, errors
    assert requests and all(u.startswith("file://") for u in requests), \
        [u for u in requests if not u.startswith("file://")]
