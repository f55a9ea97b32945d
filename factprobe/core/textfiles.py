"""The text files a user hands to factprobe (CSV, JSON lines, YAML templates, review files, the
MONITOR authors' FKTC files), read so that a wrong encoding, a NUL byte or an unreadable file
is one :class:`UserError` naming ``file:line`` rather than a ``UnicodeDecodeError`` traceback.

Every such file must be UTF-8 (a leading byte-order mark is tolerated: spreadsheet programs
write one). NUL bytes are refused: no label, id or template holds one, and a file with them is
almost always binary or UTF-16 given by mistake.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Iterator

from factprobe.core.errors import UserError

BOM = b"\xef\xbb\xbf"
SAVE_AS_UTF8 = "save the file as UTF-8"


def _not_utf8(path: str | os.PathLike, line: int, byte: int) -> UserError:
    return UserError(f"{path}:{line}: not valid UTF-8 (byte 0x{byte:02x}); {SAVE_AS_UTF8}")


def nul_error(path: str | os.PathLike, line: int) -> UserError:
    return UserError(f"{path}:{line}: NUL byte (a binary or UTF-16 file?); {SAVE_AS_UTF8} text")


def read_bytes(path: str | os.PathLike, what: str) -> bytes:
    """The bytes of ``path``; ``what`` says what the file should be, for the error line."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{p} not found; give {what}") from None
    except IsADirectoryError:
        raise UserError(f"{p} is a folder; give {what}") from None
    except OSError as exc:
        raise UserError(f"cannot read {p} ({exc.strerror or type(exc).__name__}); check that "
                        f"it is {what} you may read") from None


def read_text(path: str | os.PathLike, what: str) -> str:
    """The whole of a small UTF-8 text file (templates, FKTC files, review files)."""
    data = read_bytes(path, what)
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data.count(b"\n", 0, exc.start) + 1, data[exc.start]) from None
    if "\x00" in text:
        raise nul_error(path, text.count("\n", 0, text.index("\x00")) + 1)
    return text


def utf8_lines(path: str | os.PathLike, fh: BinaryIO) -> Iterator[str]:
    """The lines of a binary file handle, decoded one by one, so that a file of millions of
    rows is never held whole and a bad byte is reported with its line. Line ends are kept
    (``csv`` needs them to tell a quoted line break from the end of a record)."""
    for lineno, raw in enumerate(fh, start=1):
        if lineno == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, lineno, raw[exc.start]) from None
