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


def test_info_lists_and_marks_what_irnorm_cannot_run(tmp_path):
    """A user's first questions -- what is in this file, and what can't you run -- are answered even
    when the model holds operations irnorm lacks (exit 1: the model cannot be loaded)."""
    xml = (SAMPLES / "ir" / "group_norm.xml").read_text()
    assert 'type="GroupNormalization" version="opset12"' in xml
    bad = tmp_path / "m.xml"
    bad.write_text(xml.replace('type="GroupNormalization" version="opset12"', 'type="FancyNorm" version="opset12"'))
    (tmp_path / "m.bin").write_bytes((SAMPLES / "ir" / "group_norm.bin").read_bytes())
    r = CliRunner().invoke(cli, ["info", str(bad)])
    assert r.exit_code == 1
    assert "FancyNorm-opset12" in r.output and "UNSUPPORTED" in r.output
    assert "irnorm cannot run 1 operation(s) in this file: FancyNorm-opset12" in r.output
    assert "inputs" in r.output and "outputs" in r.output
    r = CliRunner().invoke(cli, ["info", "--json", str(bad)])
    data = json.loads(r.stdout)
    assert r.exit_code == 1 and data["ok"] is False
    assert data["unsupported"] == [{"type": "FancyNorm", "version": "opset12", "count": 1, "irnorm_knows": []}]
    assert data["layers"]["FancyNorm-opset12"] == 1 and len(data["inputs"]) == 1 and len(data["outputs"]) == 1
