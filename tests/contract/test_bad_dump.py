"""Bad Wikidata dumps and bad flags for ``--source wikidata-dump``: one line naming the file (and
the line, where there is one), exit 2, nothing written, no scratch shard left behind."""
from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest

from tests import wikidata_dump_fixture as fx
from tests.contract.harness import Case, check, expand, run, snapshot

GOOD = fx.json_dump(fx.ENTITIES)
LINES = GOOD.split(b"\n")


def _write(name: str, data: bytes):
    def setup(ws: Path) -> None:
        (ws / "dumps").mkdir(exist_ok=True)
        (ws / "dumps" / name).write_bytes(data)
    return setup


def _with_line(number: int, text: bytes) -> bytes:
    lines = list(LINES)
    lines[number - 1] = text
    return b"\n".join(lines)


def _facts(path: str, *extra: str) -> tuple[str, ...]:
    return ("build", "facts", "--quiet", "--source", "wikidata-dump", "--path", path,
            "--relations", "P36,P37", "--out", "{ws}/out", *extra)


BZ2 = bz2.compress(GOOD)
CASES = [
    Case("dump-truncated-bz2", _facts("dumps/t.json.bz2"), ("t.json.bz2", "truncated"),
         _write("t.json.bz2", BZ2[: len(BZ2) * 2 // 3])),
    Case("dump-truncated-gz", _facts("dumps/t.json.gz"), ("t.json.gz", "truncated"),
         _write("t.json.gz", gzip.compress(GOOD, mtime=0)[:-200])),
    Case("dump-cut-at-a-line", _facts("dumps/cut.json.bz2"), ("cut.json.bz2", "closing ']'"),
         _write("cut.json.bz2", bz2.compress(b"\n".join(LINES[:20]) + b"\n"))),
    Case("dump-line-not-json", _facts("dumps/bad.json.bz2"), ("bad.json.bz2", "line 12",
                                                              "not JSON"),
         _write("bad.json.bz2", bz2.compress(_with_line(12, b'{"id": "Q1", oops},')))),
    Case("dump-entity-without-id", _facts("dumps/noid.json.gz"), ("noid.json.gz", "line 7",
                                                                  "without 'id'"),
         _write("noid.json.gz", gzip.compress(_with_line(7, b'{"type":"item"},'), mtime=0))),
    Case("dump-neither-format", _facts("dumps/table.csv.bz2"), ("table.csv.bz2", "neither"),
         _write("table.csv.bz2", bz2.compress(b"subject,relation,object\nQ1,P2,Q3\n"))),
    Case("dump-nt-bad-line", _facts("dumps/t.nt"), ("t.nt", "line 3", "N-Triples"),
         _write("t.nt", b"\n".join(fx.truthy_nt(fx.ENTITIES).split(b"\n")[:2]
                                   + [b"<http://www.wikidata.org/entity/Q1> <oops"]) + b"\n")),
    Case("dump-missing", _facts("dumps/nope.json.bz2"), ("nope.json.bz2", "not found")),
    Case("dump-relations-not-pids", ("build", "facts", "--quiet", "--source", "wikidata-dump",
                                     "--path", "dumps/ok.json", "--relations",
                                     "rel:capital", "--out", "{ws}/out"),
         ("rel:capital", "property id"), _write("ok.json", GOOD)),
    Case("dump-relation-absent", ("build", "facts", "--quiet", "--source", "wikidata-dump",
                                  "--path", "dumps/ok.json", "--relations", "P36,P999",
                                  "--out", "{ws}/out"), ("P999", "ok.json"),
         _write("ok.json", GOOD)),
    Case("dump-no-path", ("build", "facts", "--quiet", "--source", "wikidata-dump",
                          "--relations", "P36", "--out", "{ws}/out"), ("--path",)),
    Case("dump-nobel-from-truthy", ("build", "nobel", "--quiet", "--source", "wikidata-dump",
                                    "--path", "dumps/t.nt.bz2", "--out", "{ws}/out"),
         ("t.nt.bz2", "qualifiers"), _write("t.nt.bz2", bz2.compress(fx.truthy_nt(
             fx.ENTITIES)))),
    Case("dump-nobel-foreign-model", ("build", "nobel", "--quiet", "--source", "wikidata-dump",
                                      "--path", "dumps/ok.json", "--award-statement",
                                      "http://example.org/award", "--out", "{ws}/out"),
         ("--award-statement",), _write("ok.json", GOOD)),
    Case("dump-shard-size", _facts("dumps/ok.json", "--shard-mb", "0"), ("--shard-mb",),
         _write("ok.json", GOOD)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_dump(case: Case, workspace):
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    proc = run(expand(case.argv, {"ws": str(workspace)}), cwd=workspace, env=case.env,
               timeout=case.timeout)
    check(proc, before, snapshot(workspace), needles=case.needles,
          new_ok=lambda p: p.startswith(".cache-factprobe"))
    # the scratch folder of a failed dump read is removed, not left for a resume
    scratch = workspace / ".cache-factprobe" / "wikidata-dump"
    assert not scratch.exists() or not list(scratch.iterdir())
