"""Writes the explorer: ``index.html`` (styles, the page's script and the overview data
inlined) and ``explorer/`` beside it (the vendored Vega, Vega-Lite and vega-embed with their
licences, and one ``data/<dataset>/<relation>.js`` per relation).

Why script files and not JSON: Chromium blocks ``fetch()`` of ``file://`` URLs, but loads a
``<script src>`` beside the page, so a relation's data is a script that hands its object to
the page (``FP_LOADED(key, data)``), added to the document only when the relation is opened.
Every file is a pure function of the report's inputs (sorted keys, no dates): the same runs
give the same bytes."""
from __future__ import annotations

import json
import math
import re
import shutil
from importlib import resources
from pathlib import Path

from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.report.html.bundle import overview, relation_files
from factprobe.evaluators.report.runs import Run

SCRIPTS = ("common.js", "overview.js", "explore.js")       # inlined in this order
VENDOR = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js",
          "LICENSE-vega", "LICENSE-vega-lite", "LICENSE-vega-embed")


def _clean(obj):
    """NaN and infinities as null (JSON has neither)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


# Characters a JSON string may hold but a <script> element may not: ``<`` alone opens
# ``</script>`` and ``<!--`` (which hides the rest of the page), ``>`` and ``&`` complete them,
# U+2028/U+2029 end a line in older JavaScript. As JSON escapes they are the same strings.
_SCRIPT_UNSAFE = {c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"}


def to_json(obj) -> str:
    """Compact, sorted, safe inside ``<script>``: labels come from the graph, so no ``<``,
    ``>``, ``&``, U+2028 or U+2029 is written as itself.

    >>> to_json({"b": float("nan"), "a": "</script><!--&"})
    '{"a":"\\\\u003c/script\\\\u003e\\\\u003c!--\\\\u0026","b":null}'
    >>> json.loads(to_json({"a": "</script><!--&\u2028"}))["a"] == "</script><!--&\u2028"
    True
    """
    text = json.dumps(_clean(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)
    return text.translate(str.maketrans(_SCRIPT_UNSAFE))


def _static(name: str) -> str:
    return resources.files("factprobe.evaluators.report.html").joinpath("static", name).read_text(
        encoding="utf-8")


def write_html(out: Path, runs: list[Run], board, rel_table, val_table, notes: list[str],
               options: MetricsOptions) -> list[str]:
    """Write ``index.html`` and ``explorer/`` into ``out`` (the report's temporary folder);
    the paths written, relative to ``out``."""
    data = overview(runs, board, rel_table, val_table, notes, options)
    data["datasets"], files = relation_files(runs, options)
    written = []
    vendor = out / "explorer" / "vendor"
    vendor.mkdir(parents=True, exist_ok=True)
    src = resources.files("factprobe.evaluators.report.html").joinpath("vendor")
    for name in VENDOR:
        with resources.as_file(src.joinpath(name)) as f:
            shutil.copyfile(f, vendor / name)
        written.append(f"explorer/vendor/{name}")
    for f in files:
        target = out / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"FP_LOADED({to_json(f.key)},{to_json(f.data)});\n", encoding="utf-8")
        written.append(f.path)
    # one pass over the page's own markers: a label reading /*SCRIPT*/ stays a label
    parts = {"/*STYLE*/": _static("explorer.css"), "/*DATA*/": to_json(data),
             "/*SCRIPT*/": "\n".join(_static(f) for f in SCRIPTS)}
    page = re.sub(r"/\*(?:STYLE|DATA|SCRIPT)\*/", lambda m: parts[m.group(0)],
                  _static("index.html"))
    (out / "index.html").write_text(page, encoding="utf-8")
    written.append("index.html")
    return written
