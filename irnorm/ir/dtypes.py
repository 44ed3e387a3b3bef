"""IR element types: the `element_type` names, the port `precision` names, numpy dtypes."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np


class _Types(Mapping):
    """A fixed table of name -> value in which the values that need ml_dtypes (``("ml", attr)``: the dtype of
    ``ml_dtypes.<attr>``; ``(bits, ("ml", attr))`` in STORAGE_TYPES) are made on first use.  Why: importing
    ml_dtypes 0.7.0 takes ~0.5 s (its extension's initialization; 0.6.0 ~10 ms), more than the rest of an
    `irnorm run` of an f32 model, and `--help`, `validate` and f32 models never need it."""

    def __init__(self, table: dict[str, Any]) -> None:
        self._table = table
        self._lazy = any(_needs_ml(v) for v in table.values())

    def __getitem__(self, key: str) -> Any:
        v = self._table[key]
        if self._lazy and _needs_ml(v):
            self._resolve()
            v = self._table[key]
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: object) -> bool:
        return key in self._table

    def _resolve(self) -> None:
        import ml_dtypes

        def make(v: Any) -> Any:
            if isinstance(v, tuple) and len(v) == 2 and v[0] == "ml":
                return np.dtype(getattr(ml_dtypes, v[1]))
            if isinstance(v, tuple):
                return tuple(make(e) for e in v)
            return v
        self._table = {k: make(v) for k, v in self._table.items()}
        self._lazy = False


def _needs_ml(v: Any) -> bool:
    return isinstance(v, tuple) and (len(v) == 2 and v[0] == "ml" or any(_needs_ml(e) for e in v))


def ml_loaded() -> bool:
    """ml_dtypes has been imported (by irnorm or anyone): until then no array can have one of its dtypes."""
    return "ml_dtypes" in sys.modules


# element_type name -> numpy dtype.  bfloat16 comes from ml_dtypes (maintained by the
# JAX team), so conversions round to nearest even exactly like the rest of the ecosystem.
ELEMENT_TYPES: Mapping[str, np.dtype] = _Types({
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": ("ml", "bfloat16"),
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "i16": np.dtype(np.int16),
    "i8": np.dtype(np.int8),
    "u64": np.dtype(np.uint64),
    "u32": np.dtype(np.uint32),
    "u16": np.dtype(np.uint16),
    "u8": np.dtype(np.uint8),
    "boolean": np.dtype(np.bool_),
})

# Types OpenVINO knows that irnorm reads as names but cannot compute with (STORAGE_TYPES below only as
# compressed weights).
KNOWN_UNSUPPORTED = {
    "u1", "u2", "u3", "u4", "u6", "i4", "nf4", "string", "f4e2m1", "f8e4m3", "f8e5m2", "f8e8m0",
    "dynamic", "undefined",
}

# The storage types of compressed weights (NNCF's and OpenVINO's weight compression: INT4/INT8/NF4/FP8/MXFP4
# LLM exports): a Const may hold them, and a Convert decompresses them when the model loads (docs/ir-format.md,
# section 8, "Sub-byte packing").  name -> (bits per element, the numpy dtype that carries the values: the
# integer types in uint8 / int8, nf4 and f8e8m0 as their float32 values, the other float types as ml_dtypes'
# type of the same format, whose conversions round as the formats define).
STORAGE_TYPES: Mapping[str, tuple[int, np.dtype]] = _Types({
    "u1": (1, np.dtype(np.uint8)), "u2": (2, np.dtype(np.uint8)), "u3": (3, np.dtype(np.uint8)),
    "u4": (4, np.dtype(np.uint8)), "u6": (6, np.dtype(np.uint8)), "i4": (4, np.dtype(np.int8)),
    "nf4": (4, np.dtype(np.float32)), "f4e2m1": (4, ("ml", "float4_e2m1fn")),
    "f8e4m3": (8, ("ml", "float8_e4m3fn")), "f8e5m2": (8, ("ml", "float8_e5m2")),
    "f8e8m0": (8, np.dtype(np.float32)),
})

# f8e8m0's 256 codes (an exponent alone, MX formats' scales) as float32: 2 ** (code - 127), code 255 NaN -- and
# code 0 as 0.0, not 2 ** -127: what OpenVINO's CPU plugin's Convert gives (its element type's own decoding says
# 2 ** -127, a float32 subnormal; docs/ir-format.md, section 8).
E8M0_TABLE = np.append(np.ldexp(1.0, np.arange(255) - 127), np.nan).astype(np.float32)
E8M0_TABLE[0] = 0.0

# NF4's 16 code points (QLoRA's normal-float table, as OpenVINO's nf4 type decodes them; 0.0 is code 7).
NF4_TABLE = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], np.float32)


def storage_bytes(element_type: str, count: int) -> int:
    """Bytes OpenVINO's writer stores `count` elements of a storage type in: u3 in groups of 8 elements per 3
    bytes and u6 in groups of 4 per 3 bytes (whole groups), the others ceil(count * bits / 8)."""
    if element_type == "u3":
        return 3 * -(-count // 8)
    if element_type == "u6":
        return 3 * -(-count // 4)
    return -(-count * STORAGE_TYPES[element_type][0] // 8)


def unpack_storage(element_type: str, raw: np.ndarray, count: int) -> np.ndarray:
    """The `count` values of a storage type from its bytes `raw` (uint8, storage_bytes long) as a 1-D array of
    the type's carrier dtype.  Packing as OpenVINO writes it (docs/ir-format.md, section 8): u1 MSB-first; u2,
    u4, i4, nf4, f4e2m1 LSB-first; u3 eight elements per three bytes (bytes 0-1 each element's low 2 bits, byte 2
    its third bit, MSB-first); u6 four per three bytes (bytes 0-1 each element's low nibble, high nibble first,
    byte 2 its top 2 bits, MSB-first)."""
    b = raw.astype(np.uint8, copy=False)
    if element_type == "u1":
        return np.unpackbits(b, bitorder="big")[:count]
    if element_type == "u2":
        return np.stack([(b >> s) & 3 for s in (0, 2, 4, 6)], axis=1).reshape(-1)[:count]
    if element_type == "u3":
        g = b.reshape(-1, 3)
        low = np.stack([(g[:, i // 4] >> (6 - 2 * (i % 4))) & 3 for i in range(8)], axis=1)
        high = np.stack([(g[:, 2] >> (7 - i)) & 1 for i in range(8)], axis=1)
        return (low | (high << 2)).reshape(-1)[:count].astype(np.uint8)
    if element_type == "u6":
        g = b.reshape(-1, 3)
        low = np.stack([(g[:, i // 2] >> (4 if i % 2 == 0 else 0)) & 15 for i in range(4)], axis=1)
        high = np.stack([(g[:, 2] >> (6 - 2 * i)) & 3 for i in range(4)], axis=1)
        return (low | (high << 4)).reshape(-1)[:count].astype(np.uint8)
    if element_type == "f8e8m0":
        return E8M0_TABLE[b[:count]]
    if STORAGE_TYPES[element_type][0] == 8:  # f8e4m3, f8e5m2: their bytes are ml_dtypes' values
        return b[:count].view(STORAGE_TYPES[element_type][1])
    nibbles = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:count].astype(np.uint8)
    if element_type == "i4":
        return ((nibbles.astype(np.int8) ^ 8) - 8).astype(np.int8)
    if element_type == "nf4":
        return NF4_TABLE[nibbles]
    if element_type == "f4e2m1":
        return nibbles.view(STORAGE_TYPES[element_type][1])
    return nibbles  # u4

# Port precision spelling (what the serializer writes) -> element type name.
PRECISIONS: dict[str, str] = {
    "FP64": "f64", "FP32": "f32", "FP16": "f16", "BF16": "bf16",
    "I64": "i64", "I32": "i32", "I16": "i16", "I8": "i8",
    "U64": "u64", "U32": "u32", "U16": "u16", "U8": "u8",
    "BOOL": "boolean", "BOOLEAN": "boolean",
    "BIN": "u1", "U1": "u1", "U2": "u2", "U3": "u3", "U4": "u4", "U6": "u6", "I4": "i4", "NF4": "nf4",
    "STRING": "string", "F4E2M1": "f4e2m1", "F8E4M3": "f8e4m3", "F8E5M2": "f8e5m2", "F8E8M0": "f8e8m0",
    "UNSPECIFIED": "dynamic", "DYNAMIC": "dynamic", "UNDEFINED": "dynamic",
}

# Highest tensor rank irnorm accepts: numpy 1 arrays and numpy 2's broadcasting helpers
# (np.broadcast, np.broadcast_shapes, nditer-based code) stop at 32 dims.  A model declaring
# a higher rank is refused while checking (IRN050; IRN043 for a Const) rather than crashing a kernel.
MAX_RANK = 32

FLOAT_TYPES = ("f64", "f32", "f16", "bf16")
INT_TYPES = ("i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8")
# the types numpy has itself (type_name and is_float_dtype look bf16 up only once ml_dtypes is loaded)
_NATIVE_NAMES = {ELEMENT_TYPES[k]: k for k in ELEMENT_TYPES if k != "bf16"}
_NATIVE_FLOATS = frozenset(ELEMENT_TYPES[t] for t in FLOAT_TYPES if t != "bf16")


def precision_to_type(precision: str) -> str | None:
    """Port precision ('FP32' or 'f32', any case) -> element type name, or None if unknown."""
    p = precision.strip()
    if p.upper() in PRECISIONS:
        return PRECISIONS[p.upper()]
    if p.lower() in ELEMENT_TYPES or p.lower() in KNOWN_UNSUPPORTED:
        return p.lower()
    return None


def type_name(dtype: np.dtype) -> str:
    """numpy dtype -> element type name ('f32'); raises KeyError for dtypes IR has no name for."""
    d = np.dtype(dtype)
    name = _NATIVE_NAMES.get(d)
    if name is None and ml_loaded() and d == ELEMENT_TYPES["bf16"]:
        return "bf16"
    if name is None:
        raise KeyError(d)
    return name


def is_float_dtype(dtype: np.dtype) -> bool:
    """numpy dtype is one of the IR's floating-point types (f64, f32, f16, bf16)."""
    d = np.dtype(dtype)
    return d in _NATIVE_FLOATS or ml_loaded() and d == ELEMENT_TYPES["bf16"]


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The type float arithmetic runs in: float64 stays float64; f32, f16 and bf16 compute in float32."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def cast(x, dtype: np.dtype) -> np.ndarray:
    """A fresh array of `dtype`; float overflow to inf (f16, bf16) and NaN-to-int are silent, as in C++."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x).astype(dtype)
