"""Rows for the data-movement ops, Range, Interpolate and Einsum."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats, shape

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (np.float32, np.float16, np.float64, BF16, np.int32, np.int64)


def _data(rng, rank, lo=1, hi=5):
    dt = DTYPES[int(rng.integers(len(DTYPES)))]
    dims = shape(rng, rank, lo, hi)
    x = rng.integers(-9, 10, dims).astype(dt) if np.dtype(dt).kind == "i" else floats(rng, dims, dt)
    return x


def _dyn(rng):
    return bool(rng.integers(2))


def _transpose(rng):
    x = _data(rng, int(rng.integers(1, 5)))
    order = [int(a) for a in rng.permutation(x.ndim)]
    return Case((x, np.array(order if rng.integers(4) else [], np.int64)), dynamic=_dyn(rng), label=f"{order}")


def _split(rng):
    x = _data(rng, int(rng.integers(1, 4)))
    ax = int(rng.integers(-x.ndim, x.ndim))
    n = int(rng.choice([d for d in (1, 2, 3, 4) if x.shape[ax] % d == 0]))
    return Case((x, np.array(ax, np.int64)), {"num_splits": n}, dynamic=_dyn(rng), label=f"axis {ax} / {n}")


def _vsplit(rng):
    x = _data(rng, int(rng.integers(1, 4)), 2, 6)
    ax = int(rng.integers(-x.ndim, x.ndim))
    d = x.shape[ax]
    cut = sorted(int(c) for c in rng.integers(0, d + 1, int(rng.integers(1, 3))))
    lengths = [b - a for a, b in zip([0] + cut, cut + [d], strict=True)]
    if rng.integers(2):
        lengths[int(rng.integers(len(lengths)))] = -1
    runtime = rng.integers(3) == 0  # split_lengths as a model input (ONNX Split with a `split` input)
    return Case((x, np.array(ax, np.int64), np.array(lengths, np.int64)), params=(0, 2) if runtime else (0,),
                dynamic=_dyn(rng) and not runtime,  # OpenVINO takes its output count from the lengths' static dim
                label=f"axis {ax} {lengths}{' (an input)' if runtime else ''}")


def _slice(rng):
    x = _data(rng, int(rng.integers(1, 4)), 1, 7)
    k = int(rng.integers(1, x.ndim + 1))
    axes = [int(a) for a in rng.choice(x.ndim, k, replace=False)]
    start = [int(v) for v in rng.integers(-8, 8, k)]
    stop = [int(v) for v in rng.integers(-8, 8, k)]
    step = [int(rng.choice([-2, -1, 1, 2, 3])) for _ in range(k)]
    ins = (x, np.array(start, np.int64), np.array(stop, np.int64), np.array(step, np.int64), np.array(axes, np.int64))
    return Case(ins, dynamic=_dyn(rng), label=f"{start}:{stop}:{step} on {axes}")


def _pad(negative: bool):
    def sample(rng):
        x = _data(rng, int(rng.integers(1, 4)), 2, 5)
        mode = str(rng.choice(["constant", "edge", "reflect", "symmetric"]))
        lo = -1 if negative and mode in ("constant", "edge") else 0
        b = [int(v) for v in rng.integers(lo, 2, x.ndim)]
        e = [int(v) for v in rng.integers(lo, 2, x.ndim)]
        ins = (x, np.array(b, np.int64), np.array(e, np.int64))
        if mode == "constant" and rng.integers(2):
            ins += (np.array(3, x.dtype),)
        return Case(ins, {"pad_mode": mode}, dynamic=_dyn(rng), label=f"{mode} {b} {e}")

    return sample


def _roll(rng):
    x = _data(rng, int(rng.integers(1, 4)))
    axes = [int(a) for a in rng.choice(x.ndim, int(rng.integers(1, x.ndim + 1)), replace=False)]
    shift = [int(v) for v in rng.integers(-5, 6, len(axes))]
    return Case((x, np.array(shift, np.int64), np.array(axes, np.int64)), dynamic=_dyn(rng), label=f"{shift} {axes}")


def _gather_elements(rng):
    x = _data(rng, int(rng.integers(1, 4)))
    ax = int(rng.integers(-x.ndim, x.ndim))
    ishape = list(x.shape)
    ishape[ax] = int(rng.integers(1, 5))
    idx = rng.integers(-x.shape[ax], x.shape[ax], ishape).astype(np.int64)
    return Case((x, idx), {"axis": ax}, params=(0, 1), dynamic=_dyn(rng), label=f"axis {ax}")


def _scatter(rng):
    x = _data(rng, int(rng.integers(1, 4)), 2, 5)
    k = int(rng.integers(1, x.ndim + 1))
    n = int(rng.integers(1, 4))
    rows = {tuple(int(rng.integers(0, x.shape[j])) for j in range(k)) for _ in range(n)}  # distinct rows
    idx = np.array(sorted(rows), np.int64)
    upd = _data(rng, 1).astype(x.dtype).reshape(-1)[:1]
    upd = np.broadcast_to(upd, (len(rows),) + x.shape[k:]).copy()
    return Case((x, idx, upd), params=(0, 2), dynamic=_dyn(rng), label=f"k {k}")


def _range(rng):
    start, step = float(rng.integers(-5, 5)), float(rng.choice([-2, -1, 1, 2, 0.5]))
    stop = start + step * float(rng.integers(0, 8))
    return Case((np.array(start, np.float32), np.array(stop, np.float32), np.array(step, np.float32)),
                {"output_type": "f32"}, params=(), label=f"{start}:{stop}:{step}")


def _interp(rng):
    if rng.random() < 0.4:
        return _interp_pillow(rng)
    x = floats(rng, (1, 2) + shape(rng, 2, 2, 6), (np.float32, np.float16, np.float64)[int(rng.integers(3))])
    mode = str(rng.choice(["nearest", "linear_onnx"]))
    tr = str(rng.choice(["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"]
                        + (["tf_half_pixel_for_nn"] if mode == "nearest" else [])))
    scales = [float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.0])) for _ in range(2)]
    attrs = {"mode": mode, "shape_calculation_mode": "scales", "coordinate_transformation_mode": tr,
             "nearest_mode": str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"])),
             "antialias": False, "pads_begin": [0, 0, 0, 0], "pads_end": [0, 0, 0, 0], "cube_coeff": -0.75}
    return Case((x, np.array(scales, np.float32), np.array([2, 3], np.int64)), attrs, dynamic=_dyn(rng),
                label=f"{mode} {tr} {scales} {attrs['nearest_mode']}")


def _interp_pillow(rng):
    """bilinear_pillow / bicubic_pillow: NCHW or NHWC, down- and upsampling, every data type OpenVINO takes
    (integers round after each pass); cube_coeff other than -0.5 only against the oracle (the CPU plugin's
    pillow kernel always uses -0.5)."""
    dt = np.dtype((np.float32, np.float16, np.float64, np.uint8, np.int8, np.int32)[int(rng.integers(6))])
    nhwc = bool(rng.integers(2))
    hw = shape(rng, 2, 1, 9)
    dims = (1,) + hw + (2,) if nhwc else (2, 2) + hw
    x = floats(rng, dims, np.float64, 40.0, 60.0) if dt.kind in "iu" else floats(rng, dims, dt)
    if dt.kind in "iu":
        x = np.clip(np.round(x), np.iinfo(dt).min, np.iinfo(dt).max).astype(dt)
    axes = [1, 2] if nhwc else [2, 3]
    scales = [float(rng.choice([0.25, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0])) for _ in range(2)]
    sizes = [int(np.floor(d * sc + 1e-5)) or 1 for d, sc in zip(hw, scales, strict=True)]
    mode = str(rng.choice(["bilinear_pillow", "bicubic_pillow"]))
    cube = -0.5 if rng.random() < 0.75 else -0.75
    attrs = {"mode": mode, "shape_calculation_mode": "sizes", "coordinate_transformation_mode": "pytorch_half_pixel",
             "nearest_mode": "floor", "antialias": bool(rng.integers(2)), "pads_begin": [0, 0, 0, 0],
             "pads_end": [0, 0, 0, 0], "cube_coeff": cube}
    odd = ""
    if mode == "bicubic_pillow" and cube != -0.5:
        odd = "the CPU plugin's pillow kernel ignores cube_coeff (a = -0.5)"
    elif dt.kind in "iu" and dt.itemsize == 4:
        odd = "the CPU plugin rounds i32 pillow sums once, at the end"
    elif dt.kind in "iu":
        odd = "the CPU plugin's float32 weights round some 8-bit sums near .5 the other way"
    return Case((x, np.array(sizes, np.int64), np.array(axes, np.int64)), attrs, dynamic=_dyn(rng),
                label=f"{mode} {dt.name} {list(x.shape)} -> {sizes} axes {axes} a={cube}", not_openvino=odd)


def _interp_ref(c: Case):
    if c.attrs["mode"] in ("bilinear_pillow", "bicubic_pillow"):
        x, sizes, axes = c.inputs
        return [R.interpolate_pillow(x, [int(a) for a in axes], [int(s) for s in sizes], c.attrs["mode"],
                                     c.attrs["cube_coeff"], x.dtype if x.dtype.kind in "iu" else None
                                     ).astype(x.dtype if x.dtype.kind in "iu" else np.float64)]
    x, scales, axes = c.inputs
    sizes = [int(np.floor(x.shape[a] * float(s) + 1e-5)) for a, s in zip(axes, scales, strict=True)]
    return [R.interpolate(x, [int(a) for a in axes], sizes, [float(s) for s in scales], c.attrs["mode"],
                          c.attrs["coordinate_transformation_mode"], c.attrs["nearest_mode"])]


def _einsum(rng):
    eq = str(rng.choice(["bci,bcj->bij", "bij,bcj->bci", "ij,jk->ik", "...ij->...ji", "bhqd,bhkd->bhqk", "ii->i"]))
    dims = {c: int(rng.integers(1, 5)) for c in "bcijkhqd"}
    ops = []
    for term in eq.split("->")[0].split(","):
        t = term.replace("...", "")
        ops.append(floats(rng, ([2] if "..." in term else []) + [dims[c] for c in t], np.float32))
    return Case(tuple(ops), {"equation": eq}, params=tuple(range(len(ops))), dynamic=_dyn(rng), label=eq)


def _ov(fn):
    return fn


def _mod(name):
    import importlib

    return importlib.import_module(f"openvino.{name}")


ROWS = [
    Row("Transpose-1", "opset1", _transpose, lambda c: [R.transpose(*c.inputs[:1], [int(v) for v in c.inputs[1]])],
        lambda n, c: _mod("opset1").transpose(*n)),
    Row("Split-1", "opset1", _split, lambda c: R.split(c.inputs[0], int(c.inputs[1]),
                                                       [c.inputs[0].shape[int(c.inputs[1])] // c.attrs["num_splits"]]
                                                       * c.attrs["num_splits"]),
        lambda n, c: _mod("opset1").split(n[0], n[1], c.attrs["num_splits"])),
    Row("VariadicSplit-1", "opset1", _vsplit, lambda c: R.split(c.inputs[0], int(c.inputs[1]),
                                                                [int(v) for v in c.inputs[2]]),
        lambda n, c: _mod("opset1").variadic_split(*n)),
    Row("Slice-8", "opset8", _slice, lambda c: [R.slice_(c.inputs[0], *([int(v) for v in a] for a in c.inputs[1:]))],
        lambda n, c: _mod("opset8").slice(*n)),
    Row("Pad-1", "opset1", _pad(False), lambda c: [R.pad(c.inputs[0], [int(v) for v in c.inputs[1]],
                                                         [int(v) for v in c.inputs[2]], c.attrs["pad_mode"],
                                                         c.inputs[3] if len(c.inputs) > 3 else 0)],
        lambda n, c: _mod("opset1").pad(*n[:3], c.attrs["pad_mode"], *n[3:])),
    Row("Pad-12", "opset12", _pad(True), lambda c: [R.pad(c.inputs[0], [int(v) for v in c.inputs[1]],
                                                          [int(v) for v in c.inputs[2]], c.attrs["pad_mode"],
                                                          c.inputs[3] if len(c.inputs) > 3 else 0)],
        lambda n, c: _mod("opset12").pad(*n[:3], c.attrs["pad_mode"], *n[3:])),
    Row("Roll-7", "opset7", _roll, lambda c: [np.roll(c.inputs[0], [int(v) for v in c.inputs[1]],
                                                       axis=[int(v) for v in c.inputs[2]])],
        lambda n, c: _mod("opset7").roll(*n)),
    Row("GatherElements-6", "opset6", _gather_elements,
        lambda c: [R.gather_elements(c.inputs[0], c.inputs[1], c.attrs["axis"])],
        lambda n, c: _mod("opset6").gather_elements(*n, c.attrs["axis"])),
    Row("ScatterNDUpdate-3", "opset3", _scatter, lambda c: [R.scatter_nd_update(*c.inputs)],
        lambda n, c: _mod("opset4").scatter_nd_update(*n)),
    Row("Range-4", "opset4", _range, lambda c: [R.range_(*(float(v) for v in c.inputs))],
        lambda n, c: _mod("opset4").range(*n)),
    Row("Interpolate-11", "opset11", _interp, _interp_ref,
        lambda n, c: _mod("opset11").interpolate(n[0], n[1], c.attrs["mode"], c.attrs["shape_calculation_mode"],
                                                 axes=n[2],
                                                 coordinate_transformation_mode=c.attrs["coordinate_transformation_mode"],
                                                 nearest_mode=c.attrs["nearest_mode"], antialias=c.attrs["antialias"],
                                                 cube_coeff=c.attrs["cube_coeff"]), cases=24),
    Row("Einsum-7", "opset7", _einsum, lambda c: [R.einsum(c.attrs["equation"], *c.inputs)],
        lambda n, c: _mod("opset7").einsum(n, c.attrs["equation"])),
]


def _tile(rng):
    x = _data(rng, int(rng.integers(1, 4)))
    reps = [int(v) for v in rng.integers(0, 4, int(rng.integers(1, 5)))]
    return Case((x, np.array(reps, np.int64)), dynamic=_dyn(rng), label=f"{reps}")


def _cumsum(rng):
    x = _data(rng, int(rng.integers(1, 4)))
    ax = int(rng.integers(-x.ndim, x.ndim))
    return Case((x, np.array(ax, np.int64)), {"exclusive": bool(rng.integers(2)), "reverse": bool(rng.integers(2))},
                dynamic=_dyn(rng), label=f"axis {ax}")


def _cumsum_ref(c: Case):
    x, ax = c.inputs[0], int(c.inputs[1])
    v = np.flip(x.astype(np.float64), ax) if c.attrs["reverse"] else x.astype(np.float64)
    s = np.cumsum(v, axis=ax)
    if c.attrs["exclusive"]:
        s = s - v
    s = np.flip(s, ax) if c.attrs["reverse"] else s
    return [s.astype(x.dtype) if x.dtype.kind == "i" else s]


def _topk(rng):
    x = _data(rng, int(rng.integers(1, 4)), 1, 6)
    if x.dtype.kind == "f":  # distinct values: which of equal elements comes first is the stable rule's business
        x = (rng.permutation(x.size).reshape(x.shape) * 0.5 - 3).astype(x.dtype)
    ax = int(rng.integers(-x.ndim, x.ndim))
    k = int(rng.integers(1, x.shape[ax] + 2))  # OpenVINO's CPU plugin refuses k = 0
    attrs = {"axis": ax, "mode": str(rng.choice(["max", "min"])), "sort": str(rng.choice(["value", "index"])),
             "index_element_type": str(rng.choice(["i32", "i64"])), "stable": True}
    return Case((x, np.array(k, np.int64)), attrs, dynamic=_dyn(rng), label=f"k {k} {attrs}",
                not_openvino="the CPU plugin refuses k beyond the axis" if k > x.shape[ax] else "")


def _topk_ref(c: Case):
    x, k = c.inputs[0], int(c.inputs[1])
    a = c.attrs
    ax = a["axis"] % x.ndim
    key = x.astype(np.float64)
    order = np.argsort(-key if a["mode"] == "max" else key, axis=ax, kind="stable")
    idx = np.take(order, range(min(k, x.shape[ax])), axis=ax)
    if a["sort"] == "index":
        idx = np.sort(idx, axis=ax)
    return [np.take_along_axis(x, idx, axis=ax), idx.astype(np.int32 if a["index_element_type"] == "i32" else np.int64)]


def _strided(rng):
    x = _data(rng, int(rng.integers(1, 4)), 2, 6)
    n = x.ndim
    begin = [int(v) for v in rng.integers(-6, 6, n)]
    end = [int(v) for v in rng.integers(-6, 7, n)]
    strides = [int(rng.choice([-2, -1, 1, 2])) for _ in range(n)]
    attrs = {"begin_mask": [int(v) for v in rng.integers(0, 2, n)], "end_mask": [int(v) for v in rng.integers(0, 2, n)],
             "new_axis_mask": [0] * n, "shrink_axis_mask": [0] * n, "ellipsis_mask": [0] * n}
    j = int(rng.integers(n))
    kind = str(rng.choice(["plain", "shrink", "new"]))
    if kind == "shrink":
        attrs["shrink_axis_mask"][j] = 1
        begin[j] = int(rng.integers(-x.shape[j], x.shape[j]))
    elif kind == "new":
        attrs["new_axis_mask"][j] = 1
    ins = (x, np.array(begin, np.int64), np.array(end, np.int64), np.array(strides, np.int64))
    return Case(ins, attrs, dynamic=_dyn(rng), label=f"{kind} {begin}:{end}:{strides} {attrs}")


def _strided_ref(c: Case):
    x = c.inputs[0]
    begin, end, strides = ([int(v) for v in a] for a in c.inputs[1:])
    a = c.attrs
    idx = []
    for i in range(len(begin)):
        if a["new_axis_mask"][i]:
            idx.append(None)
        elif a["shrink_axis_mask"][i]:
            idx.append(0 if a["begin_mask"][i] else begin[i])  # a masked begin means index 0 (as OpenVINO)
        else:
            idx.append(slice(None if a["begin_mask"][i] else begin[i], None if a["end_mask"][i] else end[i],
                             strides[i]))
    return [np.array(x[tuple(idx)], copy=True)]


ROWS += [
    Row("Tile-1", "opset1", _tile, lambda c: [np.tile(c.inputs[0], [int(v) for v in c.inputs[1]])],
        lambda n, c: _mod("opset1").tile(*n)),
    Row("CumSum-3", "opset3", _cumsum, _cumsum_ref,
        lambda n, c: _mod("opset3").cumsum(*n, c.attrs["exclusive"], c.attrs["reverse"])),
    Row("TopK-11", "opset11", _topk, _topk_ref,
        lambda n, c: _mod("opset11").topk(n[0], n[1], c.attrs["axis"], c.attrs["mode"], c.attrs["sort"],
                                          c.attrs["index_element_type"], True)),
    Row("StridedSlice-1", "opset1", _strided, _strided_ref,
        lambda n, c: _mod("opset1").strided_slice(*n, c.attrs["begin_mask"], c.attrs["end_mask"],
                                                  c.attrs["new_axis_mask"], c.attrs["shrink_axis_mask"],
                                                  c.attrs["ellipsis_mask"])),
]
