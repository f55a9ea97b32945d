"""``factprobe report`` end to end: bad input (exit 2, one line), byte-identical reruns, the
figures and DVC plot data, and metrics.json of ``factprobe eval`` recomputed exactly."""
from __future__ import annotations

import json
import math
import shutil
import string
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from factprobe.evaluators.methods import METHODS
from tests.evaluators import synth
from tests.inprocess import factprobe_cli

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return factprobe_cli([*args], cwd=cwd, timeout=300)


def assert_user_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture
def mc_run(tmp_path):
    rng = np.random.default_rng(5)
    table = synth.mc_outputs(rng, relations=2, seeds=(0,), ns=(3,))
    return tmp_path, table


def test_runs_from_different_builds_of_a_dataset(mc_run):
    tmp, table = mc_run
    synth.write_run(tmp / "r" / "a", "zp-lke", table, dataset="mc", sha="one")
    synth.write_run(tmp / "r" / "b", "zp-lke", table, dataset="mc", sha="two")
    assert_user_error(cli("report", "--results", str(tmp / "r"), "--out", str(tmp / "o")),
                      "different builds of dataset 'mc'")
    assert not (tmp / "o").exists()


def test_question_without_a_gold(mc_run):
    tmp, table = mc_run
    bad = table.copy()
    first = bad[bad["stage"] == "mc"]["fact_id"].iloc[0]
    bad.loc[(bad["fact_id"] == first) & (bad["stage"] == "mc"), "is_gold"] = False
    synth.write_run(tmp / "r" / "a", "zp-lke", bad)
    assert_user_error(cli("report", "--results", str(tmp / "r"), "--out", str(tmp / "o")),
                      "0 gold options")


def test_missing_rows_and_missing_facts(mc_run):
    tmp, table = mc_run
    fid = table["fact_id"].iloc[0]
    no_response = table[~((table["stage"] == "response") & (table["fact_id"] == fid))]
    synth.write_run(tmp / "r1" / "a", "zp-lke", no_response)
    assert_user_error(cli("report", "--results", str(tmp / "r1"), "--out", str(tmp / "o")),
                      "no response row")
    # two models compared, one lacks a fact: compared on the facts both cover, and said so
    synth.write_run(tmp / "r2" / "a", "zp-lke", table)
    synth.write_run(tmp / "r2" / "b", "zp-lke", table[table["fact_id"] != fid])
    ok = cli("report", "--results", str(tmp / "r2"), "--out", str(tmp / "o"), "--no-plots")
    assert ok.returncode == 0, ok.stderr
    comp = pd.read_csv(tmp / "o" / "tables" / "comparisons.csv")
    n = table["fact_id"].nunique()
    assert comp["n"].iloc[0] == n - 1
    report = (tmp / "o" / "report.md").read_text()
    assert (f"multiple choice on synth: the settings cover different facts (zp-lke:a {n}, "
            f"zp-lke:b {n - 1})") in report
    assert f"the subsumption matrix uses the {n - 1} facts all of them share" in report
    # runs that share no fact at all: nothing to compare
    rel = table["relation_id"].iloc[0]
    synth.write_run(tmp / "r3" / "a", "zp-lke", table[table["relation_id"] == rel])
    synth.write_run(tmp / "r3" / "b", "zp-lke", table[table["relation_id"] != rel])
    assert_user_error(cli("report", "--results", str(tmp / "r3"), "--out", str(tmp / "o3")),
                      "nothing to compare", "none shared")
    assert not (tmp / "o3").exists()


def test_metric_a_method_cannot_give(mc_run):
    tmp, table = mc_run
    synth.write_run(tmp / "r" / "a", "zp-lke", table)
    assert_user_error(cli("report", "--results", str(tmp / "r"), "--out", str(tmp / "o"),
                          "--metrics", "consistency"), "zp-lke cannot give it")
    assert_user_error(cli("report", "--results", str(tmp / "r"), "--out", str(tmp / "o"),
                          "--metrics", "no_such_metric"), "unknown metric")


def test_no_run_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_user_error(cli("report", "--results", str(tmp_path / "empty"), "--out",
                          str(tmp_path / "o")), "no run folder")
    assert_user_error(cli("report", "--results", str(tmp_path / "nope"), "--out",
                          str(tmp_path / "o")), "no such file")


def test_wrong_method_output(tmp_path):
    rng = np.random.default_rng(1)
    synth.write_run(tmp_path / "r" / "a", "belief", synth.mc_outputs(rng, relations=1))
    assert_user_error(cli("report", "--results", str(tmp_path / "r"), "--out",
                          str(tmp_path / "o")), "no 'prompts' rows")


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("full")
    rng = np.random.default_rng(77)
    tables = {("mc", "zp-lke"): synth.mc_outputs(rng), ("mc", "prompt"): None,
              ("mp", "belief"): synth.belief_outputs(rng),
              ("mp-icl", "belief-icl"): synth.icl_outputs(rng),
              ("fktc", "monitor"): synth.monitor_outputs(rng)}
    zp = tables[("mc", "zp-lke")]
    prompt = zp[(zp["seed"] == 0) & (zp["n_examples"] == 2)].drop(columns=["seed", "corrupted"])
    tables[("mc", "prompt")] = prompt.assign(template_id=prompt["relation_id"] + "/m1",
                                             n_examples=0)
    ids = sorted({f for t in tables.values() for f in t["fact_id"].dropna()})
    model = synth.model_dir(root, synth.planted_for(ids, rng))
    for (ds, method), t in tables.items():
        synth.write_run(root / "results" / ds / method / "planted", method, t, dataset=ds,
                        model_dir=model)
    args = ["report", "--results", str(root / "results"), "--common-facts", "--quiet"]
    first = cli(*args, "--out", str(root / "one"))
    assert first.returncode == 0, first.stderr
    second = cli(*args, "--out", str(root / "two"))
    assert second.returncode == 0, second.stderr
    return root


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_report_is_byte_identical_when_rerun(full_report):
    one, two = _files(full_report / "one"), _files(full_report / "two")
    assert one.keys() == two.keys()
    differ = [k for k in one if one[k] != two[k]]
    assert not differ, differ


def test_report_contents(full_report):
    out = full_report / "one"
    text = (out / "report.md").read_text()
    for section in ("## Leaderboard", "## Estimator validity", "## Comparisons",
                    "## Per relation", "## Figures"):
        assert section in text
    val = pd.read_csv(out / "tables" / "validity.csv")
    assert set(val.loc[val["estimator"] == "validity", "method"]) == \
        {n for n, m in METHODS.items() if m.metrics.validity_blocks}   # every method with one
    for name in ("validity", "calibration", "accuracy_vs_examples", "monitor_vs_accuracy",
                 "accuracy_at_k", "heatmap-mc-zp-lke", "heatmap-fktc-monitor"):
        png = out / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
        assert f"figures/{name}.png" in text
    cal = sorted((out / "plots" / "calibration").glob("*.csv"))
    assert len(cal) == 3                                  # belief + two BELIEF-ICL contexts
    assert list(pd.read_csv(cal[0]).columns) == ["bin", "confidence", "accuracy", "n"]
    ax = sorted((out / "plots" / "accuracy_vs_examples").glob("*.csv"))
    assert ax and all({"n_examples", "accuracy"} <= set(pd.read_csv(p).columns) for p in ax)
    # one long-format file per figure, every series in it (what `dvc plots show` overlays)
    long = pd.read_csv(out / "plots" / "calibration.csv")
    assert list(long.columns) == ["series", "bin", "confidence", "accuracy", "n"]
    assert long["series"].nunique() == 3 and len(long) == sum(len(pd.read_csv(p)) for p in cal)
    assert pd.read_csv(out / "plots" / "accuracy_vs_examples.csv")["series"].nunique() == len(ax)
    summary = json.loads((out / "metrics.json").read_text())
    assert set(summary) == {"mc", "mp", "mp-icl", "fktc"}
    # headline.json: flat scalars, each method's main number and validity AUROC per setting
    head = json.loads((out / "headline.json").read_text())
    assert all(isinstance(v, float) for v in head.values())
    assert head["monitor/planted/monitor"] == summary["fktc"]["monitor"]["planted"]["monitor"]["value"]
    assert {k.rsplit("/", 1)[1] for k in head} <= {"mc_accuracy", "acc1", "monitor",
                                                   "validity_auroc"}
    assert "validity_auroc" in summary["fktc"]["monitor"]["planted"]
    per_fact = pd.read_csv(out / "tables" / "monitor_per_fact" / "fktc-planted.csv")
    mon = json.loads((out / "runs" / "fktc" / "monitor" / "planted" / "metrics.json").read_text())
    assert len(per_fact) == mon["facts_with_anchor"]
    assert abs(per_fact["score"].sum() / per_fact["anchor_prob"].sum()
               - mon["monitor"]["value"]) < 2e-4
    sharing = pd.read_csv(out / "tables" / "sharing-mp-icl.csv", index_col=0)
    assert sharing.shape == (2, 2) and (np.diag(sharing.to_numpy()) == 1).all()
    sub = pd.read_csv(out / "tables" / "subsumption-mc.csv", index_col=0)
    assert list(sub.index) == ["prompt:planted", "zp-lke:planted"]


def _plan(method: str):
    """A real plan of ``method``, the facts it asks about, and planted halves of them."""
    from factprobe.probes.methods import belief, belief_icl, monitor
    from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
    from tests.probes.engine.test_runner import facts_many
    from tests.probes.methods.test_golden_prompts import TPL, mp_facts
    if method == "zp-lke":
        cfg = ZPLKEConfig(n_examples=(2, 3), seeds=(0, 1), response_tokens=3)
        facts = facts_many()
        test = sorted(facts.loc[facts["split"] == "test", "fact_id"])
        halves = {"planted": test[:3], "held_out": test[3:]}
        return (lambda f: plan(f["facts"], cfg)), {"facts": facts}, cfg, halves
    halves = {"planted": ["a"], "held_out": ["b"]}          # mp_facts: France, Peru
    if method == "belief":
        cfg = belief.BeliefConfig(top_k=5)
        return (lambda f: belief.plan(f["facts"], TPL, cfg)), {"facts": mp_facts()}, cfg, halves
    if method == "belief-icl":
        cfg = belief_icl.BeliefICLConfig(contexts=("zero", "1-template"), samples=3,
                                         sample_prompts=4, max_new_tokens=3)
        return ((lambda f: belief_icl.plan(f["facts"], TPL, cfg)), {"facts": mp_facts()}, cfg,
                halves)
    cfg = monitor.MonitorConfig(max_new_tokens=3)
    facts = mp_facts().assign(negatives=[["Rome", "Lima"], ["Paris"]])
    return ((lambda f: monitor.plan(f["facts"], [t for t in TPL if t.style == "question"], cfg)),
            {"facts": facts}, cfg, halves)


def _near(got, want, tol=1.01e-4) -> bool:
    if want is None or (isinstance(want, float) and np.isnan(want)):
        return got is None
    return got is not None and abs(got - want) <= tol


def _validity_agrees(got: dict, want: dict) -> None:
    if want["planted"] == want["held_out"] == 0 and got.get("reason", "").startswith("undefined"):
        want = {**want, "auroc": None}    # a null that named no gold: undefined, never 0.5
    for k in ("planted", "held_out", "auroc"):
        assert _near(got[k]["value"], want[k]), (k, got[k], want[k])
    assert (got["planted"]["n"], got["held_out"]["n"]) == (want["n_planted"], want["n_held_out"])


def _independent(method: str, outputs: pd.DataFrame, halves: dict) -> dict:
    """{setting: (independent metrics, {metrics.json key: independent key})} of the headline
    numbers tests/evaluators/independent.py computes from the outputs rows alone."""
    from tests.evaluators import independent as ind
    if method == "zp-lke":
        want = ind.zp_lke(outputs, halves)
        return {"": (want, {"mc_accuracy": "mc_accuracy", "probability_mass": "probability_mass",
                            "response_accuracy": "response_accuracy"})}
    if method == "belief":
        return {"": (ind.belief(outputs, halves), {"accuracy": "accuracy"})}
    if method == "belief-icl":
        return {ctx: (w, {"accuracy": "accuracy"})
                for ctx, w in ind.belief_icl(outputs, halves).items()}
    # MONITOR's validity needs only the anchors (a tiny random model matches none, where
    # ind.monitor's score has nothing to divide by): accuracy = anchor is the gold, score = the
    # anchor probability where it is, 0 where not
    acc, score = {}, {}
    for r in ind.records(outputs, "anchor"):
        ok = str(r["text"]).strip().strip(string.punctuation + " ").strip() == r["gold"] \
            and len(r["token_ids"]) > 0
        key = (r["relation_id"], r["fact_id"])
        acc[key] = float(ok)
        score[key] = ind.mean(math.exp(x) for x in r["token_logprobs"]) if ok else 0.0
    return {"": ({"validity": ind.validity(acc, score, halves),
                  "anchor_match": ind.mean(acc.values())}, {})}


@pytest.mark.parametrize("method", ["zp-lke", "belief", "belief-icl", "monitor"])
def test_eval_metrics_json_agrees_with_an_independent_computation(tmp_path, tiny_causal_dir,
                                                                  tiny_masked_dir, method):
    """A real ``factprobe eval`` pass (tiny model, planted halves, the subject-blind null): the
    headline numbers and every validity block of the metrics.json it writes equal those
    tests/evaluators/independent.py computes from its outputs.parquet (the probe's own rows
    for the metrics, the null pass's rows for each block's ``subject_blind``); and the report
    recomputes the same bytes."""
    from factprobe.evaluators.methods import METHODS
    from factprobe.probes.backends import KINDS, BackendConfig
    from factprobe.probes.engine.runner import EvalConfig, run_eval
    from factprobe.probes.subject_blind import COLUMN, with_null_pass
    make, tables, cfg, halves = _plan(method)
    plan = with_null_pass(make(tables), tables, halves, make)
    model = tiny_masked_dir if method == "belief" else tiny_causal_dir
    planted_model = tmp_path / "model"
    shutil.copytree(model, planted_model)
    (planted_model / "planted.json").write_text(json.dumps(halves), encoding="utf-8")
    out = tmp_path / "run"
    kind = "hf-masked" if method == "belief" else "hf-causal"
    run_eval(EvalConfig(method, "d", str(out), progress=False),
             BackendConfig(str(planted_model), kind=kind), plan, cfg,
             {"name": "tiny", "facts_sha256": "x"}, kinds=KINDS,
             metrics_fn=lambda o: METHODS[method].metrics.checked_compute(o, halves, cfg))
    stored = json.loads((out / "metrics.json").read_text())
    assert stored["method"] == method
    outputs = pd.read_parquet(out / "outputs.parquet")
    own = outputs[~outputs[COLUMN]].drop(columns=COLUMN)
    blind = outputs[outputs[COLUMN]].drop(columns=COLUMN)
    assert len(own) and len(blind)
    spec = METHODS[method].metrics
    blocks = spec.setting_blocks(stored)
    nulls = _independent(method, blind, halves)
    for setting, (want, names) in _independent(method, own, halves).items():
        got = blocks[setting]
        for key, name in names.items():
            assert _near(got[key]["value"], want[name]["value"]), (setting, key)
            assert got[key]["n"] == want[name]["n"]
        if method == "monitor":
            assert _near(got["anchor_match"]["value"], want["anchor_match"])
        _validity_agrees(got["validity"], want["validity"])
        _validity_agrees(got["validity"]["subject_blind"], nulls[setting][0]["validity"])
    proc = cli("report", "--results", str(out), "--out", str(tmp_path / "rep"), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    again = tmp_path / "rep" / "runs" / "tiny" / method / "run" / "metrics.json"
    assert (out / "metrics.json").read_bytes() == again.read_bytes()
    assert "differs from the recomputed" not in (tmp_path / "rep" / "report.md").read_text()


def test_a_report_process_lemmatises_without_loading_torch(tmp_path):
    """`factprobe report` runs no model: spaCy comes in without torch (thinc would import it
    at start), the lemmas and so the metrics are the ones a process with torch loaded gets,
    and torch still imports afterwards."""
    import os
    import sys
    out = synth.icl_outputs(np.random.default_rng(3), contexts=("zero",))
    synth.write_run(tmp_path / "runs" / "icl", "belief-icl", out, dataset="mp")
    args = ["report", "--results", str(tmp_path / "runs"), "--no-plots", "--bootstrap", "20",
            "--quiet"]
    code = ("import sys\nfrom factprobe.cli.app import main\n"
            f"assert main({[*args, '--out', str(tmp_path / 'alone')]!r}) == 0\n"
            "print(sorted(m for m in ('spacy', 'thinc', 'torch') if m in sys.modules))\n"
            "import torch\nprint(float(torch.ones(2).sum()))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["['spacy', 'thinc']", "2.0"]
    import torch  # noqa: F401  (the comparison run: spaCy as a process with torch has it)
    assert cli(*args, "--out", str(tmp_path / "with")).returncode == 0
    for name in ("metrics.json", "report.json"):
        assert (tmp_path / "alone" / name).read_bytes() == (tmp_path / "with" / name).read_bytes()
