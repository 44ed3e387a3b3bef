"""The real-network suite: every IR under tests/networks/ (small, randomly initialised ResNet, MobileNetV3, ConvNeXt,
ViT, Swin, BERT, LLaMA, GPT-2, T5, wav2vec2, a UNet stage, ... written by tools/make_networks.py through
openvino.convert_model + save_model) validates, runs in irnorm and matches the outputs OpenVINO's CPU plugin stored
next to it; with openvino installed it also matches a live OpenVINO run of the same file, and every dynamic variant
also matches OpenVINO at a second input shape (the static variant's inputs).  One network also goes through the
`irnorm run` command.

The tests are parametrized over the files present, so a network added to tools/make_networks.py adds tests.  When
irnorm lacks an operation a network uses, its tests fail with a message that lists the missing Type-opsetN (IRN012).
Neither torch nor transformers is needed here: the files are checked in (see tests/networks/README.md).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, load_npz
from ovutil import assert_close, compare_with_openvino, requires_openvino

import irnorm

NETWORKS = ROOT / "tests" / "networks"

# Whole networks (dozens to hundreds of layers, f16-compressed weights decompressed to f32, softmax/attention
# chains) accumulate more float32 rounding than the single layers in tests/exports: rtol 1e-4 with atol 1e-4 scaled
# by max|expected| (as ovutil.assert_close scales it) instead of the per-layer 2e-5.
TOL = (1e-4, 1e-4)

# networks whose files also go through `irnorm run --inputs ... --compare ...`
CLI_NAMES = ("resnet18_static", "bert_dynamic")


def _names() -> list[str]:
    return sorted(p.stem for p in NETWORKS.glob("*.xml"))


NAMES = _names()
DYNAMIC = [n for n in NAMES if n.endswith("_dynamic")]


def _xml(name: str) -> Path:
    return NETWORKS / f"{name}.xml"


def _inputs(name: str) -> dict[str, np.ndarray]:
    return load_npz(NETWORKS / f"{name}.inputs.npz")


def _expected(name: str) -> dict[str, np.ndarray]:
    return load_npz(NETWORKS / f"{name}.expected.npz")


def _problems(name: str) -> str | None:
    """None when irnorm.validate finds no error; otherwise a message that names the missing ops first."""
    try:
        diags = irnorm.validate(_xml(name))  # returns the warnings, raises with every error
    except irnorm.IrnormError as exc:
        diags = exc.diagnostics
    errors = [d for d in diags if d.severity != "warning"]
    if not errors:
        return None
    missing = Counter(f"{d.layer_type}-{d.layer_version}" for d in errors if d.code == "IRN012")
    others = [d for d in errors if d.code != "IRN012"]
    lines = [f"{name}: irnorm cannot run this network ({len(errors)} validation errors)"]
    if missing:
        ops = ", ".join(f"{op} (x{n})" for op, n in sorted(missing.items()))
        lines.append(f"missing ops [IRN012]: {ops}")
    if others:
        lines.append(f"other errors ({len(others)}; first 10):")
        lines += [f"  {d.format()}" for d in others[:10]]
    return "\n".join(lines)


def _require_loadable(name: str) -> None:
    problems = _problems(name)
    if problems:
        pytest.fail(problems, pytrace=False)


def _atol(expected: dict[str, np.ndarray]) -> float:
    return TOL[1] * max(1.0, max(float(np.abs(v).max()) for v in expected.values()))


def test_suite_is_complete():
    """Each network comes as static + dynamic with both npz files, the README covers exactly the networks present,
    and the whole suite stays small."""
    assert len(NAMES) >= 22, NAMES
    networks = sorted({n.rsplit("_", 1)[0] for n in NAMES})
    readme = (NETWORKS / "README.md").read_text(encoding="utf-8")
    assert sorted(re.findall(r"^## (\w+)$", readme, flags=re.M)) == networks
    for net in networks:
        for variant in ("static", "dynamic"):
            for suffix in (".xml", ".bin", ".inputs.npz", ".expected.npz"):
                assert (NETWORKS / f"{net}_{variant}{suffix}").is_file(), f"{net}_{variant}{suffix} missing"
    assert sum(p.stat().st_size for p in NETWORKS.iterdir()) < 25 * 2**20


@pytest.mark.parametrize("name", NAMES)
def test_variant_matches_its_name(name):
    """Guards the generator: dynamic variants have dynamic input dims and stored inputs of another shape than the
    static variant's; static ones have none."""
    text = _xml(name).read_text(encoding="utf-8")
    # the model's own Parameters (two tabs in), not those of an If's sub-graphs (nested deeper)
    params = re.findall(r'^\t\t<layer [^>]*type="Parameter" version="opset1">\s*<data shape="([^"]*)"', text,
                        flags=re.M)
    assert params, "no Parameter found"
    assert any("?" in p for p in params) == name.endswith("_dynamic"), params
    inputs = _inputs(name)
    assert len(inputs) == len(params)
    if name.endswith("_dynamic"):
        static = _inputs(name.removesuffix("_dynamic") + "_static")
        assert list(static) == list(inputs)
        assert [a.shape for a in static.values()] != [a.shape for a in inputs.values()]


@pytest.mark.parametrize("name", NAMES)
def test_validates(name):
    _require_loadable(name)


@pytest.mark.parametrize("name", NAMES)
def test_matches_stored_openvino_outputs(name):
    _require_loadable(name)
    m = irnorm.load(_xml(name))
    inputs = _inputs(name)
    assert [s.name for s in m.inputs] == list(inputs), "input names/order differ from OpenVINO's"
    expected = _expected(name)
    got = m.run(inputs)
    assert list(got) == list(expected), f"output names/order: irnorm {list(got)} vs OpenVINO {list(expected)}"
    for k, exp in expected.items():
        assert got[k].dtype == exp.dtype, f"{k}: dtype {got[k].dtype} vs OpenVINO {exp.dtype}"
        assert_close(got[k], exp, f"{name}:{k}", tol=TOL)


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_variant_reproduces_the_static_one(name):
    """The dynamic file run at the static variant's inputs gives the static variant's stored outputs (the two were
    traced from the same module and weights; OpenVINO itself agrees to ~1e-6), without openvino installed."""
    _require_loadable(name)
    static = name.removesuffix("_dynamic") + "_static"
    got = irnorm.load(_xml(name)).run(_inputs(static))
    expected = _expected(static)
    assert [a.shape for a in got.values()] == [e.shape for e in expected.values()]
    for (k, g), e in zip(got.items(), expected.values(), strict=True):
        assert_close(g, e, f"{name}:{k} at the static shape", tol=TOL)


@pytest.mark.parametrize("name", [n for n in CLI_NAMES if n in NAMES])
def test_cli_run_compares(name, tmp_path, capsys):
    """`irnorm run model.xml --inputs x.npz --compare expected.npz -o out.npz` exits 0 and writes the outputs."""
    from irnorm.cli import main

    _require_loadable(name)
    expected = _expected(name)
    out = tmp_path / "out.npz"
    argv = ["run", str(_xml(name)), "--inputs", str(NETWORKS / f"{name}.inputs.npz"),
            "--compare", str(NETWORKS / f"{name}.expected.npz"), "--rtol", str(TOL[0]), "--atol",
            str(_atol(expected)), "-o", str(out)]
    with pytest.raises(SystemExit) as e:
        main(argv)
    stdout, stderr = capsys.readouterr()
    assert e.value.code == 0, f"irnorm {' '.join(argv)} exited {e.value.code}\n{stdout}\n{stderr}"
    assert "Traceback" not in stderr
    got = load_npz(out)
    assert list(got) == list(expected)
    for k, exp in expected.items():
        assert_close(got[k], exp, f"{name}:{k}", tol=TOL)


@requires_openvino
@pytest.mark.openvino
@pytest.mark.parametrize("name", NAMES)
def test_matches_live_openvino(name):
    _require_loadable(name)
    compare_with_openvino(_xml(name), _inputs(name), tol=TOL)


@requires_openvino
@pytest.mark.openvino
@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_variant_at_second_shape(name):
    """The dynamic file run at the static variant's input shape (batch 1, the static sequence length / image size),
    which differs from the stored dynamic inputs' shape."""
    _require_loadable(name)
    inputs = _inputs(name.removesuffix("_dynamic") + "_static")
    assert [a.shape for a in inputs.values()] != [a.shape for a in _inputs(name).values()]
    got = compare_with_openvino(_xml(name), inputs, tol=TOL)
    m = irnorm.load(_xml(name))
    for spec in m.outputs:  # the declared dims that are static stay as declared
        shape = got[spec.name].shape
        assert all(s in (-1, d) for s, d in zip(spec.shape, shape, strict=True)), (spec, shape)
