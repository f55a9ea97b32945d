"""`factprobe init` gives `dvc plots show` a page that draws offline (issue 29: DVC's own page
loads Vega from a CDN, and the three series charts were blank without a network): the page
holds the vendored Vega libraries and no URL to fetch, and init points DVC's
plots.html_template at it, keeping a value the user set. (The page drawing in Chromium is
tests/evaluators/cli/test_own_graph_doc.py.)"""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from factprobe.scaffold.render import HTML_TEMPLATE, PLOTS_PAGE, InitConfig, rendered
from tests.evaluators.cli.own_graph import write_graph

BIN = Path(sys.executable).parent


def sh(cwd: Path, *cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_plots_page_is_dvc_template_with_vega_inlined():
    page = rendered(InitConfig(dir=".", path="graph.ttl"))[PLOTS_PAGE]
    assert page.count("{plot_divs}") == 1
    assert "{scripts}" not in page          # DVC would put its CDN scripts there
    assert "cdn.jsdelivr" not in page and "<script src" not in page
    vendor = resources.files("factprobe.evaluators.report.html") / "vendor"
    for name in ("vega", "vega-lite", "vega-embed"):
        assert (vendor / f"{name}.min.js").read_text(encoding="utf-8") in page
        assert (vendor / f"LICENSE-{name}").read_text(encoding="utf-8").strip() in page
    assert "Written by factprobe init" in "".join(page.splitlines(keepends=True)[:3])


def _init(repo: Path, *extra: str) -> subprocess.CompletedProcess:
    return sh(repo, sys.executable, "-m", "factprobe.cli.app", "init", ".", "--path",
              "graph.ttl", "--relations", "ex:capital,ex:language", *extra)


def test_init_sets_plots_html_template_and_keeps_the_users(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    write_graph(repo / "graph.ttl")
    # before `dvc init`: nothing to set, the command to run is printed
    proc = _init(repo)
    assert proc.returncode == 0, proc.stderr
    assert f"dvc config plots.html_template {HTML_TEMPLATE}" in proc.stderr
    assert sh(repo, "git", "init", "-q").returncode == 0
    assert sh(repo, "dvc", "init", "-q").returncode == 0
    proc = _init(repo, "--force")
    assert proc.returncode == 0, proc.stderr
    assert "set plots.html_template" in proc.stderr
    assert sh(repo, "dvc", "config", "plots.html_template").stdout.strip() == HTML_TEMPLATE
    assert (repo / ".dvc" / HTML_TEMPLATE).resolve() == (repo / PLOTS_PAGE).resolve()
    # a template of the user's own is kept
    assert sh(repo, "dvc", "config", "plots.html_template", "../mine.html").returncode == 0
    proc = _init(repo, "--force")
    assert proc.returncode == 0 and "kept your plots.html_template" in proc.stderr
    assert sh(repo, "dvc", "config", "plots.html_template").stdout.strip() == "../mine.html"


def test_init_next_step_is_the_commit(tmp_path):
    write_graph(tmp_path / "graph.ttl")
    proc = _init(tmp_path)
    assert proc.returncode == 0, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "git add . && git commit" in last and last.index("commit") < last.index("dvc repro")
