"""IR element types: the `element_type` names, the port `precision` names, numpy dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np

# element_type name -> numpy dtype.  bfloat16 comes from ml_dtypes (maintained by the
# JAX team), so conversions round to nearest even exactly like the rest of the ecosystem.
ELEMENT_TYPES: dict[str, np.dtype] = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "i16": np.dtype(np.int16),
    "i8": np.dtype(np.int8),
    "u64": np.dtype(np.uint64),
    "u32": np.dtype(np.uint32),
    "u16": np.dtype(np.uint16),
    "u8": np.dtype(np.uint8),
    "boolean": np.dtype(np.bool_),
}

# Types OpenVINO knows that irnorm reads as names but cannot compute with.
KNOWN_UNSUPPORTED = {
    "u1", "u2", "u3", "u4", "u6", "i4", "nf4", "string", "f4e2m1", "f8e4m3", "f8e5m2", "f8e8m0",
    "dynamic", "undefined",
}

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

_BY_DTYPE = {v: k for k, v in ELEMENT_TYPES.items()}
FLOAT_TYPES = ("f64", "f32", "f16", "bf16")
INT_TYPES = ("i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8")


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
    return _BY_DTYPE[np.dtype(dtype)]


_FLOAT_DTYPES = frozenset(ELEMENT_TYPES[t] for t in FLOAT_TYPES)


def is_float_dtype(dtype: np.dtype) -> bool:
    """numpy dtype is one of the IR's floating-point types (f64, f32, f16, bf16)."""
    return np.dtype(dtype) in _FLOAT_DTYPES


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The type float arithmetic runs in: float64 stays float64; f32, f16 and bf16 compute in float32."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def cast(x, dtype: np.dtype) -> np.ndarray:
    """A fresh array of `dtype`; float overflow to inf (f16, bf16) and NaN-to-int are silent, as in C++."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x).astype(dtype)
