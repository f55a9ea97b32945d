"""Publishing to the Hugging Face Hub and reading back: the Hub layout loads with `datasets`
offline, the card carries what the Hub reads, the round trip restores the exact folder, and the
upload path (mocked HfApi) and its failures (no token, offline) behave."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from factprobe.core.errors import UserError
from factprobe.builders.open import open_dataset
from factprobe.core.tables import base_manifest, read_table, write_dataset
from factprobe.builders.datasets.build_facts import FactsConfig, build_facts
from factprobe.builders.datasets.mc import MCConfig, build_mc
from factprobe.builders.publish.card import CardOptions, default_license
from factprobe.builders.publish.export import export_hub_folder
from factprobe.builders.publish.layout import LAYOUT_FILE, read_layout
from factprobe.builders.publish.upload import PublishConfig, publish
from tests.conftest import WIKIDATA_MINI

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "hf_TESTtoken0123456789abcdef"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """A facts dataset from the Wikidata-shaped test graph, and a small T-REx-MC from it."""
    root = tmp_path_factory.mktemp("built")
    facts = build_facts(FactsConfig(source="rdf", path=str(WIKIDATA_MINI), relations=None,
                                    out=str(root / "mini-facts"), progress=False))
    mc = build_mc(MCConfig(facts=str(facts), out=str(root / "mini-mc"), choices=3, min_facts=5,
                           min_objects=5, train=2, test=3, progress=False))
    return {"facts": facts, "mc": mc}


def _datasets(kind: str, built: dict[str, Path], samples: Path) -> Path:
    return samples / kind if kind == "sample-mc" else built[kind]


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """`datasets` and huggingface_hub offline, with their caches in tmp_path."""
    import datasets
    import huggingface_hub.constants
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "ds-cache")
    return tmp_path / "ds-cache"


def _expected_splits(table, name: str = "facts") -> dict[str, list[dict]]:
    """What `datasets` should load for one table: the main table (facts) by its `split`
    column; another table (relations) as one split named after it, never a `train` split."""
    rows = table.to_pylist()
    if "split" not in table.column_names or all(not r["split"] for r in rows):
        return {"train" if name == "facts" else name: rows}
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["split"] or "unsplit", []).append(r)
    return out


@pytest.mark.parametrize("kind", ["mc", "facts", "sample-mc"])
def test_dry_run_loads_with_datasets_offline_config_by_config(kind, built, offline, tmp_path,
                                                             sample_datasets):
    import datasets
    src = _datasets(kind, built, sample_datasets)
    out = export_hub_folder(src, tmp_path / "hub", CardOptions(repo_id="my-org/x"))
    names = sorted(p.stem for p in src.glob("*.parquet"))
    assert names and (out / "dataset.json").read_bytes() == (src / "dataset.json").read_bytes()
    for name in names:
        ds = datasets.load_dataset(str(out), name, cache_dir=str(offline))
        expected = _expected_splits(pq.read_table(src / f"{name}.parquet"), name)
        assert sorted(ds) == sorted(expected), name
        for split, rows in expected.items():
            assert ds[split].to_list() == rows, (name, split)
    default = datasets.load_dataset(str(out), cache_dir=str(offline))  # no config: facts
    assert sum(d.num_rows for d in default.values()) == pq.read_metadata(
        src / "facts.parquet").num_rows


def test_card_metadata_and_body(built, tmp_path):
    from huggingface_hub import DatasetCard
    from factprobe.cli.publish import card_methods
    out = export_hub_folder(built["mc"], tmp_path / "hub", CardOptions(
        repo_id="my-org/mini", tag="v1.0", methods=card_methods()))
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "cc-by-4.0"
    assert card.data.language == ["en"]
    assert card.data.size_categories == ["n<1K"]
    assert "multiple-choice" in card.data.task_categories
    configs = {c["config_name"]: c for c in card.data.configs}
    assert set(configs) == {"facts", "relations"} and configs["facts"].get("default") is True
    assert [f["split"] for f in configs["facts"]["data_files"]] == ["train", "test"]
    for c in configs.values():
        for f in c["data_files"]:
            assert (out / f["path"]).is_file()
    body = card.text
    assert "wikidata_mini.ttl" in body                       # the source
    assert "7506e2e7e59173cbb4fecc521f2acf50c6f324b0a31842cc4aef25254c87cecb" in body
    assert "has 3 choices" in body and "1/3" in body          # the choices
    assert "Towards Reliable Latent Knowledge Estimation" in body  # the citations
    assert "@software{factprobe" in body
    assert "Assessing the Reliability" not in body and "zhao2024belief" not in body  # not served
    assert "hf://my-org/mini@v1.0" in body
    assert "| `P36` (capital) |" in body                      # per-relation statistics
    assert '"choices": 3' in body                             # the parameters


def test_card_of_the_repo_sample_names_its_dvc_lock_hash(tmp_path, sample_repo):
    # the sample repository holds the checkout's dvc.lock beside its data/datasets/sample-mc
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text())
    md5 = next(o["md5"] for o in lock["stages"]["mc"]["outs"]
               if o["path"] == "data/datasets/sample-mc")
    out = export_hub_folder(sample_repo / "data" / "datasets" / "sample-mc", tmp_path / "hub",
                            CardOptions(repo_id="o/sample-mc"))
    body = (out / "README.md").read_text()
    assert f"`{md5}` (stage `mc`" in body
    assert "data/kg/sample.ttl" in body and "has 20 choices" in body


def test_license_follows_the_source_and_can_be_overridden(built, tmp_path):
    trex = {"source": {"type": "facts", "facts_source": {"kind": "lama", "files": {}}}}
    assert default_license(trex)[0] == "cc-by-sa-4.0"
    assert default_license({"source": {"type": "wikidata"}})[0] == "cc-by-4.0"
    out = export_hub_folder(built["facts"], tmp_path / "hub",
                            CardOptions(repo_id="o/n", license="cc0-1.0"))
    text = (out / "README.md").read_text()
    assert "license: cc0-1.0" in text and "chosen by the publisher" in text


def test_round_trip_restores_the_exact_folder(built, tmp_path):
    src = built["mc"]
    hub = export_hub_folder(src, tmp_path / "hub", CardOptions(repo_id="o/n"))
    # T-REx-MC interleaves train and test per relation: the order must come from the layout.
    assert len(read_layout(hub)["tables"]["facts"]["runs"]) > 2
    back = open_dataset(hub, cache_dir=tmp_path / "cache")
    assert back != hub and (tmp_path / "cache" / "hub") in back.parents
    assert sorted(p.name for p in back.iterdir()) == sorted(p.name for p in src.iterdir())
    for f in src.iterdir():
        assert (back / f.name).read_bytes() == f.read_bytes(), f.name
    assert read_table(back, "facts").equals(read_table(src, "facts"))
    assert open_dataset(hub, cache_dir=tmp_path / "cache") == back        # cached
    assert open_dataset(src) == src                                        # a dataset folder


def test_empty_and_mixed_splits(tmp_path):
    table = pa.table({"fact_id": ["a", "b", "c", "d"], "split": ["test", "", "test", "train"]})
    write_dataset(tmp_path / "ds", {"facts": table},
                  base_manifest("ds", "facts", {"type": "test"}, {}, {}))
    hub = export_hub_folder(tmp_path / "ds", tmp_path / "hub", CardOptions(repo_id="o/n"))
    layout = read_layout(hub)["tables"]["facts"]
    assert set(layout["splits"]) == {"test", "unsplit", "train"}
    assert [r[0] for r in layout["runs"]] == ["test", "unsplit", "test", "train"]
    assert "rows with an empty `split` are the `unsplit` split" in (hub / "README.md").read_text()
    back = open_dataset(hub, cache_dir=tmp_path / "c")
    assert read_table(back, "facts").equals(read_table(tmp_path / "ds", "facts"))


def test_damaged_hub_folder_is_a_user_error(built, tmp_path):
    hub = export_hub_folder(built["mc"], tmp_path / "hub", CardOptions(repo_id="o/n"))
    (hub / "data" / "facts" / "test-00000-of-00001.parquet").unlink()
    with pytest.raises(UserError, match="missing"):
        open_dataset(hub, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "hub" / "local").exists() or not any(
        p.name.endswith(".parquet") for p in (tmp_path / "cache").rglob("*"))


def test_build_mc_reads_facts_from_a_hub_folder(built, tmp_path, monkeypatch):
    monkeypatch.setenv("FACTPROBE_CACHE_DIR", str(tmp_path / "cache"))
    hub = export_hub_folder(built["facts"], tmp_path / "hub", CardOptions(repo_id="o/n"))
    kw = dict(choices=3, min_facts=5, min_objects=5, train=2, test=3, progress=False)
    a = build_mc(MCConfig(facts=str(built["facts"]), out=str(tmp_path / "a" / "mc"), **kw))
    b = build_mc(MCConfig(facts=str(hub), out=str(tmp_path / "b" / "mc"), **kw))
    for name in ("facts.parquet", "relations.parquet", "dataset.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_hf_spec_downloads_a_snapshot_and_converts_it(built, tmp_path, monkeypatch):
    snapshot = tmp_path / "snapshots" / ("c0ffee" * 6 + "beef")
    export_hub_folder(built["mc"], snapshot, CardOptions(repo_id="my-org/mini"))
    calls = []

    def fake_snapshot_download(repo_id, **kw):
        calls.append((repo_id, kw))
        return str(snapshot)

    monkeypatch.setattr("huggingface_hub.snapshot_download", fake_snapshot_download)
    back = open_dataset("hf://my-org/mini@v1.0", cache_dir=tmp_path / "cache")
    assert calls[0][0] == "my-org/mini"
    assert calls[0][1]["repo_type"] == "dataset" and calls[0][1]["revision"] == "v1.0"
    assert back == tmp_path / "cache" / "hub" / "my-org--mini" / snapshot.name
    assert (back / "facts.parquet").read_bytes() == (built["mc"] / "facts.parquet").read_bytes()
    with pytest.raises(UserError, match="ORG/NAME"):
        open_dataset("hf://not a repo", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("command,flags", [
    ("mc", ("--choices", "3", "--min-facts", "5", "--min-objects", "5", "--train", "2",
            "--test", "3")),
    ("misprimes", ("--negatives", "2")),
    ("multiprompt", ("--templates-dir", str(ROOT / "data" / "templates"))),
    ("templates", ("--paraphrases", "0", "--relations", "P36,P37",
                   "--templates-dir", str(ROOT / "data" / "templates"))),
])
def test_build_commands_read_facts_from_hf(built, tmp_path, monkeypatch, command, flags):
    """Every build command's --facts goes through the one input resolver: hf://ORG/NAME gives
    the bytes the local folder gives."""
    from factprobe.cli.app import main
    snapshot = tmp_path / "snapshots" / ("facade" * 6 + "cafe")
    export_hub_folder(built["facts"], snapshot, CardOptions(repo_id="my-org/facts"))
    monkeypatch.setattr("huggingface_hub.snapshot_download", lambda repo_id, **kw: str(snapshot))
    monkeypatch.setenv("FACTPROBE_CACHE_DIR", str(tmp_path / "cache"))
    local, remote = tmp_path / "local" / command, tmp_path / "remote" / command
    assert main(["build", command, "--quiet", "--facts", str(built["facts"]), "--out",
                 str(local), *flags]) == 0
    assert main(["build", command, "--quiet", "--facts", "hf://my-org/facts@v1", "--out",
                 str(remote), *flags]) == 0
    names = sorted(p.name for p in local.iterdir())
    assert names == sorted(p.name for p in remote.iterdir()) and "dataset.json" in names
    for name in names:
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name


def _mock_api(tags=(), branches=("main",)):
    api = mock.MagicMock(name="HfApi()")
    api.list_repo_refs.return_value = SimpleNamespace(
        tags=[SimpleNamespace(name=t) for t in tags],
        branches=[SimpleNamespace(name=b) for b in branches])
    seen = {}

    def upload_folder(**kw):
        folder = Path(kw["folder_path"])
        seen["files"] = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                               if p.is_file())
        seen["card"] = (folder / "README.md").read_text()
        return SimpleNamespace(oid="abc123def4567890")

    api.upload_folder.side_effect = upload_folder
    return api, seen


def test_upload_path_with_a_mocked_hfapi(built, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    api, seen = _mock_api()
    with mock.patch("huggingface_hub.HfApi", return_value=api) as cls:
        msg = publish(PublishConfig(dataset=str(built["mc"]), repo_id="my-org/mini",
                                    private=True, revision="paper", tag="v1.0", progress=False))
    cls.assert_called_once_with(token=TOKEN)
    api.create_repo.assert_called_once_with("my-org/mini", repo_type="dataset", private=True,
                                            exist_ok=True)
    api.create_branch.assert_called_once_with("my-org/mini", branch="paper", repo_type="dataset")
    kw = api.upload_folder.call_args.kwargs
    assert kw["repo_id"] == "my-org/mini" and kw["repo_type"] == "dataset"
    assert kw["revision"] == "paper" and kw["delete_patterns"] == ["data/**"]
    assert seen["files"] == ["README.md", "data/facts/test-00000-of-00001.parquet",
                             "data/facts/train-00000-of-00001.parquet",
                             "data/relations/relations-00000-of-00001.parquet", "dataset.json",
                             LAYOUT_FILE]
    assert "hf://my-org/mini@v1.0" in seen["card"]
    tag = api.create_tag.call_args
    assert tag.args == ("my-org/mini",) and tag.kwargs["tag"] == "v1.0"
    assert tag.kwargs["revision"] == "abc123def4567890" and tag.kwargs["repo_type"] == "dataset"
    assert "hf://my-org/mini@v1.0" in msg and TOKEN not in msg


def test_a_taken_tag_is_refused_before_uploading(built, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    api, _ = _mock_api(tags=("v1.0",))
    with mock.patch("huggingface_hub.HfApi", return_value=api):
        with pytest.raises(UserError, match="already exists"):
            publish(PublishConfig(dataset=str(built["mc"]), repo_id="o/n", tag="v1.0"))
    api.upload_folder.assert_not_called()


@pytest.mark.parametrize("status,needle", [(401, "rejected HF_TOKEN"), (403, "write access"),
                                           (500, "HTTP 500")])
def test_hub_http_errors_are_one_line_without_the_token(built, monkeypatch, status, needle):
    from huggingface_hub.utils import HfHubHTTPError
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    api, _ = _mock_api()
    response = SimpleNamespace(status_code=status, headers={}, request=None)
    api.create_repo.side_effect = HfHubHTTPError(f"boom for Bearer {TOKEN}", response=response,
                                                 server_message=f"bad token {TOKEN}")
    with mock.patch("huggingface_hub.HfApi", return_value=api):
        with pytest.raises(UserError) as err:
            publish(PublishConfig(dataset=str(built["mc"]), repo_id="o/n"))
    assert needle in str(err.value) and TOKEN not in str(err.value)
    assert "\n" not in str(err.value)


# --- the real command line ---------------------------------------------------------------

def run_cli(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "factprobe.cli.app", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=180)


def assert_one_line_exit_2(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert TOKEN not in proc.stderr + proc.stdout


@pytest.fixture
def hf_home(tmp_path) -> dict:
    return {"HF_HOME": str(tmp_path / "hf-home"), "PYTHONPATH": str(ROOT)}


def test_publish_help_shows_examples():
    proc = run_cli("publish", "--help", env={}, cwd=ROOT)
    assert proc.returncode == 0 and "examples:" in proc.stdout and "--dry-run" in proc.stdout


def test_cli_dry_run_writes_the_folder(built, tmp_path, hf_home):
    proc = run_cli("publish", str(built["mc"]), "--repo-id", "o/n", "--dry-run",
                   str(tmp_path / "out"), env=hf_home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "README.md").is_file() and (tmp_path / "out" / LAYOUT_FILE).is_file()
    assert not any(p.name.startswith(".out.tmp") for p in tmp_path.iterdir())


def test_cli_publish_without_token(built, tmp_path, hf_home):
    proc = run_cli("publish", str(built["mc"]), "--repo-id", "o/n", env=hf_home, cwd=tmp_path)
    assert_one_line_exit_2(proc, "HF_TOKEN is not set")


def test_cli_publish_offline(built, tmp_path, hf_home):
    proc = run_cli("publish", str(built["mc"]), "--repo-id", "o/n",
                   env={**hf_home, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1"}, cwd=tmp_path)
    assert_one_line_exit_2(proc, "HF_HUB_OFFLINE")


def test_cli_publish_with_the_hub_unreachable(built, tmp_path, hf_home, closed_port_url):
    endpoint = closed_port_url.rsplit("/", 1)[0]
    proc = run_cli("publish", str(built["mc"]), "--repo-id", "o/n", "--tag", "v1",
                   env={**hf_home, "HF_TOKEN": TOKEN, "HF_ENDPOINT": endpoint}, cwd=tmp_path)
    assert_one_line_exit_2(proc, "unreachable", endpoint)


def test_cli_reading_hf_dataset_offline(tmp_path, hf_home):
    proc = run_cli("build", "mc", "--facts", "hf://my-org/not-cached@v1", "--out",
                   str(tmp_path / "mc"), "--quiet",
                   env={**hf_home, "HF_HUB_OFFLINE": "1", "HF_TOKEN": TOKEN}, cwd=tmp_path)
    assert_one_line_exit_2(proc, "hf://my-org/not-cached@v1")
    assert not (tmp_path / "mc").exists()


def test_cli_bad_repo_id(built, tmp_path, hf_home):
    proc = run_cli("publish", str(built["mc"]), "--repo-id", "no-namespace", "--dry-run",
                   str(tmp_path / "o"), env=hf_home, cwd=tmp_path)
    assert_one_line_exit_2(proc, "ORG/NAME")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("source,needles,license_id", [
    ({"type": "wikidata", "endpoint": "https://query.wikidata.org/sparql",
      "retrieved": ["2025-01-02"], "query_sha256": {"P36": "ab12"}},
     ["Wikidata Query Service", "2025-01-02", "`P36`: `ab12`"], "cc-by-4.0"),
    ({"type": "sparql:http://kg.example/q", "endpoint": "http://kg.example/q", "retrieved": []},
     ["SPARQL endpoint `http://kg.example/q`", "check that its terms"], "cc-by-4.0"),
    ({"path": "TREx/", "kind": "lama", "files": {"P36.jsonl": {"sha256": "ff00"}}},
     ["T-REx (LAMA-style", "`P36.jsonl` sha256 `ff00`", "share-alike"], "cc-by-sa-4.0"),
    ({"path": "relbert/t_rex", "kind": "hf", "builder": "t_rex", "config": "filtered"},
     ["Hugging Face copy", "`relbert/t_rex`"], "cc-by-sa-4.0"),
    ({"path": "triples.csv", "sha256": "cafe", "delimiter": ","},
     ["CSV of triples `triples.csv`", "sha256 `cafe`"], "cc-by-4.0"),
])
def test_card_names_every_kind_of_source(source, needles, license_id):
    from huggingface_hub import DatasetCard

    from factprobe.builders.publish.card import RepoVersion, render_card
    manifest = base_manifest("x", "mc", {"type": "facts", "facts_dataset": "f",
                                         "facts_sha256": "beef", "facts_source": source},
                             {"choices": 4}, {"chance": 0.25})
    layout = {"tables": {"facts": {
        "rows": 2, "sha256": "00", "split_column": True, "unsplit_as_train": False, "runs": [],
        "splits": {"test": {"path": "data/facts/test-00000-of-00001.parquet", "rows": 2}},
        "columns": [["fact_id", "string"], ["choices", "list<string>"]]}}}
    text = render_card(manifest, layout, CardOptions(repo_id="o/x"), RepoVersion())
    for needle in needles:
        assert needle in text, needle
    card = DatasetCard(text)
    assert card.data.license == license_id and "has 4 choices" in card.text
