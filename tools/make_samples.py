"""Generate the OpenVINO IR sample models and reference data under ``samples/``.

Each sample NAME is built with OpenVINO's Python API, written to disk, read back with
``openvino.Core().read_model`` and run on the CPU plugin with ``{"INFERENCE_PRECISION_HINT": "f32"}``.
The script writes:

* ``<out>/ir/NAME.xml`` and ``<out>/ir/NAME.bin``: the IR as OpenVINO wrote it;
* ``<out>/data/NAME.inputs.npz``: one array per model input, keyed by ``model.inputs[i].get_any_name()``;
* ``<out>/data/NAME.expected.npz``: one array per output, keyed by ``compiled.outputs[i].get_any_name()``,
  holding what the CPU plugin computed from the re-read IR file.

bf16 inputs are stored in ``.npz`` the way ``np.savez`` stores ``ml_dtypes.bfloat16``: as opaque 2-byte
voids (``|V2``), which ``irnorm run --inputs`` reads back as bfloat16 (see ``<out>/data/README.md``).

Everything is deterministic: inputs come from fixed numpy seeds, every node has an explicit friendly name,
and the ``.npz`` files are written with a fixed zip timestamp, so rerunning the script reproduces the same
bytes (the IR's model-level rt_info carries the ``OpenVINO Runtime`` version string). After writing, every
sample is re-read from disk, rerun with the saved inputs, and compared bit for bit with the saved outputs.

Run from the repository root (requires ``openvino``, ``numpy``, ``ml_dtypes``)::

    python tools/make_samples.py [--out samples]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset6 as ops6
import openvino.opset12 as ops12
from openvino import passes as ov_passes

CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}

# ----------------------------------------------------------------------------------------------------
# helpers


def _core() -> ov.Core:
    return ov.Core()


def _to_tensor(model_input: ov.Output, value: np.ndarray) -> ov.Tensor:
    """Build the ov.Tensor for one input; a bf16 input comes as 2-byte voids (what np.savez writes for
    ml_dtypes.bfloat16) and is handed over as its raw bits."""
    if model_input.get_element_type() == ov.Type.bf16:
        if value.dtype != np.dtype("V2"):
            raise TypeError("bf16 inputs must be given as V2 (raw bfloat16) arrays")
        return ov.Tensor(np.ascontiguousarray(value.view(np.uint16)), list(value.shape), ov.Type.bf16)
    return ov.Tensor(np.ascontiguousarray(value))


def _infer(model: ov.Model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Compile ``model`` on CPU (f32 inference precision) and run it; outputs keyed by tensor name."""
    compiled = _core().compile_model(model, "CPU", CONFIG)
    request = compiled.create_infer_request()
    feed = {}
    for i, model_input in enumerate(model.inputs):
        feed[i] = _to_tensor(model_input, inputs[model_input.get_any_name()])
    request.infer(feed)
    result = {}
    for i, output in enumerate(compiled.outputs):
        name = output.get_any_name()
        if name in result:
            raise RuntimeError(f"duplicate output name {name!r}")
        result[name] = np.array(request.get_output_tensor(i).data, copy=True)
    return result


def _read(out: Path, name: str) -> ov.Model:
    return _core().read_model(str(out / "ir" / f"{name}.xml"), str(out / "ir" / f"{name}.bin"))


def _check_inputs(model: ov.Model, inputs: dict[str, np.ndarray]) -> None:
    """The input dict must match the model's inputs by name, element type and (partial) shape."""
    names = [i.get_any_name() for i in model.inputs]
    if names != list(inputs):
        raise RuntimeError(f"input names {list(inputs)} do not match the model's {names}")
    for model_input in model.inputs:
        value = inputs[model_input.get_any_name()]
        et = model_input.get_element_type()
        want = np.dtype("V2") if et == ov.Type.bf16 else np.dtype(et.to_dtype())
        if value.dtype != want:
            raise RuntimeError(f"input {model_input.get_any_name()}: dtype {value.dtype}, expected {want}")
        if not model_input.get_partial_shape().compatible(ov.PartialShape(list(value.shape))):
            raise RuntimeError(
                f"input {model_input.get_any_name()}: shape {value.shape} incompatible with "
                f"{model_input.get_partial_shape()}"
            )


def _finish(out: Path, name: str, inputs: dict[str, np.ndarray]) -> None:
    """Re-read the written IR, run it with ``inputs`` and write both npz files."""
    model = _read(out, name)
    # The input keys must be the names OpenVINO reports for the re-read model, in model order.
    if len(inputs) != len(model.inputs):
        raise RuntimeError(f"{name}: {len(inputs)} inputs given, model has {len(model.inputs)}")
    _check_inputs(model, inputs)
    expected = _infer(model, inputs)
    data = out / "data"
    np.savez(data / f"{name}.inputs.npz", **inputs)
    np.savez(data / f"{name}.expected.npz", **expected)


def _save(model: ov.Model, out: Path, name: str, *, compress: bool) -> None:
    ov.save_model(model, str(out / "ir" / f"{name}.xml"), compress_to_fp16=compress)


def _param(name: str, shape: list[int] | ov.PartialShape, et: ov.Type = ov.Type.f32) -> ov.Node:
    node = ops1.parameter(shape, et, name=name)
    node.output(0).get_tensor().set_names({name})
    return node


def _result(node: ov.Node | ov.Output, name: str, tensor_name: str) -> ov.Node:
    """Name the producing tensor ``tensor_name`` and attach a Result named ``name``."""
    output = node if isinstance(node, ov.Output) else node.output(0)
    output.get_tensor().set_names({tensor_name})
    return ops1.result(output, name=name)


def _rand(
    seed: int, shape: tuple[int, ...], dtype: type = np.float32, scale: float = 1.0, loc: float = 0.0
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale + loc).astype(dtype)


# ----------------------------------------------------------------------------------------------------
# model builders


def _group_norm_model(
    shape: list[int] | ov.PartialShape,
    channels: int,
    groups: int,
    seed: int,
    et: ov.Type = ov.Type.f32,
    eps: float = 1e-5,
) -> ov.Model:
    dtype = et.to_dtype()
    x = _param("x", shape, et)
    scale = ops1.constant(_rand(seed, (channels,), dtype, 0.5, 1.0), name="gn_scale")
    bias = ops1.constant(_rand(seed + 1, (channels,), dtype, 0.5), name="gn_bias")
    gn = ops12.group_normalization(x, scale, bias, groups, eps, name="group_norm")
    return ov.Model([_result(gn, "y/result", "y")], [x], "group_norm")


def _normalize_l2_model(shape: list[int], axes: list[int], eps: float, name: str) -> ov.Model:
    x = _param("x", shape)
    axes_c = ops1.constant(np.array(axes, dtype=np.int64), name="l2_axes")
    l2 = ops1.normalize_l2(x, axes_c, eps, "add", name="normalize_l2")
    return ov.Model([_result(l2, "y/result", "y")], [x], name)


# ----------------------------------------------------------------------------------------------------
# samples: each takes the output root, writes the IR, and returns the input dict (keyed by input tensor name)


def s_group_norm(out: Path) -> dict[str, np.ndarray]:
    _save(_group_norm_model([2, 8, 5, 5], 8, 4, seed=100), out, "group_norm", compress=True)
    return {"x": _rand(1, (2, 8, 5, 5), loc=0.3)}


def s_group_norm_f32w(out: Path) -> dict[str, np.ndarray]:
    _save(_group_norm_model([2, 8, 5, 5], 8, 4, seed=100), out, "group_norm_f32w", compress=False)
    return {"x": _rand(1, (2, 8, 5, 5), loc=0.3)}


def _l2_input() -> np.ndarray:
    return _rand(3, (2, 6, 4, 4))


def s_normalize_l2(out: Path) -> dict[str, np.ndarray]:
    _save(_normalize_l2_model([2, 6, 4, 4], [1], 1e-10, "normalize_l2"), out, "normalize_l2", compress=True)
    return {"x": _l2_input()}


def s_normalize_l2_max(out: Path) -> dict[str, np.ndarray]:
    name = "normalize_l2_max"
    _save(_normalize_l2_model([2, 6, 4, 4], [1], 1e-3, name), out, name, compress=True)
    # The Python binding sends the attribute as "mode", so the node keeps eps_mode="add": patch the XML.
    xml_path = out / "ir" / f"{name}.xml"
    text = xml_path.read_text(encoding="utf-8")
    pattern = re.compile(r'(<layer [^>]*type="NormalizeL2"[^>]*>\s*<data [^>]*eps_mode=")add(")')
    text, count = pattern.subn(r"\1max\2", text)
    if count != 1:
        raise RuntimeError(f"{name}: expected one NormalizeL2 eps_mode to patch, found {count}")
    xml_path.write_text(text, encoding="utf-8")
    model = _read(out, name)
    l2_nodes = [n for n in model.get_ops() if n.get_type_name() == "NormalizeL2"]
    modes = [n.get_attributes().get("eps_mode") for n in l2_nodes]
    if modes != ["max"]:
        raise RuntimeError(f"{name}: OpenVINO reads eps_mode {modes} after patching")
    x = _l2_input() * 1.0
    # Channel vectors (axis 1) whose sum of squares is far below eps=1e-3, so that max(s, eps) = eps matters.
    rng = np.random.default_rng(4)
    x[0, :, 0, 0] = rng.standard_normal(6) * 1e-3
    x[0, :, 1, 2] = rng.standard_normal(6) * 5e-3
    x[1, :, 3, 3] = rng.standard_normal(6) * 1e-2
    x[1, :, 2, 1] = 0.0  # all-zero slice: 0 / sqrt(eps) = 0
    x[1, :, 0, 3] = np.array([0.01, -0.01, 0.01, 0.0, 0.005, -0.012], dtype=np.float32)  # s close to eps
    return {"x": x.astype(np.float32)}


def s_normalize_l2_axes_neg(out: Path) -> dict[str, np.ndarray]:
    name = "normalize_l2_axes_neg"
    _save(_normalize_l2_model([3, 4, 5], [-1, 0], 1e-10, name), out, name, compress=True)
    return {"x": _rand(5, (3, 4, 5))}


def s_group_norm_dynamic(out: Path) -> dict[str, np.ndarray]:
    model = _group_norm_model(ov.PartialShape([-1, 16, -1, -1]), 16, 8, seed=200)
    _save(model, out, "group_norm_dynamic", compress=True)
    return {"x": _rand(6, (3, 16, 7, 9), scale=2.0, loc=-0.5)}


def s_gn_l2_chain(out: Path) -> dict[str, np.ndarray]:
    x = ops1.parameter([1, 12, 6, 6], ov.Type.f32, name="input_image")
    x.output(0).get_tensor().set_names({"input_image", "pixels"})
    scale = ops1.constant(_rand(300, (12,), scale=0.5, loc=1.0), name="gn_scale")
    bias = ops1.constant(_rand(301, (12,), scale=0.5), name="gn_bias")
    gn = ops12.group_normalization(x, scale, bias, 3, 1e-5, name="group_norm")
    axes = ops1.constant(np.array([2, 3], dtype=np.int64), name="l2_axes")
    l2 = ops1.normalize_l2(gn, axes, 1e-12, "add", name="normalize_l2")
    r_l2 = _result(l2, "l2_out/result", "l2_out")
    r_gn = _result(gn, "gn_out/result", "gn_out")
    model = ov.Model([r_l2, r_gn], [x], "gn_l2_chain")
    _save(model, out, "gn_l2_chain", compress=True)
    key = _read(out, "gn_l2_chain").inputs[0].get_any_name()
    return {key: _rand(7, (1, 12, 6, 6))}


def s_group_norm_f16(out: Path) -> dict[str, np.ndarray]:
    _save(
        _group_norm_model([1, 32, 4, 4], 32, 8, seed=400, et=ov.Type.f16),
        out,
        "group_norm_f16",
        compress=False,
    )
    return {"x": _rand(8, (1, 32, 4, 4), np.float16, scale=1.5, loc=0.25)}


def s_group_norm_bf16_in(out: Path) -> dict[str, np.ndarray]:
    x = _param("x", [2, 4, 3, 3], ov.Type.bf16)
    cvt = ops1.convert(x, "f32", name="x_to_f32")
    scale = ops1.constant(_rand(500, (4,), scale=0.5, loc=1.0), name="gn_scale")
    bias = ops1.constant(_rand(501, (4,), scale=0.5), name="gn_bias")
    gn = ops12.group_normalization(cvt, scale, bias, 2, 1e-5, name="group_norm")
    model = ov.Model([_result(gn, "y/result", "y")], [x], "group_norm_bf16_in")
    _save(model, out, "group_norm_bf16_in", compress=False)
    values = _rand(9, (2, 4, 3, 3), scale=3.0, loc=1.0).astype(ml_dtypes.bfloat16)
    return {"x": values.view("V2")}


def s_normalize_l2_v10(out: Path) -> dict[str, np.ndarray]:
    name = "normalize_l2_v10"
    model = _normalize_l2_model([2, 6, 4, 4], [1], 1e-10, name)
    model.set_rt_info(10, "version")
    xml_path, bin_path = out / "ir" / f"{name}.xml", out / "ir" / f"{name}.bin"
    manager = ov_passes.Manager()
    manager.register_pass(ov_passes.Serialize(str(xml_path), str(bin_path), ov_passes.Version.IR_V10))
    manager.run_passes(model)
    head = xml_path.read_text(encoding="utf-8")[:512]
    if not re.search(r'<net [^>]*version="10"', head):
        raise RuntimeError(f"{name}: the written file is not IR v10: {head[:200]!r}")
    return {"x": _l2_input()}


def s_layer_norm_mvn(out: Path) -> dict[str, np.ndarray]:
    x = _param("x", [2, 5, 16])
    axes = ops1.constant(np.array([-1], dtype=np.int64), name="ln_axes")
    mvn = ops6.mvn(x, axes, True, 1e-5, "inside_sqrt", name="layer_norm/mvn")
    gamma = ops1.constant(_rand(600, (16,), scale=0.5, loc=1.0), name="ln_gamma")
    beta = ops1.constant(_rand(601, (16,), scale=0.5), name="ln_beta")
    mul = ops1.multiply(mvn, gamma, name="layer_norm/mul")
    add = ops1.add(mul, beta, name="layer_norm/add")
    model = ov.Model([_result(add, "y/result", "y")], [x], "layer_norm_mvn")
    _save(model, out, "layer_norm_mvn", compress=True)
    return {"x": _rand(10, (2, 5, 16), scale=2.0, loc=0.5)}


SAMPLES: dict[str, Callable[[Path], dict[str, np.ndarray]]] = {
    "group_norm": s_group_norm,
    "group_norm_f32w": s_group_norm_f32w,
    "normalize_l2": s_normalize_l2,
    "normalize_l2_max": s_normalize_l2_max,
    "normalize_l2_axes_neg": s_normalize_l2_axes_neg,
    "group_norm_dynamic": s_group_norm_dynamic,
    "gn_l2_chain": s_gn_l2_chain,
    "group_norm_f16": s_group_norm_f16,
    "group_norm_bf16_in": s_group_norm_bf16_in,
    "normalize_l2_v10": s_normalize_l2_v10,
    "layer_norm_mvn": s_layer_norm_mvn,
}

DATA_README = """# Sample data

For every sample NAME (IR in `../ir/NAME.xml` + `../ir/NAME.bin`):

* `NAME.inputs.npz`: one array per model input, keyed by `model.inputs[i].get_any_name()`,
  in model input order. Dynamic dimensions are given concrete sizes.
* `NAME.expected.npz`: one array per model output, keyed by `compiled.outputs[i].get_any_name()`, computed by
  OpenVINO's CPU plugin (`INFERENCE_PRECISION_HINT=f32`) from the IR file as written.

`group_norm_bf16_in.inputs.npz`: key `x` is a bf16 input. `np.savez` cannot round-trip `ml_dtypes.bfloat16`
and loads it back as opaque 2-byte voids (`|V2`); the file holds exactly that, so `irnorm run --inputs` reads
it as bfloat16, and in Python `arr.view(ml_dtypes.bfloat16)` recovers the values.

Generated by `python tools/make_samples.py --out samples`; do not edit by hand.
"""

# name -> (what it contains, ops in the IR, compressed weights?)
SAMPLE_INFO: dict[str, tuple[str, str, str]] = {
    "group_norm": (
        "GroupNormalization-12 (num_groups=4, epsilon=1e-5), random scale/bias [8]; default `save_model`",
        "Parameter, Const, Convert, GroupNormalization, Result",
        "yes (f16 Const + Convert decompression)",
    ),
    "group_norm_f32w": (
        "same model as `group_norm`, saved with `compress_to_fp16=False`",
        "Parameter, Const, GroupNormalization, Result",
        "no (f32 Consts)",
    ),
    "normalize_l2": (
        "NormalizeL2-1, axes Const i64 [1], eps=1e-10, eps_mode=add",
        "Parameter, Const, NormalizeL2, Result",
        "n/a (only an i64 Const)",
    ),
    "normalize_l2_max": (
        'NormalizeL2-1, axes [1], eps=1e-3, `eps_mode="max"` patched into the XML '
        "(the Python binding drops it); input has near-zero and all-zero channel vectors "
        "so that max(sum, eps) matters",
        "Parameter, Const, NormalizeL2, Result",
        "n/a",
    ),
    "normalize_l2_axes_neg": (
        "NormalizeL2-1, axes Const [-1, 0] (negative, non-contiguous), eps=1e-10, add",
        "Parameter, Const, NormalizeL2, Result",
        "n/a",
    ),
    "group_norm_dynamic": (
        "GroupNormalization-12 (num_groups=8) on a [?,16,?,?] input; data uses [3,16,7,9]",
        "Parameter, Const, Convert, GroupNormalization, Result",
        "yes",
    ),
    "gn_l2_chain": (
        "GroupNormalization (G=3) -> NormalizeL2 (axes [2,3], add, 1e-12); two Results (l2_out first, gn_out "
        "second); Parameter friendly name `input_image` with tensor names {input_image, pixels}",
        "Parameter, Const, Convert, GroupNormalization, NormalizeL2, Result x2",
        "yes",
    ),
    "group_norm_f16": (
        "GroupNormalization-12 (G=8) entirely in f16 (f16 input, f16 scale/bias, f16 output)",
        "Parameter, Const, GroupNormalization, Result",
        "no (native f16 Consts)",
    ),
    "group_norm_bf16_in": (
        "bf16 Parameter -> Convert to f32 -> GroupNormalization (G=2); input stored as V2 voids (raw bf16) "
        "(see data/README.md)",
        "Parameter, Convert, Const, GroupNormalization, Result",
        "no (f32 Consts)",
    ),
    "normalize_l2_v10": (
        "the `normalize_l2` model written as IR v10 (`Serialize(..., Version.IR_V10)`); "
        "on read OpenVINO adds the producer's friendly name `normalize_l2` as an output tensor name, "
        "so the expected key is `normalize_l2`",
        "Parameter, Const, NormalizeL2, Result",
        "n/a",
    ),
    "layer_norm_mvn": (
        "LayerNorm as OpenVINO writes it: MVN-6 (axes Const i64 [-1], normalize_variance, eps=1e-5, "
        "INSIDE_SQRT) -> Multiply Const [16] -> Add Const [16]",
        "Parameter, Const, Convert, MVN, Multiply, Add, Result",
        "yes",
    ),
}


def _io_cell(ports: list[tuple[str, str, str]]) -> str:
    return "<br>".join(f"`{n}` {t} {s}" for n, t, s in ports)


def write_readme(out: Path) -> None:
    """Write ``<out>/README.md``: the sample table, with names/shapes/types read back from the files."""
    rows = [
        "| name | contents | ops | IR version | inputs (name, type, shape) | outputs (name, type, shape) "
        "| dynamic | fp16-compressed weights |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in SAMPLES:
        what, ops, compressed = SAMPLE_INFO[name]
        model = _read(out, name)
        compiled = _core().compile_model(model, "CPU", CONFIG)
        head = (out / "ir" / f"{name}.xml").read_text(encoding="utf-8")[:512]
        version = re.search(r'<net [^>]*version="(\d+)"', head)
        ins = [
            (i.get_any_name(), i.get_element_type().get_type_name(), str(i.get_partial_shape()))
            for i in model.inputs
        ]
        outs = [
            (o.get_any_name(), o.get_element_type().get_type_name(), str(o.get_partial_shape()))
            for o in compiled.outputs
        ]
        dynamic = "yes" if any(i.get_partial_shape().is_dynamic for i in model.inputs) else "no"
        rows.append(
            f"| `{name}` | {what} | {ops} | {version.group(1) if version else '?'} | {_io_cell(ins)} "
            f"| {_io_cell(outs)} | {dynamic} | {compressed} |"
        )
    text = README_HEAD + "\n".join(rows) + "\n" + README_TAIL
    # Sections other generators append (tools/make_extension_samples.py) are kept.
    path = out / "README.md"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    keep = old.find("\n## Extension operators")
    if keep >= 0:
        text = text.rstrip("\n") + "\n" + old[keep:]
    path.write_text(text, encoding="utf-8")


README_HEAD = """# irnorm samples

Small OpenVINO IR models (`ir/NAME.xml` + `ir/NAME.bin`) with deterministic inputs
(`data/NAME.inputs.npz`) and the outputs OpenVINO's CPU plugin computes for them (`data/NAME.expected.npz`).
See `data/README.md` for the npz key conventions (and the bf16 input encoding).

"""

README_TAIL = """
Output shapes are those the compiled model reports (dynamic dims shown as `?`); the saved arrays use the
concrete input shapes. All models were built with OpenVINO's Python API (`openvino.opset1/6/12`) and written
with `openvino.save_model` (IR v11), except `normalize_l2_v10` (`openvino.passes.Serialize`, IR v10) and
`normalize_l2_max` (XML text patched after saving).

## How they were generated

From the repository root, with OpenVINO 2026.4.1, numpy and ml_dtypes installed:

```
python tools/make_samples.py --out samples
```

Expected outputs come from `Core().read_model(xml)` of the written file, compiled for `CPU` with
`{"INFERENCE_PRECISION_HINT": "f32"}`. The script then re-reads every sample, reruns it with the saved inputs
and checks that the outputs match the saved ones bit for bit. Inputs use fixed numpy seeds and the npz files
have fixed zip timestamps, so a rerun with the same OpenVINO version reproduces identical files (v11 XMLs
record the OpenVINO version in their `rt_info`; the v10 writer leaves `<rt_info />` empty).
"""


def verify(out: Path, names: list[str]) -> None:
    """Re-read every sample from disk and check that OpenVINO reproduces the saved outputs bit for bit."""
    for name in names:
        model = _read(out, name)
        with np.load(out / "data" / f"{name}.inputs.npz") as f:
            inputs = {k: f[k] for k in f.files}
        with np.load(out / "data" / f"{name}.expected.npz") as f:
            expected = {k: f[k] for k in f.files}
        _check_inputs(model, inputs)
        got = _infer(model, inputs)
        if list(got) != list(expected):
            raise RuntimeError(f"{name}: output names {list(got)} != saved {list(expected)}")
        for key, want in expected.items():
            have = got[key]
            if have.dtype != want.dtype or have.shape != want.shape or have.tobytes() != want.tobytes():
                raise RuntimeError(f"{name}: output {key!r} differs from the saved expected output")
        print(f"verified {name}")


def describe(out: Path, name: str) -> str:
    model = _read(out, name)
    compiled = _core().compile_model(model, "CPU", CONFIG)
    with np.load(out / "data" / f"{name}.inputs.npz") as f:
        ins = ", ".join(
            f"{i.get_any_name()} (names {sorted(i.get_names())}) {i.get_element_type().get_type_name()}"
            f"{i.get_partial_shape()} data {f[i.get_any_name()].dtype}{list(f[i.get_any_name()].shape)}"
            for i in model.inputs
        )
    with np.load(out / "data" / f"{name}.expected.npz") as f:
        outs = ", ".join(
            f"{o.get_any_name()} (names {sorted(o.get_names())}) {f[o.get_any_name()].dtype}"
            f"{list(f[o.get_any_name()].shape)}"
            for o in compiled.outputs
        )
    return f"{name}: inputs [{ins}] -> outputs [{outs}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="samples", help="output root (default: samples)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    (out / "ir").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    for name, build in SAMPLES.items():
        inputs = build(out)
        _finish(out, name, inputs)
        print(f"wrote {name}")
    (out / "data" / "README.md").write_text(DATA_README, encoding="utf-8")
    write_readme(out)
    verify(out, list(SAMPLES))
    for name in SAMPLES:
        print(describe(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
