"""Rows for the embedding bags (EmbeddingBagOffsets-15, EmbeddingBagPacked-15, EmbeddingBagOffsetsSum-3,
EmbeddingBagPackedSum-3, EmbeddingSegmentsSum-3) and Col2Im-15.

The CPU plugin cannot compile an embedding bag with per_sample_weights when the shapes are dynamic
("to_shape was called on a dynamic shape"), so weighted cases are static.  Cases the plugin gets wrong
(an offset equal to the number of indices, packed bags of no indices: it reads unwritten memory, see
docs/ir-format.md) are compared with the float64 oracle only."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float16, np.float64, BF16)
INTS = (np.int32, np.int64, np.int8, np.uint8)


def _mod(name):
    return importlib.import_module(f"openvino.{name}")


def _table(rng, num, allow_int=True):
    """A table [num, d...] of rank 1-3: float (mostly) or small integers (exact sums)."""
    dims = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(0, 3))))
    if allow_int and rng.integers(4) == 0:
        dt = INTS[int(rng.integers(len(INTS)))]
        return rng.integers(0 if np.dtype(dt).kind == "u" else -9, 10, (num,) + dims).astype(dt)
    return floats(rng, (num,) + dims, FLOATS[int(rng.integers(len(FLOATS)))])


def _weights(rng, table, shape):
    if table.dtype.kind in "iu":
        return rng.integers(0 if table.dtype.kind == "u" else -3, 4, shape).astype(table.dtype)
    return floats(rng, shape, table.dtype)


def _idx_dtype(rng):
    return (np.int32, np.int64)[int(rng.integers(2))]


# ---- offsets ---------------------------------------------------------------------------------------------------


def _offsets_case(rng, v15: bool):
    num = int(rng.integers(1, 9))
    t = _table(rng, num)
    it = _idx_dtype(rng)
    n = int(rng.integers(0, 12))
    idx = rng.integers(0, num, n).astype(it)
    b = int(rng.integers(1, 6))
    off = np.sort(rng.integers(0, n + 1, b)).astype(it)
    if rng.integers(2):
        off[0] = 0
    reduction = str(rng.choice(["sum", "mean"])) if v15 else "sum"
    ins = [t, idx, off]
    with_default = rng.integers(3) > 0
    with_w = reduction == "sum" and rng.integers(2) == 0
    if with_default or with_w:
        ins.append(np.array(int(rng.integers(-1, num)), it))
    if with_w:
        ins.append(_weights(rng, t, (n,)))
    dynamic = not with_w and bool(rng.integers(2))
    at_end = bool(off.size and off[-1] == n)
    return Case(tuple(ins), {"reduction": reduction} if v15 else {}, params=(0, 1, 2) if rng.integers(2) else (1, 2),
                dynamic=dynamic, label=f"table {t.shape} {t.dtype} offsets {off.tolist()} n={n} {reduction} "
                                       f"inputs={len(ins)}",
                not_openvino="the CPU plugin reads past the indices for an offset equal to their count"
                if at_end else "")


def _offsets_ref(c: Case):
    ins = c.inputs
    d = int(ins[3]) if len(ins) > 3 else None
    return [R.embedding_bag_offsets(ins[0], ins[1], ins[2], d, ins[4] if len(ins) > 4 else None,
                                    c.attrs.get("reduction", "sum"))]


def _offsets_ov(n, c: Case):
    if "reduction" in c.attrs:
        return _mod("opset15").embedding_bag_offsets(*n[:3], *n[3:], reduction=c.attrs["reduction"])
    return _mod("opset3").embedding_bag_offsets_sum(*n)


# ---- packed ----------------------------------------------------------------------------------------------------


def _packed_case(rng, v15: bool):
    num = int(rng.integers(1, 9))
    t = _table(rng, num)
    b, k = int(rng.integers(1, 6)), int(rng.integers(0, 5))
    idx = rng.integers(0, num, (b, k)).astype(_idx_dtype(rng))
    reduction = str(rng.choice(["sum", "mean"])) if v15 else "sum"
    ins = [t, idx]
    with_w = reduction == "sum" and rng.integers(2) == 0
    if with_w:
        ins.append(_weights(rng, t, (b, k)))
    return Case(tuple(ins), {"reduction": reduction} if v15 else {}, params=(0, 1) if rng.integers(2) else (1,),
                dynamic=not with_w and bool(rng.integers(2)),
                label=f"table {t.shape} {t.dtype} indices {idx.shape} {reduction} weights={with_w}",
                not_openvino="the CPU plugin leaves bags of no indices unwritten" if k == 0 else "")


def _packed_ref(c: Case):
    ins = c.inputs
    return [R.embedding_bag_packed(ins[0], ins[1], ins[2] if len(ins) > 2 else None, c.attrs.get("reduction", "sum"))]


def _packed_ov(n, c: Case):
    if "reduction" in c.attrs:
        return _mod("opset15").embedding_bag_packed(*n, reduction=c.attrs["reduction"])
    return _mod("opset3").embedding_bag_packed_sum(*n)


# ---- segments --------------------------------------------------------------------------------------------------


def _segments_case(rng):
    num = int(rng.integers(1, 9))
    t = _table(rng, num)
    it = _idx_dtype(rng)
    n = int(rng.integers(0, 12))
    segs = int(rng.integers(0, 6))
    idx = rng.integers(0, num, n).astype(it)
    seg = np.sort(rng.integers(-1, segs + 2, n)).astype(it)  # ids outside [0, segs) are dropped
    ins = [t, idx, seg, np.array(segs, it)]
    with_w = rng.integers(2) == 0
    if with_w or rng.integers(2):
        ins.append(np.array(int(rng.integers(0, num)), it))
    if with_w:
        ins.append(_weights(rng, t, (n,)))
    params = (0, 1, 2) if rng.integers(2) else (1, 2, 3)
    return Case(tuple(ins), {}, params=params, dynamic=not with_w and bool(rng.integers(2)),
                label=f"table {t.shape} {t.dtype} segment_ids {seg.tolist()} of {segs} inputs={len(ins)}",
                not_openvino="the CPU plugin cannot run num_segments = 0 given at run time"
                if segs == 0 and 3 in params else "")


def _segments_ref(c: Case):
    ins = c.inputs
    return [R.embedding_segments_sum(ins[0], ins[1], ins[2], int(ins[3]), int(ins[4]) if len(ins) > 4 else None,
                                     ins[5] if len(ins) > 5 else None)]


# ---- Col2Im ----------------------------------------------------------------------------------------------------


def _col2im_case(rng):
    while True:
        k = [int(v) for v in rng.integers(1, 4, 2)]
        s = [int(v) for v in rng.integers(1, 4, 2)]
        d = [int(v) for v in rng.integers(1, 3, 2)]
        pb = [int(v) for v in rng.integers(0, 3, 2)]
        pe = [int(v) for v in rng.integers(0, 3, 2)]
        size = [int(v) for v in rng.integers(1, 9, 2)]
        nb = []
        for a in range(2):
            span = size[a] + pb[a] + pe[a] - (d[a] * (k[a] - 1) + 1)
            nb.append(span // s[a] + 1 if span >= 0 else 0)
        if nb[0] * nb[1] > 0:
            break
    c = int(rng.integers(1, 4))
    batched = rng.integers(4) > 0
    shape = ((int(rng.integers(1, 3)),) if batched else ()) + (c * k[0] * k[1], nb[0] * nb[1])
    if rng.integers(5) == 0:
        x = rng.integers(-20, 20, shape).astype(np.int32)
    else:
        x = floats(rng, shape, FLOATS[int(rng.integers(len(FLOATS)))])
    it = _idx_dtype(rng)
    attrs = {"strides": s, "dilations": d, "pads_begin": pb, "pads_end": pe}
    return Case((x, np.array(size, it), np.array(k, it)), attrs, dynamic=bool(rng.integers(2)),
                label=f"data {shape} {x.dtype} output_size {size} kernel {k} {attrs}")


def _col2im_ref(c: Case):
    a = c.attrs
    return [R.col2im(c.inputs[0], c.inputs[1], c.inputs[2], a["strides"], a["dilations"], a["pads_begin"],
                     a["pads_end"])]


def _col2im_ov(n, c: Case):
    a = c.attrs
    return _mod("opset15").col2im(n[0], n[1], n[2], strides=a["strides"], dilations=a["dilations"],
                                  pads_begin=a["pads_begin"], pads_end=a["pads_end"])


# f64 embedding sums of up to 12 rows, float32 sums of O(1) values: the default tolerances hold.
ROWS = [
    Row("EmbeddingBagOffsets-15", "opset15", lambda rng: _offsets_case(rng, True), _offsets_ref, _offsets_ov, cases=16),
    Row("EmbeddingBagOffsetsSum-3", "opset3", lambda rng: _offsets_case(rng, False), _offsets_ref, _offsets_ov),
    Row("EmbeddingBagPacked-15", "opset15", lambda rng: _packed_case(rng, True), _packed_ref, _packed_ov, cases=16),
    Row("EmbeddingBagPackedSum-3", "opset3", lambda rng: _packed_case(rng, False), _packed_ref, _packed_ov),
    Row("EmbeddingSegmentsSum-3", "opset3", _segments_case, _segments_ref,
        lambda n, c: _mod("opset3").embedding_segments_sum(*n), cases=16),
    Row("Col2Im-15", "opset15", _col2im_case, _col2im_ref, _col2im_ov, cases=16),
]
