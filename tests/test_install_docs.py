"""The install line of docs/own-graph.md works: factprobe is on no package index yet, so the docs
install from a checkout's path (issue 29: `pip install 'factprobe[pipeline,models]'` found no
distribution). The line is run as written, its path pointed at a copy of this checkout, into a
fresh target folder; --no-deps and the build backend already here keep it offline (the
dependencies are PyPI's ordinary ones; the path form is what is checked)."""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "/path/to/factprobe"


def doc_install_line() -> str:
    text = (ROOT / "docs" / "own-graph.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    lines = [re.sub(r"\s+#\s.*$", "", ln).strip() for b in blocks for ln in b.splitlines()]
    found = [ln for ln in lines if ln.startswith("pip install ")]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow
def test_documented_install_line_installs_from_a_checkout(tmp_path):
    line = doc_install_line()
    assert PLACEHOLDER in line, f"{line!r}: no checkout path (the package is on no index)"
    checkout = tmp_path / "factprobe"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for rel in files.splitlines():
        if (ROOT / rel).is_file():
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, checkout / rel)
    argv = shlex.split(line.replace(PLACEHOLDER, str(checkout)))
    assert argv[:2] == ["pip", "install"] and len(argv) == 3, argv
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target),
                           argv[2]], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(target.glob("factprobe-*.dist-info"))
    # the package data the generated repository and the report page need came along
    assert (target / "factprobe/scaffold/files/plots.html").is_file()
    assert (target / "factprobe/evaluators/report/html/vendor/vega.min.js").is_file()
    # one import name: nothing called builders, probes or evaluators lands at the top of
    # site-packages, where a user's own package of that name would collide with it
    tops = sorted(p.name for p in target.iterdir() if p.suffix != ".dist-info")
    assert tops == ["bin", "factprobe"], tops
    assert (target / "bin" / "factprobe").is_file()
    extras = (next(target.glob("factprobe-*.dist-info")) / "METADATA").read_text()
    assert "Provides-Extra: pipeline" in extras and "Provides-Extra: models" in extras
