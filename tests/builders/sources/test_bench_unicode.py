"""A label spelled with half a surrogate pair (JSON's ``"\\ud800"``) decodes to a string no
Parquet file holds: the importers refuse that line in one line (file, line, field), or skip and
count it with --skip-bad, instead of failing in the middle of writing."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.datasets.build_facts import build_facts
from factprobe.builders.sources.config import FactsConfig

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"


def _facts(fmt, path, out, **kw):
    return build_facts(FactsConfig(source=fmt, relations=None, out=str(out), path=str(path),
                                   progress=False, **kw))


def test_pararel_line_with_a_lone_surrogate(tmp_path):
    root = tmp_path / "data"
    shutil.copytree(FIX / "pararel" / "data", root)
    f = root / "trex_lms_vocab" / "P36.jsonl"
    # an emoji spelled as a surrogate pair is fine; half of one is not, in any field
    f.write_text(f.read_text() + '{"sub_label": "Emoji \\ud83d\\ude00", "obj_label": "Paris"}\n'
                 '{"sub_label": "Bad \\ud800", "obj_label": "Paris"}\n'
                 '{"sub_label": "Ok", "obj_label": "Paris", "uuid": "\\udfff"}\n')
    with pytest.raises(UserError, match=r"P36.jsonl:6: holds a lone surrogate"):
        _facts("pararel", root, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    out = _facts("pararel", root, tmp_path / "out", skip_bad=True)
    facts = pq.read_table(out / "facts.parquet")
    assert "Emoji \U0001F600" in facts["subject"].to_pylist()
    assert json.loads((out / "dataset.json").read_text())["counts"]["dropped"]["bad_lines"] == 2


def test_entityquestions_question_with_a_lone_surrogate(tmp_path):
    root = tmp_path / "dataset"
    shutil.copytree(FIX / "entityquestions" / "dataset", root)
    f = sorted(root.glob("*/P19.*.json"))[0]
    items = json.loads(f.read_text())
    text = json.dumps(items)[:-1] + ', {"question": "Where was Bad \\ud800 born?", ' \
                                    '"answers": ["Ulm"]}]'
    f.write_text(text)
    with pytest.raises(UserError, match=r"field 'question' holds a lone surrogate"):
        _facts("entityquestions", root, tmp_path / "out")
