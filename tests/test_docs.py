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
