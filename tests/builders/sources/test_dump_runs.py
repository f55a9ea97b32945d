"""How a dump build runs: the same bytes whatever the shards, workers or decompressor; resume
after a kill; bad lines named by their line in the file; scratch space owned and cleaned."""
from __future__ import annotations

import bz2
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factprobe.core.errors import UserError
from factprobe.builders.sources.wikidata_dump import DumpOptions
from factprobe.builders.sources.wikidata_dump.values import canonical_decimal
from tests import wikidata_dump_fixture as fx
from tests.dump_world import dump_facts, write_world
from tests.wikidata_dump_synthetic import write_synthetic

SMALL = dict(shard_bytes=4096, batch_bytes=1024)   # a handful of entities a shard


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_world(tmp_path_factory.mktemp("dumpfiles"))


def _same_dataset(a: Path, b: Path) -> None:
    for name in ("facts.parquet", "relations.parquet"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    ma, mb = (json.loads((x / "dataset.json").read_text()) for x in (a, b))
    ma.pop("name"), mb.pop("name")
    assert ma == mb


@pytest.mark.parametrize("form", ["json.bz2", "nt.gz"])
def test_same_bytes_whatever_the_shards_and_workers(files, tmp_path, form):
    base = dump_facts(files[form], tmp_path / "one", tmp_path / "w")
    for i, opts in enumerate([DumpOptions(workers=2, **SMALL), DumpOptions(workers=0, **SMALL),
                              DumpOptions(workers=1, threads=1, shard_bytes=2048,
                                          batch_bytes=2048)]):
        opts = DumpOptions(**{**opts.__dict__, "work_root": str(tmp_path / "w")})
        _same_dataset(base, dump_facts(files[form], tmp_path / f"o{i}", tmp_path / "w",
                                       options=opts))


@pytest.mark.parametrize("tool,form", [("lbzip2", "json.bz2"), ("pigz", "json.gz")])
def test_external_decompressor_gives_the_same_bytes(files, tmp_path, tool, form):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed here (apt install {tool})")
    base = dump_facts(files[form], tmp_path / "lib", tmp_path / "w")
    out = dump_facts(files[form], tmp_path / "tool", tmp_path / "w", options=DumpOptions(
        decompressor=tool, work_root=str(tmp_path / "w")))
    _same_dataset(base, out)


def _corrupt(files: dict, tmp_path: Path, line_no: int, text: bytes) -> Path:
    lines = files["json"].read_bytes().split(b"\n")
    lines[line_no - 1] = text
    path = tmp_path / "bad.json.bz2"
    path.write_bytes(bz2.compress(b"\n".join(lines)))
    return path


@pytest.mark.parametrize("workers", [0, 2])
def test_a_bad_line_is_named_by_its_line_in_the_file(files, tmp_path, workers):
    n_lines = files["json"].read_bytes().count(b"\n")
    bad = _corrupt(files, tmp_path, n_lines - 5, b'{"type":"item","id":"Q1",,')
    opts = DumpOptions(workers=workers, work_root=str(tmp_path / "w"), **SMALL)
    with pytest.raises(UserError, match=rf"bad.json.bz2: line {n_lines - 5}: not JSON"):
        dump_facts(bad, tmp_path / "out", tmp_path / "w", options=opts)
    assert not (tmp_path / "out").exists()
    assert not list((tmp_path / "w").iterdir())       # nothing to resume from a bad dump
    bad = _corrupt(files, tmp_path, 30, b'{"type":"item","labels":{}},')
    with pytest.raises(UserError, match="line 30: an entity without 'id'"):
        dump_facts(bad, tmp_path / "out", tmp_path / "w", options=opts)


def test_skip_bad_counts_what_it_skipped(files, tmp_path):
    bad = _corrupt(files, tmp_path, 30, b"this is not json,")
    out = dump_facts(bad, tmp_path / "out", tmp_path / "w", skip_bad=True)
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["counts"]["dropped"]["bad_lines"] == 1
    assert manifest["source"]["bad_lines"] == 1


def test_decimals_are_what_a_sparql_store_answers():
    import pyoxigraph as ox
    values = ["+12", "1.50", "-0.0", "+0.250", "-3", "+1000000000000", "0.000001", "-12.340"]
    store = ox.Store()
    for i, v in enumerate(values):
        store.add(ox.Quad(ox.NamedNode(f"http://x/{i}"), ox.NamedNode("http://x/p"),
                          ox.Literal(v, datatype=ox.NamedNode(fx.XSD + "decimal"))))
    answered = {b["s"].value: b["o"].value for b in store.query(
        "SELECT ?s ?o WHERE { ?s ?p ?o }")}
    assert [canonical_decimal(v) for v in values] == [answered[f"http://x/{i}"]
                                                      for i in range(len(values))]


@pytest.mark.slow
def test_resume_after_a_kill(tmp_path):
    dump = tmp_path / "big.json.bz2"
    write_synthetic(dump, 6000, seed=3)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "FACTPROBE_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "factprobe.cli.app", "build", "facts", "--source",
           "wikidata-dump", "--path", str(dump), "--relations", "P19,P27,P31",
           "--shard-mb", "1", "--threads", "1", "--out", str(tmp_path / "out")]
    work = tmp_path / "cache" / "wikidata-dump"
    proc = subprocess.Popen([*cmd, "--quiet"], env=env, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(list(work.glob("*/shards/*.done.json"))) < 3:
        assert proc.poll() is None, "the build finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(list(work.glob("*/shards/*.done.json")))
    assert done >= 3 and not (tmp_path / "out").exists()
    again = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    reused = int(again.stderr.split("resuming: ")[1].split()[0])
    assert reused >= done
    assert not list(work.iterdir())                   # cleaned once the dataset is written
    env["FACTPROBE_CACHE_DIR"] = str(tmp_path / "cache2")
    clean = subprocess.run([*cmd[:-1], str(tmp_path / "clean"), "--quiet"], env=env,
                           capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr
    _same_dataset(tmp_path / "out", tmp_path / "clean")
