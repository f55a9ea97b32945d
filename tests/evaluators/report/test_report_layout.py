"""The report page's layout in headless Chromium at 1400 px (issue 29: the page was 2,113 px wide,
the BELIEF and MONITOR leaderboards scrolled sideways, the validity table squeezed its score
column into rows ~200 px tall, and "Explore facts" opened on a dataset whose rows all read "not
listed"). The runs are test_report_html's real ones, plus a copy of the ZP-LKE run under a
dataset name that sorts first and a model without planted.json: the explorer must not open there.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tests.evaluators.report.test_report_cli import cli
from tests.evaluators.report.test_report_html import _browser, runs  # noqa: F401 (fixture)

WIDTH = 1400
# A row of the overview's tables holds at most three lines of text (14 px type, 1.45 leading,
# padding): taller means a column was squeezed until its words stood one per line.
MAX_ROW = 72


@pytest.fixture(scope="module")
def layout_page(runs):  # noqa: F811 (the imported fixture)
    results = runs / "layout-results"
    shutil.copytree(runs / "results", results)
    first = results / "a-first" / "planted"
    shutil.copytree(results / "zp-lke" / "planted", first)
    run = json.loads((first / "run.json").read_text())
    run["dataset"]["name"] = "a-first"
    run["backend"]["model"] = str(runs / "a-model-without-planted-json")
    (first / "run.json").write_text(json.dumps(run), encoding="utf-8")
    out = runs / "layout-page"
    proc = cli("report", "--results", str(results), "--quiet", "--no-plots", "--html",
               "--bootstrap", "50", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out / "index.html"


def _wide(pg) -> int:
    return pg.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def _tall_rows(pg) -> list:
    return pg.evaluate(f"""() => [...document.querySelectorAll('#overview table tr')]
        .filter(r => r.offsetParent !== null && r.getBoundingClientRect().height > {MAX_ROW})
        .map(r => [r.closest('table').className, Math.round(r.getBoundingClientRect().height),
                   r.textContent.slice(0, 80)])""")


def test_page_fits_1400_px_and_opens_the_explorer_on_results(layout_page, tmp_path):
    sync_playwright, exe = _browser()
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        ctx = browser.new_context(viewport={"width": WIDTH, "height": 1000})
        ctx.route(lambda url: not url.startswith("file://"), lambda route: route.abort())
        pg = ctx.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(layout_page.as_uri())
        pg.wait_for_selector(".heatmap svg")
        pg.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
        assert _wide(pg) <= 0, f"the page scrolls sideways by {_wide(pg)} px"
        assert not _tall_rows(pg)
        # every leaderboard keeps its main number in view
        heads = pg.eval_on_selector_all(".leaderboard", "ts => ts.map(t => [...t.querySelectorAll("
                                        "'th')].filter(h => h.offsetParent).length)")
        assert heads and min(heads) >= 2
        # all columns asked for: the table scrolls in its own box, never the page
        for button in pg.locator(".more-columns").all():
            button.click()
        assert pg.locator(".table-wrap:not(.collapsed)").count() >= 1
        assert _wide(pg) <= 0, f"with every column shown the page scrolls by {_wide(pg)} px"
        assert not _tall_rows(pg)

        pg.click("#tab-explore")
        pg.wait_for_selector("#facts tr[data-fact]")
        dataset = pg.eval_on_selector("#dataset", "s => s.options[s.selectedIndex].text")
        assert dataset != "a-first"          # sorts first, but no fact there is planted or held out
        rows = pg.eval_on_selector_all("#facts tr[data-fact]", "rs => rs.map(r => r.innerText)")
        assert any("planted" in r or "held-out" in r for r in rows), rows[:5]
        assert any("✓" in r or "✗" in r for r in rows), rows[:5]
        assert _wide(pg) <= 0
        pg.screenshot(path=str(tmp_path / "explore.png"))
        browser.close()
    assert not errors, errors
