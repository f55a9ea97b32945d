"""``factprobe diff OLD NEW [--out DIR]``: the diff table of :mod:`.diff`, its counts per
relation, and which snapshot each side was read from, as a one-screen Markdown summary or JSON,
and (with ``--out``) a folder holding ``diff.parquet``, ``summary.md`` and ``dataset.json``."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from factprobe.core.markdown import code, escape, table
from factprobe.core.outdir import atomic_folder
from factprobe.core.markers import stamp
from factprobe.core.provenance import facts_root, input_of, make_provenance
from factprobe.core.tables import base_manifest, dumps_json, read_table, write_parquet
from factprobe.builders.datasets.diff import CHANGES, DIFF_COLUMNS, change_counts, diff_facts
from factprobe.builders.datasets.diff_labels import align_to_ids, read_resolved
from factprobe.builders.datasets.refresh_wikidata_ids import has_wikidata_ids, objects_by_ids
from factprobe.builders.datasets.refresh import FACT_KINDS
from factprobe.builders.datasets.refresh_labels import labels_are_ids
from factprobe.builders.datasets.refresh_labels import summary as label_summary
from factprobe.builders.inputs import InputDataset, Needs, as_input

OLD_INPUT = Needs("OLD", FACT_KINDS, columns=DIFF_COLUMNS)
NEW_INPUT = Needs("NEW", FACT_KINDS, columns=DIFF_COLUMNS)
SHOWN_ROWS = 15     # rows of the diff the summary shows; the table holds them all


@dataclass(frozen=True)
class DiffConfig:
    old: InputDataset | str
    new: InputDataset | str
    out: str | None = None


def snapshot(inp: InputDataset, facts: int) -> dict:
    """Which dataset a side is and which snapshot of which source its facts were read from."""
    manifest = inp.manifest
    counts = manifest.get("counts") if isinstance(manifest.get("counts"), dict) else {}
    refresh = counts.get("refresh") if isinstance(counts.get("refresh"), dict) else {}
    prov = manifest.get("provenance") if isinstance(manifest.get("provenance"), dict) else {}
    root = facts_root(prov) or dict(manifest.get("source") or {})
    shot = refresh.get("snapshot") or {k: root[k] for k in (
        "type", "endpoint", "path", "dump_date", "retrieved", "sha256") if root.get(k)}
    return {"dataset": manifest.get("name"), "kind": manifest.get("kind"), "spec": inp.spec,
            "facts": facts, "snapshot": shot}


def _describe(side: dict) -> str:
    shot = side["snapshot"]
    where = shot.get("endpoint") or shot.get("path") or shot.get("type")
    when = (f"dump of {shot['dump_date']}" if shot.get("dump_date") else
            f"read {', '.join(shot['retrieved'])}" if shot.get("retrieved") else
            f"sha256 {str(shot['sha256'])[:12]}" if shot.get("sha256") else "date unknown")
    return (f"{code(side['spec'])} ({escape(side['kind'])}, {side['facts']} facts): "
            f"{code(where) if where else 'source unknown'}, {escape(when)}")


def _labels_lines(labels: dict | None) -> list[str]:
    """What the summary says of a dataset named by labels, compared under resolved ids."""
    if not labels:
        return []
    if labels.get("by") == "sub_w":
        return [f"OLD is LAMA's Google-RE, named by Freebase ids: of its {labels['labels']} "
                f"(relation, subject) pairs {labels['resolved']} are read by the release's "
                f"Wikidata id (sub_w; objects by obj_w), {labels['unresolved']} have none and "
                f"{labels['ambiguous']} two; the {labels['facts_left_out']} facts of the "
                f"{labels['pairs_left_out']} without one are left out of the comparison (listed "
                f"in NEW's resolved.parquet), and aliases are not compared.", ""]
    return [f"OLD names its subjects by label: of its {labels['labels']} (relation, label) "
            f"pairs {labels['resolved']} resolved to one entity ({labels['by_alias']} by an "
            f"alias), {labels['unresolved']} to none, {labels['ambiguous']} to several and "
            f"{labels['malformed']} are no name; the {labels['facts_left_out']} facts of the "
            f"{labels['pairs_left_out']} not resolved are left out of the comparison (listed "
            f"in NEW's resolved.parquet), and aliases are not compared.", ""]


def summary_markdown(result: dict, diff: pa.Table) -> str:
    """The one-screen summary: both snapshots, totals, a row per relation, the first rows."""
    lines = ["# factprobe diff", "",
             f"- old: {_describe(result['old'])}", f"- new: {_describe(result['new'])}", "",
             *_labels_lines(result.get("labels")),
             f"{result['rows']} change(s)" + (":" if result["rows"] else "; the facts are the "
                                              "same."), ""]
    if result["rows"]:
        used = [c for c in CHANGES if result["counts"][c]]
        per = pd.DataFrame([{"relation": rel, **{c: n[c] for c in used}}
                            for rel, n in result["per_relation"].items()])
        total = pd.DataFrame([{"relation": "all", **{c: result["counts"][c] for c in used}}])
        lines += [table(pd.concat([per, total], ignore_index=True)).rstrip(), ""]
        shown = diff.slice(0, SHOWN_ROWS).to_pandas()
        shown = pd.DataFrame({
            "change": shown["change"], "relation": shown["relation_id"],
            "subject": shown["subject"] + " (" + shown["subject_id"] + ")",
            "was": shown["old_value"].where(shown["old_value"] != "", shown["old_object"]),
            "now": shown["new_value"].where(shown["new_value"] != "", shown["object"])})
        more = (f" ({result['rows'] - SHOWN_ROWS} more in diff.parquet)"
                if result["rows"] > SHOWN_ROWS else "")
        lines += [f"First changes{more}:", "", table(shown).rstrip(), ""]
    return "\n".join(lines)


def diff_datasets(cfg: DiffConfig) -> tuple[pa.Table, dict, str]:
    """(diff table, the JSON result, the Markdown summary); written to ``cfg.out`` when given."""
    old, new = as_input(cfg.old, OLD_INPUT), as_input(cfg.new, NEW_INPUT)
    before = read_table(old.folder, "facts", list(DIFF_COLUMNS))
    after = read_table(new.folder, "facts", list(DIFF_COLUMNS))
    n_before = before.num_rows
    resolved = read_resolved(new.folder)
    labels = None
    by_ids = resolved is not None and has_wikidata_ids(old.folder)
    if resolved is not None and (labels_are_ids(old.manifest) or by_ids):
        # NEW is a refresh of a dataset named by labels (or Google-RE's Freebase ids, read by
        # the release's Wikidata ids): OLD is read under the ids they became
        if by_ids:
            before = objects_by_ids(before, old.folder)
        before, left = align_to_ids(before, resolved, after)
        labels = {**left, **{k: v for k, v in label_summary(resolved).items()
                             if k in ("labels", "resolved", "unresolved", "ambiguous",
                                      "malformed", "by_alias")}}
        if by_ids:
            labels["by"] = "sub_w"
    diff = diff_facts(before, after)
    totals, per = change_counts(diff)
    result = {"old": snapshot(old, n_before), "new": snapshot(new, after.num_rows),
              "rows": diff.num_rows,
              "counts": totals, "per_relation": per}
    if labels is not None:
        result["labels"] = labels
    summary = summary_markdown(result, diff)
    if cfg.out:
        write_diff(cfg.out, diff, result, summary, old, new)
    return diff, result, summary


def write_diff(out: str, diff: pa.Table, result: dict, summary: str, old: InputDataset,
               new: InputDataset) -> Path:
    """The diff folder, in one atomic swap; its marker is a dataset manifest of kind diff."""
    manifest = base_manifest(
        Path(out).name, "diff", {"type": "diff"}, {"old": old.spec, "new": new.spec},
        {"rows": result["rows"], "changes": result["counts"],
         "per_relation": result["per_relation"], "old": result["old"], "new": result["new"],
         **({"labels": result["labels"]} if "labels" in result else {})},
        make_provenance(inputs={"old": input_of(old), "new": input_of(new)}))
    with atomic_folder(out, "dataset", "diff") as tmp:
        write_parquet(diff, tmp / "diff.parquet")
        (tmp / "summary.md").write_text(summary, encoding="utf-8")
        (tmp / "dataset.json").write_text(dumps_json(stamp(manifest, tmp, "dataset")),
                                          encoding="utf-8")
    return Path(out)
