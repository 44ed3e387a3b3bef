"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

os.environ.setdefault("NUMBA_NUM_THREADS", "2")


def sample_names() -> list[str]:
    return sorted(p.stem for p in (SAMPLES / "ir").glob("*.xml"))


def load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture
def tmp_model(tmp_path):
    """Write an XML string (and optional weights bytes) to tmp_path; return the xml path."""

    def make(xml: str, weights: bytes | None = None, name: str = "model") -> Path:
        p = tmp_path / f"{name}.xml"
        p.write_text(xml)
        if weights is not None:
            (tmp_path / f"{name}.bin").write_bytes(weights)
        return p

    return make
