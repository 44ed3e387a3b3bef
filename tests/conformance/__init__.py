"""The op conformance table: one :class:`Row` per registered operator version.

A row names the op, how to draw a case from its attribute/shape/dtype space, its float64 oracle
(a function of ``irnorm.reference``) and, where OpenVINO's Python API can build it, the OpenVINO
builder.  ``tests/test_conformance.py`` replays every row twice:

* against the oracle (no OpenVINO needed): the case is written as IR by ``tests/irbuilder.py``
  (Parameters for ``Case.params``, Consts for the other inputs, dims declared dynamic when
  ``Case.dynamic``), loaded and run by irnorm, and compared with the float64 reference;
* against OpenVINO (skipped cleanly when it is absent, or when the row has no builder): the same
  case is built with OpenVINO's opset API, written by ``openvino.save_model``, and run in
  OpenVINO's CPU plugin (f32 inference precision) and in irnorm from that very file.

Rows live in one module per op family (``tests/conformance/<family>.py``, a ``ROWS`` list) and are
gathered by :data:`FAMILIES`; adding an op adds its row there, and the suite covers it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Explicit list (no directory scan): one line per family module.
FAMILIES = (
    "norms",
    "reduce",
    "compute",
    "activation",
    "logic",
    "pooling",
    "attention",
    "shape",
    "recurrent",
    "selection",
    "rearrange",
    "sample",
    "indexing",
    "embedding",
    "bucketing",
    "fourier",
    "shuffle",
    "deformable",
    "detection",
)


@dataclass(frozen=True)
class Case:
    """One drawn instance of an op: its input values (in port order), the layer's attributes (values
    as ``irbuilder.fmt_attr`` writes them; OpenVINO builders get the same mapping), which inputs are
    model inputs (Parameters; every other input becomes a Const) and whether the Parameters are
    declared with every dim dynamic."""

    inputs: tuple[np.ndarray, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    params: tuple[int, ...] = (0,)
    dynamic: bool = False
    label: str = ""  # shown in failure messages (what is special about the case)
    # Why OpenVINO's CPU plugin is no oracle for this case (a documented divergence from the spec,
    # see docs/ir-format.md); such a case is compared with the float64 oracle only.
    not_openvino: str = ""


@dataclass(frozen=True)
class Row:
    """One operator version in the table."""

    op: str  # the registered label "Type-version", e.g. "GroupNormalization-12"
    opset: str  # the version written on the layer, e.g. "opset12"
    sample: Callable[[np.random.Generator], Case]  # draws one case
    reference: Callable[[Case], Sequence[np.ndarray]]  # the float64 oracle; outputs in port order
    openvino: Callable[[list[Any], Case], Any] | None = None  # (input nodes, case) -> node or list of outputs
    cases: int = 12
    # (rtol, atol) of irnorm vs the oracle by output dtype name; atol is scaled by max(|expected|, 1)
    tol: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(REF_TOL))

    @property
    def type(self) -> str:
        return self.op.rsplit("-", 1)[0]


# Defaults: irnorm computes f16/bf16 in float32 and rounds once; f32 kernels do a handful of float32
# roundings on O(1) values.
REF_TOL = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}


def all_rows() -> list[Row]:
    rows: list[Row] = []
    for name in FAMILIES:
        rows.extend(importlib.import_module(f"{__name__}.{name}").ROWS)
    return rows


# ---- helpers for writing rows -------------------------------------------------------------------


def floats(rng: np.random.Generator, shape: Sequence[int], dtype: Any = np.float32, scale: float = 1.0,
           shift: float = 0.0) -> np.ndarray:
    """Normal samples, rounded to `dtype` (f16/bf16 included)."""
    return (rng.standard_normal(tuple(shape)) * scale + shift).astype(dtype)


def shape(rng: np.random.Generator, rank: int, lo: int = 1, hi: int = 5) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))
