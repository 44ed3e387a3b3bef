"""A model's inputs for the commands: arrays read from .npy/.npz files (safely: no pickles, member
sizes checked before decompression), or seeded random inputs -- the same ones `irnorm run`, `compare`
and `bench` use when no inputs are given.  Dynamic dims come from `shapes` (default 1); values are
standard normal (floats), 0..9 (integers) or fair coin flips (booleans), or uniform in a
`value_ranges` [lo, hi]."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentError, Diagnostic, InputError, IrnormError, ResourceLimitError


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
            raise ArgumentError(f"no model input named {key!r}; the inputs are "
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


# ---- files -------------------------------------------------------------------------------


def load_array_file(path: str, limit: int | None = None) -> Any:
    """An .npy file as an array, or an .npz archive as {name: array}, read completely and
    closed.  Never unpickles; an archive member whose header claims more than `limit`
    bytes is refused before it is decompressed (a tiny .npz can inflate to gigabytes)."""
    try:
        with open(path, "rb") as f:
            data = np.load(f, allow_pickle=False)
            if isinstance(data, np.ndarray):
                return data
            with data:
                out = {}
                for k in data.files:
                    try:
                        if limit is not None:
                            check_member_size(data.zip, k, limit, path)
                        out[k] = data[k]
                    except IrnormError:
                        raise
                    except Exception as e:  # truncated member, bad header, pickled object array ...
                        raise InputError(Diagnostic("IRN063", f"cannot read member {k!r}: {e}", file=path)) from None
                return out
    except FileNotFoundError:
        raise InputError(Diagnostic("IRN063", "no such file", file=path)) from None
    except IrnormError:
        raise
    except Exception as e:  # corrupt zip, bad header, pickled object arrays, a directory ...
        raise InputError(Diagnostic("IRN063", f"cannot read as .npy/.npz: {e}", file=path)) from None


def check_member_size(zf: Any, key: str, limit: int, path: str) -> None:
    fmt = np.lib.format
    member = key if key in zf.namelist() else key + ".npy"
    with zf.open(member) as m:
        version = fmt.read_magic(m)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = read(m)
    need = dtype.itemsize
    for d in shape:
        need *= d
    if need > limit:
        raise ResourceLimitError(Diagnostic("IRN051", f"member {key!r} claims shape {list(shape)} of {dtype} "
                                                      f"({need} bytes), over the memory limit of {limit} bytes",
                                            file=path))


def bf16_fix(arr: Any, element_type: str) -> Any:
    """np.savez writes ml_dtypes.bfloat16 arrays as raw 2-byte voids; view them back."""
    if element_type == "bf16" and isinstance(arr, np.ndarray) and arr.dtype.kind == "V" and arr.dtype.itemsize == 2:
        import ml_dtypes

        return arr.view(ml_dtypes.bfloat16)
    return arr


def gather_inputs(model: Any, inputs_npz: str | None, items: Sequence[tuple[str, str]],
                  shapes: Mapping[str, Sequence[int]], seed: int,
                  value_ranges: Mapping[str, tuple[float, float]] | None = None) -> tuple[dict[str, Any], str | None]:
    """The inputs for one run: from an .npz archive and/or NAME=FILE.npy items, else random.
    Returns (inputs by name, a note saying which random inputs were drawn, or None)."""
    given: dict[str, Any] = {}
    if inputs_npz:
        data = load_array_file(inputs_npz, model.max_memory)
        if not isinstance(data, dict):
            raise InputError(Diagnostic("IRN063", "--inputs expects an .npz archive (use -i NAME=FILE.npy for "
                                                  ".npy files)", file=inputs_npz))
        given.update(data)
    for name, path in items:
        arr = load_array_file(path, model.max_memory)
        if not isinstance(arr, np.ndarray):
            raise InputError(Diagnostic("IRN063", "expected a single array (.npy), got an archive", file=path))
        given[name] = arr
    by_name = {n: spec for spec in model.inputs for n in spec.names}
    for k in list(given):
        if k in by_name:
            given[k] = bf16_fix(given[k], by_name[k].element_type)
    if given or not model.inputs:
        return given, None
    drawn = random_inputs(model, seed, shapes, value_ranges)
    vr = dict(value_ranges or {})
    notes = []
    for spec in model.inputs:
        rng_note = next((f" in [{vr[n][0]:g}, {vr[n][1]:g}]" for n in spec.names if n in vr), "")
        notes.append(f"{spec.name}{list(drawn[spec.name].shape)}{rng_note}")
    dyn = " (dynamic dims without --shape are 1)" if any(s.is_dynamic for s in model.inputs) else ""
    return drawn, f"no inputs given; using random inputs (seed {seed}): {', '.join(notes)}{dyn}"
