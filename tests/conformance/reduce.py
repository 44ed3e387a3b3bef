"""Rows for the reductions (opset1 ReduceSum/Mean/Max/Min/Prod/LogicalAnd/LogicalOr, opset4 ReduceL1/L2)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats, shape

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float16, np.float64, BF16)


def _case(kind: str):
    def sample(rng: np.random.Generator) -> Case:
        rank = int(rng.integers(1, 5))
        dims = shape(rng, rank)
        if kind in ("and", "or"):
            x = rng.random(dims) < (0.8 if kind == "and" else 0.2)
        elif kind == "prod":
            x = rng.uniform(0.5, 1.5, dims).astype(FLOATS[int(rng.integers(len(FLOATS)))])
        elif rng.integers(4) == 0:  # integers too
            x = rng.integers(-5, 6, dims).astype(np.int32)
        else:
            x = floats(rng, dims, FLOATS[int(rng.integers(len(FLOATS)))])
        k = int(rng.integers(1, rank + 1))
        axes = sorted(int(a) for a in rng.choice(rank, size=k, replace=False))
        axes = [a - rank if rng.integers(2) else a for a in axes]  # negative axes too
        runtime_axes = rng.integers(3) == 0  # axes as a model input, as ONNX opset-18 exports give them
        keep = bool(rng.integers(2))
        not_ov = ""
        if runtime_axes and kind in ("and", "or"):
            not_ov = "OpenVINO's CPU plugin cannot run ReduceLogicalAnd/Or with run-time axes"
        elif runtime_axes and kind == "l2" and x.dtype.kind in "iu":
            not_ov = "OpenVINO's CPU plugin cannot run an integer ReduceL2 with run-time axes"
        elif runtime_axes and k == rank and not keep:
            not_ov = "OpenVINO makes the rank of a full reduction with run-time axes dynamic; its CPU plugin refuses it"
        return Case((x, np.array(axes, np.int64)), {"keep_dims": keep}, not_openvino=not_ov,
                    # (a dynamic axes count would make the output rank dynamic, which OpenVINO's CPU plugin refuses)
                    params=(0, 1) if runtime_axes else (0,), dynamic=bool(rng.integers(2)) and not runtime_axes,
                    label=f"{x.dtype} axes {axes}{' (an input)' if runtime_axes else ''}")

    return sample


def _ref(kind: str):
    def ref(c: Case) -> list[np.ndarray]:
        x, axes = c.inputs
        y = R.reduce(kind, x, [int(a) for a in axes], c.attrs["keep_dims"])
        if x.dtype.kind in "iu":  # integer reductions: exact in the data's type (Mean truncates)
            y = np.trunc(y).astype(x.dtype) if kind == "mean" else y.astype(x.dtype)
        return [y]

    return ref


def _ov(name: str, module: str):
    def build(nodes, c: Case):
        import importlib

        return getattr(importlib.import_module(f"openvino.{module}"), name)(nodes[0], nodes[1], c.attrs["keep_dims"])

    return build


ROWS = [
    Row(f"{t}-{v}", f"opset{v}", _case(k), _ref(k), _ov(fn, f"opset{v}"))
    for t, v, k, fn in (
        ("ReduceSum", 1, "sum", "reduce_sum"), ("ReduceMean", 1, "mean", "reduce_mean"),
        ("ReduceMax", 1, "max", "reduce_max"), ("ReduceMin", 1, "min", "reduce_min"),
        ("ReduceProd", 1, "prod", "reduce_prod"), ("ReduceL1", 4, "l1", "reduce_l1"),
        ("ReduceL2", 4, "l2", "reduce_l2"), ("ReduceLogicalAnd", 1, "and", "reduce_logical_and"),
        ("ReduceLogicalOr", 1, "or", "reduce_logical_or"),
    )
]
