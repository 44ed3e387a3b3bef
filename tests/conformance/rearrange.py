"""Rows for the rearranging and generating ops: SpaceToDepth, DepthToSpace, ReverseSequence, Eye,
Identity, NonZero."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (np.float32, np.float16, np.float64, BF16, np.int32, np.int64, np.int8, np.uint8)


def shape(rng, rank, lo=1, hi=5):  # (conformance.shape, the helper, is shadowed by the family module shape.py)
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))


def _values(rng, dims, dt):
    if np.dtype(dt).kind in "iu":
        return rng.integers(0 if np.dtype(dt).kind == "u" else -9, 10, dims).astype(dt)
    return floats(rng, dims, dt)


def _dtype(rng):
    return DTYPES[int(rng.integers(len(DTYPES)))]


def _dyn(rng):
    return bool(rng.integers(2))


def _mod(name):
    return importlib.import_module(f"openvino.{name}")


def _blocks(to_depth: bool):
    def sample(rng):
        k = int(rng.integers(1, 4))  # spatial dims
        bs = int(rng.integers(1, 4 if k < 3 else 3))
        mode = str(rng.choice(["blocks_first", "depth_first"]))
        n = int(rng.integers(1, 3))
        if to_depth:
            dims = (n, int(rng.integers(1, 4))) + tuple(bs * d for d in shape(rng, k, 1, 3))
        else:
            dims = (n, int(rng.integers(1, 3)) * bs ** k) + shape(rng, k, 1, 3)
        attrs = {"mode": mode, "block_size": bs}
        return Case((_values(rng, dims, _dtype(rng)),), attrs, dynamic=_dyn(rng), label=f"{dims} {mode} bs {bs}")

    return sample


def _reverse_sequence(rng):
    x = _values(rng, shape(rng, int(rng.integers(2, 5)), 1, 5), _dtype(rng))
    ba, sa = (int(a) for a in rng.choice(x.ndim, 2, replace=False))
    ba, sa = (a - x.ndim if rng.integers(2) else a for a in (ba, sa))  # negative axes too
    lens = rng.integers(0, x.shape[sa] + 1, x.shape[ba]).astype(np.int32 if rng.integers(2) else np.int64)
    params = (0, 1) if rng.integers(2) else (0,)
    return Case((x, lens), {"batch_axis": ba, "seq_axis": sa}, params=params, dynamic=_dyn(rng),
                label=f"batch {ba} seq {sa} lengths {lens.tolist()}")


EYE_TYPES = ("f32", "f16", "f64", "i32", "i64", "i8", "u8")


def _eye(rng):
    it = np.int32 if rng.integers(2) else np.int64
    rows, cols = (int(v) for v in rng.integers(0, 6, 2))
    diag = int(rng.integers(-7, 8))
    ins = [np.array(rows, it), np.array(cols, it), np.array(diag, it)]
    if rng.integers(2):
        ins.append(np.array(shape(rng, int(rng.integers(0, 3)), 1, 3), it))
    params = tuple(int(i) for i in np.flatnonzero(rng.integers(0, 2, len(ins))))
    dyn = _dyn(rng)
    if dyn:  # a batch_shape of unknown length leaves the rank unknown, which OpenVINO's CPU plugin refuses
        params = tuple(i for i in params if i != 3)
    t = str(rng.choice(EYE_TYPES))
    empty = len(ins) > 3 and ins[3].size == 0
    return Case(tuple(ins), {"output_type": t}, params=params, dynamic=dyn,
                label=f"{rows}x{cols} diag {diag} batch {ins[3].tolist() if len(ins) > 3 else None} {t} {params}",
                not_openvino="the CPU plugin leaves the output unwritten for an empty batch_shape (docs/ir-format.md "
                             "§12)" if empty else "")


def _eye_ov(n, c):
    return _mod("opset9").eye(n[0], n[1], n[2], c.attrs["output_type"], n[3] if len(n) > 3 else None)


def _identity(rng):
    x = _values(rng, shape(rng, int(rng.integers(0, 4))), _dtype(rng))
    return Case((x,), dynamic=_dyn(rng), label=f"{x.shape} {x.dtype}")


def _non_zero(rng):
    dt = (np.float32, np.float16, np.int32, np.int64, np.uint8, np.bool_, BF16)[int(rng.integers(7))]
    x = rng.integers(-1, 2, shape(rng, int(rng.integers(0, 4)), 0 if rng.integers(4) == 0 else 1, 4))
    x = (x * rng.integers(0, 2, x.shape)).astype(dt) if dt != np.uint8 else np.abs(x).astype(dt)
    t = str(rng.choice(["i32", "i64"]))
    params = (0,) if rng.integers(4) else ()
    why = ""
    if not params and x.ndim == 0 and not x:
        why = "OpenVINO folds a constant zero scalar to [0, 0] (docs/ir-format.md §12)"
    elif not params and x.size == 1 and x.ndim >= 2 and t == "i32":
        why = "OpenVINO folds a one-element constant of rank >= 2 to garbage rows with i32 (docs/ir-format.md §12)"
    return Case((x,), {"output_type": t}, params=params, dynamic=_dyn(rng), label=f"{x.shape} {x.dtype} {t}",
                not_openvino=why)


def _non_zero_ref(c: Case):
    return [R.non_zero(c.inputs[0]).astype(np.int32 if c.attrs["output_type"] == "i32" else np.int64)]


ROWS = [
    Row("SpaceToDepth-1", "opset1", _blocks(True),
        lambda c: [R.space_to_depth(c.inputs[0], c.attrs["block_size"], c.attrs["mode"])],
        lambda n, c: _mod("opset1").space_to_depth(n[0], c.attrs["mode"], c.attrs["block_size"])),
    Row("DepthToSpace-1", "opset1", _blocks(False),
        lambda c: [R.depth_to_space(c.inputs[0], c.attrs["block_size"], c.attrs["mode"])],
        lambda n, c: _mod("opset1").depth_to_space(n[0], c.attrs["mode"], c.attrs["block_size"])),
    Row("ReverseSequence-1", "opset1", _reverse_sequence,
        lambda c: [R.reverse_sequence(*c.inputs, c.attrs["batch_axis"], c.attrs["seq_axis"])],
        lambda n, c: _mod("opset1").reverse_sequence(*n, c.attrs["batch_axis"], c.attrs["seq_axis"])),
    Row("Eye-9", "opset9", _eye,
        lambda c: [R.eye(*(int(v) for v in c.inputs[:3]), [int(v) for v in c.inputs[3]] if len(c.inputs) > 3
                         else ())],
        _eye_ov),
    Row("Identity-16", "opset16", _identity, lambda c: [np.array(c.inputs[0], copy=True)],
        lambda n, c: _mod("opset16").identity(n[0])),
    Row("NonZero-3", "opset3", _non_zero, _non_zero_ref,
        lambda n, c: _mod("opset3").non_zero(n[0], c.attrs["output_type"])),
]
