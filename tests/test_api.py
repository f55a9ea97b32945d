"""The library API (factprobe/api.py, named lazily by factprobe/__init__): importing factprobe
loads nothing heavy; ``factprobe.evaluate`` writes the bytes ``factprobe eval`` writes with
the same options, and checks options with the command's own messages; ``load_run``,
``build`` and ``report`` do what their commands do."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import factprobe
from factprobe.cli.app import main
from factprobe.core.errors import UserError
from tests.planted.conftest import GRAPH, build_world

ZP = ("--examples", "4", "--seeds", "0", "--limit", "4")      # a short zp-lke run
ZP_OPTIONS = {"examples": 4, "seeds": [0], "limit": 4}


def test_importing_factprobe_loads_nothing_heavy():
    code = ("import sys\nimport factprobe, factprobe.core.errors, factprobe.core.argtypes\n"
            "import factprobe.core.outdir\n"
            "heavy = {'pandas', 'torch', 'factprobe.api', 'factprobe.evaluation'}\n"
            "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
            "assert 'evaluate' in dir(factprobe) and callable(factprobe.evaluate)\n"
            "assert 'factprobe.api' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        factprobe.nothing  # noqa: B018


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    return build_world(tmp_path_factory.mktemp("api-world"))


def _same_run(a: Path, b: Path) -> None:
    """Byte for byte, but for what differs run to run (as tests/contract/test_kills.py)."""
    for name in ("outputs.parquet", "prompts.parquet", "metrics.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    ra, rb = (json.loads((d / "run.json").read_text()) for d in (a, b))
    for r in (ra, rb):          # how long it took, in how many sessions, where, on what load
        r.pop("timings_s"), r.pop("sessions"), r["eval"].pop("out"), r.pop("threads")
    assert ra == rb


def test_evaluate_writes_what_the_command_writes(world, tmp_path):
    assert main(["eval", "zp-lke", "--backend", "fake", "--model", "fake", "--dataset",
                 str(world["mc"]), "--out", str(tmp_path / "cli"), "--quiet",
                 "--fake-seed", "3", "--no-subject-blind", *ZP]) == 0
    run = factprobe.evaluate("zp-lke", world["mc"], "fake", out=tmp_path / "api",
                             backend="fake", quiet=True, fake_seed=3, subject_blind=False,
                             **ZP_OPTIONS)
    assert run.folder == tmp_path / "api" and run.method == "zp-lke"
    _same_run(tmp_path / "cli", tmp_path / "api")
    assert len(run.outputs) == run.run["rows"] > 0
    assert set(run.prompts.columns) == {"prompt_id", "text"}
    assert run.metrics == json.loads((tmp_path / "cli" / "metrics.json").read_text())
    assert factprobe.evaluate("zp-lke", world["mc"], "fake", out=tmp_path / "dry",
                              backend="fake", dry_run=True, quiet=True, **ZP_OPTIONS) is None
    assert not (tmp_path / "dry").exists()


def test_evaluate_a_real_model_as_the_command_does(world, tiny_causal_dir, tmp_path):
    args = ["--model", str(tiny_causal_dir), "--dataset", str(world["mc"]), "--quiet",
            "--threads", "1", "--batch-size", "8"]
    assert main(["eval", "zp-lke", *args, "--out", str(tmp_path / "cli"), *ZP]) == 0
    factprobe.evaluate("zp-lke", world["mc"], tiny_causal_dir, out=tmp_path / "api",
                       quiet=True, threads=1, batch_size=8, **ZP_OPTIONS)
    _same_run(tmp_path / "cli", tmp_path / "api")
    assert json.loads((tmp_path / "api" / "run.json").read_text())["backend"]["batch_size"] == 8


@pytest.mark.parametrize("options, flags", [
    ({"limit": 0}, ("--limit", "0")),
    ({"dtype": "float64"}, ("--dtype", "float64")),
    ({"too_long": "cut"}, ("--too-long", "cut")),
])
def test_a_bad_option_says_what_the_flag_says(options, flags, world, tmp_path, capsys):
    argv = ["eval", "zp-lke", "--model", "m", "--dataset", str(world["mc"]), "--out",
            str(tmp_path / "cli"), *flags]
    with pytest.raises(SystemExit) as code:
        main(argv)
    line = capsys.readouterr().err
    assert code.value.code == 2
    with pytest.raises(UserError) as exc:
        factprobe.evaluate("zp-lke", world["mc"], "m", out=tmp_path / "api", **options)
    assert f"error: {exc.value} (see" in line            # the flag's own words
    assert not (tmp_path / "api").exists()


@pytest.mark.parametrize("options, flags", [
    ({"revision": " "}, ("--revision", " ")),
    ({"backend": "hf-masked"}, ("--backend", "hf-masked")),
    ({"backend": "fake", "batch_size": 4}, ("--backend", "fake", "--batch-size", "4")),
    ({"replicas": 2}, ("--replicas", "2")),
])
def test_a_refused_combination_says_what_the_command_says(options, flags, world, tmp_path,
                                                          capsys):
    argv = ["eval", "zp-lke", "--model", str(tmp_path / "none"), "--dataset",
            str(world["mc"]), "--out", str(tmp_path / "cli"), *ZP, *flags]
    assert main(argv) == 2
    line = capsys.readouterr().err
    with pytest.raises(UserError) as exc:
        factprobe.evaluate("zp-lke", world["mc"], tmp_path / "none", out=tmp_path / "api",
                           **ZP_OPTIONS, **options)
    assert line == f"factprobe: error: {exc.value}\n"


def test_an_unknown_or_misshapen_option_is_refused(world, tmp_path):
    with pytest.raises(UserError, match="^factprobe eval zp-lke: no option 'exmaples'; its "
                                        "options: .*examples"):
        factprobe.evaluate("zp-lke", world["mc"], "m", out=tmp_path / "a", exmaples=4)
    with pytest.raises(UserError, match=r"^quiet='yes': give True or False \(it is the flag "
                                        r"--quiet\)$"):
        factprobe.evaluate("zp-lke", world["mc"], "m", out=tmp_path / "a", quiet="yes")
    with pytest.raises(UserError, match="is not one of"):
        factprobe.evaluate("nope", world["mc"], "m", out=tmp_path / "a")


def test_load_run_reads_a_run_folder(world, tmp_path):
    assert main(["eval", "monitor", "--backend", "fake", "--model", "fake", "--dataset",
                 str(world["fktc"]), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    run = factprobe.load_run(tmp_path / "run")
    assert run.method == "monitor" and run.run["model"]["type"] == "fake"
    assert len(run.outputs) == run.run["rows"]
    assert run.metrics["method"] == "monitor"
    with pytest.raises(UserError, match="not a run folder .*run.json"):
        factprobe.load_run(tmp_path)


def test_build_and_report_do_what_their_commands_do(world, tmp_path):
    # the same folder names (a dataset is named after its folder), in two parents
    cli, api = tmp_path / "cli", tmp_path / "api"
    flags = {"source": "rdf", "path": GRAPH, "relations": ["rel:capital", "rel:birthYear"]}
    assert main(["build", "facts", "--source", "rdf", "--path", str(GRAPH), "--relations",
                 "rel:capital,rel:birthYear", "--out", str(cli / "facts"), "--quiet"]) == 0
    out = factprobe.build("facts", out=api / "facts", quiet=True, **flags)
    assert out == api / "facts"
    _same_files(cli / "facts", out)

    run = factprobe.evaluate("belief", world["multiprompt"], "fake", out=tmp_path / "run",
                             backend="fake", max_names=1, quiet=True)
    assert main(["report", "--results", str(run.folder), "--out", str(cli / "report"),
                 "--no-plots", "--bootstrap", "50", "--quiet"]) == 0
    folder = factprobe.report([run], api / "report", no_plots=True, bootstrap=50, quiet=True)
    assert folder == api / "report" and (folder / "report.md").is_file()
    _same_files(cli / "report", folder)


def _same_files(a: Path, b: Path) -> None:
    names = sorted(p.relative_to(a) for p in a.rglob("*"))
    assert names and names == sorted(p.relative_to(b) for p in b.rglob("*"))
    for name in names:
        if (a / name).is_file():
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_the_library_page_example_runs(world, tmp_path, monkeypatch, capsys):
    """docs/library.md's first example, in a folder laid out as the project is."""
    import re
    import shutil
    page = (Path(__file__).resolve().parents[1] / "docs" / "library.md").read_text()
    code = re.findall(r"^```python\n(.*?)^```$", page, flags=re.S | re.M)[0]
    (tmp_path / "data" / "kg").mkdir(parents=True)
    shutil.copy(GRAPH, tmp_path / "data" / "kg" / "sample.ttl")
    shutil.copytree(world["mc"], tmp_path / "data" / "datasets" / "sample-mc")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/library.md", "exec"), {"__name__": "library_example"})
    value, rows = capsys.readouterr().out.split()
    assert 0 < float(value) < 1 and int(rows) > 0
    assert (tmp_path / "datasets" / "facts" / "facts.parquet").is_file()
    assert (tmp_path / "reports" / "zp-lke" / "report.md").is_file()
