"""Bad inputs of ``eval`` (every method), ``plant``, ``report`` and ``publish``, held to the
contract of :mod:`tests.contract.harness`: exit 2, one line, nothing changed or left behind.

Most cases fail at the edge and never load a model; the ``model-*`` cases break a copy of the
workspace's model the way files get broken (truncated, garbage, edited, missing) and check
the line names the file.

(Just over 400 lines because it is a table of cases, one row each.)
"""
from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from tests.contract.harness import Case, check, expand, run, snapshot

OUT = "{ws}/out"
TOKEN = "hf_contractTestSecret0123456789"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- set-ups

def _model_copy(ws: Path, name: str = "broken") -> Path:
    return Path(shutil.copytree(ws / "model", ws / name))


def _truncated_weights(ws: Path) -> None:
    f = _model_copy(ws) / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _garbage_weights(ws: Path) -> None:
    (_model_copy(ws) / "model.safetensors").write_bytes(b"not a safetensors file\n" * 40)


def _bad_config(ws: Path) -> None:
    (_model_copy(ws) / "config.json").write_text('{"model_type": "gpt2", ', encoding="utf-8")


def _config_is_a_list(ws: Path) -> None:
    (_model_copy(ws) / "config.json").write_text("[]", encoding="utf-8")


def _latin1_config(ws: Path) -> None:
    (_model_copy(ws) / "config.json").write_bytes('{"model_type": "gpt2 é"}'.encode("latin-1"))


def _narrower_config(ws: Path) -> None:
    """config.json of a narrower model than the weights."""
    f = _model_copy(ws) / "config.json"
    config = json.loads(f.read_text(encoding="utf-8"))
    config["n_embd"] = config["n_embd"] // 2
    f.write_text(json.dumps(config), encoding="utf-8")


def _no_tokenizer(ws: Path) -> None:
    folder = _model_copy(ws)
    for f in folder.glob("tokenizer*"):
        f.unlink()


def _bad_tokenizer(ws: Path) -> None:
    (_model_copy(ws) / "tokenizer.json").write_text("{", encoding="utf-8")


def _no_weights(ws: Path) -> None:
    (_model_copy(ws) / "model.safetensors").unlink()


def _bad_planted(ws: Path) -> None:
    (_model_copy(ws) / "planted.json").write_text("{", encoding="utf-8")


def _short_context_model(ws: Path) -> None:
    """A model whose context (16 tokens) is shorter than the prompts."""
    from transformers import AutoTokenizer

    from factprobe.probes.planting.model_factory import causal_model, save
    tok = AutoTokenizer.from_pretrained(ws / "model")
    save(causal_model(tok, max_positions=16), tok, ws / "short")


def _templates_without_slots(ws: Path, dataset: str) -> None:
    """A copy of ``dataset`` whose templates have no usable [X] ... [Y] form."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    folder = Path(shutil.copytree(ws / dataset, ws / "noslots"))
    t = pq.read_table(folder / "templates.parquet")
    i = t.schema.get_field_index("template")
    t = t.set_column(i, t.schema.field(i), pa.array(["no slots here"] * len(t), pa.string()))
    pq.write_table(t, folder / "templates.parquet")


def _run_json(text: str):
    def setup(ws: Path) -> None:
        (ws / "run" / "run.json").write_text(text, encoding="utf-8")
    return setup


def _run_file(name: str, data: bytes | None = None, copy: str | None = None, cut: bool = False):
    def setup(ws: Path) -> None:
        f = ws / "run" / name
        if copy:
            shutil.copyfile(ws / copy, f)
        elif cut:
            f.write_bytes(f.read_bytes()[:300])
        elif data is None:
            f.unlink()
        else:
            f.write_bytes(data)
    return setup


def _write(path: str, text: str):
    def setup(ws: Path) -> None:
        (ws / path).write_text(text, encoding="utf-8")
    return setup


def _empty_dir(ws: Path) -> None:
    (ws / "empty").mkdir()


# ----------------------------------------------------------------------------- the table

def zp(*args: str) -> tuple[str, ...]:
    return ("eval", "zp-lke", "--dataset", "mc", "--model", "model", "--out", OUT, *args)


def prompt(*args: str) -> tuple[str, ...]:
    return ("eval", "prompt", "--dataset", "mc", "--model", "model", "--templates",
            "templates", "--out", OUT, *args)


def belief(*args: str, model: str = "mlm") -> tuple[str, ...]:
    return ("eval", "belief", "--dataset", "multiprompt", "--model", model, "--out", OUT, *args)


def icl(*args: str, model: str = "model") -> tuple[str, ...]:
    return ("eval", "belief-icl", "--dataset", "multiprompt", "--model", model, "--out", OUT,
            *args)


def monitor(*args: str) -> tuple[str, ...]:
    return ("eval", "monitor", "--dataset", "fktc", "--model", "model", "--out", OUT, *args)


def plant(*args: str) -> tuple[str, ...]:
    return ("plant", "--dataset", "mc", "--out", OUT, "--templates", "", *args)


def report(*args: str, results: str = "run") -> tuple[str, ...]:
    return ("report", "--results", results, "--out", OUT, *args)


def publish(*args: str, dataset: str = "mc") -> tuple[str, ...]:
    return ("publish", dataset, "--repo-id", "my-org/sample", *args)


OFFLINE_NONE = {"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "", "HF_DATASETS_OFFLINE": ""}

CASES = [
    # ---- ZP-LKE flags, refused by argparse or before the dataset is read
    Case("zp-seeds-negative", zp("--seeds", "-1"), ("--seeds", ">= 0")),
    Case("zp-seeds-negative-in-list", zp("--seeds", "0,-5"), ("--seeds", ">= 0")),
    Case("zp-seeds-empty", zp("--seeds", ","), ("--seeds", "empty")),
    Case("zp-seeds-duplicate", zp("--seeds", "1,1"), ("--seeds", "twice")),
    Case("zp-examples-negative", zp("--examples", "-2"), ("--examples", ">= 0")),
    Case("zp-examples-duplicate", zp("--examples", "2,2"), ("--examples", "twice")),
    Case("zp-examples-more-than-train", zp("--examples", "50"), ("50 examples", "--examples")),
    Case("zp-batch-size-zero", zp("--batch-size", "0"), ("--batch-size", ">= 1")),
    Case("zp-device-bogus", zp("--device", "bogus"), ("--device", "cuda:N")),
    Case("zp-device-mps-absent", zp("--examples", "2", "--device", "mps"), ("--device mps",)),
    Case("zp-dtype-bogus", zp("--dtype", "float8"), ("--dtype",)),
    Case("zp-response-tokens-negative", zp("--response-tokens", "-1"), ("--response-tokens",)),
    Case("zp-positions-negative", zp("--positions", "-3"), ("--positions",)),
    Case("zp-corrupt-count-negative", zp("--corrupt-count", "-1"), ("--corrupt-count",)),
    Case("zp-corrupt-count-over-examples",
         zp("--examples", "2", "--corrupt", "unknown", "--corrupt-count", "3"),
         ("--corrupt-count 3", "smallest --examples (2)")),
    Case("zp-corrupt-count-alone", zp("--examples", "2", "--corrupt-count", "1"),
         ("--corrupt-count", "--corrupt")),
    Case("zp-corrupt-without-count", zp("--examples", "2", "--corrupt", "incorrect"),
         ("--corrupt-count",)),
    Case("zp-pair-sep-empty", zp("--pair-sep", ""), ("--pair-sep", "empty")),
    Case("zp-limit-zero", zp("--limit", "0"), ("--limit", ">= 1")),
    Case("zp-relations-unknown", zp("--relations", "rel:nope"), ("rel:nope", "rel:capital")),
    Case("zp-relations-empty", zp("--relations", " , "), ("--relations", "empty")),
    Case("zp-compat-with-seeds", zp("--compat", "--seeds", "0,1"), ("--compat", "--seeds")),
    Case("zp-revision-on-a-folder", zp("--examples", "2", "--revision", "main"),
         ("--revision", "local folder")),
    Case("zp-revision-empty", zp("--examples", "2", "--revision", ""), ("--revision",)),
    Case("zp-dataset-missing", ("eval", "zp-lke", "--dataset", "nope", "--model", "model",
                                "--out", OUT), ("nope",)),
    Case("zp-dataset-is-a-model", ("eval", "zp-lke", "--dataset", "model", "--model",
                                   "model", "--out", OUT), ("facts.parquet",)),
    # ---- the model, refused before or while loading, naming the file
    Case("model-empty-name", zp("--model", ""), ("--model", "empty")),
    Case("model-missing", zp("--examples", "2", "--model", "nope"), ("nope", "no such folder")),
    Case("model-missing-path", zp("--examples", "2", "--model", "./models/nope"),
         ("no such folder",)),
    Case("model-is-a-file", zp("--examples", "2", "--model", "userfile.txt"),
         ("userfile.txt", "a file")),
    Case("model-is-a-dataset", zp("--examples", "2", "--model", "mc"),
         ("mc", "dataset, not a model")),
    Case("model-is-a-user-folder", zp("--examples", "2", "--model", "mine"),
         ("mine", "config.json")),
    Case("model-truncated-safetensors", zp("--examples", "2", "--model", "broken"),
         ("broken/model.safetensors", "truncated"), setup=_truncated_weights),
    Case("model-garbage-safetensors", zp("--examples", "2", "--model", "broken"),
         ("model.safetensors",), setup=_garbage_weights),
    Case("model-corrupt-config-offline", zp("--examples", "2", "--model", "broken"),
         ("broken/config.json", "not valid JSON"), setup=_bad_config),
    Case("model-corrupt-config-online", zp("--examples", "2", "--model", "broken"),
         ("broken/config.json", "not valid JSON"), setup=_bad_config,
         env={**OFFLINE_NONE, "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}"}),
    Case("model-config-is-a-list", zp("--examples", "2", "--model", "broken"),
         ("config.json", "list"), setup=_config_is_a_list),
    Case("model-config-latin1", zp("--examples", "2", "--model", "broken"),
         ("config.json", "UTF-8"), setup=_latin1_config),
    Case("model-no-tokenizer", zp("--examples", "2", "--model", "broken"),
         ("broken", "no tokenizer"), setup=_no_tokenizer),
    Case("model-corrupt-tokenizer", zp("--examples", "2", "--model", "broken"),
         ("tokenizer.json", "not valid JSON"), setup=_bad_tokenizer),
    Case("model-no-weights", zp("--examples", "2", "--model", "broken"),
         ("broken", "no weights"), setup=_no_weights),
    Case("model-weights-do-not-fit-config", zp("--examples", "2", "--model", "broken"),
         ("model.safetensors", "config.json"), setup=_narrower_config),
    Case("model-corrupt-planted-json", zp("--examples", "2", "--model", "broken"),
         ("planted.json",), setup=_bad_planted),
    Case("model-masked-for-a-causal-method", zp("--examples", "2", "--model", "mlm"),
         ("not a causal",)),
    Case("model-prompts-longer-than-context", zp("--examples", "5", "--model", "short"),
         ("context",), setup=_short_context_model),
    # ---- prompt baselines
    Case("prompt-template-id-bogus", prompt("--template-id", "bogus"),
         ("nothing to evaluate", "'bogus'")),
    Case("prompt-template-id-bogus-dry-run", prompt("--template-id", "bogus", "--dry-run"),
         ("nothing to evaluate",)),
    Case("prompt-templates-missing", prompt("--templates", "nope"), ("nope",)),
    Case("prompt-templates-user-folder", prompt("--templates", "mine"), ("mine",)),
    Case("prompt-fs-examples-negative", prompt("--fs-examples", "-1"), ("--fs-examples",)),
    Case("prompt-fs-examples-too-many", prompt("--fs-examples", "50"), ("--fs-examples",)),
    Case("prompt-seed-negative", prompt("--seed", "-1"), ("--seed", ">= 0")),
    # ---- BELIEF
    Case("belief-top-k-zero", belief("--top-k", "0"), ("--top-k", ">= 1")),
    Case("belief-top-k-over-vocabulary", belief("--top-k", "100000", "--limit", "1"),
         ("--top-k", "vocabulary")),
    Case("belief-max-names-zero", belief("--max-names", "0"), ("--max-names",)),
    Case("belief-causal-model", belief(model="model"), ("not a masked",)),
    Case("belief-dataset-without-templates", ("eval", "belief", "--dataset", "mc", "--model",
                                              "mlm", "--out", OUT), ("templates.parquet",)),
    Case("belief-no-usable-template", ("eval", "belief", "--dataset", "noslots", "--model",
                                       "mlm", "--out", OUT), ("nothing to evaluate",),
         setup=lambda ws: _templates_without_slots(ws, "multiprompt")),
    Case("belief-relations-unknown", belief("--relations", "P999"), ("P999",)),
    # ---- BELIEF-ICL
    Case("icl-contexts-bogus", icl("--contexts", "4-bogus"), ("--contexts", "4-bogus")),
    Case("icl-contexts-empty", icl("--contexts", ","), ("--contexts", "empty")),
    Case("icl-contexts-duplicate", icl("--contexts", "zero,zero"), ("--contexts", "twice")),
    Case("icl-samples-negative", icl("--samples", "-1"), ("--samples",)),
    Case("icl-sample-prompts-negative", icl("--sample-prompts", "-1"), ("--sample-prompts",)),
    Case("icl-max-new-tokens-zero", icl("--max-new-tokens", "0"), ("--max-new-tokens",)),
    Case("icl-style-bogus", icl("--style", "poem"), ("--style",)),
    Case("icl-masked-model", icl("--limit", "1", model="mlm"), ("not a causal",)),
    Case("icl-no-usable-template", ("eval", "belief-icl", "--dataset", "noslots", "--model",
                                    "model", "--out", OUT), ("nothing to evaluate",),
         setup=lambda ws: _templates_without_slots(ws, "multiprompt")),
    # ---- MONITOR
    Case("monitor-max-new-tokens-zero", monitor("--max-new-tokens", "0"),
         ("--max-new-tokens",)),
    Case("monitor-dataset-without-negatives", ("eval", "monitor", "--dataset", "multiprompt",
                                               "--model", "model", "--out", OUT),
         ("negatives",)),
    Case("monitor-dataset-without-templates", ("eval", "monitor", "--dataset", "mc",
                                               "--model", "model", "--out", OUT),
         ("templates.parquet",)),
    Case("monitor-no-question-template", ("eval", "monitor", "--dataset", "noslots", "--model",
                                          "model", "--out", OUT), ("nothing to evaluate",),
         setup=lambda ws: _templates_without_slots(ws, "fktc")),
    Case("monitor-limit-zero", monitor("--limit", "0"), ("--limit",)),
    # ---- plant
    Case("plant-seed-negative", plant("--seed", "-1"), ("--seed", ">= 0")),
    Case("plant-epochs-zero", plant("--epochs", "0"), ("--epochs", ">= 1")),
    Case("plant-layers-zero", plant("--layers", "0"), ("--layers",)),
    Case("plant-width-zero", plant("--width", "0"), ("--width",)),
    Case("plant-heads-zero", plant("--heads", "0"), ("--heads",)),
    Case("plant-vocab-size-zero", plant("--vocab-size", "0"), ("--vocab-size",)),
    Case("plant-batch-size-zero", plant("--batch-size", "0"), ("--batch-size",)),
    Case("plant-block-zero", plant("--block", "0"), ("--block",)),
    Case("plant-list-size-zero", plant("--list-size", "0"), ("--list-size",)),
    Case("plant-lists-per-relation-negative", plant("--lists-per-relation", "-1"),
         ("--lists-per-relation",)),
    Case("plant-lr-zero", plant("--lr", "0"), ("--lr",)),
    Case("plant-lr-nan", plant("--lr", "nan"), ("--lr",)),
    Case("plant-width-not-multiple-of-heads", plant("--width", "130", "--heads", "4"),
         ("--width 130", "--heads 4")),
    Case("plant-odd-head-size", plant("--width", "36", "--heads", "4"), ("even",)),
    Case("plant-five-heads", plant("--width", "160", "--heads", "5"), ("--heads 5",)),
    Case("plant-masked-width-not-multiple", plant("--masked", "--width", "100", "--heads", "3"),
         ("--width 100",)),
    Case("plant-templates-missing", ("plant", "--dataset", "mc", "--out", OUT, "--templates",
                                     "nope"), ("--templates nope",)),
    Case("plant-dataset-missing", ("plant", "--dataset", "nope", "--out", OUT), ("nope",)),
    Case("plant-dataset-is-a-model", ("plant", "--dataset", "model", "--out", OUT),
         ("facts.parquet",)),
    Case("plant-block-longer-than-text", plant("--block", "100000", "--epochs", "1",
                                               "--layers", "1", "--width", "32", "--heads",
                                               "2", "--vocab-size", "300"), ("--block",)),
    # ---- report
    Case("report-results-missing", report(results="nope"), ("nope",)),
    Case("report-results-empty-folder", report(results="empty"), ("no run folder",),
         setup=_empty_dir),
    Case("report-results-user-folder", report(results="mine"), ("no run folder",)),
    Case("report-results-a-file", report(results="userfile.txt"), ("not a run folder",)),
    Case("report-results-a-dataset", report(results="mc"), ("no run folder",)),
    Case("report-run-json-corrupt", report(), ("run.json",), setup=_run_json("{")),
    Case("report-run-json-a-list", report(), ("run.json", "list"), setup=_run_json("[]")),
    Case("report-run-json-dataset-not-object", report(), ("run.json", "dataset"),
         setup=_run_json('{"method": "zp-lke", "dataset": 5}')),
    Case("report-run-json-unknown-method", report(), ("bogus",),
         setup=_run_json('{"method": "bogus"}')),
    Case("report-run-json-missing", report(), ("no run folder",),
         setup=_run_file("run.json")),
    Case("report-outputs-missing", report(), ("no run folder",),
         setup=_run_file("outputs.parquet")),
    Case("report-outputs-truncated", report(), ("outputs.parquet",),
         setup=_run_file("outputs.parquet", cut=True)),
    Case("report-outputs-not-parquet", report(), ("outputs.parquet",),
         setup=_run_file("outputs.parquet", data=b"hello\n")),
    Case("report-outputs-are-facts", report(), ("outputs.parquet",),
         setup=_run_file("outputs.parquet", copy="mc/facts.parquet")),
    Case("report-metrics-json-corrupt", report(), ("metrics.json",),
         setup=_run_file("metrics.json", data=b"{")),
    Case("report-planted-missing", report("--planted", "nope.json"), ("nope.json",)),
    Case("report-planted-corrupt", report("--planted", "p.json"), ("p.json",),
         setup=_write("p.json", "{")),
    Case("report-planted-wrong-shape", report("--planted", "p.json"), ("p.json", "planted"),
         setup=_write("p.json", '{"planted": 3}')),
    Case("report-alphas-two", report("--alphas", "1,2"), ("--alphas",)),
    Case("report-alphas-infinite", report("--alphas", "inf,1,1"), ("--alphas",)),
    Case("report-alphas-negative", report("--alphas", "-1,1,1"), ("--alphas",)),
    Case("report-bootstrap-zero", report("--bootstrap", "0"), ("--bootstrap",)),
    Case("report-bins-zero", report("--bins", "0"), ("--bins",)),
    Case("report-samplings-zero", report("--samplings", "0"), ("--samplings",)),
    Case("report-seed-negative", report("--seed", "-1"), ("--seed",)),
    Case("report-metrics-unknown", report("--metrics", "bogus"), ("bogus",)),
    # ---- publish
    Case("publish-repo-id-no-org", ("publish", "mc", "--repo-id", "sample"), ("sample",)),
    Case("publish-repo-id-three-parts", ("publish", "mc", "--repo-id", "a/b/c"), ("a/b/c",)),
    Case("publish-no-token", publish(), ("HF_TOKEN",), env={"HF_TOKEN": ""}),
    Case("publish-dataset-missing", publish(dataset="nope"), ("nope",)),
    Case("publish-dataset-user-folder", publish(dataset="mine"), ("mine",)),
    Case("publish-dataset-is-a-model", publish(dataset="model"), ("model",)),
    Case("publish-hf-spec-bad", publish(dataset="hf://a/b/c"), ("a/b/c",)),
    Case("publish-offline", publish(), ("HF_HUB_OFFLINE",), env={"HF_TOKEN": TOKEN}),
    Case("publish-hub-unreachable", publish(), ("unreachable",),
         env={**OFFLINE_NONE, "HF_TOKEN": TOKEN,
              "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}"}),
    Case("publish-tag-with-space", publish("--tag", "v 1", "--dry-run", "{ws}/hub"),
         ("--tag",)),
    Case("publish-revision-empty", publish("--revision", "", "--dry-run", "{ws}/hub"),
         ("--revision",)),
    Case("publish-revision-dotdot", publish("--revision", "a..b", "--dry-run", "{ws}/hub"),
         ("--revision",)),
    Case("publish-license-bad", publish("--license", "CC BY", "--dry-run", "{ws}/hub"),
         ("--license",)),
]


def test_enough_cases():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case: Case, workspace):
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    proc = run(expand(case.argv, {"ws": str(workspace)}), cwd=workspace, env=case.env,
               timeout=case.timeout)
    check(proc, before, snapshot(workspace), needles=case.needles,
          new_ok=lambda p: p.startswith(".cache-factprobe"))
    assert TOKEN not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stdout


def test_plant_quiet_prints_nothing(workspace):
    """--quiet silences factprobe's bars and transformers' and tokenizers' too."""
    proc = run(["plant", "--dataset", "mc", "--out", "planted", "--epochs", "1", "--layers",
                "1", "--width", "32", "--heads", "2", "--vocab-size", "300", "--templates",
                "templates", "--quiet"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout == ""
    meta = json.loads((workspace / "planted" / "planted.json").read_text())
    assert meta["config"]["epochs"] == 1 and meta["config"]["templates"] == "templates"


def test_plant_default_epochs_only_when_absent():
    from factprobe.cli.app import build_parser
    from factprobe.probes.planting.plant import PlantConfig
    args = build_parser().parse_args(["plant", "--dataset", "mc", "--out", "m"])
    assert args.epochs is None and PlantConfig("", "").epochs is None
