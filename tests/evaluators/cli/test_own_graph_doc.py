"""docs/own-graph.md, run as written: every command of its ```bash blocks, in order, verbatim, in
a fresh folder, on a graph factprobe has never seen (slow: the whole pipeline, ~3 minutes).

Two lines are not run: the `pip install` of factprobe (tests/test_install_docs.py installs from
the path the docs give) and the `huggingface-cli download` of a real model (network). The only
substitution is the graph the user copies in (`/path/to/graph.ttl`). The templates are written
where the docs say the user writes them: the docs' own example for ex:capital, verbatim.

Checks what issue 29 met: `dvc exp run` works (the docs commit first), the dataset card says
the tree was clean, `dvc plots show` draws every chart in headless Chromium with no network, and
the export and publish lines run."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.evaluators.cli.own_graph import write_graph, write_templates
from tests.evaluators.cli.pipeline_run import EVAL_STAGES, ICL, PIPELINED, ok
from tests.evaluators.report.test_report_html import _browser

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "own-graph.md"
BIN = Path(sys.executable).parent
NOT_RUN = ("pip install ", "huggingface-cli download ")


def doc_commands(text: str) -> list[str]:
    """The commands of the doc's ```bash blocks, in order, their trailing comments dropped.

    >>> doc_commands("x\\n```bash\\ndvc repro   # go\\n# a note\\n\\nls\\n```\\n```yaml\\na: 1\\n```")
    ['dvc repro', 'ls']
    """
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def doc_yaml(text: str) -> str:
    """The doc's example template file (its one ```yaml block with a relation)."""
    return next(b for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
                if b.startswith("relation:"))


def env() -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "DVC_NO_ANALYTICS": "1",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


def ran_stages(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


@dataclass
class Walk:
    """What the doc's commands left: the repository, each command's output, and the generated
    files as `factprobe init` wrote them and as they stood after `dvc repro`."""
    repo: Path
    outputs: dict
    skipped: list
    generated: dict
    after_repro: dict
    status_after_repro: str


GENERATED = ("dvc.yaml", "params.yaml")


@pytest.fixture(scope="module")
def walk(tmp_path_factory) -> Walk:
    """docs/own-graph.md run once, verbatim; its two tests read what it left (the walkthrough
    is the whole pipeline of a new user's repository: running it once for both keeps 2 minutes
    of the suite)."""
    tmp_path = tmp_path_factory.mktemp("own-graph")
    text = DOC.read_text(encoding="utf-8")
    commands = doc_commands(text)
    (tmp_path / "mine").mkdir()
    graph = write_graph(tmp_path / "mine" / "graph.ttl")
    assert sum("/path/to/graph.ttl" in c for c in commands) == 1
    cwd, outputs, skipped = tmp_path, {}, []
    generated, after_repro, status = {}, {}, ""
    for cmd in commands:
        if cmd.startswith(NOT_RUN):
            skipped.append(cmd)
            continue
        script = cmd.replace("/path/to/graph.ttl", str(graph))
        where = tmp_path / ".cwd"
        # the command as written, then where it left the shell (`cd` carries to the next one)
        proc = subprocess.run(["bash", "-c", f"set -eo pipefail\n{script}\npwd > '{where}'"],
                              cwd=cwd, env=env(), capture_output=True, text=True, timeout=1500)
        assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        cwd = Path(where.read_text().strip())
        outputs[cmd] = proc.stdout + proc.stderr
        if cmd.startswith("factprobe init"):
            # what init's last line asks for: the doc's example file, and the other relation's
            assert "templates/ex_capital.yaml, templates/ex_language.yaml" in outputs[cmd]
            assert "git commit" in outputs[cmd]
            write_templates(cwd / "templates")
            (cwd / "templates" / "ex_capital.yaml").write_text(doc_yaml(text), encoding="utf-8")
            generated = {p: (cwd / p).read_bytes() for p in GENERATED}
        if cmd == "dvc repro":
            after_repro = {p: (cwd / p).read_bytes() for p in GENERATED}
            status = subprocess.run(["dvc", "status"], cwd=cwd, env=env(), capture_output=True,
                                    text=True, timeout=300).stdout
    return Walk(cwd, outputs, skipped, generated, after_repro, status)


@pytest.mark.slow
def test_own_graph_doc_verbatim(walk):
    outputs, repo = walk.outputs, walk.repo
    assert [c.split()[0] for c in walk.skipped] == ["pip", "huggingface-cli"]
    assert repo.name == "my-probe" and (repo / ".git").is_dir()

    def out(prefix: str) -> str:
        return next(v for k, v in outputs.items() if k.startswith(prefix))

    assert {"facts", "mc", "plant", "eval-zp-lke@planted", "eval-monitor@planted",
            "report"} <= ran_stages(out("dvc repro"))
    assert ran_stages(out("dvc exp run")) == {"eval-belief-icl@planted", "report"}
    assert "zp-lke/planted/mc_accuracy" in out("dvc metrics show")

    # every dataset was built from committed files: the card says so
    card = (repo / "hub" / "graph-mc" / "README.md").read_text(encoding="utf-8")
    assert "the git working tree it ran in: clean" in card
    assert "dirty" not in card
    questions = next((repo / "tasks" / "graph-mc").glob("*.jsonl")).read_text().splitlines()
    assert len(questions) == 2 * 16       # every test fact of both relations

    # dvc plots show: the page draws every chart from disk
    page = repo / "dvc_plots" / "index.html"
    assert "cdn.jsdelivr" not in page.read_text(encoding="utf-8")
    drawn = draw(page)
    assert sum(k.endswith("_csv") for k in drawn) == 3, drawn
    assert sum(k.endswith("_png") for k in drawn) >= 3 and all(drawn.values()), drawn


@pytest.mark.slow
def test_own_repository_from_init_to_report(walk):
    """`factprobe init` end to end, as a new user (the walkthrough's repository: a graph
    factprobe has never seen, templates written as the doc says, no edit to the generated
    files): what init generated, what `dvc repro` ran and wrote, `dvc metrics show`, `dvc plots
    show`, and one method's settings rerunning that method only."""
    repo, outputs = walk.repo, walk.outputs
    text = walk.generated["dvc.yaml"].decode()
    assert "builders" not in text and "llm-cache\n" not in text and "sample-" not in text
    assert yaml.safe_load(walk.generated["params.yaml"])["mc"]["choices"] == 8  # sized to the graph

    ran = ran_stages(outputs["dvc repro"])
    assert {"facts", "aliases", "mc", "templates", "multiprompt", "fktc", "plant",
            "plant-masked", "report", *EVAL_STAGES} <= ran
    assert not any(s.startswith("nobel") for s in ran)           # off until params ask for it
    mc = json.loads((repo / "data/datasets/graph-mc/dataset.json").read_text())["counts"]
    assert set(mc["per_relation"]) == {"ex:capital", "ex:language"}   # both relations kept
    assert "up to date" in walk.status_after_repro
    assert walk.after_repro == walk.generated                          # nothing edited

    # metrics: a handful of flat scalars, every method there, a short first line
    shown = ok(repo, "dvc", "metrics", "show")
    assert len(shown.splitlines()[0]) < 1000
    head = json.loads((repo / "reports/graph/headline.json").read_text())
    assert 5 <= len(head) <= 20
    for method in PIPELINED:
        assert any(k.startswith(method + "/") for k in head), (method, head)
    assert "zp-lke/planted/mc_accuracy" in shown

    # plots: one chart per figure, every series in it
    plots = json.loads(ok(repo, "dvc", "plots", "show", "--json"))["data"]
    cal = plots["reports/graph/plots/calibration.csv"]
    assert len(cal) == 1 and cal[0]["type"] == "vega"
    series = {row["series"] for row in cal[0]["content"]["data"]["values"]}
    assert series == {"belief: planted-mlm", "belief-icl: planted (zero)",
                      "belief-icl: planted (4-template)"}
    acc = plots["reports/graph/plots/accuracy_vs_examples.csv"][0]["content"]["data"]["values"]
    assert len({row["series"] for row in acc}) >= 2

    # one method's settings rerun that method's evaluation (and the report) only
    ok(repo, "git", "add", "-A")
    ok(repo, "git", "commit", "-qm", "pipeline")
    out = ok(repo, "dvc", "exp", "run", "--set-param", f"eval.belief_icl.args='{ICL.format(3)}'")
    assert ran_stages(out) == {"eval-belief-icl@planted", "report"}
    columns = ok(repo, "dvc", "exp", "show", "--csv").splitlines()[0].split(",")
    assert len(columns) < 120
    assert "# Written by factprobe init" in (repo / "params.yaml").read_text().splitlines()[0]


def draw(page: Path) -> dict[str, bool]:
    """{plot div id: whether it drew}, the page opened in headless Chromium with every request
    that is not file:// refused."""
    sync_playwright, exe = _browser()
    requests, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.route(lambda url: not url.startswith("file://"),
                  lambda route: (requests.append(route.request.url), route.abort()))
        pg = ctx.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(page.as_uri())
        # the series charts (Vega, from the CSVs) and the report's figures (PNG images)
        charts = "[...document.querySelectorAll('body > div[id$=\"_csv\"]')]"
        images = "[...document.querySelectorAll('body > div[id$=\"_png\"] img')]"
        pg.wait_for_function(f"() => {charts}.every(d => d.querySelector('canvas, svg')) && "
                             f"{images}.every(i => i.complete)", timeout=30000)
        drawn = pg.evaluate(f"""() => Object.fromEntries([
            ...{charts}.map(d => [d.id, !!d.querySelector('canvas, svg') &&
                                  d.getBoundingClientRect().height > 100]),
            ...{images}.map(i => [i.closest('div[id]').id, i.naturalWidth > 0])])""")
        browser.close()
    assert not requests and not errors, (requests, errors)
    return drawn
