"""Byte-level fuzz target for the XML reader (atheris / libFuzzer).

Feeds arbitrary bytes to ``irnorm.ir.reader.parse_document`` and, when they parse,
to ``irnorm.ir.graph.build_graph`` (with a fixed small weights file, so Const layers
are read too).  Anything but an :class:`irnorm.IrnormError` is a crash; so is a
diagnostic whose code is not in ``irnorm.CODES`` or that cannot be formatted.

Run (see fuzz/README.md)::

    python fuzz/fuzz_reader.py fuzz/corpus -dict=fuzz/ir.dict -max_total_time=900 -timeout=60 -max_len=65536

``check_bytes`` is importable without atheris: tests/test_fuzz.py replays every
file of tests/regressions/ through it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# A small weights file: 64 bytes of recognisable values, enough for the samples' Consts.
WEIGHTS_BYTES = bytes(range(1, 65)) * 4


def _weights_path() -> str:
    d = tempfile.mkdtemp(prefix="irnorm-fuzz-")
    atexit.register(shutil.rmtree, d, True)
    p = os.path.join(d, "fuzz.bin")
    with open(p, "wb") as f:
        f.write(WEIGHTS_BYTES)
    return p


_WPATH: str | None = None


def check_bytes(data: bytes) -> list:
    """Parse and check one document; return its diagnostics (raise on anything irnorm did not mean)."""
    global _WPATH
    from irnorm.errors import CODES, IrnormError
    from irnorm.ir.graph import build_graph
    from irnorm.ir.reader import parse_document
    from irnorm.ir.weights import Weights

    if _WPATH is None or not os.path.exists(_WPATH):
        _WPATH = _weights_path()
    try:
        doc = parse_document("fuzz.xml", data)
        diags = build_graph(doc, Weights(_WPATH)).diagnostics
    except IrnormError as e:
        diags = e.diagnostics
        assert diags, "an IrnormError without diagnostics"
    for d in diags:
        assert d.code in CODES, f"undocumented diagnostic code {d.code}: {d}"
        assert d.severity in ("error", "warning"), d
        d.format()
        d.to_dict()
    return diags


def main() -> None:
    import atheris

    with atheris.instrument_imports(include=["irnorm"]):
        import irnorm.errors  # noqa: F401
        import irnorm.ir.attrs  # noqa: F401
        import irnorm.ir.graph  # noqa: F401
        import irnorm.ir.reader  # noqa: F401
        import irnorm.ir.weights  # noqa: F401
        import irnorm.ops  # noqa: F401
        from irnorm.ops.base import all_ops

        all_ops()  # import (and instrument) every op module now, not inside the first input

    # Warm up: load (or compile) the kernels constant folding may need, so that a first-time Numba
    # compilation inside a fuzz input does not count as a hang.
    import glob

    for p in sorted(glob.glob(os.path.join(ROOT, "samples", "ir", "*.xml"))):
        with open(p, "rb") as f:
            check_bytes(f.read())

    def test_one_input(data: bytes) -> None:
        check_bytes(data)

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main()
