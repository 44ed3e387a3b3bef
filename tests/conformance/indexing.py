"""Rows for the ops indexing by data: ScatterUpdate-3, ScatterElementsUpdate-3/12, GatherND-5/8, OneHot-1/16.

Indices are drawn in range (negative ones too, where the op takes them); out-of-range indices are
tests/test_ops_indexing.py's business.  Without a reduction, ScatterUpdate and ScatterElementsUpdate
draw distinct targets: which of two updates to one element wins is undefined in OpenVINO's spec."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (np.float32, np.float16, np.float64, BF16, np.int32, np.int64)
IDX_TYPES = (np.int32, np.int64)


def _data(rng, dims, dtypes=DTYPES):
    dt = dtypes[int(rng.integers(len(dtypes)))]
    return rng.integers(-9, 10, dims).astype(dt) if np.dtype(dt).kind == "i" else floats(rng, dims, dt)


def shape(rng, rank, lo=1, hi=5):
    # (not the package's `shape`: importing tests/conformance/shape.py rebinds that name to the module)
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))


def _dyn(rng):
    return bool(rng.integers(2))


def _idx_type(rng):
    return IDX_TYPES[int(rng.integers(len(IDX_TYPES)))]


def _negate_some(rng, idx: np.ndarray, n: int) -> np.ndarray:
    """Some in-range indices written as their negative twin (i - n)."""
    return np.where(rng.integers(2, size=idx.shape).astype(bool), idx - n, idx)


# ---- ScatterUpdate-3 ------------------------------------------------------------------------------


def _scatter_update(rng):
    x = _data(rng, shape(rng, int(rng.integers(1, 4)), 1, 5))
    ax = int(rng.integers(-x.ndim, x.ndim))
    d = x.shape[ax]
    ishape = shape(rng, int(rng.integers(0, 3)), 1, 3)
    m = min(int(np.prod(ishape)), d)
    ishape = (m,) if int(np.prod(ishape)) > d else ishape
    idx = rng.permutation(d)[:m].reshape(ishape).astype(_idx_type(rng))  # distinct, in [0, d-1]
    a = ax % x.ndim
    upd = _data(rng, x.shape[:a] + tuple(ishape) + x.shape[a + 1:], (x.dtype,))
    return Case((x, idx, upd, np.array(ax, np.int64)), params=(0, 1, 2), dynamic=_dyn(rng),
                label=f"axis {ax} indices {list(ishape)}",
                not_openvino="the CPU plugin refuses scalar indices" if idx.ndim == 0 else "")


# ---- ScatterElementsUpdate-3/12 --------------------------------------------------------------------


def _scatter_elements(reductions):
    def sample(rng):
        x = _data(rng, shape(rng, int(rng.integers(1, 4)), 1, 5))
        ax = int(rng.integers(-x.ndim, x.ndim))
        a = ax % x.ndim
        red = str(rng.choice(reductions))
        ishape = [int(rng.integers(1, n + 1)) for n in x.shape]  # no larger than data off the axis
        d = x.shape[a]
        if red == "none":  # distinct targets per fiber along the axis
            ishape[a] = int(rng.integers(1, d + 1))
            full = list(ishape)
            full[a] = d
            perm = np.argsort(rng.random(full), axis=a)
            idx = np.take(perm, range(ishape[a]), axis=a)
        else:
            ishape[a] = int(rng.integers(1, 2 * d + 1))
            idx = rng.integers(0, d, ishape)
        idx = _negate_some(rng, idx, d).astype(_idx_type(rng))
        upd = _data(rng, tuple(ishape), (x.dtype,))
        if red == "mean" and x.dtype.kind == "i":  # non-negative: the CPU plugin truncates where the spec floors
            x, upd = np.abs(x), np.abs(upd)  # (docs/ir-format.md §12; tests/test_ops_indexing.py has negative means)
        if red == "prod":  # keep products of several factors near 1
            upd = (rng.choice([-1.0, 0.5, 1.0, 1.5, 2.0], tuple(ishape)) if x.dtype.kind == "f" else
                   rng.choice([-1, 1, 2], tuple(ishape))).astype(x.dtype)
        attrs = {} if len(reductions) == 1 else {"reduction": red, "use_init_val": bool(rng.integers(2))}
        return Case((x, idx, upd, np.array(ax, np.int64)), attrs, params=(0, 1, 2), dynamic=_dyn(rng),
                    label=f"axis {ax} indices {ishape} {attrs}")

    return sample


def _scatter_elements_ref(c: Case):
    x, idx, upd, ax = c.inputs
    return [R.scatter_elements_update(x, idx, upd, int(ax), c.attrs.get("reduction", "none"),
                                      c.attrs.get("use_init_val", True))]


# ---- GatherND-5/8 --------------------------------------------------------------------------------


def _gather_nd(rng):
    b = int(rng.integers(0, 3))
    x = _data(rng, shape(rng, b + int(rng.integers(1, 4)), 1, 4))
    k = int(rng.integers(1, x.ndim - b + 1))
    lead = x.shape[:b] + shape(rng, int(rng.integers(0, 3)), 1, 3)
    cols = [_negate_some(rng, rng.integers(0, x.shape[b + j], lead), x.shape[b + j]) for j in range(k)]
    idx = np.stack(cols, axis=-1).astype(_idx_type(rng))
    dyn = _dyn(rng)  # dynamic: indices stay a Const (the CPU plugin refuses an output of unknown rank)
    return Case((x, idx), {"batch_dims": b}, params=(0,) if dyn else (0, 1), dynamic=dyn,
                label=f"b {b} k {k} {list(idx.shape)}")


# ---- OneHot-1/16 ----------------------------------------------------------------------------------


def _one_hot(modes):
    def sample(rng):
        ind = shape(rng, int(rng.integers(0, 4)), 1, 4)
        depth = int(rng.integers(1, 6))
        idx = rng.integers(-depth - 1, depth + 2, ind).astype(_idx_type(rng))
        dt = DTYPES[int(rng.integers(len(DTYPES)))]
        on, off = np.array(rng.integers(1, 9), dt), np.array(-rng.integers(0, 9), dt)
        attrs = {"axis": int(rng.integers(-len(ind) - 1, len(ind) + 1))}
        if len(modes) > 1:
            attrs["negative_indices_mode"] = str(rng.choice(modes))
        params = (0, 1) if rng.integers(3) == 0 else (0,)  # depth sometimes a run-time input
        return Case((idx, np.array(depth, np.int64), on, off), attrs, params=params, dynamic=_dyn(rng),
                    label=f"depth {depth} {attrs} params {params}",
                    not_openvino="the CPU plugin refuses scalar indices" if not ind else "")

    return sample


def _one_hot_ref(c: Case):
    idx, depth, on, off = c.inputs
    return [R.one_hot(idx, int(depth), on, off, c.attrs["axis"],
                      c.attrs.get("negative_indices_mode") == "normalize")]


def _mod(name):
    import importlib

    return importlib.import_module(f"openvino.{name}")


ROWS = [
    Row("ScatterUpdate-3", "opset3", _scatter_update,
        lambda c: [R.scatter_update(*c.inputs[:3], int(c.inputs[3]))],
        lambda n, c: _mod("opset3").scatter_update(*n)),
    Row("ScatterElementsUpdate-3", "opset3", _scatter_elements(["none"]), _scatter_elements_ref,
        lambda n, c: _mod("opset3").scatter_elements_update(*n)),
    Row("ScatterElementsUpdate-12", "opset12", _scatter_elements(["none", "sum", "prod", "min", "max", "mean"]),
        _scatter_elements_ref,
        lambda n, c: _mod("opset12").scatter_elements_update(*n, c.attrs["reduction"], c.attrs["use_init_val"]),
        cases=24),
    Row("GatherND-5", "opset5", _gather_nd,
        lambda c: [R.gather_nd(*c.inputs, c.attrs["batch_dims"], fold_batch=True)],
        lambda n, c: _mod("opset5").gather_nd(*n, c.attrs["batch_dims"])),
    Row("GatherND-8", "opset8", _gather_nd, lambda c: [R.gather_nd(*c.inputs, c.attrs["batch_dims"])],
        lambda n, c: _mod("opset8").gather_nd(*n, c.attrs["batch_dims"])),
    Row("OneHot-1", "opset1", _one_hot(["ignore_negative"]), _one_hot_ref,
        lambda n, c: _mod("opset1").one_hot(*n, c.attrs["axis"])),
    Row("OneHot-16", "opset16", _one_hot(["ignore_negative", "normalize"]), _one_hot_ref,
        lambda n, c: _mod("opset16").one_hot(*n, c.attrs["axis"], c.attrs["negative_indices_mode"])),
]
