"""docs/extending.md, first-class: a copy of the repository (its git files) gets the worked
method exactly as the page says (docs/examples/gold_prob/: two new modules and the table's
entry in evaluators/methods.py, then the pipelines regenerated), and the new method is then
everywhere the shipped ones are: `factprobe eval --help`, the shipped dvc.yaml/params.yaml,
`factprobe init`'s pipeline, `factprobe report` and its HTML explorer data. The copy then runs
the suite's table-driven tests (those that iterate METHODS), which must pass with the new
method in the table.
The same copy gets the worked source (docs/examples/jsonl_source/: its module and its adapter
and entry in builders/sources/table.py), which `factprobe build facts`, `factprobe init` and
the dataset card (`factprobe publish --dry-run`) then know, and the worked metric
(docs/examples/top2_metric/: a function in ZP-LKE's metric module, a line and a headline in its
suite), which the report's metrics.json and leaderboard then show.

The copy's package is imported from the copy's own folders: a tiny ``sitecustomize`` on
PYTHONPATH puts a finder first on ``sys.meta_path`` that maps the four top packages
(setup.py's ``package_dir``) to the copy, ahead of this venv's editable finder, and writes
nothing anywhere (an editable install into an overlay venv would write its site-packages).
Measured here: the whole module in about 30 s, of which each interpreter's start is about 1 s
(the package's imports, not the shim). The backend example runs the same way in
tests/test_extending_backend.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.packages import folders
# tests/planted's world and causal model as fixtures here too (built once for the run)
from tests.planted.conftest import causal_model, planted, world  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "gold_prob"
SOURCE = ROOT / "docs" / "examples" / "jsonl_source"
METRIC = ROOT / "docs" / "examples" / "top2_metric"

pytestmark = pytest.mark.slow

# setup.py's folder map, read once (tests/packages.py), not copied
FOLDERS = {name: folder.name for name, folder in folders().items()}
SHIM = '''\
import importlib.util, os, sys
ROOT = os.environ["FACTPROBE_COPY"]
FOLDERS = ''' + repr(FOLDERS) + '''
class CopyFinder:
    """The four mapped packages from the copy; their submodules follow the packages' paths."""
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in FOLDERS:
            return None
        folder = os.path.join(ROOT, FOLDERS[name])
        return importlib.util.spec_from_file_location(
            name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
sys.meta_path.insert(0, CopyFinder)
'''

# the table-driven tests: they iterate METHODS (or the pipelines written from it)
TABLE_TESTS = ["tests/evaluators/test_methods.py", "tests/test_stages.py",
               "tests/test_layers.py", "tests/evaluators/test_init_scaffold.py"]


def _copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def _add_method(repo: Path) -> list[Path]:
    """docs/extending.md's three edits; returns the files written or changed."""
    probe = repo / "probes" / "methods" / "gold_prob.py"
    suite = repo / "evaluators" / "metrics" / "suites" / "gold_prob.py"
    shutil.copy(EXAMPLE / "probe.py", probe)
    shutil.copy(EXAMPLE / "metrics.py", suite)
    entry = [line for line in (EXAMPLE / "methods_entry.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    imports, row = [x for x in entry if x.startswith("from ")], entry[-1]
    table = repo / "evaluators" / "methods.py"
    text = table.read_text()
    anchor = "from factprobe.probes.methods.spec import Probe\n"
    assert anchor in text and "METHODS: dict[str, Method] = {\n" in text
    text = text.replace(anchor, "\n".join(imports) + "\n" + anchor)
    head, tail = text.split("METHODS: dict[str, Method] = {\n")
    body, rest = tail.split("\n}\n", 1)
    table.write_text(head + "METHODS: dict[str, Method] = {\n" + body + "\n" + row + "\n}\n"
                     + rest)
    return [probe, suite, table]


def _parts(path: Path) -> list[list[str]]:
    """An example's insertions: the code lines after each comment line, in order."""
    parts: list[list[str]] = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            parts.append([])
        elif line:
            parts[-1].append(line)
    return parts


def _insert(path: Path, anchor: str, lines: list[str], after: bool = False) -> None:
    """``lines`` before (or after) the one line that is ``anchor``."""
    text = path.read_text()
    assert text.count(anchor) == 1, anchor
    block = "\n".join(lines) + "\n"
    path.write_text(text.replace(anchor, anchor + block if after else block + anchor))


def _add_source(repo: Path) -> list[Path]:
    """docs/extending.md's "Adding a source": the module, and its entry in the sources'
    table; returns the files written or changed."""
    module = repo / "builders" / "sources" / "jsonl.py"
    shutil.copy(SOURCE / "jsonl.py", module)
    [entry] = _parts(SOURCE / "sources_entry.txt")
    table = repo / "builders" / "sources" / "table.py"
    head, tail = table.read_text().split("SOURCES: dict[str, Source] = {\n")
    body, rest = tail.split("\n}\n", 1)
    table.write_text(head + "SOURCES: dict[str, Source] = {\n" + body + "\n" + "\n".join(entry)
                     + "\n}\n" + rest)
    return [module, table]


def _add_metric(repo: Path) -> list[Path]:
    """docs/extending.md's "Adding a metric": top-2 accuracy in ZP-LKE's metric module, and its
    line and headline in the method's suite."""
    module = repo / "evaluators" / "metrics" / "zp_lke.py"
    module.write_text(module.read_text() + "\n\n" + (METRIC / "metric.py").read_text())
    imports, line, headline = _parts(METRIC / "suite_lines.txt")
    suite = repo / "evaluators" / "metrics" / "suites" / "zp_lke.py"
    _insert(suite, "from factprobe.evaluators.metrics.validity import validity\n", imports)
    _insert(suite, '    out["accuracy_at_k_rule"] = cfg_value(cfg, "accuracy_at_k", None) or '
                   '"formula"\n', line, after=True)
    _insert(suite, '    "response_accuracy": (("response_accuracy",), "response accuracy", '
                   'True),\n', headline, after=True)
    return [module, suite]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    _copy(repo)
    changed = _add_method(repo)
    assert len(_add_source(repo)) <= 2 and len(_add_metric(repo)) <= 2   # the page's promise
    shim = tmp_path_factory.mktemp("shim")
    (shim / "sitecustomize.py").write_text(SHIM)
    env = {**os.environ, "PYTHONPATH": str(shim), "FACTPROBE_COPY": str(repo),
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return repo, env, changed


def py(copy, code: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    repo, env, _ = copy
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_copy_imports_itself(copy):
    repo, _, changed = copy
    assert len(changed) <= 3                              # the page's promise
    out = py(copy, "import factprobe.evaluators.methods as m, factprobe.builders as b;"
                   "print(m.__file__); print(b.__file__)").stdout.split()
    assert all(p.startswith(str(repo)) for p in out)


def test_eval_help_lists_it(copy):
    out = py(copy, """
        import contextlib, io
        from factprobe.cli.app import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            try:
                main(["eval", "--help"])
            except SystemExit:
                pass
        print(buf.getvalue())
        """).stdout
    out = " ".join(out.split())
    assert "gold-prob" in out and "probability of each object among its relation's, after its subject" in out


def test_shipped_pipeline_gets_its_stage(copy):
    repo = copy[0]
    stale = py(copy, "from factprobe.scaffold.stages import main; raise SystemExit(main(["
                     "'--check']))", check=False)
    assert stale.returncode == 1 and "stale: dvc.yaml, params.yaml" in stale.stderr
    py(copy, "from factprobe.scaffold.stages import main; raise SystemExit(main([]))")
    stage = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]["eval-gold-prob"]
    assert stage["do"]["params"] == ["eval.gold_prob"]
    assert "factprobe eval gold-prob --quiet" in stage["do"]["cmd"]
    params = yaml.safe_load((repo / "params.yaml").read_text())["eval"]
    assert params["gold_prob"] == {"dataset": "sample-mc", "args": ""}
    # the shipped methods' stages are untouched
    old = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    new = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    assert {k: v for k, v in new.items() if k != "eval-gold-prob"} == old


def test_init_pipeline_gets_its_stage(copy):
    out = py(copy, """
        import json
        from factprobe.scaffold.render import InitConfig, rendered
        files = rendered(InitConfig(dir="x", source="csv", path="t.csv"))
        print(json.dumps(files))
        """).stdout
    files = json.loads(out)
    stage = yaml.safe_load(files["dvc.yaml"])["stages"]["eval-gold-prob"]
    assert stage["do"]["outs"] == ["data/results/${name}-mc/gold-prob/${key}"]
    assert yaml.safe_load(files["params.yaml"])["eval"]["gold_prob"] == {"args": ""}


def test_report_and_explorer_show_it(copy):
    repo = copy[0]
    py(copy, """
        import pyarrow as pa
        from factprobe.core.tables import FACTS_SCHEMA, base_manifest, write_dataset
        from factprobe.cli.app import main
        from factprobe.probes.planting.model_factory import causal_model, save, train_tokenizer
        pairs = [("France", "Paris"), ("Japan", "Tokyo"), ("Peru", "Lima")]
        facts = [{"fact_id": f"f{i}", "relation_id": "P36", "subject_id": f"Q{i}",
                  "object_id": f"Q{10 + i}", "subject": s, "object": o, "subject_aliases": [],
                  "object_aliases": [], "answers": [o], "split": "test", "source": "example"}
                 for i, (s, o) in enumerate(pairs)]
        write_dataset("e2e/facts", {"facts": pa.Table.from_pylist(facts, schema=FACTS_SCHEMA)},
                      base_manifest("capitals", "facts", {}, {}, {}))
        tok = train_tokenizer([f"{s} {o}" for s, o in pairs] * 10, vocab_size=300)
        save(causal_model(tok, layers=1, width=32), tok, "e2e/model")
        assert main(["eval", "gold-prob", "--dataset", "e2e/facts", "--model", "e2e/model",
                     "--out", "e2e/run", "--quiet"]) == 0
        assert main(["report", "--results", "e2e/run", "--out", "e2e/report", "--no-plots",
                     "--html", "--quiet"]) == 0
        """)
    metrics = json.loads((repo / "e2e" / "run" / "metrics.json").read_text())
    assert metrics["method"] == "gold-prob" and metrics["facts"] == 3
    board = (repo / "e2e" / "report" / "tables" / "leaderboard.md").read_text()
    assert "### gold-prob on capitals" in board and "mean gold log-share" in board
    # the explorer: the run is a setting of the index, and every fact has its result
    page = (repo / "e2e" / "report" / "index.html").read_text()
    assert '"method":"gold-prob","model":"run","name":"gold-prob: run"' in page
    data = (repo / "e2e" / "report" / "explorer" / "data" / "d0-capitals" / "r000-P36.js")
    bundle = json.loads(data.read_text().split(",", 1)[1].rsplit(");", 1)[0])
    assert bundle["settings"] == ["0:"]
    assert [f["results"]["0:"]["correct"] for f in bundle["facts"]] == pytest.approx(
        [metrics["mean_logprob"]["value"]] * 3, abs=0.5)


def test_table_driven_tests_pass_on_the_copy(copy):
    repo, env, _ = copy
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-x", *TABLE_TESTS], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]
    # and they did run for the new method
    assert "test_entry[gold-prob]" in subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only",
         TABLE_TESTS[0]], cwd=repo, env=env, capture_output=True, text=True).stdout


TRIPLES = [{"subject": "Q90", "subject_label": "Paris", "relation": "P1376", "object": "Q142",
            "object_label": "France"},
           {"subject": "Q64", "subject_label": "Berlin", "relation": "P1376", "object": "Q183",
            "object_label": "Germany"},
           {"subject": "Q90", "subject_label": "Paris", "relation": "P17", "object": "Q142",
            "object_label": "France"}]


def test_a_source_is_first_class(copy):
    """The worked source: `build facts --source jsonl`, its flag checks, `factprobe init
    --source jsonl` (sized from the file by the source's own reader) and the dataset card."""
    repo = copy[0]
    src = repo / "src-e2e"
    src.mkdir()
    (src / "triples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in TRIPLES))
    (src / "renamed.jsonl").write_text(json.dumps(
        {"s": "Q419", "s_label": "Lima", "p": "P1376", "o": "Q419x", "o_label": "Peru"}) + "\n")
    # init sizes params.yaml from the file: enough facts for the smallest multiple-choice set
    (src / "graph.jsonl").write_text("".join(json.dumps(
        {"subject": f"Q{i}", "subject_label": f"country {i}", "relation": "P36",
         "object": f"Q{100 + i}", "object_label": f"city {i}"}) + "\n" for i in range(12)))
    out = py(copy, """
        import contextlib, io, json
        from factprobe.cli.app import main
        from factprobe.core.tables import read_table
        assert main(["build", "facts", "--source", "jsonl", "--path", "src-e2e/triples.jsonl",
                     "--relations", "P1376", "--out", "src-e2e/facts", "--quiet"]) == 0
        facts = read_table("src-e2e/facts", "facts")
        print(json.dumps(sorted(zip(facts["subject"].to_pylist(), facts["object"].to_pylist()))))
        assert main(["publish", "src-e2e/facts", "--repo-id", "me/capitals", "--dry-run",
                     "src-e2e/hub", "--quiet"]) == 0
        assert main(["init", "src-e2e/repo", "--source", "jsonl", "--path",
                     "src-e2e/graph.jsonl", "--relations", "all", "--quiet"]) == 0
        # the source's own flag (its module's add_flags/read_flags), recorded in dataset.json
        assert main(["build", "facts", "--source", "jsonl", "--path", "src-e2e/renamed.jsonl",
                     "--jsonl-keys", "s,p,o", "--relations", "all", "--out", "src-e2e/renamed",
                     "--quiet"]) == 0
        renamed = read_table("src-e2e/renamed", "facts")
        print(json.dumps(sorted(zip(renamed["subject"].to_pylist(),
                                    renamed["object"].to_pylist()))))
        """).stdout
    first, renamed = out.splitlines()[-2:]
    assert json.loads(first) == [["Berlin", "Germany"], ["Paris", "France"]]
    assert json.loads(renamed) == [["Lima", "Peru"]]
    params = json.loads((src / "renamed" / "dataset.json").read_text())["params"]
    assert params["jsonl_keys"] == ["s", "p", "o"] and "page_size" not in params
    card = (src / "hub" / "README.md").read_text()
    assert "Built with [factprobe](#citation-information) from the JSON-lines file " \
           "`triples.jsonl`" in card
    assert "- JSON lines of triples `src-e2e/triples.jsonl`" in card
    # the new method's line is in the card of the kinds it serves (its probe's card=, serves=)
    assert "- gold-prob: the probability of each fact's object among its relation's, after its subject" in card
    stages = yaml.safe_load((src / "repo" / "dvc.yaml").read_text())["stages"]
    assert "--source jsonl --path='${facts.path}'" in stages["facts"]["cmd"]
    assert "aliases" not in stages and "nobel" not in stages   # the entry says neither
    params = (src / "repo" / "params.yaml").read_text()
    assert "Not sized" not in params and "graph.jsonl" in params
    # its flag checks are the built-in ones'
    done = py(copy, "from factprobe.cli.app import main; raise SystemExit(main(['build', "
                    "'facts', '--source', 'jsonl', '--relations', 'all', '--out', 'x']))",
              check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        "--source jsonl needs --path FILE.jsonl (one triple per line)")
    bad = py(copy, "from factprobe.cli.app import main; raise SystemExit(main(['build', "
                   "'facts', '--source', 'jsonl', '--path', 'src-e2e/triples.jsonl', "
                   "'--jsonl-keys', 's,p', '--relations', 'all', '--out', 'y']))", check=False)
    assert bad.returncode == 2 and not (repo / "y").exists()
    assert bad.stderr.strip().splitlines()[-1].endswith(
        "--jsonl-keys 's,p': give three field names, e.g. subject,relation,object")


def test_a_metric_is_first_class(copy):
    """The worked metric: top-2 accuracy is in ZP-LKE's metrics.json and the report."""
    repo = copy[0]
    py(copy, """
        import json
        from pathlib import Path
        import pandas as pd
        from factprobe.cli.app import main
        mc = pd.DataFrame({"stage": "mc", "relation_id": "P36",
                           "fact_id": ["a"] * 3 + ["b"] * 3 + ["c"] * 3, "option": [0, 1, 2] * 3,
                           "is_gold": [True, False, False, False, True, False, False, False, True],
                           "logprob": [-1.0, -2.0, -3.0] * 3})
        Path("mc-run").mkdir()
        mc.to_parquet("mc-run/outputs.parquet")
        Path("mc-run/run.json").write_text(json.dumps({"method": "zp-lke",
                                                       "dataset": {"name": "capitals-mc"}}))
        assert main(["report", "--results", "mc-run", "--out", "mc-report", "--no-plots",
                     "--quiet"]) == 0
        """)
    metrics = json.loads((repo / "mc-report" / "metrics.json").read_text())
    top2 = metrics["capitals-mc"]["zp-lke"]["mc-run"]["top2_accuracy"]
    assert top2["value"] == pytest.approx(2 / 3, abs=1e-3)
    board = (repo / "mc-report" / "tables" / "leaderboard.md").read_text()
    assert "top-2 accuracy" in board




def test_a_planted_model_validates_it(copy, world, causal_model):
    """The new method's validity check on a planted model (tests/planted/'s world and
    model, planted once for the run: the copy's own code evaluates it): taught facts above
    held-out ones, the subject-blind null near chance."""
    repo = copy[0]
    assert planted(causal_model)["converged"], planted(causal_model)["planted_accuracy"]
    py(copy, """
        import sys
        from pathlib import Path
        from tests.planted.conftest import evaluate
        evaluate("gold-prob", Path(sys.argv[1]), Path(sys.argv[2]), Path("pw-run"))
        """, str(world["mc"]), str(causal_model))
    from tests.planted.conftest import assert_valid
    v = json.loads((repo / "pw-run" / "metrics.json").read_text())["validity"]
    assert_valid(v)
