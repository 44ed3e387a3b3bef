"""ScatterElementsUpdate without reduction, in order: ``out[..., idx[p], ...] = values[p]`` for every index
element p in C order, so a repeated target keeps the last value, as ScatterElementsUpdate-3/12 defines it.
numpy's fancy assignment does not promise an order for repeated indices, and making it safe (keeping each
offset's last occurrence via np.unique) sorted the whole index array: 30 ms for the 1.9M indices of Faster
R-CNN's RoI-pooling scatter.  Here one pass walks the indices' coordinates (an odometer, no divisions),
checks each index against the axis and writes: ~2 ms."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit(nogil=True, cache=True)
def _scatter_along_axis(out, idx, values, idx_shape, strides, axis, n_axis):
    """out: the data's flat copy; idx / values: flat, C order over idx_shape; strides: the data's, in
    elements.  Returns -1, or the position of the first index outside [-n_axis, n_axis) (nothing after it
    is written)."""
    rank = idx_shape.shape[0]
    coords = np.zeros(rank, np.int64)
    base = 0  # offset of the coordinates off the axis
    step = strides[axis]
    for p in range(idx.shape[0]):
        v = np.int64(idx[p])
        if v < 0:
            v += n_axis
        if v < 0 or v >= n_axis:
            return p
        out[base + v * step] = values[p]
        k = rank - 1
        while k >= 0:
            coords[k] += 1
            if k != axis:
                base += strides[k]
            if coords[k] < idx_shape[k]:
                break
            if k != axis:
                base -= strides[k] * idx_shape[k]
            coords[k] = 0
            k -= 1
    return -1


def scatter_along_axis(data: np.ndarray, idx: np.ndarray, values: np.ndarray, axis: int) -> tuple[np.ndarray, int]:
    """(a copy of data with the updates, -1) -- or (partial copy, p) when index p (flat, C order) is out of
    range, for the caller to report.  idx and values share a shape no larger than data's off the axis (the
    caller checks).  Any element type: elements are copied as unsigned integers of their size; indices of
    any integer type (a u64 past int64's range must be clamped by the caller)."""
    out = np.array(data, copy=True, order="C")
    bits = np.dtype(f"u{out.dtype.itemsize}")
    strides = np.array([s // out.itemsize for s in out.strides] if out.ndim else [], np.int64)
    if idx.size == 0:
        return out, -1
    bad = _scatter_along_axis(out.reshape(-1).view(bits), np.ascontiguousarray(idx).reshape(-1),
                              np.ascontiguousarray(values).reshape(-1).view(bits),
                              np.array(idx.shape, np.int64), strides, axis, data.shape[axis])
    return out, int(bad)
