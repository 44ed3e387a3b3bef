"""Rows for DeformableConvolution-1 and DeformableConvolution-8."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float32, np.float16, np.float64, BF16)
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")


def _out(n, k, s, d, pb, pe, auto_pad):
    if auto_pad in ("same_upper", "same_lower"):
        return -(-n // s)
    if auto_pad == "valid":
        pb = pe = 0
    return (n + pb + pe - d * (k - 1) - 1) // s + 1


def _case(rng: np.random.Generator, version: int) -> Case:
    dt = FLOATS[int(rng.integers(len(FLOATS)))]
    g, dg = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    c = int(np.lcm(g, dg)) * int(rng.integers(1, 3))
    o = g * int(rng.integers(1, 3))
    k = [int(v) for v in rng.integers(1, 4, 2)]
    attrs = {"strides": [int(v) for v in rng.integers(1, 3, 2)], "pads_begin": [int(v) for v in rng.integers(0, 2, 2)],
             "pads_end": [int(v) for v in rng.integers(0, 2, 2)], "dilations": [int(v) for v in rng.integers(1, 3, 2)],
             "auto_pad": str(AUTO_PADS[int(rng.integers(len(AUTO_PADS)))]), "group": g, "deformable_group": dg}
    if version == 8:
        attrs["bilinear_interpolation_pad"] = bool(rng.integers(2))
    hw = [int(rng.integers(d * (kk - 1) + 1, d * (kk - 1) + 6)) for kk, d in zip(k, attrs["dilations"], strict=True)]
    oh, ow = (_out(hw[i], k[i], attrs["strides"][i], attrs["dilations"][i], attrs["pads_begin"][i],
                   attrs["pads_end"][i], attrs["auto_pad"]) for i in range(2))
    n = int(rng.integers(1, 3))
    taps = dg * k[0] * k[1]
    ins = [floats(rng, (n, c) + tuple(hw), dt), floats(rng, (n, 2 * taps, oh, ow), dt, scale=2.0),
           floats(rng, (o, c // g) + tuple(k), dt)]
    if version == 8 and rng.integers(2):
        ins.append(rng.uniform(0, 1, (n, taps, oh, ow)).astype(dt))
    params = (0, 1, 3) if len(ins) == 4 else (0, 1)
    return Case(tuple(ins), attrs, params=params, dynamic=bool(rng.integers(2)),
                label=f"{np.dtype(dt).name} x{list(ins[0].shape)} w{list(ins[2].shape)} mask={len(ins) == 4} {attrs}")


def _ref(c: Case):
    a = c.attrs
    x, off, w = c.inputs[:3]
    y = R.deformable_convolution(x, off, w, c.inputs[3] if len(c.inputs) > 3 else None, a["strides"],
                                 a["pads_begin"], a["pads_end"], a["dilations"], a["auto_pad"], a["group"],
                                 a["deformable_group"], a.get("bilinear_interpolation_pad", False), a["group"] == 1)
    return [y.astype(x.dtype)]


def _ov(nodes, c: Case, version: int):
    import importlib

    a = c.attrs
    args = (nodes[0], nodes[1], nodes[2], a["strides"], a["pads_begin"], a["pads_end"], a["dilations"])
    if version == 1:
        return importlib.import_module("openvino.opset1").deformable_convolution(
            *args, a["auto_pad"], a["group"], a["deformable_group"])
    return importlib.import_module("openvino.opset8").deformable_convolution(
        *args, nodes[3] if len(nodes) > 3 else None, a["auto_pad"], a["group"], a["deformable_group"],
        a["bilinear_interpolation_pad"])


# Sums of up to ~50 products of O(1) values, positions rounded to float32 (the reference's are float64).
TOL = {"float64": (1e-10, 1e-10), "float32": (5e-5, 5e-5), "float16": (3e-3, 3e-3), "bfloat16": (1.6e-2, 1.6e-2)}

ROWS = [
    Row("DeformableConvolution-1", "opset1", lambda r: _case(r, 1), _ref, lambda n, c: _ov(n, c, 1), cases=10,
        tol=TOL),
    Row("DeformableConvolution-8", "opset8", lambda r: _case(r, 8), _ref, lambda n, c: _ov(n, c, 8), cases=14,
        tol=TOL),
]
