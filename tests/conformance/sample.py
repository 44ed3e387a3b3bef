"""Rows for FakeQuantize-1, GridSample-9 and Interpolate-4 (cubic included)."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

# (not conformance.shape: once the family module tests/conformance/shape.py is imported, that name
# is the module)


def shape(rng, rank, lo=1, hi=5):
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float16, np.float64, BF16)


def _mod(name):
    return importlib.import_module(f"openvino.{name}")


def _dyn(rng):
    return bool(rng.integers(2))


# ---- FakeQuantize ---------------------------------------------------------------------------------------


def _limit_shape(rng, xs):
    """A shape that broadcasts to xs without growing it: scalar, per-channel, or random 1s."""
    kind = int(rng.integers(4))
    if kind == 0:
        return ()
    if kind == 1 and len(xs) >= 2:
        return (1, xs[1]) + (1,) * (len(xs) - 2)
    dims = tuple(d if rng.integers(2) else 1 for d in xs)
    return dims[int(rng.integers(len(dims) + 1)):] if kind == 3 else dims


def _fake_quantize(rng):
    dt = FLOATS[int(rng.integers(len(FLOATS)))]
    xs = shape(rng, int(rng.integers(1, 5)))
    ls = _limit_shape(rng, xs)
    levels = int(rng.choice([2, 3, 16, 255, 256]))
    il = rng.uniform(-2, 0, ls)
    ih = il + rng.uniform(0.5, 3, ls)
    inverted = rng.integers(3) == 0
    if inverted:  # an inverted input range: quantized mirrored, per the spec and the reference
        il, ih = ih, il
    ol = rng.uniform(-3, 3, ls)
    oh = ol + rng.uniform(-4, 4, ls)
    # data away from the rounding boundaries (a step apart in float32 and float64), some of it clipped
    lim = [np.asarray(v).astype(dt) for v in (il, ih, ol, oh)]
    il64, ih64 = (np.broadcast_to(v.astype(np.float64), xs) for v in lim[:2])
    k = rng.integers(0, levels - 1, xs)
    frac = rng.choice([0.2, 0.35, 0.65, 0.8], xs)
    x = il64 + (k + frac) / (levels - 1) * (ih64 - il64)
    x = np.where(rng.random(xs) < 0.15, rng.uniform(-6, 6, xs), x).astype(dt)
    attrs = {"levels": levels, "auto_broadcast": "numpy"}
    if ls == xs and rng.integers(2):
        attrs["auto_broadcast"] = "none"
    return Case((x, *lim), attrs, params=(0,) if rng.integers(2) else (0, 1, 2, 3, 4), dynamic=_dyn(rng),
                label=f"{xs} limits {ls} levels {levels} {attrs['auto_broadcast']}",
                not_openvino="the CPU plugin has no f64 FakeQuantize (oneDNN)" if dt == np.float64 else
                "the CPU plugin departs from the spec on an inverted input range" if inverted else "")


def _fq_ref(c: Case):
    return [R.fake_quantize(*c.inputs, c.attrs["levels"])]


# ---- GridSample ----------------------------------------------------------------------------------------


def _grid_sample(rng):
    dt = FLOATS[int(rng.integers(len(FLOATS)))]
    n = int(rng.integers(1, 3))
    x = floats(rng, (n, int(rng.integers(1, 4))) + shape(rng, 2, 1, 6), dt)
    gdt = dt if rng.integers(2) else np.float32
    # grid values off the half-pixel and pixel-centre lattices, so nearest rounding and floor are exact
    g = rng.uniform(-1.6, 1.6, (n,) + shape(rng, 2, 1, 5) + (2,))
    g = (np.round(g * 64) / 64 + 1 / 512).astype(gdt)
    attrs = {"align_corners": bool(rng.integers(2)), "mode": str(rng.choice(["bilinear", "bicubic", "nearest"])),
             "padding_mode": str(rng.choice(["zeros", "border", "reflection"]))}
    return Case((x, g), attrs, params=(0, 1), dynamic=_dyn(rng), label=f"{x.shape} grid {g.shape} {attrs}")


def _gs_ref(c: Case):
    a = c.attrs
    return [R.grid_sample(c.inputs[0], c.inputs[1], a["mode"], a["padding_mode"], a["align_corners"])]


# ---- Interpolate-4 (cubic) -------------------------------------------------------------------------------


def _interp4(rng):
    x = floats(rng, (1, 2) + shape(rng, 2, 2, 6), (np.float32, np.float16, np.float64)[int(rng.integers(3))])
    mode = str(rng.choice(["cubic", "cubic", "linear_onnx", "nearest"]))
    tr = str(rng.choice(["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn"]))
    scales = [float(rng.choice([0.5, 0.8, 1.0, 1.5, 2.0, 3.0])) for _ in range(2)]
    sizes = [int(np.floor(d * s + 1e-5)) for d, s in zip(x.shape[2:], scales, strict=True)]
    calc = str(rng.choice(["sizes", "scales"]))
    attrs = {"mode": mode, "shape_calculation_mode": calc, "coordinate_transformation_mode": tr,
             "nearest_mode": "round_prefer_floor", "antialias": False, "pads_begin": [0, 0, 0, 0],
             "pads_end": [0, 0, 0, 0], "cube_coeff": float(rng.choice([-0.75, -0.5]))}
    ins = (x, np.array(sizes, np.int64), np.array(scales, np.float32), np.array([2, 3], np.int64))
    return Case(ins, attrs, dynamic=_dyn(rng), label=f"{mode} {tr} {calc} {scales} A={attrs['cube_coeff']}")


def _interp4_ref(c: Case):
    x, sizes, scales, axes = c.inputs
    if c.attrs["shape_calculation_mode"] == "sizes":
        scales = [s / d for s, d in zip(sizes, x.shape[2:], strict=True)]
    return [R.interpolate(x, [int(a) for a in axes], [int(s) for s in sizes], [float(s) for s in scales],
                          c.attrs["mode"], c.attrs["coordinate_transformation_mode"], c.attrs["nearest_mode"],
                          c.attrs["cube_coeff"])]


def _interp4_ov(n, c: Case):
    a = c.attrs
    return _mod("opset10").interpolate(n[0], n[1], n[2], a["mode"], a["shape_calculation_mode"], axes=n[3],
                                       coordinate_transformation_mode=a["coordinate_transformation_mode"],
                                       nearest_mode=a["nearest_mode"], cube_coeff=a["cube_coeff"])


ROWS = [
    Row("FakeQuantize-1", "opset1", _fake_quantize, _fq_ref,
        lambda n, c: _mod("opset1").fake_quantize(*n, c.attrs["levels"], c.attrs["auto_broadcast"]), cases=16),
    Row("GridSample-9", "opset9", _grid_sample, _gs_ref,
        lambda n, c: _mod("opset9").grid_sample(n[0], n[1], dict(c.attrs)), cases=16),
    Row("Interpolate-4", "opset4", _interp4, _interp4_ref, _interp4_ov, cases=16),
]
