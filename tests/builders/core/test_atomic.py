"""factprobe.core.atomic: one file replaced in one rename, nothing left behind on failure."""
from __future__ import annotations

import os
import stat

import pytest

from factprobe.core import atomic


def test_the_new_file_gets_the_users_permissions_not_a_private_temp_files(tmp_path):
    # mkstemp's 0600 would make init's dvc.yaml unreadable to a group that shares the repo
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "dvc.yaml", "stages: {}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "dvc.yaml").stat().st_mode) == 0o644


def test_a_failed_write_keeps_the_old_file_and_removes_its_temp(tmp_path):
    target = tmp_path / "c.parquet"
    target.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        with atomic.replacing(target, tmp=tmp_path / "c.tmp") as t:
            t.write_bytes(b"ha")
            raise KeyboardInterrupt          # what a kill's SIGINT raises mid-write
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["c.parquet"]


def test_newline_is_kept_as_asked(tmp_path):
    atomic.write_text(tmp_path / "r.csv", "a,b\r\n", newline="")
    assert (tmp_path / "r.csv").read_bytes() == b"a,b\r\n"
