"""Reproducible .npz files for the generators in tools/ (``np.savez`` stamps the current time)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like ``np.savez`` but with a fixed zip timestamp so that the bytes are reproducible."""
    with zipfile.ZipFile(path, mode="w", compression=zipfile.ZIP_STORED) as zf:
        for key, value in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fid:
                np.lib.format.write_array(fid, np.ascontiguousarray(value), allow_pickle=False)
