"""Rows for the channel and batch shuffles and GRN: ShuffleChannels, SpaceToBatch, BatchToSpace, GRN."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (np.float32, np.float16, np.float64, BF16, np.int32, np.int64, np.int8, np.uint8, np.bool_)
FLOATS = (np.float32, np.float16, np.float64, BF16)


def shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))


def _values(rng, dims, dt):
    if np.dtype(dt) == np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if np.dtype(dt).kind in "iu":
        return rng.integers(0 if np.dtype(dt).kind == "u" else -9, 10, dims).astype(dt)
    return floats(rng, dims, dt)


def _dtype(rng, choices=DTYPES):
    return choices[int(rng.integers(len(choices)))]


def _mod(name):
    return importlib.import_module(f"openvino.{name}")


def _shuffle(rng):
    rank = int(rng.integers(1, 5))
    dims = list(shape(rng, rank, 1, 4))
    axis = int(rng.integers(-rank, rank))
    group = int(rng.integers(1, 4))
    dims[axis] = group * int(rng.integers(1, 4))
    x = _values(rng, dims, _dtype(rng))
    return Case((x,), {"axis": axis, "group": group}, dynamic=bool(rng.integers(2)),
                label=f"{tuple(dims)} {x.dtype} axis {axis} group {group}")


def _batch(to_batch: bool):
    """block_shape / pads (crops) as Consts or as model inputs (i32 or i64, as exporters write them)."""

    def sample(rng):
        k = int(rng.integers(1, 4))  # spatial dims
        block = [1] + [int(b) for b in rng.integers(1, 4, k)]
        it = np.int32 if rng.integers(2) else np.int64
        if to_batch:
            begin = [0] + [int(p) for p in rng.integers(0, 3, k)]
            dims = [int(rng.integers(1, 3))]
            end = [0]
            for b, p in zip(block[1:], begin[1:], strict=True):
                d = int(rng.integers(1, 5))
                dims.append(d)
                end.append((-(d + p)) % b + b * int(rng.integers(0, 2)))
        else:
            dims = [int(rng.integers(1, 3)) * int(np.prod(block))] + [int(d) for d in rng.integers(1, 4, k)]
            begin, end = [0], [0]
            for b, d in zip(block[1:], dims[1:], strict=True):
                c = int(rng.integers(0, d * b + 1))
                p = int(rng.integers(0, c + 1))
                begin.append(p)
                end.append(c - p)
        x = _values(rng, dims, _dtype(rng))
        params = (0, 1, 2, 3) if rng.integers(3) == 0 else (0,)
        names = ("pads", "crops")[not to_batch]
        why = ""
        if to_batch and len(dims) in (4, 5) and any(d < b for d, b in zip(dims[1:], block[1:], strict=True)):
            why = ("the 4-D/5-D CPU kernel fills a block offset that holds only padding with other data values "
                   "(docs/ir-format.md, ShuffleChannels-1, SpaceToBatch-2, BatchToSpace-2, GRN-1)")
        dynamic = bool(rng.integers(2))
        if dynamic and len(params) > 1 and len(dims) not in (4, 5):
            why = ("with index inputs of unknown length the CPU plugin keeps its own node, which refuses data ranks "
                   "other than 4 and 5")
        return Case((x, np.array(block, it), np.array(begin, it), np.array(end, it)), params=params,
                    dynamic=dynamic, not_openvino=why,
                    label=f"{tuple(dims)} {x.dtype} block {block} {names} {begin} {end} {np.dtype(it)} {params}")

    return sample


def _grn(rng):
    x = floats(rng, shape(rng, int(rng.integers(2, 5)), 1, 5), _dtype(rng, FLOATS), scale=float(rng.choice([1, 5])))
    bias = float(rng.choice([1e-4, 0.25, 1.0, 3.5]))  # all exact in float32 (irnorm keeps the bias as float32)
    bias = float(np.float32(bias))
    return Case((x,), {"bias": bias}, dynamic=bool(rng.integers(2)), label=f"{x.shape} {x.dtype} bias {bias}")


ROWS = [
    Row("ShuffleChannels-1", "opset1", _shuffle,
        lambda c: [R.shuffle_channels(c.inputs[0], c.attrs["axis"], c.attrs["group"])],
        lambda n, c: _mod("opset3").shuffle_channels(n[0], c.attrs["axis"], c.attrs["group"])),
    Row("SpaceToBatch-2", "opset2", _batch(True), lambda c: [R.space_to_batch(*c.inputs)],
        lambda n, c: _mod("opset2").space_to_batch(*n)),
    Row("BatchToSpace-2", "opset2", _batch(False), lambda c: [R.batch_to_space(*c.inputs)],
        lambda n, c: _mod("opset2").batch_to_space(*n)),
    Row("GRN-1", "opset1", _grn, lambda c: [R.grn(c.inputs[0], c.attrs["bias"])],
        lambda n, c: _mod("opset1").grn(n[0], c.attrs["bias"])),
]
