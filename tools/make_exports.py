"""Generate the real-export suite under ``tests/exports/``: normalization layers from PyTorch and ONNX, converted
by ``openvino.convert_model`` and written by ``openvino.save_model`` exactly as a user would get them.

For every model in ``MODELS`` and every variant (static or dynamic input shapes, weights saved as f32 or
compressed to f16) the script writes:

* ``NAME.xml`` + ``NAME.bin`` with NAME = ``<source>_<model>_<static|dynamic>_<f32w|f16w>``;
* ``NAME.inputs.npz``: one array per model input, keyed by the input's ``get_any_name()``, in input order;
* ``NAME.expected.npz``: one array per output, keyed by ``get_any_name()``, in output order, as OpenVINO's CPU
  plugin computes it from the re-read file with ``INFERENCE_PRECISION_HINT=f32`` (and one thread);
* ``README.md``: a table of the layers OpenVINO wrote for each export.

Everything is deterministic: fixed seeds (derived from the model name), auto-generated friendly names
(``Constant_2555``, ``Result_75``; they come from a process-wide counter) replaced by names from the node's
position, and npz files written with a fixed zip timestamp. torch and onnx are needed only here, never by the
tests. Run from the repository root (needs ``torch``, ``onnx``, ``openvino``, ``numpy``)::

    python tools/make_exports.py [--out tests/exports]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import openvino as ov
import torch
import torch.nn.functional as F
from onnx import TensorProto, numpy_helper

CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "1"}
COMMAND = "python tools/make_exports.py --out tests/exports"

# ----------------------------------------------------------------------------------------------------
# model definitions


@dataclass(frozen=True)
class Input:
    """One model input: name (ONNX only; torch takes forward()'s argument names), the concrete shape of the
    stored data, and which dims are dynamic in the dynamic-shape variant (dims fixed by weights, e.g.
    LayerNorm's normalized dims, stay static)."""

    name: str
    shape: tuple[int, ...]
    dynamic: tuple[int, ...]

    def partial_shape(self, dynamic: bool) -> list[int]:
        return [-1 if dynamic and i in self.dynamic else d for i, d in enumerate(self.shape)]


@dataclass(frozen=True)
class Spec:
    """A model to export: ``build(dynamic)`` returns a torch.nn.Module or an onnx.ModelProto."""

    name: str
    source: str  # "torch" | "onnx"
    inputs: tuple[Input, ...]
    build: Callable[[bool], object]
    what: str
    loc: float = 0.0  # mean of the random input data
    scale: float = 1.0


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def _randomized(module: torch.nn.Module, name: str) -> torch.nn.Module:
    """Give every parameter non-trivial values (default inits are ones/zeros, which converters may fold)."""
    gen = torch.Generator().manual_seed(_seed(name))
    with torch.no_grad():
        for pname, p in sorted(module.named_parameters()):
            base = 1.0 if pname.endswith("weight") else 0.0
            p.copy_(base + 0.5 * torch.randn(p.shape, generator=gen))
    return module.eval()


class L2Normalize(torch.nn.Module):
    """torch.nn.functional.normalize(x, p=2, dim=1) (default eps 1e-12)."""

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=1)


class TinyBlock(torch.nn.Module):
    """A pre-norm residual block without Conv/MatMul: LayerNorm, elementwise min/max, residual add, an RMS norm
    written out by hand (Power, ReduceMean, Sqrt, Divide), a centred sum of squares and an abs-max."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(8)
        self.weight = torch.nn.Parameter(torch.ones(8))

    def forward(self, x, skip):
        h = self.ln(x + skip)
        h = torch.minimum(torch.maximum(h, -skip.abs()), skip.abs() + 0.5) * self.weight + skip
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        sq = ((h - h.mean(-1, keepdim=True)) ** 2).sum(-1)
        return y, sq, y.abs().amax(dim=-1)


class ManualGroupNorm(torch.nn.Module):
    """GroupNorm written with reshape/mean/var: in the dynamic export the reshapes take their target shapes from
    ShapeOf/Gather/Concat."""

    def __init__(self, channels: int = 6, groups: int = 3):
        super().__init__()
        self.groups = groups
        self.weight = torch.nn.Parameter(torch.ones(channels))
        self.bias = torch.nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        y = x.reshape(x.shape[0], self.groups, -1)
        mean = y.mean(-1, keepdim=True)
        var = y.var(-1, keepdim=True, unbiased=False)
        y = ((y - mean) / torch.sqrt(var + 1e-5)).reshape(x.shape)
        return y * self.weight.unsqueeze(-1).unsqueeze(-1) + self.bias[None, :, None, None]


class L2Plumbing(torch.nn.Module):
    """L2 normalisation via vector_norm + clamp_min + expand, then unsqueeze/squeeze/cat and a sum: gives
    ReduceL2, Maximum, Broadcast, ShapeOf (+Gather/Concat when dynamic), Unsqueeze, Squeeze, Concat, ReduceSum."""

    def forward(self, x):
        nrm = torch.linalg.vector_norm(x, ord=2, dim=1, keepdim=True)
        y = x / nrm.clamp_min(1e-6).expand(x.shape[0], x.shape[1], x.shape[2])
        t = y.unsqueeze(1).squeeze(1)
        return torch.cat([t, t * t], dim=1), t.sum(dim=(1, 2))


class ClampedLayerNorm(torch.nn.Module):
    """LayerNorm followed by torch.clamp: OpenVINO writes a Clamp layer."""

    def __init__(self) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(8)

    def forward(self, x):
        return torch.clamp(self.ln(x), -1.0, 1.5)


def _torch(name: str, factory: Callable[[], torch.nn.Module]) -> Callable[[bool], torch.nn.Module]:
    return lambda dynamic: _randomized(factory(), name)


def _onnx_model(inputs: tuple[Input, ...], outputs: list[tuple[str, list]], nodes: list, inits: dict[str, np.ndarray],
                opset: int, dynamic: bool, check: bool = True) -> onnx.ModelProto:
    """An ONNX model with f32 inputs; dynamic dims become symbolic (``d0``, ``d1``...); output shapes may
    refer to input dims by index (int) or be literal sizes (given as ``("=", n)``)."""

    def dims(inp: Input) -> list:
        return [f"d{i}" if dynamic and i in inp.dynamic else d for i, d in enumerate(inp.shape)]

    x0 = dims(inputs[0])

    def out_dims(spec: list) -> list:
        return [x0[s] if isinstance(s, int) else s[1] for s in spec]

    graph = oh.make_graph(
        nodes, "g",
        [oh.make_tensor_value_info(i.name, TensorProto.FLOAT, dims(i)) for i in inputs],
        [oh.make_tensor_value_info(n, TensorProto.FLOAT, out_dims(s)) for n, s in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], producer_name="irnorm-make_exports")
    model.ir_version = 10
    if check:  # GroupNormalization-18 is deprecated in onnx >= 1.16 and the checker refuses it
        onnx.checker.check_model(model)
    return model


def _w(name: str, shape: tuple[int, ...], base: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(_seed(name))
    return (base + 0.5 * rng.standard_normal(shape)).astype(np.float32)


def _same(rank: int) -> list:
    return list(range(rank))


def onnx_layernorm17(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 3, 8), (0, 1)),)
    node = oh.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5)
    inits = {"scale": _w("ln17.scale", (8,), 1.0), "bias": _w("ln17.bias", (8,))}
    return _onnx_model(inp, [("y", _same(3))], [node], inits, 17, dynamic)


def onnx_layernorm17_axis1(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 3, 8), (0,)),)
    node = oh.make_node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv_std_dev"], axis=1,
                        epsilon=1e-3)
    inits = {"scale": _w("ln17a1.scale", (3, 8), 1.0), "bias": _w("ln17a1.bias", (1, 8))}
    stat = [0, ("=", 1), ("=", 1)]
    return _onnx_model(inp, [("y", _same(3)), ("mean", stat), ("inv_std_dev", stat)], [node], inits, 17, dynamic)


def onnx_groupnorm18(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 6, 3, 4), (0, 2, 3)),)
    node = oh.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3, epsilon=1e-5)
    inits = {"scale": _w("gn18.scale", (3,), 1.0), "bias": _w("gn18.bias", (3,))}  # per group (opset 18)
    return _onnx_model(inp, [("y", _same(4))], [node], inits, 18, dynamic, check=False)


def onnx_groupnorm21(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 6, 3, 4), (0, 2, 3)),)
    node = oh.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3, epsilon=1e-5,
                        stash_type=1)
    inits = {"scale": _w("gn21.scale", (6,), 1.0), "bias": _w("gn21.bias", (6,))}  # per channel (opset 21)
    return _onnx_model(inp, [("y", _same(4))], [node], inits, 21, dynamic)


def onnx_instancenorm(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 4, 3, 5), (0, 2, 3)),)
    node = oh.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-5)
    inits = {"scale": _w("in.scale", (4,), 1.0), "bias": _w("in.bias", (4,))}
    return _onnx_model(inp, [("y", _same(4))], [node], inits, 17, dynamic)


def onnx_lpnorm(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 5, 3), (0, 1, 2)),)
    node = oh.make_node("LpNormalization", ["x"], ["y"], axis=1, p=2)
    return _onnx_model(inp, [("y", _same(3))], [node], {}, 17, dynamic)


def onnx_reducel2norm(dynamic: bool) -> onnx.ModelProto:
    inp = (Input("x", (2, 5, 3), (0, 1, 2)),)
    nodes = [oh.make_node("ReduceL2", ["x", "axes"], ["norm"], keepdims=1),
             oh.make_node("Div", ["x", "norm"], ["y"])]
    inits = {"axes": np.array([1, -1], dtype=np.int64)}
    return _onnx_model(inp, [("y", _same(3))], nodes, inits, 18, dynamic)


def _onnx_spec(name: str, fn: Callable[[bool], onnx.ModelProto], shape: tuple[int, ...], dyn: tuple[int, ...],
               what: str, **kw) -> Spec:
    return Spec(name, "onnx", (Input("x", shape, dyn),), fn, what, **kw)


def _torch_spec(name: str, factory: Callable[[], torch.nn.Module], inputs: tuple[Input, ...], what: str,
                **kw) -> Spec:
    return Spec(name, "torch", inputs, _torch(name, factory), what, **kw)


MODELS: tuple[Spec, ...] = (
    _torch_spec("layernorm", lambda: torch.nn.LayerNorm(8), (Input("x", (2, 3, 8), (0, 1)),),
                "torch.nn.LayerNorm(8), random weight and bias", loc=0.5, scale=2.0),
    _torch_spec("layernorm_noaffine", lambda: torch.nn.LayerNorm(8, elementwise_affine=False),
                (Input("x", (2, 3, 8), (0, 1)),), "torch.nn.LayerNorm(8, elementwise_affine=False)", loc=-1.0),
    _torch_spec("layernorm2d", lambda: torch.nn.LayerNorm([4, 5]), (Input("x", (2, 3, 4, 5), (0, 1)),),
                "torch.nn.LayerNorm([4, 5]) (last two dims), random weight and bias"),
    _torch_spec("layernorm2d_noaffine", lambda: torch.nn.LayerNorm([4, 5], elementwise_affine=False),
                (Input("x", (2, 3, 4, 5), (0, 1)),), "torch.nn.LayerNorm([4, 5], elementwise_affine=False)",
                loc=3.0),
    _torch_spec("groupnorm", lambda: torch.nn.GroupNorm(3, 6), (Input("x", (2, 6, 3, 4), (0, 2, 3)),),
                "torch.nn.GroupNorm(3, 6), affine, random weight and bias"),
    _torch_spec("instancenorm_affine", lambda: torch.nn.InstanceNorm2d(4, affine=True),
                (Input("x", (2, 4, 3, 5), (0, 2, 3)),), "torch.nn.InstanceNorm2d(4, affine=True)"),
    _torch_spec("instancenorm", lambda: torch.nn.InstanceNorm2d(4), (Input("x", (2, 4, 3, 5), (0, 2, 3)),),
                "torch.nn.InstanceNorm2d(4) (affine=False)", loc=0.5),
    _torch_spec("l2normalize", L2Normalize, (Input("x", (2, 5, 3), (0, 1, 2)),),
                "torch.nn.functional.normalize(x, p=2, dim=1)"),
    _torch_spec("block", TinyBlock, (Input("x", (2, 3, 8), (0, 1)), Input("skip", (2, 3, 8), (0, 1))),
                "tiny residual block: LayerNorm(x+skip), min/max, scale, residual, hand-written RMS norm; "
                "outputs y, centred sum of squares, abs-max"),
    _torch_spec("manual_groupnorm", ManualGroupNorm, (Input("x", (2, 6, 2, 3), (0, 2, 3)),),
                "GroupNorm(3 groups, 6 channels) written with reshape/mean/var/sqrt"),
    _torch_spec("l2_plumbing", L2Plumbing, (Input("x", (2, 5, 4), (0, 2)),),
                "vector_norm/clamp_min/expand/unsqueeze/squeeze/cat/sum around an L2 normalisation"),
    _torch_spec("clamped_layernorm", ClampedLayerNorm, (Input("x", (2, 3, 8), (0, 1)),),
                "torch.nn.LayerNorm(8) then torch.clamp(-1, 1.5) (a Clamp layer)"),
    _onnx_spec("layernorm17", onnx_layernorm17, (2, 3, 8), (0, 1),
               "ONNX LayerNormalization-17 (axis=-1, epsilon=1e-5), scale/bias [8]", loc=0.5),
    _onnx_spec("layernorm17_axis1", onnx_layernorm17_axis1, (2, 3, 8), (0,),
               "ONNX LayerNormalization-17 (axis=1, epsilon=1e-3), scale [3,8], bias [1,8], "
               "outputs Y, Mean, InvStdDev"),
    _onnx_spec("groupnorm18", onnx_groupnorm18, (2, 6, 3, 4), (0, 2, 3),
               "ONNX GroupNormalization-18 (opset 18, 3 groups, per-group scale/bias [3])"),
    _onnx_spec("groupnorm21", onnx_groupnorm21, (2, 6, 3, 4), (0, 2, 3),
               "ONNX GroupNormalization-21 (opset 21, 3 groups, per-channel scale/bias [6])"),
    _onnx_spec("instancenorm", onnx_instancenorm, (2, 4, 3, 5), (0, 2, 3),
               "ONNX InstanceNormalization (opset 17), scale/bias [4]"),
    _onnx_spec("lpnorm", onnx_lpnorm, (2, 5, 3), (0, 1, 2), "ONNX LpNormalization (axis=1, p=2)"),
    _onnx_spec("reducel2norm", onnx_reducel2norm, (2, 5, 3), (0, 1, 2),
               "ONNX x / ReduceL2(x, axes=[1, -1], keepdims=1) (opset 18)"),
)

# ----------------------------------------------------------------------------------------------------
# conversion and writing

AUTO_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*_\d+")


def _stabilize(model: ov.Model, base: str) -> None:
    """Replace counter-based friendly names with positional ones and name every unnamed output."""
    for k, node in enumerate(model.get_ordered_ops()):
        if AUTO_NAME.fullmatch(node.get_friendly_name()):
            node.set_friendly_name(f"{node.get_type_name()}_{k}")
    model.set_friendly_name(base)
    for k, out in enumerate(model.outputs):
        if not out.get_names():
            out.get_tensor().set_names({f"output{k}"})


def convert(spec: Spec, dynamic: bool, tmp: Path) -> ov.Model:
    """Convert one model with openvino.convert_model (PyTorch module or ONNX file)."""
    built = spec.build(dynamic)
    if spec.source == "torch":
        gen = torch.Generator().manual_seed(_seed(spec.name) + 1)
        example = tuple(torch.randn(i.shape, generator=gen) for i in spec.inputs)
        shapes = [ov.PartialShape(i.partial_shape(dynamic)) for i in spec.inputs]
        model = ov.convert_model(built, example_input=example, input=shapes)
    else:
        path = tmp / f"{spec.name}_{dynamic}.onnx"
        onnx.save(built, str(path))
        model = ov.convert_model(str(path))
    _stabilize(model, f"{spec.source}_{spec.name}")
    return model


def make_inputs(spec: Spec, model: ov.Model) -> dict[str, np.ndarray]:
    """Random inputs (same for every variant of a model), keyed by the re-read model's input names."""
    rng = np.random.default_rng(_seed(spec.name) + 2)
    out: dict[str, np.ndarray] = {}
    for inp, port in zip(spec.inputs, model.inputs, strict=True):
        if spec.source == "onnx" and inp.name not in port.get_names():  # torch names inputs after forward()
            raise RuntimeError(f"{spec.name}: input {inp.name!r} is {port.get_names()} in the IR")
        value = rng.standard_normal(inp.shape) * spec.scale + spec.loc
        out[port.get_any_name()] = value.astype(port.get_element_type().to_dtype())
    return out


def infer(core: ov.Core, model: ov.Model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    compiled = core.compile_model(model, "CPU", CONFIG)
    request = compiled.create_infer_request()
    request.infer({i: inputs[p.get_any_name()] for i, p in enumerate(model.inputs)})
    result: dict[str, np.ndarray] = {}
    for i, port in enumerate(compiled.outputs):
        name = port.get_any_name()
        if name in result:
            raise RuntimeError(f"duplicate output name {name!r}")
        result[name] = np.array(request.get_output_tensor(i).data, copy=True)
    return result


LAYER = re.compile(r'<layer id="\d+" name="[^"]*" type="(\w+)" version="(\w+)"')


def layer_table(xml: Path) -> str:
    """The layer types in the file, in order of first appearance, with counts: 'MVN(opset6)', 'Add x2'..."""
    found = Counter((t, v) for t, v in LAYER.findall(xml.read_text(encoding="utf-8")))
    cells = []
    for (t, v), n in found.items():
        label = t if v == "opset1" else f"{t}({v})"
        cells.append(label if n == 1 else f"{label} x{n}")
    return ", ".join(cells)


def export_all(out: Path) -> list[tuple[str, str, str]]:
    out.mkdir(parents=True, exist_ok=True)
    core = ov.Core()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in MODELS:
            for dynamic in (False, True):
                for compress in (False, True):
                    name = f"{spec.source}_{spec.name}_{'dynamic' if dynamic else 'static'}_" \
                           f"{'f16w' if compress else 'f32w'}"
                    model = convert(spec, dynamic, Path(tmp))
                    xml = out / f"{name}.xml"
                    ov.save_model(model, str(xml), compress_to_fp16=compress)
                    reread = core.read_model(str(xml))
                    inputs = make_inputs(spec, reread)
                    expected = infer(core, reread, inputs)
                    np.savez(out / f"{name}.inputs.npz", **inputs)
                    np.savez(out / f"{name}.expected.npz", **expected)
                    # read everything back from disk and check it reproduces bit for bit
                    again = infer(core, core.read_model(str(xml)), inputs)
                    for k, v in expected.items():
                        if not np.array_equal(again[k], v, equal_nan=True):
                            raise RuntimeError(f"{name}: output {k} is not reproducible")
                    twin = out / f"{name.removesuffix('_f16w')}_f32w"
                    if compress and all(Path(f"{twin}{ext}").read_bytes() == (out / f"{name}{ext}").read_bytes()
                                        for ext in (".xml", ".bin")):
                        # nothing f32 to compress: the file would be a byte-identical duplicate of the f32w one
                        for ext in (".xml", ".bin", ".inputs.npz", ".expected.npz"):
                            (out / f"{name}{ext}").unlink()
                        rows[-1] = (rows[-1][0], rows[-1][1] + " (no f32 weights: `compress_to_fp16` writes the "
                                    "same bytes, so there is no `_f16w` twin)", rows[-1][2])
                        print(f"{name}: identical to the f32w export, not kept")
                        continue
                    rows.append((name, spec.what, layer_table(xml)))
                    print(f"{name}: {rows[-1][2]}")
    return rows


README_HEAD = """# Real exports

IR files written by `openvino.convert_model` + `openvino.save_model` ({version}) from PyTorch modules
(torch {torch}) and ONNX models (onnx {onnx}, built with `onnx.helper`), with static and dynamic input shapes
and with f32 or f16-compressed weights (`compress_to_fp16`). `tests/test_real_exports.py` runs each one in
irnorm and compares with the stored OpenVINO outputs and, when openvino is installed, with a live OpenVINO run
(dynamic exports also at two other input shapes).

* `NAME.inputs.npz`: inputs keyed by the input tensor's `get_any_name()`, in model input order.
* `NAME.expected.npz`: outputs keyed by `get_any_name()`, in model output order, from OpenVINO's CPU plugin
  (`INFERENCE_PRECISION_HINT=f32`, one thread) running the re-read file.

Regenerate (needs torch, onnx and openvino; the tests need neither torch nor onnx):

    {command}

Generated by the script; do not edit by hand. Layers are listed in order of first appearance; the version is
shown when it is not opset1.

| export | model | layers OpenVINO wrote |
|---|---|---|
"""


def write_readme(out: Path, rows: list[tuple[str, str, str]]) -> None:
    head = README_HEAD.format(version=ov.get_version().split("-")[0], torch=torch.__version__.split("+")[0],
                              onnx=onnx.__version__, command=COMMAND)
    body = "".join(f"| `{n}` | {w} | {ops} |\n" for n, w, ops in rows)
    (out / "README.md").write_text(head + body, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/exports"))
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    for old in list(args.out.glob("*.xml")) + list(args.out.glob("*.bin")) + list(args.out.glob("*.npz")):
        old.unlink()
    rows = export_all(args.out)
    write_readme(args.out, rows)
    total = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"{len(rows)} exports, {total / 1024:.0f} KiB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
