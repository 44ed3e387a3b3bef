"""Diagnostics stay readable for hostile files: a message quoting a huge list is cut (saying how
much), and an exception's text / the CLI's text output spell out at most MAX_LISTED problems and
say how many more there are; the full list is still in .diagnostics and in `validate --json`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from irbuilder import IRBuilder

import irnorm
from irnorm.cli import main
from irnorm.errors import MAX_LISTED, MAX_MESSAGE_CHARS, MAX_NAME_CHARS, Diagnostic


def test_long_message_is_cut_and_says_so() -> None:
    d = Diagnostic("IRN020", "axes " + ", ".join(str(i) for i in range(200_000)))
    assert len(d.message) < MAX_MESSAGE_CHARS + 100
    assert d.message.endswith("more characters]")
    assert d.message.startswith("axes 0, 1, 2")


def test_long_layer_name_is_cut_when_printed() -> None:
    d = Diagnostic("IRN012", "x", layer_id="1", layer_name="n" * 100_000, file="m.xml", line=3)
    assert len(d.format()) < MAX_NAME_CHARS + 200


def _many_bad_layers(tmp_path: Path, n: int) -> Path:
    """n unsupported layers, each an error of its own, all feeding Results."""
    b = IRBuilder("many")
    x = b.parameter("x", (2, 3))
    for i in range(n):
        (y,) = b.layer("NoSuchOp", [x], [((2, 3), "f32")], None, version="opset1", name=f"bad_{i}")
        b.result(y, f"r{i}")
    return b.save(tmp_path)


def test_exception_text_lists_at_most_max_listed(tmp_path: Path) -> None:
    xml = _many_bad_layers(tmp_path, MAX_LISTED + 37)
    with pytest.raises(irnorm.ValidationError) as e:
        irnorm.load(xml)
    assert len(e.value.errors) >= MAX_LISTED + 37
    lines = str(e.value).splitlines()
    assert len(lines) == MAX_LISTED + 1
    assert lines[-1] == f"... and {len(e.value.errors) - MAX_LISTED} more (all are in .diagnostics)"


def test_cli_text_is_capped_json_is_complete(tmp_path: Path, capsys) -> None:
    xml = _many_bad_layers(tmp_path, MAX_LISTED + 5)
    with pytest.raises(SystemExit) as e:
        main(["validate", str(xml)])
    assert e.value.code == 1
    out, err = capsys.readouterr()
    lines = (out + err).strip().splitlines()
    assert len(lines) == MAX_LISTED + 1
    assert "more (--json lists them all)" in lines[-1]
    with pytest.raises(SystemExit):
        main(["validate", "--json", str(xml)])
    out, _ = capsys.readouterr()
    report = json.loads(out)
    assert len([d for d in report[0]["diagnostics"] if d["severity"] == "error"]) >= MAX_LISTED + 5
    with pytest.raises(SystemExit) as e:
        main(["run", str(xml)])
    assert e.value.code == 1
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == MAX_LISTED + 1
    assert "more (irnorm validate --json lists them all)" in err


def test_huge_axes_list_message_is_bounded(tmp_path: Path) -> None:
    """The case that used to print a 1.6 MB message: NormalizeL2 with 200,000 (repeated) axes."""
    b = IRBuilder("axes")
    x = b.parameter("x", (2, 3))
    axes = b.const(np.zeros(200_000, np.int64), "axes")
    (y,) = b.layer("NormalizeL2", [x, axes], [((2, 3), "f32")], {"eps": 1e-6, "eps_mode": "add"},
                   version="opset1")
    b.result(y)
    diags = irnorm.check(b.save(tmp_path))
    errors = [d for d in diags if d.severity == "error"]
    assert errors, "repeated axes must be refused"
    assert all(len(d.message) <= MAX_MESSAGE_CHARS + 40 for d in diags)
