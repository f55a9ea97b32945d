"""Wikidata's dumps as a source: the JSON dump (``latest-all.json.bz2`` / ``.gz``) and the truthy
N-Triples dump (``latest-truthy.nt.bz2`` / ``.gz``), read at the speed of decompression in
memory that does not grow with the dump.

The pipeline: :mod:`.stream` detects the format and decompresses on several threads, cutting
the text into batches of whole lines; :mod:`.extract` turns a batch into small tables
(:mod:`.json_lines` for entities, :mod:`.ntriples` for triples, :mod:`.values` for Wikidata's
RDF mapping of values); :mod:`.local` or :mod:`.ray_executor` runs that over the dump into
Parquet shards kept in a :mod:`.workdir`; :mod:`.join` joins the shards with DuckDB; and
:mod:`.to_facts`, :mod:`.to_nobel` and :mod:`.to_aliases` turn the result into what the
``factprobe build`` commands write. Those are imported where used, so that reading the
options (the command line does) loads none of the readers.
"""
from factprobe.builders.sources.wikidata_dump.options import DumpOptions

__all__ = ["DumpOptions"]
