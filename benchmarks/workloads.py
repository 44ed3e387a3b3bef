"""Benchmark workloads: the IR files each contender runs, their inputs and the textbook formulas.

Every workload is an IR written to disk.  GroupNormalization, NormalizeL2 and MVN run the same
OpenVINO-written file in irnorm and in OpenVINO.  LayerNorm and Scale have no OpenVINO operator:
OpenVINO runs its own decomposition (MVN + Multiply + Add; Multiply + Add + Power) written by
``openvino.save_model``, irnorm runs its ``irnorm1`` extension layer from a hand-built IR (same math).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

import numpy as np

EPS = 1e-5
L2_EPS = 1e-10


@dataclass
class Workload:
    key: str
    desc: str
    shape: tuple[int, ...]
    quick_shape: tuple[int, ...]
    dtype: str  # "f32" | "f16"
    target: float  # irnorm / OpenVINO median ratio the issue asks for
    kind: str  # gn | ln | l2 | mvn | sc
    params: dict = field(default_factory=dict)


WORKLOADS: list[Workload] = [
    Workload("GN1", "GroupNorm G=32", (1, 320, 64, 64), (1, 64, 16, 16), "f32", 0.6, "gn", {"groups": 32}),
    Workload("GN2", "GroupNorm G=8", (8, 64, 56, 56), (2, 16, 12, 12), "f32", 0.7, "gn", {"groups": 8}),
    Workload("GN3", "GroupNorm G=32", (16, 32, 32, 32), (4, 32, 8, 8), "f32", 1.0, "gn", {"groups": 32}),
    Workload("GN4", "GroupNorm G=8, tiny", (1, 32, 8, 8), (1, 32, 8, 8), "f32", 1.0, "gn", {"groups": 8}),
    Workload("GN1h", "GroupNorm G=32 f16", (1, 320, 64, 64), (1, 64, 16, 16), "f16", 0.5, "gn", {"groups": 32}),
    Workload("LN1", "LayerNorm last axis", (8, 512, 768), (2, 16, 64), "f32", 0.6, "ln"),
    Workload("LN2", "LayerNorm last axis", (64, 197, 768), (4, 17, 64), "f32", 0.6, "ln"),
    Workload("L2a", "NormalizeL2 axes [1]", (65536, 384), (512, 64), "f32", 0.1, "l2", {"axes": [1]}),
    Workload("L2b", "NormalizeL2 axes [1]", (8, 256, 56, 56), (2, 32, 8, 8), "f32", 0.6, "l2", {"axes": [1]}),
    Workload("MVN1", "MVN-6 axes [2,3]", (8, 64, 56, 56), (2, 16, 12, 12), "f32", 0.5, "mvn", {"axes": [2, 3]}),
    Workload("SC1", "Scale channel, power 2", (8, 64, 56, 56), (2, 16, 12, 12), "f32", 1.2, "sc", {"power": 2.0}),
]

NP_DTYPES = {"f32": np.float32, "f16": np.float16}


def channels(w: Workload, shape: tuple[int, ...]) -> int:
    return shape[-1] if w.kind == "ln" else shape[1]


def weights(w: Workload, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic scale and bias (shift) vectors, in the workload's dtype."""
    rng = np.random.default_rng(7)
    c = channels(w, shape)
    dt = NP_DTYPES[w.dtype]
    return (rng.uniform(0.5, 1.5, c).astype(dt), rng.uniform(-0.5, 0.5, c).astype(dt))


def make_input(w: Workload, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(1)
    return (rng.standard_normal(shape, dtype=np.float32) * 2.0 + 0.5).astype(NP_DTYPES[w.dtype])


# ---- OpenVINO-written IRs ----------------------------------------------------------------------


def _bcast(v: np.ndarray, rank: int, axis: int) -> np.ndarray:
    shape = [1] * rank
    shape[axis] = v.size
    return v.reshape(shape)


def write_openvino_ir(w: Workload, shape: tuple[int, ...], path: str) -> str:
    """The workload as OpenVINO itself builds it, written by openvino.save_model (f32 weights kept)."""
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset6 as o6
    import openvino.opset12 as o12

    et = ov.Type.f16 if w.dtype == "f16" else ov.Type.f32
    x = o1.parameter(list(shape), et, name="x")
    scale, bias = weights(w, shape)
    rank = len(shape)
    if w.kind == "gn":
        y = o12.group_normalization(x, o1.constant(scale), o1.constant(bias), w.params["groups"], EPS)
    elif w.kind == "l2":
        y = o1.normalize_l2(x, o1.constant(np.array(w.params["axes"], np.int64)), L2_EPS, "add")
    elif w.kind == "mvn":
        y = o6.mvn(x, o1.constant(np.array(w.params["axes"], np.int64)), True, EPS, "inside_sqrt")
    elif w.kind == "ln":
        m = o6.mvn(x, o1.constant(np.array([-1], np.int64)), True, EPS, "inside_sqrt")
        y = o1.add(o1.multiply(m, o1.constant(scale)), o1.constant(bias))
    elif w.kind == "sc":
        t = o1.add(o1.multiply(x, o1.constant(_bcast(scale, rank, 1))), o1.constant(_bcast(bias, rank, 1)))
        y = o1.power(t, o1.constant(np.array(w.params["power"], scale.dtype)))
    else:
        raise ValueError(w.kind)
    y.output(0).get_tensor().set_names({"y"})
    model = ov.Model([y], [x], w.key)
    ov.save_model(model, path, compress_to_fp16=False)
    return path


# ---- irnorm extension IRs (hand-built: OpenVINO has no such operators) --------------------------

_PREC = {"f32": "FP32", "f16": "FP16", "i64": "I64"}


def _dims(shape: tuple[int, ...]) -> str:
    return "".join(f"<dim>{d}</dim>" for d in shape)


def write_extension_ir(path: str, shape: tuple[int, ...], dtype: str, op_type: str, attrs: dict[str, str],
                       consts: list[np.ndarray]) -> str:
    """Parameter x -> Const inputs -> <op_type version="irnorm1"> -> Result, with a matching .bin."""
    prec = _PREC[dtype]
    blob = bytearray()
    layers = [f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="{",".join(map(str, shape))}" '
              f'element_type="{dtype}"/><output><port id="0" precision="{prec}" names="x">{_dims(shape)}</port>'
              f'</output></layer>']
    edges = ['<edge from-layer="0" from-port="0" to-layer="{op}" to-port="0"/>']
    for i, c in enumerate(consts, start=1):
        et = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int64): "i64"}[c.dtype]
        data = np.ascontiguousarray(c).tobytes()
        layers.append(f'<layer id="{i}" name="c{i}" type="Const" version="opset1"><data element_type="{et}" '
                      f'shape="{",".join(map(str, c.shape))}" offset="{len(blob)}" size="{len(data)}"/>'
                      f'<output><port id="0" precision="{_PREC[et]}">{_dims(c.shape)}</port></output></layer>')
        blob += data
        edges.append(f'<edge from-layer="{i}" from-port="0" to-layer="{{op}}" to-port="{i}"/>')
    op = len(consts) + 1
    n_in = len(consts) + 1
    ins = [f'<port id="0" precision="{prec}">{_dims(shape)}</port>']
    ins += [f'<port id="{i}" precision="{_PREC["f32" if c.dtype == np.float32 else "f16"]}">{_dims(c.shape)}</port>'
            for i, c in enumerate(consts, start=1)]
    data_attrs = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
    layers.append(f'<layer id="{op}" name="op" type="{op_type}" version="irnorm1"><data {data_attrs}/>'
                  f'<input>{"".join(ins)}</input><output><port id="{n_in}" precision="{prec}" names="y">'
                  f'{_dims(shape)}</port></output></layer>')
    layers.append(f'<layer id="{op + 1}" name="y/sink_port_0" type="Result" version="opset1"><input>'
                  f'<port id="0" precision="{prec}">{_dims(shape)}</port></input></layer>')
    edges = [e.format(op=op) for e in edges]
    edges.append(f'<edge from-layer="{op}" from-port="{n_in}" to-layer="{op + 1}" to-port="0"/>')
    xml = ('<?xml version="1.0"?>\n<net name="bench" version="11">\n<layers>\n' + "\n".join(layers)
           + "\n</layers>\n<edges>\n" + "\n".join(edges) + "\n</edges>\n</net>\n")
    with open(path, "w") as f:
        f.write(xml)
    with open(os.path.splitext(path)[0] + ".bin", "wb") as f:
        f.write(bytes(blob))
    return path


def write_irnorm_ir(w: Workload, shape: tuple[int, ...], ov_path: str, path: str) -> str:
    """The IR irnorm runs: the OpenVINO file itself, or an irnorm1 extension layer for LN and SC."""
    scale, bias = weights(w, shape)
    if w.kind == "ln":
        return write_extension_ir(path, shape, w.dtype, "LayerNormalization", {"axis": "-1", "epsilon": repr(EPS)},
                                  [scale, bias])
    if w.kind == "sc":
        power = np.full(scale.shape, w.params["power"], scale.dtype)
        return write_extension_ir(path, shape, w.dtype, "Scale", {"mode": "channel", "channel_axis": "1"},
                                  [scale, bias, power])
    return ov_path


# ---- textbook numpy (float32) and torch --------------------------------------------------------


def numpy_fn(w: Workload, shape: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    scale, bias = (v.astype(np.float32) for v in weights(w, shape))
    rank = len(shape)
    out_dt = NP_DTYPES[w.dtype]
    if w.kind == "gn":
        g = w.params["groups"]
        sc, bi = _bcast(scale, rank, 1), _bcast(bias, rank, 1)

        def f(x):
            xr = x.astype(np.float32, copy=False).reshape(shape[0], g, -1)
            mean = xr.mean(-1, keepdims=True)
            var = xr.var(-1, keepdims=True)
            y = ((xr - mean) / np.sqrt(var + np.float32(EPS))).reshape(shape) * sc + bi
            return y.astype(out_dt, copy=False)
    elif w.kind == "ln":
        def f(x):
            mean = x.mean(-1, keepdims=True)
            var = x.var(-1, keepdims=True)
            return (x - mean) / np.sqrt(var + np.float32(EPS)) * scale + bias
    elif w.kind == "mvn":
        ax = tuple(w.params["axes"])

        def f(x):
            mean = x.mean(ax, keepdims=True)
            var = x.var(ax, keepdims=True)
            return (x - mean) / np.sqrt(var + np.float32(EPS))
    elif w.kind == "l2":
        ax = tuple(w.params["axes"])

        def f(x):
            return x / np.sqrt(np.sum(x * x, ax, keepdims=True) + np.float32(L2_EPS))
    elif w.kind == "sc":
        sc, bi, p = _bcast(scale, rank, 1), _bcast(bias, rank, 1), np.float32(w.params["power"])

        def f(x):
            return (x * sc + bi) ** p
    else:
        raise ValueError(w.kind)
    return f


def torch_fn(w: Workload, shape: tuple[int, ...]):
    """The same computation with torch CPU ops (None when torch is not importable)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    torch.set_num_threads(2)
    scale, bias = (torch.from_numpy(v.copy()) for v in weights(w, shape))
    rank = len(shape)
    if w.kind == "gn":
        g = w.params["groups"]
        return lambda x: F.group_norm(x, g, scale, bias, EPS)
    if w.kind == "ln":
        return lambda x: F.layer_norm(x, (shape[-1],), scale, bias, EPS)
    if w.kind == "mvn":
        ax = tuple(w.params["axes"])

        def f(x):
            var, mean = torch.var_mean(x, ax, correction=0, keepdim=True)
            return (x - mean) * torch.rsqrt(var + EPS)
        return f
    if w.kind == "l2":
        ax = tuple(w.params["axes"])
        return lambda x: x * torch.rsqrt(torch.sum(x * x, ax, keepdim=True) + L2_EPS)
    if w.kind == "sc":
        sc = scale.reshape([1, -1] + [1] * (rank - 2))
        bi = bias.reshape([1, -1] + [1] * (rank - 2))
        p = w.params["power"]
        return lambda x: torch.pow(torch.addcmul(bi, x, sc), p)
    raise ValueError(w.kind)
