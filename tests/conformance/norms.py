"""Rows for the normalization family (OpenVINO opsets)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats, shape

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = (np.float32, np.float16, np.float64, BF16)


def _group_norm_case(rng: np.random.Generator) -> Case:
    # rank >= 3: OpenVINO's CPU plugin has no rank-2 GroupNormalization (its reference fallback is missing)
    rank = int(rng.integers(3, 6))
    groups = int(rng.choice([1, 2, 4]))
    dims = list(shape(rng, rank))
    dims[1] = groups * int(rng.integers(1, 4))
    dt = FLOAT_DTYPES[int(rng.integers(len(FLOAT_DTYPES)))]
    shift = float(rng.choice([0.0, 3.0, 100.0]))
    x = floats(rng, dims, dt, shift=shift)
    c = dims[1]
    return Case((x, floats(rng, [c], dt), floats(rng, [c], dt)),
                {"num_groups": groups, "epsilon": float(rng.choice([1e-5, 1e-3]))},
                dynamic=bool(rng.integers(2)), label=f"{np.dtype(dt).name} shift {shift}")


def _group_norm_ov(nodes, case: Case):
    import openvino.opset12 as op12

    return op12.group_normalization(*nodes, case.attrs["num_groups"], case.attrs["epsilon"])


def _l2_case(rng: np.random.Generator) -> Case:
    rank = int(rng.integers(1, 5))
    x = floats(rng, shape(rng, rank), FLOAT_DTYPES[int(rng.integers(len(FLOAT_DTYPES)))])
    k = int(rng.integers(0, rank + 1))
    axes = sorted(int(a) for a in rng.choice(rank, size=k, replace=False)) if k else []
    axes = [a - rank if rng.integers(2) else a for a in axes]  # negative axes too
    # The CPU plugin applies the spec's empty-axes rule only at ranks 2-4 (docs/ir-format.md, NormalizeL2).
    odd = "empty axes at rank 1 or 5+" if not axes and not 2 <= rank <= 4 else ""
    return Case((x, np.array(axes, np.int64)), {"eps": float(rng.choice([1e-12, 1e-3, 0.5])),
                                                 "eps_mode": str(rng.choice(["add", "max"]))},
                dynamic=bool(rng.integers(2)), label=f"axes {axes}", not_openvino=odd)


def _l2_ov(nodes, case: Case):
    import openvino.opset1 as op1

    return op1.normalize_l2(nodes[0], nodes[1], case.attrs["eps"], case.attrs["eps_mode"])


ROWS = [
    Row("GroupNormalization-12", "opset12", _group_norm_case,
        lambda c: [R.group_normalization(*c.inputs, c.attrs["num_groups"], c.attrs["epsilon"])], _group_norm_ov),
    Row("NormalizeL2-1", "opset1", _l2_case,
        lambda c: [R.normalize_l2(c.inputs[0], [int(a) for a in c.inputs[1]], c.attrs["eps"], c.attrs["eps_mode"])],
        _l2_ov),
]
