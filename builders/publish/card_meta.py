"""What the publisher says about a dataset, which no manifest knows: a pretty name, a
description, the authors, the license. Given as ``publish`` flags or in a YAML file
(``--card-meta FILE.yaml``); a flag wins over the file.

Example file::

    pretty_name: Programming-language facts (multiple choice)
    description: |
      Facts about 40 programming languages (designer, year, paradigm), asked as
      multiple-choice questions.
    authors: [Ada Lovelace, Charles Babbage]
    license: cc-by-4.0
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError

KEYS = ("pretty_name", "description", "authors", "license")
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")


@dataclass(frozen=True)
class CardMeta:
    pretty_name: str | None = None
    description: str | None = None
    authors: tuple[str, ...] = ()
    license: str | None = None    # None: chosen from the source (card.default_license)

    def over(self, base: "CardMeta") -> "CardMeta":
        """These values where given, ``base``'s elsewhere (flags over the file)."""
        return replace(base, **{k: getattr(self, k) for k in KEYS if getattr(self, k)})


def _text(value, key: str, path: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"--card-meta {path}: '{key}' must be non-empty text")
    return value.strip()


def load_card_meta(path: str | Path) -> CardMeta:
    """Read and check a card metadata file; any problem is one :class:`UserError` line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"--card-meta {path} not found; give a YAML file with "
                        f"{', '.join(KEYS)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise UserError(f"--card-meta {path} cannot be read ({why})") from None
    try:
        data = jsonsafe.yaml_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise UserError(f"--card-meta {path} is not valid YAML ({problem}{where}); fix it, "
                        f"e.g. quote text that holds ': '") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"--card-meta {path} must be a YAML mapping of {', '.join(KEYS)}")
    unknown = sorted(str(k) for k in data if k not in KEYS)
    if unknown:
        raise UserError(f"--card-meta {path}: unknown key(s) {', '.join(unknown)}; the keys "
                        f"are {', '.join(KEYS)}")
    out: dict = {}
    for key in ("pretty_name", "description"):
        if key in data:
            out[key] = _text(data[key], key, path)
    if "authors" in data:
        authors = data["authors"]
        authors = [authors] if isinstance(authors, str) else authors
        if not isinstance(authors, list) or not authors:
            raise UserError(f"--card-meta {path}: 'authors' must be a name or a list of names")
        out["authors"] = tuple(_text(a, "authors", path) for a in authors)
    if "license" in data:
        lic = _text(data["license"], "license", path)
        if not LICENSE_ID.fullmatch(lic):
            raise UserError(f"--card-meta {path}: license {lic!r} is not a Hub license id like "
                            f"cc-by-4.0, apache-2.0, mit or other")
        out["license"] = lic
    return CardMeta(**out)
