"""The `--json` contract of every command, in one place.

* Success and failure alike print one JSON object on stdout; a failure is
  ``{"ok": false, "exit_code": N, "error": {"code": "IRN0xx" | "usage" | "os" | "openvino" | "internal",
  "message": ...}, "diagnostics": [...]}`` (diagnostics as ``irnorm validate --json`` writes them;
  "openvino": `irnorm compare` could not import, read, compile or run OpenVINO).
* Numbers are JSON numbers.  The non-finite ones, which JSON cannot spell, are the strings
  ``"inf"``, ``"-inf"`` and ``"nan"``.
* Element types use the IR's names everywhere: ``"f32"``, ``"f16"``, ``"bf16"``, ``"i64"``, ``"boolean"``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..ir.dtypes import type_name


def element_type(dtype: Any) -> str:
    """numpy dtype -> the IR's element type name ('f32'); numpy's name for a dtype IR has no name for."""
    try:
        return type_name(np.dtype(dtype))
    except (KeyError, TypeError):
        return np.dtype(dtype).name


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, np.ndarray):
        return _clean(v.tolist())
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def dumps(obj: Any) -> str:
    """JSON text for `obj` under the contract above (never the invalid tokens NaN / Infinity)."""
    return json.dumps(_clean(obj), indent=2, allow_nan=False)


def failure(code: str, message: str, exit_code: int, diagnostics: list[dict] | None = None) -> str:
    return dumps({"ok": False, "exit_code": exit_code, "error": {"code": code, "message": message},
                  "diagnostics": diagnostics or []})
