"""What is known about a tensor before running: plain data shared by every stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class TensorInfo:
    """Shape (None = dynamic rank; -1 marks a dynamic dim), element type name, and the value when
    it is a (folded) constant."""

    shape: tuple[int, ...] | None
    dtype: str
    value: np.ndarray | None = None
    # A constant f16/bf16 tensor of a weight-decompression chain: its values in float32, before rounding to
    # dtype (check/types.py's decompression_in_f32)
    wide: np.ndarray | None = field(default=None, kw_only=True, repr=False)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(d >= 0 for d in self.shape)


def fmt_shape(shape: Sequence[int] | None) -> str:
    """[1,?,8] for (1, -1, 8); [...] for a dynamic rank."""
    if shape is None:
        return "[...]"
    return "[" + ",".join("?" if d == -1 else str(d) for d in shape) + "]"


def fmt_dims(shape: Sequence[int] | None, bounds: Sequence[tuple[int, int | None]] | None) -> str:
    """fmt_shape with a bounded dynamic dim written as OpenVINO writes it: [1..4,16,?]."""
    if shape is None or bounds is None:
        return fmt_shape(shape)
    parts = []
    for d, (lo, hi) in zip(shape, bounds, strict=True):
        if d != -1:
            parts.append(str(d))
        elif lo == 0 and hi is None:
            parts.append("?")
        else:
            parts.append(f"{lo}..{'' if hi is None else hi}")
    return "[" + ",".join(parts) + "]"
