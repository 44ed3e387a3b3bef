"""DFT-7, IDFT-7, RDFT-9, IRDFT-9 (opset7 / opset9+) and STFT-15 (opset15+): discrete Fourier transforms.

A complex tensor is a real one with a trailing dim of 2 (real, imaginary).

* ``axes`` (i32/i64, 1-D, unique) names the transformed dims.  For DFT, IDFT and IRDFT they are dims of the
  complex shape (the data's shape without its trailing 2): values in [-(r - 1), r - 2] for data of rank r, a
  negative axis a meaning r - 1 + a.  For RDFT they are dims of the real data, in [-r, r - 1].  -1 is the last
  complex dim for IRDFT too (the spec's note forbids it; OpenVINO accepts it).
* ``signal_size`` (optional, i32/i64, one per axis): -1 keeps the dim; a smaller size takes the slice
  0:size; a larger one zero-pads at the end.  A value below -1 is refused (OpenVINO's shape rule turns it
  into a 0 dim; its CPU plugin fails at run time).
* DFT is unnormalized (exp(-2 pi i jk/n)); IDFT and IRDFT divide by the product of the transformed sizes.
* RDFT transforms real data; the last axis listed gives n // 2 + 1 outputs (0 for n = 0), the others n.
* IRDFT: the last axis listed gives n = signal_size (or 2 (m - 1) for an input dim m, 0 when m <= 1); its
  input is cut or zero-padded to n // 2 + 1 entries, extended Hermitian-symmetrically and transformed back;
  the output is the real part (so the imaginary parts of the DC and Nyquist entries are ignored).  This is
  OpenVINO's reference and numpy's irfftn; the spec's formula (extend to 2 (m - 1), then cut or pad) differs
  whenever n != 2 (m - 1) and is not what OpenVINO computes (docs/ir-format.md, "Fourier transforms").
* STFT-15: signal [time] or [batch, time], window [w] (same type), frame_size and frame_step (i32/i64
  scalars, 1 <= frame_size <= time, frame_step >= 1, 1 <= w <= frame_size).  The window is centred in a
  frame (zeros on both sides, the extra one on the right); frames = (time - frame_size) // frame_step + 1,
  each multiplied by it and given an RDFT: [batch, frames, frame_size // 2 + 1, 2], or
  [batch, frame_size // 2 + 1, frames, 2] with ``transpose_frames`` (required); no batch dim for a 1-D signal.

Types: data f32, f16 or bf16 (OpenVINO refuses f64 for these four ops, and so does irnorm); STFT also f64.
``axes``, ``signal_size``, ``frame_size`` and ``frame_step`` may be constants or arrive at run time
(OpenVINO's PyTorch frontend computes ``signal_size`` from ShapeOf when the data's dims are dynamic); unknown
values make the dims they set dynamic, and the values are checked when the layer runs (IRN064).

Kernel: numpy.fft (pocketfft), always in complex128 / float64, rounded once to the output type.  A length-n
transform's float32 rounding error grows with log n and is relative to the whole signal's norm, so small
bins of a float32 FFT carry large relative errors; computing in float64 gives every element of an f32, f16
or bf16 output within one rounding of the exact transform (OpenVINO's CPU plugin computes in float32 and, for
f16/bf16, rounds once from it: those results equal irnorm's up to one output ulp).  The cost is time and
memory twice a float32 FFT's, small next to the rest of a network.

Where OpenVINO 2026.4's CPU plugin departs from its spec and reference (docs/ir-format.md, section 12):
RDFT/IRDFT refuse ``signal_size`` -1 and RDFT refuses sizes above the input's; IRDFT returns wrong values when
an axis must be zero-padded, DFT/IDFT return uninitialised memory for empty ``axes`` or when padding an empty
dim, IRDFT of a last dim of 1 crashes.  irnorm follows the spec and reference in all these cases.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, cast
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    partial_of,
    register,
    runtime_error,
    same_dim,
)

FFT_TYPES = ("f32", "f16", "bf16")  # OpenVINO's FFT ops refuse f64 ("must be f32, f16, or bf16")
INDEX_TYPES = ("i32", "i64")
# Bytes irnorm refuses to allocate for a result (as the checker's absurd-size limit).
ABSURD_BYTES = 1 << 46


def _index_input(ctx: NodeContext, i: int, what: str) -> tuple[int | None, list[int | None] | None]:
    """A 1-D i32/i64 input: (its length or None, its elements with None where unknown, or None)."""
    info = ctx.inputs[i]
    if info.dtype not in INDEX_TYPES:
        raise fail("IRN033", f"{what} (input {i}) must be i32 or i64, got {info.dtype}")
    if info.shape is None:
        return None, None
    if len(info.shape) != 1:
        raise fail("IRN032", f"{what} (input {i}) must be a 1-D tensor, got {fmt_shape(info.shape)}")
    n = None if info.shape[0] == -1 else info.shape[0]
    return n, partial_of(info)


def _norm_axes(raw: list[int], rank: int, what: str) -> list[int]:
    out = []
    for a in raw:
        if not -rank <= a < rank:
            raise ValueError(f"{what} value {a} is out of range [{-rank}, {rank - 1}] for {rank} transformable dims")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} {raw} has repeated axes")
    return out


def _rdft_len(n: int) -> int:
    return n // 2 + 1 if n > 0 else n


def _irdft_len(m: int) -> int:
    return max(2 * (m - 1), 0)


def _fit(a: np.ndarray, axes: list[int], sizes: list[int]) -> np.ndarray:
    """`a` cut to the slice 0:size or zero-padded at the end, along each axis."""
    sl = [slice(None)] * a.ndim
    pads = [(0, 0)] * a.ndim
    for ax, n in zip(axes, sizes, strict=True):
        if n < a.shape[ax]:
            sl[ax] = slice(0, n)
        elif n > a.shape[ax]:
            pads[ax] = (0, n - a.shape[ax])
    a = a[tuple(sl)]
    return np.pad(a, pads) if any(p[1] for p in pads) else a


def _as_complex(x: np.ndarray) -> np.ndarray:
    """[..., 2] real -> [...] complex128 (a copy)."""
    return np.ascontiguousarray(x, np.float64).view(np.complex128)[..., 0]


def _as_pairs(c: np.ndarray, dt: np.dtype) -> np.ndarray:
    """[...] complex -> [..., 2] of dt."""
    c = np.ascontiguousarray(c, np.complex128)
    return cast(c.view(np.float64).reshape(c.shape + (2,)), dt)


def _check_bytes(layer, shape: tuple[int, ...]) -> None:
    n = 16
    for d in shape:
        n *= d
    if n > ABSURD_BYTES:
        raise runtime_error(layer, f"the transform of shape {list(shape)} needs {n} bytes: absurd size")


class _FFT(Op):
    """The four FFT ops: ``real_in`` (RDFT) and ``real_out`` (IRDFT) set the complex-vs-real data layout."""

    inputs = (2, 3)
    real_in = False
    real_out = False
    inverse = False

    # ---- shape rule -------------------------------------------------------------------------------------

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in FFT_TYPES:
            raise fail("IRN033", f"data must be f32, f16 or bf16 (OpenVINO refuses other types), got {x.dtype}")
        min_rank = 1 if self.real_in else 2
        rank = None  # transformable dims
        if x.shape is not None:
            if len(x.shape) < min_rank:
                raise fail("IRN032", f"data must have rank >= {min_rank}, got {fmt_shape(x.shape)}")
            if not self.real_in and not same_dim(x.shape[-1], 2):
                raise fail("IRN032", f"data's last dim must be 2 (real, imaginary), got {fmt_shape(x.shape)}")
            rank = len(x.shape) - (0 if self.real_in else 1)
        n_axes, raw = _index_input(ctx, 1, "axes")
        if n_axes is not None:
            if rank is not None and n_axes > rank:
                raise fail("IRN032", f"{n_axes} axes for data {fmt_shape(x.shape)} with {rank} transformable dims")
            if n_axes == 0 and (self.real_in or self.real_out):
                raise fail("IRN032", f"{self.type} needs at least one axis (axes is empty)")
        axes = None
        if raw is not None and all(a is not None for a in raw):
            if not raw and (self.real_in or self.real_out):
                raise fail("IRN032", f"{self.type} needs at least one axis (axes is empty)")
            if rank is not None:
                try:
                    axes = _norm_axes([int(a) for a in raw], rank, "axes")
                except ValueError as e:
                    raise fail("IRN032", str(e)) from None
            elif len(set(raw)) != len(raw):
                raise fail("IRN032", f"axes {raw} has repeated axes")
        sizes: list[int | None] | None = None
        has_sizes = len(ctx.inputs) > 2
        if has_sizes:
            n_sizes, sizes = _index_input(ctx, 2, "signal_size")
            if n_axes is not None and n_sizes is not None and n_axes != n_sizes:
                raise fail("IRN032", f"signal_size has {n_sizes} values for {n_axes} axes")
            if sizes is not None:
                bad = [s for s in sizes if s is not None and s < -1]
                if bad:
                    raise fail("IRN032", f"signal_size values must be >= -1 (-1 keeps a dim), got {bad[0]}")
                if axes is not None and len(sizes) != len(axes):
                    raise fail("IRN032", f"signal_size has {len(sizes)} values for {len(axes)} axes")
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        dims = list(x.shape if self.real_in else x.shape[:-1])
        if axes is None:
            if has_sizes or self.real_in or self.real_out:
                dims = [-1] * len(dims)
            return [TensorInfo(self._out_shape(dims), x.dtype)]
        for k, a in enumerate(axes):
            last = k == len(axes) - 1
            s = -1 if not has_sizes else (None if sizes is None else sizes[k])
            d = dims[a]
            if s is None:  # a size known only at run time
                dims[a] = -1
            elif self.real_out and last:
                dims[a] = s if s != -1 else (-1 if d == -1 else _irdft_len(d))
            elif s != -1:
                dims[a] = s
            if self.real_in and last and dims[a] != -1:
                dims[a] = _rdft_len(dims[a])
        return [TensorInfo(self._out_shape(dims), x.dtype)]

    def _out_shape(self, dims: list[int]) -> tuple[int, ...]:
        return tuple(dims) if self.real_out else tuple(dims) + (2,)

    # ---- kernel -----------------------------------------------------------------------------------------

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        dt = ELEMENT_TYPES[ctx.inputs[0].dtype]
        op = self

        def run(ins):
            x = ins[0]
            rank = x.ndim - (0 if op.real_in else 1)
            if rank < 1 or (not op.real_in and x.shape[-1] != 2):
                raise runtime_error(layer, f"data {list(x.shape)} does not fit {op.type}")
            raw = [int(a) for a in np.asarray(ins[1]).reshape(-1)]
            try:
                axes = _norm_axes(raw, rank, "axes")
            except ValueError as e:
                raise runtime_error(layer, str(e)) from None
            if not axes and (op.real_in or op.real_out):
                raise runtime_error(layer, f"{op.type} needs at least one axis (axes is empty)")
            given = None
            if len(ins) > 2:
                given = [int(s) for s in np.asarray(ins[2]).reshape(-1)]
                if len(given) != len(axes):
                    raise runtime_error(layer, f"signal_size has {len(given)} values for {len(axes)} axes")
                if any(s < -1 for s in given):
                    raise runtime_error(layer, f"signal_size values must be >= -1 (-1 keeps a dim), got {given}")
            return [op._compute(x, axes, given, dt, layer)]

        return run

    def _compute(self, x, axes, given, dt, layer) -> np.ndarray:
        shape = x.shape if self.real_in else x.shape[:-1]
        sizes = [shape[a] if given is None or given[k] == -1 else given[k] for k, a in enumerate(axes)]
        if self.real_out and (given is None or given[-1] == -1):
            sizes[-1] = _irdft_len(shape[axes[-1]])
        full = list(shape)
        for a, n in zip(axes, sizes, strict=True):
            full[a] = n
        _check_bytes(layer, tuple(full))
        if self.real_in:  # RDFT
            out = list(full)
            out[axes[-1]] = _rdft_len(full[axes[-1]])
            a = _fit(np.asarray(x, np.float64), axes, sizes)
            y = np.fft.rfftn(a, axes=axes) if a.size else np.zeros(out, np.complex128)
            return _as_pairs(y, dt)
        c = _as_complex(x)
        if self.real_out:  # IRDFT
            n = sizes[-1]
            c = _fit(c, axes, sizes[:-1] + [_rdft_len(n)])
            if c.size == 0 or n == 0:
                return np.zeros(full, dt)
            return cast(np.fft.irfftn(c, s=sizes, axes=axes), dt)
        c = _fit(c, axes, sizes)
        if c.size and axes:
            c = (np.fft.ifftn if self.inverse else np.fft.fftn)(c, axes=axes)
        return _as_pairs(c, dt)


@register
class DFT(_FFT):
    type = "DFT"
    version = 7
    opsets = (7, None)
    doc = ("complex [..., 2] forward FFT over constant or run-time axes; signal_size cuts or zero-pads "
           "(numpy.fft in float64).")


@register
class IDFT(_FFT):
    type = "IDFT"
    version = 7
    opsets = (7, None)
    inverse = True
    doc = "complex [..., 2] inverse FFT, divided by the product of the signal sizes; as DFT-7."


@register
class RDFT(_FFT):
    type = "RDFT"
    version = 9
    opsets = (9, None)
    real_in = True
    doc = "real-to-complex FFT: the last axis listed keeps n // 2 + 1 bins; output [..., 2]; as DFT-7."


@register
class IRDFT(_FFT):
    type = "IRDFT"
    version = 9
    opsets = (9, None)
    real_out = True
    doc = ("complex [..., 2] to real inverse FFT (Hermitian half spectrum on the last axis listed: "
           "n = signal_size or 2 (m - 1)); as DFT-7.")


# ---- STFT-15 ---------------------------------------------------------------------------------------------


def _scalar_input(ctx: NodeContext, i: int, what: str) -> int | None:
    info = ctx.inputs[i]
    if info.dtype not in INDEX_TYPES:
        raise fail("IRN033", f"{what} (input {i}) must be i32 or i64, got {info.dtype}")
    if info.shape is not None and len(info.shape) != 0:
        raise fail("IRN032", f"{what} (input {i}) must be a scalar, got {fmt_shape(info.shape)}")
    p = partial_of(info)
    return None if not p or p[0] is None else int(p[0])


def _stft_check(signal_len: int, window_len: int, frame_size: int | None, frame_step: int | None) -> str | None:
    """Why these sizes do not fit (-1: unknown), or None."""
    if frame_size is not None:
        if frame_size < 1 or (signal_len != -1 and frame_size > signal_len):
            hi = "?" if signal_len == -1 else signal_len
            return f"frame_size {frame_size} must be in [1, {hi}] (the signal's length)"
        if window_len != -1 and not 1 <= window_len <= frame_size:
            return f"the window's length {window_len} must be in [1, {frame_size}] (frame_size)"
    elif window_len == 0:
        return "the window must not be empty"
    if frame_step is not None and frame_step < 1:
        return f"frame_step {frame_step} must be >= 1"
    return None


@register
class STFT(Op):
    type = "STFT"
    version = 15
    opsets = (15, None)
    inputs = (4, 4)
    schema = AttrSchema([Attr("transpose_frames", parse_bool,
                              doc="frames at dim -2 (true) or -3 (false) of the output")])
    doc = ("short-time Fourier transform of [time] or [batch, time] signals: centred window, frame_size, "
           "frame_step; [batch, frames, bins, 2] or transposed (numpy.fft in float64).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        sig, win = ctx.inputs[0], ctx.inputs[1]
        if sig.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"signal must be a floating-point tensor, got {sig.dtype}")
        if win.dtype != sig.dtype:
            raise fail("IRN033", f"window has element type {win.dtype}, expected {sig.dtype} (the signal's)")
        if sig.shape is not None and len(sig.shape) not in (1, 2):
            raise fail("IRN032", f"signal must be 1-D [time] or 2-D [batch, time], got {fmt_shape(sig.shape)}")
        if win.shape is not None and len(win.shape) != 1:
            raise fail("IRN032", f"window must be 1-D, got {fmt_shape(win.shape)}")
        fs = _scalar_input(ctx, 2, "frame_size")
        step = _scalar_input(ctx, 3, "frame_step")
        length = -1 if sig.shape is None else sig.shape[-1]
        wl = -1 if win.shape is None else win.shape[0]
        why = _stft_check(length, wl, fs, step)
        if why:
            raise fail("IRN032", why)
        if sig.shape is None:
            return [TensorInfo(None, sig.dtype)]
        bins = -1 if fs is None else fs // 2 + 1
        frames = -1 if fs is None or step is None or length == -1 else (length - fs) // step + 1
        core = (bins, frames) if ctx.attrs["transpose_frames"] else (frames, bins)
        return [TensorInfo(tuple(sig.shape[:-1]) + core + (2,), sig.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        dt = ELEMENT_TYPES[ctx.inputs[0].dtype]
        transpose = ctx.attrs["transpose_frames"]

        def run(ins):
            sig, win = ins[0], ins[1]
            fs, step = (int(np.asarray(v).reshape(-1)[0]) for v in ins[2:4])
            why = _stft_check(sig.shape[-1], win.shape[0], fs, step)
            if why:
                raise runtime_error(layer, why)
            frames = (sig.shape[-1] - fs) // step + 1
            batch = sig.shape[:-1]
            _check_bytes(layer, tuple(batch) + (frames, fs))
            w = np.zeros(fs, np.float64)
            off = (fs - win.shape[0]) // 2
            w[off:off + win.shape[0]] = win
            s = np.asarray(sig, np.float64)
            view = np.lib.stride_tricks.sliding_window_view(s, fs, axis=-1)[..., ::step, :]
            y = np.fft.rfft(view * w, axis=-1)  # [*batch, frames, bins]
            if transpose:
                y = np.swapaxes(y, -1, -2)
            return [_as_pairs(y, dt)]

        return run
