"""The README's generated sections (operator reference, diagnostic codes) match the code."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

from irnorm.errors import CODES
from irnorm.ops.base import all_ops


def test_readme_generated_sections_are_current():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_docs.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


def test_readme_lists_every_code_and_op():
    text = (ROOT / "README.md").read_text()
    for code in CODES:
        assert f"| {code} |" in text
    for cls in all_ops():
        assert f"| {cls.type} | {cls.version} |" in text


def test_no_tracked_file_points_outside_the_repository():
    """Facts the code relies on live in docs/; no file names a folder outside the repository."""
    import re

    outside = re.compile("/" + r"work/|\.\./shared|shared/(notes|specs|hooks)/")  # split: this line must not match
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    files = listed.stdout.split() if listed.returncode == 0 else [
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix in (".bin", ".npz", ".npy") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        hits += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in outside.finditer(text)]
    assert hits == []
