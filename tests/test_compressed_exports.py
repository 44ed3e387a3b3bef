"""Weight-compressed real exports (tests/compressed, written by tools/make_compressed.py with NNCF's
compress_weights from tests/networks' LLaMA, BERT and GPT-2): INT4 asymmetric / symmetric (u4, i4 + u8), NF4,
MXFP4 (f4e2m1 values with f8e8m0 scales), INT8 symmetric (i8) -- loaded and run through the public contract and
held to OpenVINO's CPU plugin's stored outputs (f32, no dynamic quantization), and to a live run of it when
OpenVINO is installed.

Where the plugin fuses a decompression chain into its MatMul / Gather kernels it computes the chain in f32, as
irnorm folds it (docs/ir-format.md section 9): those files match to float32 rounding.  Two do not fuse every chain
(NF4's embedding table and GPT-2's tied input / output embeddings: the plugin then folds those in f16, for some
consumers), and differ by up to ~3e-4 of the output's scale: held to 1e-3 here, named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ovutil import HAVE_OPENVINO, OV_CONFIG, core

import irnorm

HERE = Path(__file__).parent / "compressed"
FILES = sorted(p.stem for p in HERE.glob("*.xml"))
# relative to the output's largest magnitude: float32 rounding, or the plugin's f16 folding of unfused chains
TOLERANCE = {"llama_nf4": 1e-3, "gpt2_int4_asym": 1e-3}
FLOAT32 = 2e-6


def _inputs(name: str) -> dict[str, np.ndarray]:
    return dict(np.load(HERE / f"{name}.inputs.npz"))


def _close(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], name: str) -> float:
    assert list(got) == list(expected), name
    worst = 0.0
    for k, e in expected.items():
        g = got[k]
        assert g.shape == e.shape and g.dtype == e.dtype, (name, k, g.shape, g.dtype)
        worst = max(worst, float(np.abs(g.astype(np.float64) - e).max() / np.abs(e).max()))
    assert worst <= TOLERANCE.get(name, FLOAT32), f"{name}: {worst:.2e} of the output's scale"
    return worst


def test_the_suite_is_there():
    assert set(FILES) >= {"llama_int4_asym", "llama_int4_sym", "llama_nf4", "llama_mxfp4", "bert_int8_sym",
                          "gpt2_int4_asym"}


@pytest.mark.parametrize("name", FILES)
def test_compressed_export_matches_openvinos_stored_outputs(name):
    m = irnorm.load(HERE / f"{name}.xml")
    expected = dict(np.load(HERE / f"{name}.expected.npz"))
    _close(m.run(_inputs(name)), expected, name)
    # the storage types were read (not refused): the file holds them and the model's inputs are as the network's
    assert any(t in (HERE / f"{name}.xml").read_text() for t in ('"u4"', '"i4"', '"nf4"', '"f4e2m1"', '"i8"'))
    assert [s.name for s in m.inputs] and all(s.dtype == np.int64 for s in m.inputs)


@pytest.mark.skipif(not HAVE_OPENVINO, reason="OpenVINO is not installed")
@pytest.mark.parametrize("name", FILES)
def test_compressed_export_matches_openvino_live(name):
    """The same file in the installed OpenVINO now (not only the stored outputs), without its dynamic
    quantization of the activations (an approximation on top of the model)."""
    compiled = core().compile_model(str(HERE / f"{name}.xml"), "CPU",
                                    OV_CONFIG | {"DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"})
    feeds = _inputs(name)
    result = compiled(list(feeds.values()))
    expected = {p.get_any_name(): result[p] for p in compiled.outputs}
    got = irnorm.load(HERE / f"{name}.xml").run(feeds)
    _close(got, expected, name)


def test_validate_and_info_name_the_compression(tmp_path):
    """`irnorm validate` warns once (IRN093) naming the storage types; `irnorm info` lists it as a note; `irnorm
    run` does not repeat it on stderr."""
    import subprocess
    import sys

    xml = HERE / "llama_mxfp4.xml"
    warnings = [d for d in irnorm.validate(xml) if d.code == "IRN093"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert "Const(s) of f4e2m1, f8e8m0 decompressed once at load time" in warnings[0].message
    info = subprocess.run([sys.executable, "-m", "irnorm", "info", str(xml)], capture_output=True, text=True)
    assert info.returncode == 0 and "weight-compressed weights" in info.stdout
    run = subprocess.run([sys.executable, "-m", "irnorm", "run", str(xml)], capture_output=True, text=True)
    assert run.returncode == 0 and "IRN093" not in run.stderr and "output0: shape [1, 8, 32] f32" in run.stdout


def test_folded_intermediates_hold_no_memory():
    """Once loaded, the packed codes and the f16 steps of each decompression chain are placeholders (no memory:
    every stride 0) -- only the constants the plan's steps read are real arrays -- and the model still runs,
    against OpenVINO's outputs and against the float64 reference (`irnorm compare --against reference`)."""
    import subprocess
    import sys

    name = "llama_int4_asym"
    m = irnorm.load(HERE / f"{name}.xml")
    g = m._plan.graph
    kept = {id(v) for v in m._plan.constants.values()}
    released = [o.value for n in g.nodes for o in n.outputs
                if o is not None and o.value is not None and o.value.size > 256 and id(o.value) not in kept
                and all(s == 0 for s in o.value.strides)]
    assert len(released) >= 15  # the u4 codes, their f16 Converts, the Subtract / Multiply / Reshape steps
    assert all(any(s != 0 for s in v.strides) for v in m._plan.constants.values() if v.size > 1)
    _close(m.run(_inputs(name)), dict(np.load(HERE / f"{name}.expected.npz")), name)
    r = subprocess.run([sys.executable, "-m", "irnorm", "compare", str(HERE / f"{name}.xml"), "--against",
                        "reference", "--inputs", str(HERE / f"{name}.inputs.npz")], capture_output=True, text=True)
    assert r.returncode == 0 and "no divergence" in r.stdout, r.stdout + r.stderr
