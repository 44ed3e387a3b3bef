"""Rows for the compute family: MatMul-1, Convolution-1, GroupConvolution-1, (Group)ConvolutionBackpropData-1."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = (np.float32, np.float16, np.float64, BF16)
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower", "notset")


def _dtype(rng: np.random.Generator):
    # f32 half the time; f16, f64 and bf16 share the rest
    return np.float32 if rng.integers(2) else FLOAT_DTYPES[int(rng.integers(1, len(FLOAT_DTYPES)))]


def _name(dt) -> str:
    return np.dtype(dt).name


# ---- MatMul --------------------------------------------------------------------------------------


def _matmul_case(rng: np.random.Generator) -> Case:
    ra, rb = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    m, k, n = (int(v) for v in rng.integers(1, 7, size=3))
    nbatch = max(ra, rb) - 2
    batch = [int(v) for v in rng.integers(1, 4, size=max(nbatch, 0))]

    def operand(rank: int, rows: int, cols: int) -> list[int]:
        if rank == 1:
            return [k]
        bd = batch[len(batch) - (rank - 2):] if rank > 2 else []
        bd = [1 if rng.integers(3) == 0 else d for d in bd]  # broadcast some batch dims
        return bd + [rows, cols]

    ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
    sa = operand(ra, m, k)
    sb = operand(rb, k, n)
    if ra > 1 and ta:
        sa[-1], sa[-2] = sa[-2], sa[-1]
    if rb > 1 and tb:
        sb[-1], sb[-2] = sb[-2], sb[-1]
    if rng.integers(8) == 0:
        dt = np.int32
        a = rng.integers(-5, 6, size=sa).astype(dt)
        b = rng.integers(-5, 6, size=sb).astype(dt)
    else:
        dt = _dtype(rng)
        a, b = floats(rng, sa, dt), floats(rng, sb, dt)
    params = (0, 1) if rng.integers(2) else (0,)  # B a Const (a Linear layer) half the time
    dynamic = bool(rng.integers(2))
    odd = ""
    if dynamic and params == (0,) and b.ndim > 2:
        odd = "CPU plugin: FullyConnected with a batched constant B and dynamic A fails (Can not clone with new dims)"
    return Case((a, b), {"transpose_a": ta, "transpose_b": tb}, params=params, dynamic=dynamic, not_openvino=odd,
                label=f"{_name(dt)} A{sa} B{sb} ta={ta} tb={tb} params={params}")


def _matmul_ref(c: Case):
    y = R.matmul(*c.inputs, c.attrs["transpose_a"], c.attrs["transpose_b"])
    return [y.astype(c.inputs[0].dtype)]


def _matmul_ov(nodes, case: Case):
    import openvino.opset1 as op1

    return op1.matmul(nodes[0], nodes[1], case.attrs["transpose_a"], case.attrs["transpose_b"])


# ---- forward convolutions -------------------------------------------------------------------------


def _spatial(rng: np.random.Generator, rank: int, kernel: list[int], dil: list[int]) -> list[int]:
    # at least the dilated kernel, so every auto_pad mode is legal
    return [int(rng.integers(d * (k - 1) + 1, d * (k - 1) + 7)) for k, d in zip(kernel, dil, strict=True)]


def _conv_attrs(rng: np.random.Generator, rank: int) -> dict:
    return {
        "strides": [int(v) for v in rng.integers(1, 4, size=rank)],
        "pads_begin": [int(v) for v in rng.integers(0, 3, size=rank)],
        "pads_end": [int(v) for v in rng.integers(0, 3, size=rank)],
        "dilations": [int(v) for v in rng.integers(1, 3, size=rank)],
        "auto_pad": str(AUTO_PADS[int(rng.integers(len(AUTO_PADS)))]),
    }


def _values(rng: np.random.Generator, shape, dt) -> np.ndarray:
    if np.dtype(dt).kind == "i":  # small integers: exact sums in every runtime
        return rng.integers(-4, 5, size=tuple(shape)).astype(dt)
    return floats(rng, shape, dt)


def _conv_dtype(rng: np.random.Generator):
    return np.int32 if rng.integers(8) == 0 else _dtype(rng)


def _conv_case(rng: np.random.Generator, grouped: bool) -> Case:
    rank = int(rng.integers(1, 4))
    attrs = _conv_attrs(rng, rank)
    kernel = [int(v) for v in rng.integers(1, 4, size=rank)]
    n = int(rng.integers(1, 3))
    dt = _conv_dtype(rng)
    if grouped:
        g = int(rng.integers(1, 5))
        cg = 1 if rng.integers(2) else int(rng.integers(1, 4))  # depthwise half the time
        og = int(rng.integers(1, 3))
        wshape = [g, og, cg] + kernel
        c = g * cg
    else:
        c, o = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        wshape = [o, c] + kernel
    x = _values(rng, [n, c] + _spatial(rng, rank, kernel, attrs["dilations"]), dt)
    w = _values(rng, wshape, dt)
    params = (0, 1) if rng.integers(4) == 0 else (0,)
    dynamic = bool(rng.integers(2))
    odd = "CPU plugin: no dynamic weights shape" if dynamic and 1 in params else ""
    return Case((x, w), attrs, params=params, dynamic=dynamic, not_openvino=odd,
                label=f"{_name(dt)} x{list(x.shape)} w{wshape} {attrs} params={params}")


def _conv_ref(c: Case, grouped: bool):
    a = c.attrs
    fn = R.group_convolution if grouped else R.convolution
    y = fn(*c.inputs, a["strides"], a["pads_begin"], a["pads_end"], a["dilations"], a["auto_pad"])
    return [y.astype(c.inputs[0].dtype)]


def _ov_auto_pad(a: dict) -> str:
    # the Python builders refuse 'notset' (the IR reader takes it); it means explicit
    return "explicit" if a["auto_pad"] == "notset" else a["auto_pad"]


def _conv_ov(nodes, case: Case, grouped: bool):
    import openvino.opset1 as op1

    a = dict(case.attrs, auto_pad=_ov_auto_pad(case.attrs))
    fn = op1.group_convolution if grouped else op1.convolution
    return fn(nodes[0], nodes[1], a["strides"], a["pads_begin"], a["pads_end"], a["dilations"], a["auto_pad"])


# ---- ConvolutionBackpropData ---------------------------------------------------------------------------


def _backprop_case(rng: np.random.Generator, grouped: bool = False) -> Case:
    rank = int(rng.integers(1, 4))
    attrs = _conv_attrs(rng, rank)
    kernel = [int(v) for v in rng.integers(1, 4, size=rank)]
    attrs["output_padding"] = [int(rng.integers(0, s)) for s in attrs["strides"]]  # < stride
    n, c, o = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    spatial = [int(v) for v in rng.integers(1, 5, size=rank)]
    dt = _conv_dtype(rng)
    g = int(rng.integers(1, 4)) if grouped else 1
    x = _values(rng, [n, g * c] + spatial, dt)
    w = _values(rng, ([g] if grouped else []) + [c, o] + kernel, dt)
    full = [attrs["strides"][i] * (spatial[i] - 1) + attrs["dilations"][i] * (kernel[i] - 1) + 1
            + attrs["output_padding"][i] for i in range(rank)]
    inputs = (x, w)
    if attrs["auto_pad"] in ("explicit", "notset"):
        # the unpadded size must stay positive
        for i in range(rank):
            while attrs["pads_begin"][i] + attrs["pads_end"][i] >= full[i]:
                attrs["pads_end"][i] = max(0, attrs["pads_end"][i] - 1)
                if attrs["pads_begin"][i] + attrs["pads_end"][i] >= full[i]:
                    attrs["pads_begin"][i] = max(0, attrs["pads_begin"][i] - 1)
    if rng.integers(3) == 0:  # the optional output_shape input, up to 2 below the full size
        oshape = [max(1, f - int(rng.integers(0, 3))) for f in full]
        if attrs["auto_pad"] in ("explicit", "notset"):
            oshape = [min(v, f - pb) for v, f, pb in zip(oshape, full, attrs["pads_begin"], strict=True)]
        inputs = (x, w, np.array(oshape, np.int64))
    params = (0, 1) if rng.integers(4) == 0 else (0,)
    dynamic = bool(rng.integers(2))
    odd = ""
    if dynamic and 1 in params:
        odd = "CPU plugin: no dynamic weights shape"
    elif dynamic and len(inputs) > 2 and max(attrs["strides"]) > 1:
        odd = ("CPU plugin fails to compile (Can not clone DnnlBlockedMemoryDesc): dynamic data + output_shape + "
               "stride > 1")
    if grouped and rank == 1 and g == 1 and not odd:
        odd = "CPU plugin: no oneDNN primitive for a 1-D GroupConvolutionBackpropData with one group"
    return Case(inputs, attrs, params=params, dynamic=dynamic, not_openvino=odd,
                label=f"{_name(dt)} x{list(x.shape)} w{list(w.shape)} {attrs} "
                      f"output_shape={list(inputs[2]) if len(inputs) > 2 else None}")


def _backprop_ref(c: Case, grouped: bool = False):
    a = c.attrs
    oshape = [int(v) for v in c.inputs[2]] if len(c.inputs) > 2 else None
    fn = R.group_convolution_backprop_data if grouped else R.convolution_backprop_data
    y = fn(c.inputs[0], c.inputs[1], a["strides"], a["pads_begin"], a["pads_end"], a["dilations"], a["auto_pad"],
           a["output_padding"], oshape)
    return [y.astype(c.inputs[0].dtype)]


def _backprop_ov(nodes, case: Case, grouped: bool = False):
    import openvino.opset1 as op1

    a = dict(case.attrs, auto_pad=_ov_auto_pad(case.attrs))
    fn = op1.group_convolution_backprop_data if grouped else op1.convolution_backprop_data
    return fn(
        nodes[0], nodes[1], a["strides"], output_shape=nodes[2] if len(nodes) > 2 else None,
        pads_begin=a["pads_begin"], pads_end=a["pads_end"], dilations=a["dilations"], auto_pad=a["auto_pad"],
        output_padding=a["output_padding"])


# Sums of up to ~100 products of O(1) values: float32 rounding is a few ulps of the sum's magnitude.
CONV_TOL = {"float64": (1e-10, 1e-10), "float32": (2e-5, 2e-5), "float16": (3e-3, 3e-3),
            "bfloat16": (1.6e-2, 1.6e-2)}

ROWS = [
    Row("MatMul-1", "opset1", _matmul_case, _matmul_ref, _matmul_ov, cases=16, tol=CONV_TOL),
    Row("Convolution-1", "opset1", lambda r: _conv_case(r, False), lambda c: _conv_ref(c, False),
        lambda n, c: _conv_ov(n, c, False), cases=14, tol=CONV_TOL),
    Row("GroupConvolution-1", "opset1", lambda r: _conv_case(r, True), lambda c: _conv_ref(c, True),
        lambda n, c: _conv_ov(n, c, True), cases=14, tol=CONV_TOL),
    Row("ConvolutionBackpropData-1", "opset1", _backprop_case, _backprop_ref, _backprop_ov, cases=14, tol=CONV_TOL),
    Row("GroupConvolutionBackpropData-1", "opset1", lambda r: _backprop_case(r, True),
        lambda c: _backprop_ref(c, True), lambda n, c: _backprop_ov(n, c, True), cases=14, tol=CONV_TOL),
]
