"""``factprobe diff``'s table on hand-made facts: each change kind, the order, hostile labels in
the summary, and the vectorised diff against a plain per-pair loop on random tables."""
from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from factprobe.cli.app import main
from factprobe.core.tables import FACTS_SCHEMA, base_manifest, write_dataset
from factprobe.builders.datasets.diff import CHANGES, diff_facts

NAMES = ["relation_id", "subject_id", "object_id", "subject", "object", "subject_aliases",
         "object_aliases"]


def facts(rows) -> pa.Table:
    cols = list(zip(*rows)) if rows else [[]] * 7
    return pa.table({n: pa.array(list(c), type=pa.list_(pa.string()) if "aliases" in n
                                 else pa.string()) for n, c in zip(NAMES, cols)})


def reference(old: pa.Table, new: pa.Table) -> list[tuple]:
    """The diff written as the docs say it, one pair at a time (slow, plain)."""
    def pairs(t):
        out: dict = {}
        for r in sorted(t.to_pylist(), key=lambda r: (r["relation_id"], r["subject_id"],
                                                      r["object_id"])):
            out.setdefault((r["relation_id"], r["subject_id"]), {}).setdefault(r["object_id"], r)
        return out
    js = lambda v: json.dumps(sorted(v or []), ensure_ascii=False)  # noqa: E731
    a, b, rows = pairs(old), pairs(new), []
    for key in sorted(set(a) | set(b)):
        ga, gb = a.get(key), b.get(key)
        if gb is None or ga is None:
            change, g = ("subject_gone", ga) if gb is None else ("subject_added", gb)
            rows += [(change, *key, r["subject"], o, r["object"], "", "", "", "")
                     for o, r in g.items()]
            continue
        fa, fb = next(iter(ga.values())), next(iter(gb.values()))
        subject = fb["subject"]
        if fa["subject"] != fb["subject"]:
            rows.append(("subject_label_changed", *key, subject, "", "", "", "", fa["subject"],
                         fb["subject"]))
        if js(fa["subject_aliases"]) != js(fb["subject_aliases"]):
            rows.append(("subject_aliases_changed", *key, subject, "", "", "", "",
                         js(fa["subject_aliases"]), js(fb["subject_aliases"])))
        removed = [o for o in ga if o not in gb]
        added = [o for o in gb if o not in ga]
        if len(removed) == len(added) == 1:
            was, now = ga[removed[0]], gb[added[0]]
            kind = "object_id_changed" if was["object"] == now["object"] else "object_changed"
            rows.append((kind, *key, subject, added[0], now["object"], removed[0],
                         was["object"], "", ""))
        else:
            rows += [("object_removed", *key, subject, o, ga[o]["object"], "", "", "", "")
                     for o in removed]
            rows += [("object_added", *key, subject, o, gb[o]["object"], "", "", "", "")
                     for o in added]
        for o in (o for o in ga if o in gb):
            was, now = ga[o], gb[o]
            if was["object"] != now["object"]:
                rows.append(("object_label_changed", *key, subject, o, now["object"], "", "",
                             was["object"], now["object"]))
            if js(was["object_aliases"]) != js(now["object_aliases"]):
                rows.append(("object_aliases_changed", *key, subject, o, now["object"], "", "",
                             js(was["object_aliases"]), js(now["object_aliases"])))
    return rows


def _random_facts(r: random.Random) -> pa.Table:
    rows, label = [], {}
    for rel in ("P1", "P2"):
        for s in range(25):
            for o in r.sample(range(6), r.choice([0, 1, 1, 2, 3])):
                sid = f"Q{s}"
                rows.append((rel, sid, f"O{o}", label.setdefault(sid, r.choice(["a", "b"])),
                             r.choice([f"o{o}", "same"]), r.choice([[], ["x"]]),
                             r.choice([[], ["y"], ["z", "y"]])))
    return facts(rows)


@pytest.mark.parametrize("seed", range(40))
def test_diff_equals_the_plain_loop(seed):
    r = random.Random(seed)
    old, new = _random_facts(r), _random_facts(r)
    assert [tuple(d.values()) for d in diff_facts(old, new).to_pylist()] == reference(old, new)


def test_every_change_kind_once():
    old = facts([
        ("P1", "Q1", "O1", "One", "Paris", [], []),           # object changed
        ("P1", "Q2", "O2", "Two", "Berlin", [], []),          # id changed (merged)
        ("P1", "Q3", "O3", "Three", "Rome", [], ["Roma"]),    # label and aliases changed
        ("P1", "Q4", "O4", "Four", "A", [], []),               # subject gone
        ("P1", "Q6", "O6", "Six", "X", ["6"], []),             # subject label and aliases
        ("P1", "Q7", "O7", "Seven", "Y", [], []), ("P1", "Q7", "O8", "Seven", "Z", [], []),
    ])
    new = facts([
        ("P1", "Q1", "O9", "One", "Lyon", [], []),
        ("P1", "Q2", "O20", "Two", "Berlin", [], []),
        ("P1", "Q3", "O3", "Three", "Roma Capitale", [], ["Roma", "Urbs"]),
        ("P1", "Q5", "O5", "Five", "B", [], []),               # subject added
        ("P1", "Q6", "O6", "Sixth", "X", ["six"], []),
        ("P1", "Q7", "O7", "Seven", "Y", [], []), ("P1", "Q7", "O10", "Seven", "W", [], []),
        ("P1", "Q7", "O11", "Seven", "V", [], []),            # two added, one removed
    ])
    got = [(d["change"], d["subject_id"], d["object_id"]) for d in diff_facts(old, new)
           .to_pylist()]
    assert got == [
        ("object_changed", "Q1", "O9"), ("object_id_changed", "Q2", "O20"),
        ("object_label_changed", "Q3", "O3"), ("object_aliases_changed", "Q3", "O3"),
        ("subject_gone", "Q4", "O4"), ("subject_added", "Q5", "O5"),
        ("subject_label_changed", "Q6", ""), ("subject_aliases_changed", "Q6", ""),
        ("object_removed", "Q7", "O8"), ("object_added", "Q7", "O10"),
        ("object_added", "Q7", "O11")]
    assert {c for c, _, _ in got} == set(CHANGES)
    assert diff_facts(new, new).num_rows == 0 and diff_facts(facts([]), facts([])).num_rows == 0


def _dataset(folder, rows):
    t = facts(rows)
    full = {f.name: t[f.name] if f.name in t.column_names else
            pa.array([""] * t.num_rows, f.type) for f in FACTS_SCHEMA if f.type != pa.list_(
                pa.string()) or f.name in t.column_names}
    full["answers"] = pa.array([[r[4]] for r in rows], pa.list_(pa.string()))
    table = pa.table(full).select([f.name for f in FACTS_SCHEMA]).cast(FACTS_SCHEMA)
    write_dataset(folder, {"facts": table}, base_manifest(folder.name, "facts", {}, {},
                                                          {"facts": len(rows)}))
    return folder


def test_hostile_labels_stay_text_in_the_summary(tmp_path, capsys):
    evil = "<script>alert(1)</script> | `x` [a](http://e) \n# heading"
    old = _dataset(tmp_path / "old", [("P1", "Q1", "O1", "S", "Paris", [], [])])
    new = _dataset(tmp_path / "new", [("P1", "Q1", "O1", "S", evil, [], [])])
    assert main(["diff", str(old), str(new), "--out", str(tmp_path / "d")]) == 0
    text = capsys.readouterr().out
    assert "<script>" not in text and "\n# heading" not in text and "&lt;script&gt;" in text
    assert (tmp_path / "d" / "summary.md").read_text() in text
    # --out over one of its inputs is refused, and the input is untouched
    before = (old / "facts.parquet").read_bytes()
    assert main(["diff", str(old), str(new), "--out", str(old)]) == 2
    assert (old / "facts.parquet").read_bytes() == before
