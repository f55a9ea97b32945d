"""Tests that run what docs/ shows."""
from __future__ import annotations

import re
from pathlib import Path

EXTENDING = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def python_blocks(part: str) -> list[str]:
    """The ```python blocks of docs/extending.md between ``<!-- begin: PART -->`` and
    ``<!-- end: PART -->``, in order."""
    text = EXTENDING.read_text(encoding="utf-8")
    section = text[text.index(f"<!-- begin: {part} -->"):text.index(f"<!-- end: {part} -->")]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)
