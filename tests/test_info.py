"""`irnorm info`: inputs, outputs, layers, opsets, weights and notes (fp16 weights, dynamic dims)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import SAMPLES

from irnorm.cli import cli


def test_info_notes_opsets_and_json():
    r = CliRunner().invoke(cli, ["info", str(SAMPLES / "ir" / "group_norm_dynamic.xml")])
    assert r.exit_code == 0, r.output
    assert "opsets  opset1, opset12" in r.output
    assert "note    fp16-compressed weights" in r.output
    assert "dynamic dims: x[?,16,?,?]" in r.output
    r = CliRunner().invoke(cli, ["info", "--json", str(SAMPLES / "ir" / "group_norm_dynamic.xml")])
    data = json.loads(r.output)
    assert data["opsets"] == ["opset1", "opset12"] and data["inputs"][0]["shape"] == [-1, 16, -1, -1]
    assert any(n.startswith("dynamic dims") for n in data["notes"])


def test_info_quiet_prints_nothing_and_fails_on_bad_model(tmp_path):
    r = CliRunner().invoke(cli, ["info", "-q", str(SAMPLES / "ir" / "group_norm.xml")])
    assert r.exit_code == 0 and r.output == ""
    bad = tmp_path / "bad.xml"
    bad.write_text("<net")
    r = CliRunner().invoke(cli, ["info", "-q", str(bad)])
    assert r.exit_code != 0
