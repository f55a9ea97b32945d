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

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluators.cli.own_graph import write_graph, write_templates
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


@pytest.mark.slow
def test_own_graph_doc_verbatim(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    commands = doc_commands(text)
    (tmp_path / "mine").mkdir()
    graph = write_graph(tmp_path / "mine" / "graph.ttl")
    assert sum("/path/to/graph.ttl" in c for c in commands) == 1
    cwd, outputs, skipped = tmp_path, {}, []
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
    assert [c.split()[0] for c in skipped] == ["pip", "huggingface-cli"]
    repo = cwd
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
