"""Rows for the Fourier transforms: DFT-7, IDFT-7, RDFT-9, IRDFT-9 and STFT-15.

Axes are drawn in any order and sign, signal sizes cut, keep (-1) or zero-pad; axes and signal sizes are
constants or model inputs (then every dim is declared dynamic: OpenVINO's CPU plugin refuses run-time sizes
on a static model).  The cases where OpenVINO 2026.4's CPU plugin departs from the spec and its reference
(docs/ir-format.md, "Fourier transforms") are drawn too and compared with the float64 oracle only."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

BF16 = np.dtype(ml_dtypes.bfloat16)
FFT_TYPES = (np.float32, np.float16, BF16)  # OpenVINO refuses f64 for the four FFT ops
IDX_TYPES = (np.int32, np.int64)


def _mod(name):
    return importlib.import_module(f"openvino.{name}")


def shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _axes(rng, rank: int) -> list[int]:
    """1..rank distinct axes in random order, some written negative."""
    k = int(rng.integers(1, rank + 1))
    return [int(a) - rank if rng.integers(2) else int(a) for a in rng.permutation(rank)[:k]]


def _case(rng, x, axes, sizes, label, not_openvino=""):
    it = _pick(rng, IDX_TYPES)
    ins = (x, np.array(axes, it)) + (() if sizes is None else (np.array(sizes, _pick(rng, IDX_TYPES)),))
    runtime = bool(rng.integers(3) == 0)  # axes and sizes as model inputs
    params = tuple(range(len(ins))) if runtime else (0,)
    return Case(ins, params=params, dynamic=runtime or bool(rng.integers(2)),
                label=f"{x.shape} {x.dtype} axes {axes} signal_size {sizes} {label}", not_openvino=not_openvino)


# ---- DFT-7 / IDFT-7 ------------------------------------------------------------------------------------


def _dft(rng):
    x = floats(rng, shape(rng, int(rng.integers(1, 4)), 1, 6) + (2,), _pick(rng, FFT_TYPES))
    axes = _axes(rng, x.ndim - 1)
    sizes = None
    if rng.integers(3):
        sizes = [-1 if rng.integers(3) == 0 else int(rng.integers(1, 9)) for _ in axes]
    return _case(rng, x, axes, sizes, "")


def _dft_ref(c: Case, inverse: bool = False):
    sizes = None if len(c.inputs) < 3 else [int(s) for s in c.inputs[2]]
    return [R.dft(c.inputs[0], [int(a) for a in c.inputs[1]], sizes, inverse)]


def _fft_ov(name, opset):
    def build(n, c: Case):
        return getattr(_mod(opset), name)(*n)
    return build


# ---- RDFT-9 --------------------------------------------------------------------------------------------


def _rdft(rng):
    x = floats(rng, shape(rng, int(rng.integers(1, 4)), 1, 7), _pick(rng, FFT_TYPES))
    axes = _axes(rng, x.ndim)
    sizes, why = None, ""
    if rng.integers(3):
        dims = [x.shape[a] for a in axes]
        if rng.integers(2):  # cuts only: what the CPU plugin runs
            sizes = [int(rng.integers(1, d + 1)) for d in dims]
        else:
            sizes = [-1 if rng.integers(3) == 0 else int(rng.integers(1, 10)) for _ in dims]
            if any(s == -1 or s > d for s, d in zip(sizes, dims, strict=True)):
                why = "the CPU plugin refuses RDFT signal_size -1 and sizes above the input's"
    return _case(rng, x, axes, sizes, "", why)


def _rdft_ref(c: Case):
    sizes = None if len(c.inputs) < 3 else [int(s) for s in c.inputs[2]]
    return [R.rdft(c.inputs[0], [int(a) for a in c.inputs[1]], sizes)]


# ---- IRDFT-9 -------------------------------------------------------------------------------------------


def _irdft(rng):
    x = floats(rng, shape(rng, int(rng.integers(1, 4)), 2, 6) + (2,), _pick(rng, FFT_TYPES))
    axes = _axes(rng, x.ndim - 1)
    dims = [x.shape[:-1][a] for a in axes]  # the complex dims
    sizes, why = None, ""
    if rng.integers(3):
        if rng.integers(2):  # what the CPU plugin gets right: no -1, outer cuts, a last size needing no padding
            sizes = [int(rng.integers(1, d + 1)) for d in dims[:-1]] + [int(rng.integers(1, 2 * dims[-1]))]
        else:
            sizes = [-1 if rng.integers(3) == 0 else int(rng.integers(1, 12)) for _ in dims]
            outer = sizes[:-1]
            if -1 in sizes or any(s > d for s, d in zip(outer, dims, strict=False)) or sizes[-1] // 2 + 1 > dims[-1]:
                why = ("the CPU plugin refuses IRDFT signal_size -1 and gives wrong values where an axis is "
                       "zero-padded")
        if not why and len(axes) >= 3 and sizes != dims[:-1] + [2 * (dims[-1] - 1)]:
            why = "the CPU plugin's IRDFT over 3 or more axes is often wrong when signal_size changes a size"
    return _case(rng, x, axes, sizes, "", why)


def _irdft_ref(c: Case):
    sizes = None if len(c.inputs) < 3 else [int(s) for s in c.inputs[2]]
    return [R.irdft(c.inputs[0], [int(a) for a in c.inputs[1]], sizes)]


# ---- STFT-15 -------------------------------------------------------------------------------------------


def _stft(rng):
    dt = _pick(rng, (np.float32, np.float16, np.float64, BF16))
    length = int(rng.integers(1, 41))
    sig = floats(rng, ((int(rng.integers(1, 4)),) if rng.integers(2) else ()) + (length,), dt)
    fs = int(rng.integers(1, length + 1))
    win = rng.uniform(0.1, 1.0, int(rng.integers(1, fs + 1))).astype(dt)
    step = int(rng.integers(1, 9))
    it = _pick(rng, IDX_TYPES)
    runtime = bool(rng.integers(4) == 0)
    return Case((sig, win, np.array(fs, it), np.array(step, it)), {"transpose_frames": bool(rng.integers(2))},
                params=(0, 1, 2, 3) if runtime else (0, 1), dynamic=runtime or bool(rng.integers(2)),
                label=f"signal {sig.shape} {dt} window {win.shape[0]} frame_size {fs} step {step}")


def _stft_ref(c: Case):
    return [R.stft(c.inputs[0], c.inputs[1], int(c.inputs[2]), int(c.inputs[3]), c.attrs["transpose_frames"])]


def _stft_ov(n, c: Case):
    return _mod("opset15").stft(*n, c.attrs["transpose_frames"])


ROWS = [
    Row("DFT-7", "opset7", _dft, _dft_ref, _fft_ov("dft", "opset7"), cases=16),
    Row("IDFT-7", "opset7", _dft, lambda c: _dft_ref(c, True), _fft_ov("idft", "opset7"), cases=16),
    Row("RDFT-9", "opset9", _rdft, _rdft_ref, _fft_ov("rdft", "opset9"), cases=16),
    Row("IRDFT-9", "opset9", _irdft, _irdft_ref, _fft_ov("irdft", "opset9"), cases=16),
    Row("STFT-15", "opset15", _stft, _stft_ref, _stft_ov, cases=16),
]
