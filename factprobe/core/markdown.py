"""Markdown every layer writes: GitHub tables and file-name slugs (one copy of each)."""
from __future__ import annotations

import math
import re


# Text from data (labels, ids, model names, paths, an LLM's paraphrases) must show as written:
# never as HTML (a <script>, an <img> that calls home, a <!-- hiding the rest), a link, an
# image, emphasis or a broken table. Backslash escapes for Markdown's punctuation, entities for
# what starts HTML; an underscore inside a word (rel_capital) never emphasises, so stays.
_MD_PUNCT = re.compile(r"[\\`*~#|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_LINK = re.compile(r"\][(\[:]|!\[")
_ENTITY = re.compile(r"&(?=#?\w+;)")


def one_line(text) -> str:
    """``text`` on one line: every line break (U+2028 and NEL too) and control character a
    space."""
    return "".join(c if c.isprintable() else " " for c in str(text))


def escape(text) -> str:
    """``text`` as Markdown that shows it literally, on one line.

    >>> print(escape("<script>x</script> *a* `b` | [c](http://e)"))
    &lt;script&gt;x&lt;/script&gt; \\*a\\* \\`b\\` \\| \\[c\\](http://e)
    >>> print(escape("&amp; rel_capital _u_"))
    &amp;amp; rel_capital \\_u\\_
    >>> escape("0.735 [0.700, 0.760]"), escape("a\\nb")
    ('0.735 [0.700, 0.760]', 'a b')
    """
    text = one_line(text)
    text = _ENTITY.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_PUNCT.sub(lambda m: "\\" + m.group(0), text)
    if _LINK.search(text):
        text = text.replace("[", "\\[").replace("]", "\\]")
    return text


def code(text, table_cell: bool = False) -> str:
    """``text`` as a code span, whatever backticks it holds: the fence is one backtick longer
    than the longest run inside (CommonMark), padded when the text starts or ends with one.
    ``table_cell``: ``|`` escaped, as a GitHub table needs even inside code.

    >>> code("P36"), code("a`b"), code("``x"), code("a|b", table_cell=True)
    ('`P36`', '``a`b``', '``` ``x ```', '`a\\\\|b`')
    """
    text = one_line(text)
    if table_cell:
        text = text.replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (
        text.startswith(" ") and text.endswith(" ") and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(frame) -> str:
    """A GitHub table of a DataFrame (no tabulate dependency); every header and cell goes
    through :func:`escape` (they come from data).

    >>> import pandas as pd
    >>> print(table(pd.DataFrame({"model": ["a|b"], "acc": [0.5]})), end="")
    | model | acc |
    |---|---|
    | a\\|b | 0.5 |
    >>> table(pd.DataFrame())
    '_(none)_\\n'
    """
    if frame.empty:
        return "_(none)_\n"
    cols = [escape(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(escape(x) for x in row) + " |")
    return "\n".join(lines) + "\n"


def slug(text) -> str:
    """A file-name-safe form of ``text``: runs of other characters become one ``_``.

    >>> slug("sample-mc/zp lke: v1.0"), slug("///")
    ('sample-mc_zp_lke_v1.0', 'x')
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "x"


def missing(v) -> bool:
    """None or NaN: a number a table shows as a dash."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt(v, lo=None, hi=None, digits: int = 3) -> str:
    """A number with its interval, as every table of factprobe shows it.

    >>> fmt(0.73456, 0.7, 0.76), fmt(None), fmt(0.5, float("nan"), float("nan"))
    ('0.735 [0.700, 0.760]', '–', '0.500')
    """
    if missing(v):
        return "–"
    s = f"{v:.{digits}f}"
    if not missing(lo) and not missing(hi):
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return s
