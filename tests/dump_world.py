"""Shared by the dump tests: the fixture knowledge written as dumps and served by a real
``oxigraph serve-read-only``, and a helper that builds facts from either side."""
from __future__ import annotations

import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq

from builders.build_facts import FactsConfig, build_facts
from builders.sources.wikidata_dump import DumpOptions
from tests import wikidata_dump_fixture as fx
from tests.conftest import _free_port, _oxigraph

RELATIONS = ("P36", "P37", "P19", "P569", "P1082", "P1448", "P856", "P214", "P6254")


@contextmanager
def oxigraph_serving(rdf: Path, db: Path):
    exe = _oxigraph()
    subprocess.run([exe, "load", "--location", str(db), "--file", str(rdf)], check=True,
                   capture_output=True)
    port = _free_port()
    proc = subprocess.Popen([exe, "serve-read-only", "--location", str(db), "--bind",
                             f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/query"
    deadline = time.time() + 20
    try:
        while True:
            try:
                urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=1).read()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("oxigraph server did not start")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def write_world(folder: Path, entities=None) -> dict[str, Path]:
    return fx.write(folder, fx.ENTITIES if entities is None else entities)


def dump_facts(path: Path, out: Path, work: Path, relations=RELATIONS, **kw) -> Path:
    opts = kw.pop("options", None) or DumpOptions(work_root=str(work), workers=0)
    return build_facts(FactsConfig(source="wikidata-dump", path=str(path), relations=relations,
                                   out=str(out), progress=False, dump=opts, **kw))


def sparql_facts(url: str, out: Path, cache: Path, relations=RELATIONS, **kw) -> Path:
    return build_facts(FactsConfig(source="sparql", endpoint=url, relations=relations,
                                   out=str(out), cache_dir=str(cache), progress=False, **kw))


def table(folder: Path, name: str, drop_source: bool = True):
    t = pq.read_table(folder / f"{name}.parquet")
    return t.drop(["source"]) if drop_source and "source" in t.column_names else t
