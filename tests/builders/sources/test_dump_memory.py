"""The dump build's memory (issue 30): facts.parquet's row groups spilled to the work folder
and handed to the writer memory-mapped give the bytes of the in-memory writer, the writer's
pages are dropped from the process as it goes, and DuckDB's memory limit, too small or not a
size, is one line (the shards kept for the rerun)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import FACTS_SCHEMA, write_parquet, write_parquet_groups
from factprobe.builders.sources.wikidata_dump import DumpOptions
from factprobe.builders.sources.wikidata_dump.spill import (PageDroppingFile, SpilledGroups,
                                                           row_groups_from_disk)
from tests.dump_world import dump_facts
from tests.wikidata_dump_synthetic import DENSE_RELATIONS, write_synthetic


def _facts(n: int, seed: int = 0) -> pa.Table:
    """A facts table with the shapes that cut pages and dictionaries: unique ids (the
    dictionary falls back to plain), lists of zero to three aliases, one long value."""
    import random
    rng = random.Random(seed)
    words = [f"w{i}" * rng.randint(1, 4) for i in range(300)]
    rows = {name: [] for name in FACTS_SCHEMA.names}
    for i in range(n):
        rows["fact_id"].append(f"{rng.getrandbits(64):016x}")
        rows["relation_id"].append(f"P{rng.randint(1, 20)}")
        rows["subject_id"].append(f"Q{i // 3}")
        rows["object_id"].append(f"Q{rng.randint(1, 5000)}")
        rows["subject"].append(rng.choice(words) + (" é" * (i == 17) * 2000))
        rows["object"].append(rng.choice(words))
        for col in ("subject_aliases", "object_aliases", "answers"):
            rows[col].append(rng.sample(words, rng.randint(0, 3)))
        rows["split"].append("")
        rows["source"].append("wikidata-dump")
    return pa.table(rows, schema=FACTS_SCHEMA)


def _batches(table: pa.Table, sizes: list[int]):
    at, i = 0, 0
    while at < table.num_rows:
        n = sizes[i % len(sizes)]
        yield table.slice(at, n)
        at, i = at + n, i + 1


@pytest.fixture(scope="module")
def facts70k():
    # 70,000 unique fact ids: past the writer's 1 MB dictionary, so where it falls back to
    # plain encoding depends on how the rows are handed over (30,000 did not show it)
    return _facts(70000)


def test_a_table_in_chunks_writes_other_bytes(facts70k, tmp_path):
    """Why the row group is handed over whole: the same rows in chunks are another file."""
    write_parquet(facts70k, tmp_path / "whole.parquet")
    write_parquet(pa.Table.from_batches(facts70k.to_batches(max_chunksize=16384)),
                  tmp_path / "chunked.parquet")
    assert (tmp_path / "chunked.parquet").read_bytes() != (tmp_path / "whole.parquet").read_bytes()


@pytest.mark.parametrize("group_rows,sizes", [(1 << 20, [997, 1, 4096]), (25000, [16384]),
                                              (64, [5, 300, 0, 7]), (1 << 20, [70000])])
def test_spilled_row_groups_are_the_in_memory_bytes(facts70k, tmp_path, monkeypatch,
                                                    group_rows, sizes):
    """Batches of any size, row groups cut anywhere (a batch larger than a group included):
    the file is the one write_parquet writes for the whole table at once."""
    from factprobe.core import tables
    monkeypatch.setattr(tables, "ROW_GROUP_ROWS", group_rows)
    table = facts70k if group_rows > 64 else facts70k.slice(0, 3000)
    write_parquet(table, tmp_path / "whole.parquet")
    spill = SpilledGroups(tmp_path / "spill", FACTS_SCHEMA, group_rows)
    with PageDroppingFile(tmp_path / "spilled.parquet", spill.drop_pages) as sink:
        write_parquet_groups(row_groups_from_disk(_batches(table, sizes), spill),
                             FACTS_SCHEMA, sink)
    assert (tmp_path / "spilled.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert not list((tmp_path / "spill").iterdir())   # every spill file removed


def _mapped_rss_kb(path: Path) -> int:
    """The resident KB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:   # a mapping's first line
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux's /proc")
def test_the_writer_reads_columns_from_disk_and_lets_them_go(tmp_path):
    """The row group handed to the writer lives in mapped files; once the writer has written
    a column chunk, the pages it read are no longer part of this process."""
    table = _facts(40000, seed=1)
    spill = SpilledGroups(tmp_path / "spill", FACTS_SCHEMA, 1 << 20)
    spill.add(table)
    group = spill.take()
    files = sorted((tmp_path / "spill").glob("col*.arrow"))
    assert len(files) == len(FACTS_SCHEMA)
    assert group.equals(table)                       # reading it maps its pages in
    assert sum(_mapped_rss_kb(f) for f in files) > 1000
    spill.drop_pages()
    assert sum(_mapped_rss_kb(f) for f in files) == 0
    assert group.equals(table)                       # and they read back from the files
    del group
    spill.close()
    assert not list((tmp_path / "spill").iterdir())


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    path = tmp_path_factory.mktemp("dense") / "dense.json"
    write_synthetic(path, 300, seed=4, relations=DENSE_RELATIONS, dense=True)
    return path


def test_out_of_memory_is_one_line_and_keeps_the_shards(dense, tmp_path):
    work = tmp_path / "work"
    small = DumpOptions(work_root=str(work), workers=0, memory_limit="4MB")
    with pytest.raises(UserError, match=r"ran out of memory \(its limit, --memory-limit 4MB\)"):
        dump_facts(dense, tmp_path / "out", work, relations=DENSE_RELATIONS, options=small)
    assert not (tmp_path / "out").exists()
    assert list(work.glob("*/shards/*.done.json"))    # the rerun starts at the join
    dump_facts(dense, tmp_path / "out", work, relations=DENSE_RELATIONS)
    dump_facts(dense, tmp_path / "fresh", tmp_path / "work2", relations=DENSE_RELATIONS)
    for name in ("facts.parquet", "relations.parquet"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()
    assert not list(work.iterdir())


@pytest.mark.parametrize("limit,says", [("lots", "must have a number"),
                                        ("12", "Unknown unit"),
                                        ("1e99GB", "out of range"),
                                        ("4MB", "ran out of memory")])
def test_memory_limit_on_the_command_line(dense, tmp_path, limit, says):
    env = {**os.environ, "FACTPROBE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "factprobe.cli.app", "build", "facts", "--quiet", "--source",
         "wikidata-dump", "--path", str(dense), "--relations", ",".join(DENSE_RELATIONS),
         "--memory-limit", limit, "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--memory-limit" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_killed_builds_spill_files_are_cleared_and_nothing_else(tmp_path):
    folder = tmp_path / "spill"
    folder.mkdir()
    for name in ("rows-3.arrow", "col2-9.arrow", "notes.txt", "rows.arrow"):
        (folder / name).write_text("x")
    spill = SpilledGroups(folder, FACTS_SCHEMA, 64)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "rows.arrow"]
    spill.add(_facts(100))
    assert spill.take().num_rows == 64
    spill.close()      # the 36 rows not taken go too
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "rows.arrow"]
