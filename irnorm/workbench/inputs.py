"""Seeded random inputs for a model: the same ones `irnorm run`, `compare` and `bench` use when
no inputs are given.  Dynamic dims come from `shapes` (default 1); values are standard normal
(floats), 0..9 (integers) or fair coin flips (booleans), or uniform in a `value_ranges` [lo, hi]."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def random_array(rng: np.random.Generator, shape: Sequence[int], dtype: Any,
                 value_range: tuple[float, float] | None = None) -> np.ndarray:
    """One random array of `shape` and `dtype` (see the module docstring)."""
    dtype = np.dtype(dtype)
    shape = list(shape)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        lo, hi = (0, 9) if value_range is None else (int(np.ceil(value_range[0])), int(np.floor(value_range[1])))
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if value_range is None:
        return rng.standard_normal(shape).astype(dtype)
    lo, hi = value_range
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def parse_value_range(item: str) -> tuple[str, tuple[float, float]]:
    """'NAME=lo,hi' -> (NAME, (lo, hi)); ValueError when malformed or lo > hi."""
    name, sep, rest = item.partition("=")
    parts = rest.split(",")
    if not sep or not name or len(parts) != 2:
        raise ValueError(f"{item!r} is not NAME=LO,HI")
    try:
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"{item!r}: LO and HI must be numbers") from None
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
        raise ValueError(f"{item!r}: need finite LO <= HI")
    return name, (lo, hi)


def random_inputs(model: Any, seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None,
                  value_ranges: Mapping[str, tuple[float, float]] | None = None) -> dict[str, np.ndarray]:
    """{input name: random array} for every model input, in input order, from one seeded generator.
    `shapes` and `value_ranges` may be keyed by any of an input's names."""
    shapes, value_ranges = dict(shapes or {}), dict(value_ranges or {})
    known = {n for spec in model.inputs for n in spec.names}
    for key in list(shapes) + list(value_ranges):
        if key not in known:
            raise ValueError(f"no model input named {key!r}; the inputs are "
                             f"{', '.join(repr(s.name) for s in model.inputs)}")
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for spec in model.inputs:
        shape = next((shapes[n] for n in spec.names if n in shapes), None)
        if shape is None:
            shape = [d if d != -1 else 1 for d in spec.shape]
        vr = next((value_ranges[n] for n in spec.names if n in value_ranges), None)
        out[spec.name] = random_array(rng, shape, spec.dtype, vr)
    return out
