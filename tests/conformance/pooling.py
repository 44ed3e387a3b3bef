"""Rows for MaxPool-1/8/14 and AvgPool-1/14/16 (1-D to 3-D, every padding and rounding mode) and
AdaptiveAvgPool-8 / AdaptiveMaxPool-8 (windows that shrink, overlap and repeat, sizes of 0, sizes as a model
input)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R
from irnorm.ops.pooling import pool_geometry

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float16, np.float64, BF16)


def _case(version: int, avg: bool):
    roundings = ["floor", "ceil"] + (["ceil_torch"] if version >= 14 else [])

    def sample(rng: np.random.Generator) -> Case:
        nd = int(rng.integers(1, 4))
        kernel = [int(k) for k in rng.integers(1, 4, nd)]
        strides = [int(s) for s in rng.integers(1, 3, nd)]
        dil = [int(d) for d in rng.integers(1, 3, nd)] if (version >= 8 and not avg) or version == 16 else [1] * nd
        spatial = [int(d * (k - 1) + 1 + rng.integers(0, 5)) for k, d in zip(kernel, dil, strict=True)]
        pads_b = [int(rng.integers(0, k)) for k in kernel]  # a pad smaller than the window
        pads_e = [int(rng.integers(0, k)) for k in kernel]
        auto_pad = str(rng.choice(["explicit", "explicit", "valid", "same_upper", "same_lower"]))
        dt = FLOATS[int(rng.integers(len(FLOATS)))]
        x = floats(rng, [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial, dt)
        attrs = {"strides": strides, "kernel": kernel, "pads_begin": pads_b, "pads_end": pads_e,
                 "rounding_type": str(rng.choice(roundings)), "auto_pad": auto_pad}
        if avg:
            attrs["exclude-pad"] = bool(rng.integers(2))
            if version == 16:
                attrs["dilations"] = dil
        elif version >= 8:
            attrs.update(dilations=dil, index_element_type=str(rng.choice(["i32", "i64"])),
                         axis=int(rng.choice([0, 1, 2])))
        dynamic = bool(rng.integers(2))
        # Where OpenVINO's CPU plugin is no oracle (the float64 one still is): on dynamic shapes it pads
        # same_upper/same_lower pooling without the dilation (static shapes follow OpenVINO's shape inference),
        # and an average over a window with no tap inside the data is NaN there (0 in irnorm).
        out, pb, _ = pool_geometry(x.shape[2:], attrs, dil)
        empty = any((o - 1) * st - b >= n for o, st, b, n in zip(out, strides, pb, spatial, strict=True))
        odd = ("dynamic same_* pooling with dilations" if dynamic and auto_pad.startswith("same") and max(dil) > 1 else
               "an average of no data" if avg and empty else "")
        return Case((x,), attrs, dynamic=dynamic, label=f"{x.shape} {attrs}", not_openvino=odd)

    return sample


def _ref(version: int, avg: bool):
    def ref(c: Case) -> list[np.ndarray]:
        x = c.inputs[0]
        a = dict(c.attrs)
        dil = a.get("dilations", [1] * len(a["kernel"]))
        out, pb, pe = pool_geometry(x.shape[2:], a, dil)
        if avg:
            return [R.avg_pool(x, a["kernel"], a["strides"], pb, pe, a["exclude-pad"], out, dil)]
        y, idx = R.max_pool(x, a["kernel"], a["strides"], dil, pb, out)
        if version == 1:
            return [y]
        axis = a["axis"]
        plane = int(np.prod(x.shape[2:]))
        if axis == 0:
            idx = idx + (np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * (x.ndim - 2)) * plane)
        elif axis == 1:
            idx = idx + (np.arange(x.shape[1]).reshape((1, -1) + (1,) * (x.ndim - 2)) * plane)
        return [y, idx.astype(np.int32 if a["index_element_type"] == "i32" else np.int64)]

    return ref


def _ov(version: int, avg: bool):
    def build(nodes, c: Case):
        import openvino as ov

        a = c.attrs
        mod = {1: "opset1", 8: "opset8", 14: "opset14", 16: "opset16"}[version]
        ops = __import__(f"openvino.{mod}", fromlist=["x"])
        if avg and version == 16:
            return ops.avg_pool(nodes[0], a["strides"], a["pads_begin"], a["pads_end"], a["kernel"], a["exclude-pad"],
                                a["rounding_type"], a["auto_pad"], a["dilations"])
        if avg:
            return ops.avg_pool(nodes[0], a["strides"], a["pads_begin"], a["pads_end"], a["kernel"], a["exclude-pad"],
                                a["rounding_type"], a["auto_pad"])
        if version == 1:
            return ops.max_pool(nodes[0], a["strides"], a["pads_begin"], a["pads_end"], a["kernel"],
                                a["rounding_type"], a["auto_pad"])
        return ops.max_pool(nodes[0], a["strides"], a["dilations"], a["pads_begin"], a["pads_end"], a["kernel"],
                            a["rounding_type"], a["auto_pad"], ov.Type.i32 if a["index_element_type"] == "i32"
                            else ov.Type.i64, a["axis"])

    return build


def _adaptive_case(avg: bool):
    def sample(rng: np.random.Generator) -> Case:
        nd = int(rng.integers(1, 4))
        spatial = [int(v) for v in rng.integers(1, 10, nd)]
        # smaller than, equal to and larger than the input (overlapping, repeating windows); now and then 0
        sizes = [int(rng.choice([max(1, n // 2), n, n + int(rng.integers(1, 4)), int(rng.integers(1, 10))]))
                 for n in spatial]
        if rng.random() < 0.1:
            sizes[int(rng.integers(nd))] = 0
        dt = FLOATS[int(rng.integers(len(FLOATS)))]
        x = floats(rng, [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial, dt)
        if not avg and rng.random() < 0.3:  # ties: the first maximum's index
            x = np.round(x).astype(dt)
        size_input = np.array(sizes, np.int64 if rng.integers(2) else np.int32)
        attrs = {} if avg else {"index_element_type": str(rng.choice(["i32", "i64"]))}
        params = (0, 1) if rng.random() < 0.25 else (0,)  # the sizes as a model input, checked at run time
        odd = ("OpenVINO's CPU plugin cannot compile AdaptiveMaxPool with i64 indices"
               if attrs.get("index_element_type") == "i64" else "")
        return Case((x, size_input), attrs, params=params, dynamic=bool(rng.integers(2)), not_openvino=odd,
                    label=f"{x.shape} -> {sizes} params={params}")

    return sample


def _adaptive_ref(avg: bool):
    def ref(c: Case) -> list[np.ndarray]:
        x, sizes = c.inputs[0], [int(v) for v in c.inputs[1]]
        if avg:
            return [R.adaptive_avg_pool(x, sizes)]
        y, idx = R.adaptive_max_pool(x, sizes)
        return [y, idx.astype(np.int32 if c.attrs["index_element_type"] == "i32" else np.int64)]

    return ref


def _adaptive_ov(avg: bool):
    def build(nodes, c: Case):
        import openvino.opset8 as o8

        if avg:
            return o8.adaptive_avg_pool(nodes[0], nodes[1])
        return o8.adaptive_max_pool(nodes[0], nodes[1], c.attrs["index_element_type"]).outputs()

    return build


ROWS = [
    Row("MaxPool-1", "opset1", _case(1, False), _ref(1, False), _ov(1, False)),
    Row("MaxPool-8", "opset8", _case(8, False), _ref(8, False), _ov(8, False)),
    Row("MaxPool-14", "opset14", _case(14, False), _ref(14, False), _ov(14, False)),
    Row("AvgPool-1", "opset1", _case(1, True), _ref(1, True), _ov(1, True)),
    Row("AvgPool-14", "opset14", _case(14, True), _ref(14, True), _ov(14, True)),
    Row("AvgPool-16", "opset16", _case(16, True), _ref(16, True), _ov(16, True)),
    Row("AdaptiveAvgPool-8", "opset8", _adaptive_case(True), _adaptive_ref(True), _adaptive_ov(True)),
    Row("AdaptiveMaxPool-8", "opset8", _adaptive_case(False), _adaptive_ref(False), _adaptive_ov(False)),
]
