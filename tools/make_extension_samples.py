"""Generate the sample IRs of irnorm's extension operators (``version="irnorm1"``) under ``samples/``.

OpenVINO cannot build these layers, so the XML is written by hand (tests/irbuilder.py) in the
exact IR v11 layout ``openvino.save_model`` uses: Parameter -> Const weights in the .bin -> the
op -> Result.  For every sample NAME the script writes

* ``<out>/ir/NAME.xml`` and ``<out>/ir/NAME.bin``;
* ``<out>/data/NAME.inputs.npz``: one array per model input, keyed by its tensor name;
* ``<out>/data/NAME.expected.npz``: one array per output, keyed by its tensor name, computed with
  ``irnorm.reference`` in float64 and cast to the output's element type.

Samples: ``layer_norm_ext`` (LayerNormalization with Mean and InvStdDev outputs),
``trt_instance_norm`` (the TensorRT spec's example), ``trt_group_norm`` (per-group scale/bias),
``trt_layer_norm`` (f16, scale shaped by the axes), ``scale_uniform`` and ``scale_channel`` (the
two worked examples of the Scale spec, checked against the spec's numbers), ``scale_elementwise``
(with an empty power Const meaning the default 1).

Inputs come from fixed seeds and the npz files have a fixed zip timestamp, so reruns reproduce the
same bytes.  After writing, every sample is loaded with irnorm and its outputs are compared with
the saved ones.

Run from the repository root (needs numpy, ml_dtypes and irnorm)::

    python tools/make_extension_samples.py [--out samples]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from irbuilder import IRBuilder  # noqa: E402

import irnorm  # noqa: E402
from irnorm import reference as R  # noqa: E402

Sample = tuple[IRBuilder, dict[str, np.ndarray], dict[str, np.ndarray]]


def s_layer_norm_ext() -> Sample:
    """LayerNormalization over axes [2, 3] of a [2,4,3,8] input; Scale [3,8] and B [8] broadcast
    unidirectionally; three outputs: y, mean, inv_std_dev ([2,4,1,1], f32)."""
    rng = np.random.default_rng(101)
    x = (rng.standard_normal((2, 4, 3, 8)) * 2 + 5).astype(np.float32)
    scale = (rng.standard_normal((3, 8)) * 0.5 + 1).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    b = IRBuilder("layer_norm_ext")
    xp = b.parameter("x", x.shape, "f32")
    sc = b.const(scale, "ln_scale")
    bi = b.const(bias, "ln_bias")
    y, mean, inv = b.layer("LayerNormalization", [xp, sc, bi],
                           [(x.shape, "f32"), ((2, 4, 1, 1), "f32"), ((2, 4, 1, 1), "f32")],
                           {"axis": 2, "epsilon": 1e-5, "stash_type": 1}, name="layer_norm",
                           names=["y", "mean", "inv_std_dev"])
    for o in (y, mean, inv):
        b.result(o)
    ry, rm, ri = R.layer_normalization(x, scale, bias, axis=2, epsilon=1e-5)
    outs = {"y": ry, "mean": rm, "inv_std_dev": ri}
    return b, {"x": x}, {k: v.astype(np.float32) for k, v in outs.items()}


def _trt(name: str, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, attrs: dict, et: str) -> IRBuilder:
    b = IRBuilder(name)
    xp = b.parameter("x", x.shape, et)
    sc = b.const(scale, "norm_scale")
    bi = b.const(bias, "norm_bias")
    (y,) = b.layer("Normalization", [xp, sc, bi], [(x.shape, et)], attrs, name="normalization", names=["y"])
    b.result(y)
    return b


def s_trt_instance_norm() -> Sample:
    """The TensorRT spec's example: [2,3,2,2] input, axes = 1<<2 | 1<<3, scale [1,2,3], bias [-3,-2,-1]."""
    rng = np.random.default_rng(102)
    x = rng.random((2, 3, 2, 2)).astype(np.float32)
    scale = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1)
    bias = np.array([-3.0, -2.0, -1.0], np.float32).reshape(1, 3, 1, 1)
    b = _trt("trt_instance_norm", x, scale, bias, {"axes": 1 << 2 | 1 << 3, "epsilon": 1e-5}, "f32")
    return b, {"x": x}, {"y": R.trt_normalization(x, scale, bias, 12, 1, 1e-5).astype(np.float32)}


def s_trt_group_norm() -> Sample:
    """Group norm, 4 groups of 2 channels over a [2,8,4,4] input, per-group scale/bias [1,4,1,1]."""
    rng = np.random.default_rng(103)
    x = (rng.standard_normal((2, 8, 4, 4)) * 3 - 1).astype(np.float32)
    scale = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    bias = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    attrs = {"axes": 12, "epsilon": 1e-5, "num_groups": 4, "compute_precision": "f32"}
    b = _trt("trt_group_norm", x, scale, bias, attrs, "f32")
    return b, {"x": x}, {"y": R.trt_normalization(x, scale, bias, 12, 4, 1e-5).astype(np.float32)}


def s_trt_layer_norm() -> Sample:
    """Layer norm in f16 over axes 2..3 of a [2,3,4,6] input; scale/bias [1,1,4,6] (shaped by the axes)."""
    rng = np.random.default_rng(104)
    x = (rng.standard_normal((2, 3, 4, 6)) * 2 + 3).astype(np.float16)
    scale = (rng.standard_normal((1, 1, 4, 6)) * 0.5 + 1).astype(np.float16)
    bias = rng.standard_normal((1, 1, 4, 6)).astype(np.float16)
    b = _trt("trt_layer_norm", x, scale, bias, {"axes": 12, "epsilon": 1e-5}, "f16")
    return b, {"x": x}, {"y": R.trt_normalization(x, scale, bias, 12, 1, 1e-5).astype(np.float16)}


def _scale(name: str, x: np.ndarray, coeffs: list[np.ndarray], attrs: dict) -> IRBuilder:
    b = IRBuilder(name)
    xp = b.parameter("x", x.shape, "f32")
    consts = [b.const(c, f"scale_{k}") for k, c in zip(("scale", "shift", "power"), coeffs, strict=True)]
    (y,) = b.layer("Scale", [xp, *consts], [(x.shape, "f32")], attrs, name="scale", names=["y"])
    b.result(y)
    return b


def s_scale_uniform() -> Sample:
    """The Scale spec's UNIFORM example: (2x + 1)^2 on 1..9."""
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    c = [np.array([2], np.float32), np.array([1], np.float32), np.array([2], np.float32)]
    y = R.scale(x, "uniform", *c, 1).astype(np.float32)
    spec = np.array([[[[9.0, 25.0, 49.0], [81.0, 121.0, 169.0], [225.0, 289.0, 361.0]]]], np.float32)
    assert np.array_equal(y, spec)
    return _scale("scale_uniform", x, c, {"mode": "uniform"}), {"x": x}, {"y": y}


def s_scale_channel() -> Sample:
    """The Scale spec's CHANNEL 5-D example: channel 0 unchanged, channel 1 (2x + 1)^2."""
    plane = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3)
    x = np.stack([plane, plane])[None]
    c = [np.array([1, 2], np.float32), np.array([0, 1], np.float32), np.array([1, 2], np.float32)]
    y = R.scale(x, "channel", *c, 1).astype(np.float32)
    spec = np.array([[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]],
                      [[[9.0, 25.0, 49.0], [81.0, 121.0, 169.0], [225.0, 289.0, 361.0]]]]], np.float32)
    assert np.array_equal(y, spec)
    return _scale("scale_channel", x, c, {"mode": "channel", "channel_axis": 1}), {"x": x}, {"y": y}


def s_scale_elementwise() -> Sample:
    """ELEMENTWISE with channel_axis 2 on [2,3,4,5]: 20 scale and shift values; power is an empty
    Const (shape [0]), i.e. the default 1."""
    rng = np.random.default_rng(107)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    c = [rng.standard_normal(20).astype(np.float32), rng.standard_normal(20).astype(np.float32),
         np.zeros(0, np.float32)]
    y = R.scale(x, "elementwise", *c, 2).astype(np.float32)
    return _scale("scale_elementwise", x, c, {"mode": "elementwise", "channel_axis": 2}), {"x": x}, {"y": y}


SAMPLES: dict[str, Callable[[], Sample]] = {
    "layer_norm_ext": s_layer_norm_ext,
    "trt_instance_norm": s_trt_instance_norm,
    "trt_group_norm": s_trt_group_norm,
    "trt_layer_norm": s_trt_layer_norm,
    "scale_uniform": s_scale_uniform,
    "scale_channel": s_scale_channel,
    "scale_elementwise": s_scale_elementwise,
}

# irnorm vs the float64 reference cast to the output type
TOL = {"float32": 1e-5, "float16": 2e-3}


def verify(out: Path, name: str) -> None:
    """Load the written sample with irnorm, run it with the saved inputs, compare with the saved outputs."""
    with np.load(out / "data" / f"{name}.inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    with np.load(out / "data" / f"{name}.expected.npz") as z:
        expected = {k: z[k] for k in z.files}
    got = irnorm.load(out / "ir" / f"{name}.xml").run(feeds)
    if list(got) != list(expected):
        raise SystemExit(f"{name}: outputs {list(got)} != expected {list(expected)}")
    for k, e in expected.items():
        tol = TOL[e.dtype.name]
        if got[k].dtype != e.dtype or not np.allclose(got[k].astype(np.float64), e.astype(np.float64), rtol=tol,
                                                      atol=tol):
            raise SystemExit(f"{name}: output {k} differs from the reference")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "samples", help="samples directory (default: samples/)")
    ap.add_argument("names", nargs="*", help="samples to write (default: all)")
    args = ap.parse_args(argv)
    names = args.names or list(SAMPLES)
    for name in names:
        builder, inputs, expected = SAMPLES[name]()
        builder.save(args.out / "ir", name)
        (args.out / "data").mkdir(parents=True, exist_ok=True)
        np.savez(args.out / "data" / f"{name}.inputs.npz", **inputs)
        np.savez(args.out / "data" / f"{name}.expected.npz", **expected)
        verify(args.out, name)
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
