"""``--executor ray`` on a real local Ray (two CPUs): shards read by Ray tasks that seek into
indexed bz2 / gzip dumps give the same bytes as the local executor, and a bad line in a later
shard is still named by its line in the file."""
from __future__ import annotations

import bz2

import pytest

from factprobe.core.errors import UserError
from factprobe.builders.sources.wikidata_dump import DumpOptions
from tests.dump_world import dump_facts, write_world

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'factprobe[ray]'")
SMALL = dict(shard_bytes=4096, batch_bytes=1024)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_world(tmp_path_factory.mktemp("rayfiles"))


@pytest.mark.slow
@pytest.mark.parametrize("form", ["json.bz2", "json.gz", "nt.bz2", "json"])
def test_ray_shards_equal_local(local_ray, files, tmp_path, form):
    local = dump_facts(files[form], tmp_path / "local", tmp_path / "w")
    on_ray = dump_facts(files[form], tmp_path / "ray", tmp_path / "w", options=DumpOptions(
        executor="ray", work_root=str(tmp_path / "w"), **SMALL))
    for name in ("facts.parquet", "relations.parquet", "dataset.json"):
        a, b = (local / name).read_bytes(), (on_ray / name).read_bytes()
        if name == "dataset.json":
            a, b = a.replace(b'"local"', b'"ray"'), b
        assert a == b, name
    # the shards are gone; the block index stays for the next build from this file
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["index"]
    if form != "json":
        assert len(list((tmp_path / "w" / "index").iterdir())) == 2


@pytest.mark.slow
def test_ray_names_the_bad_line(local_ray, files, tmp_path):
    lines = files["json"].read_bytes().split(b"\n")
    target = len(lines) - 4                   # well past the first shards
    lines[target - 1] = b"not json at all,"
    bad = tmp_path / "bad.json.bz2"
    bad.write_bytes(bz2.compress(b"\n".join(lines)))
    with pytest.raises(UserError, match=rf"line {target}: not JSON"):
        dump_facts(bad, tmp_path / "out", tmp_path / "w", options=DumpOptions(
            executor="ray", work_root=str(tmp_path / "w"), **SMALL))
    assert not (tmp_path / "out").exists()
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["index"]
