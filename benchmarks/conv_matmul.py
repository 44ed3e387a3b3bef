"""Convolution / MatMul timings: irnorm against OpenVINO's CPU plugin (f32, 2 threads).

Each workload is one layer with a constant weight, written by openvino.save_model and loaded by both
runtimes from that file.  Outputs are compared first (a contender that disagrees is reported and not
timed), then each contender runs `--repeat` times after a warm-up and the median is reported.  For the
depthwise workload the GEMM formulation (grouped im2col + batched GEMM) is timed too, against the
direct kernel irnorm uses.

    PYTHONPATH=$PWD python benchmarks/conv_matmul.py [--repeat 30]

The GEMMs run in numpy's OpenBLAS with its own threads (all cores by default).  On a machine whose
cores are busy with other work, OpenBLAS's spinning threads lose badly to preemption (measured here:
a [128,768]x[768,768] sgemm at 0.9 ms idle, 15-25 ms with the two cores shared); compare with
OPENBLAS_NUM_THREADS=1 to see the single-thread GEMM times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

import irnorm

# name -> (data shape, weight shape, op, attrs)
WORKLOADS = {
    "conv 3x3 [1,32,56,56]->64": ((1, 32, 56, 56), (64, 32, 3, 3), "conv", dict(s=1, p=1)),
    "depthwise 3x3 s2 [1,96,28,28]": ((1, 96, 28, 28), (96, 1, 1, 3, 3), "group", dict(s=2, p=1)),
    "conv 1x1 [8,64,56,56]->64": ((8, 64, 56, 56), (64, 64, 1, 1), "conv", dict(s=1, p=0)),
    "conv 7x7 s2 [1,3,224,224]->64": ((1, 3, 224, 224), (64, 3, 7, 7), "conv", dict(s=2, p=3)),
    "deconv 4x4 s2 [1,64,28,28]->32": ((1, 64, 28, 28), (64, 32, 4, 4), "deconv", dict(s=2, p=1)),
    "matmul [1,128,768]x[768,768]^T": ((1, 128, 768), (768, 768), "matmul", {}),
    "matmul [8,12,128,64]x[..,64,128]": ((8, 12, 128, 64), (8, 12, 64, 128), "bmm", {}),
}


def build(data_shape, w_shape, kind, a, rng):
    import openvino as ov
    import openvino.opset1 as op1

    x = op1.parameter(data_shape, np.float32, name="x")
    w = rng.standard_normal(w_shape).astype(np.float32) * 0.1
    rank = len(data_shape) - 2
    if kind == "conv":
        node = op1.convolution(x, op1.constant(w), [a["s"]] * rank, [a["p"]] * rank, [a["p"]] * rank, [1] * rank)
    elif kind == "group":
        node = op1.group_convolution(x, op1.constant(w), [a["s"]] * rank, [a["p"]] * rank, [a["p"]] * rank,
                                     [1] * rank)
    elif kind == "deconv":
        node = op1.convolution_backprop_data(x, op1.constant(w), [a["s"]] * rank, pads_begin=[a["p"]] * rank,
                                             pads_end=[a["p"]] * rank, dilations=[1] * rank)
    elif kind == "matmul":
        node = op1.matmul(x, op1.constant(w), False, True)
    else:
        params = [x, op1.parameter(w_shape, np.float32, name="b")]
        node = op1.matmul(x, params[1], False, False)
        node.output(0).get_tensor().set_names({"y"})
        return ov.Model([node], params, "bench"), {"x": rng.standard_normal(data_shape).astype(np.float32),
                                                    "b": rng.standard_normal(w_shape).astype(np.float32)}
    node.output(0).get_tensor().set_names({"y"})
    return ov.Model([node], [x], "bench"), {"x": rng.standard_normal(data_shape).astype(np.float32)}


def median_ms(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args(argv)
    import openvino as ov

    from irnorm.kernels import conv

    core = ov.Core()
    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp())
    print(f"{'workload':36s} {'irnorm ms':>10s} {'openvino ms':>12s} {'ratio':>6s}  notes")
    for name, (ds, ws, kind, a) in WORKLOADS.items():
        model, feeds = build(ds, ws, kind, a, rng)
        xml = tmp / f"{kind}{len(ds)}.xml"
        ov.save_model(model, str(xml), compress_to_fp16=False)
        compiled = core.compile_model(core.read_model(str(xml)), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "2"})
        req = compiled.create_infer_request()
        m = irnorm.load(xml)
        exp = req.infer(feeds)[0].copy()
        got = m.run(feeds)["y"]
        err = float(np.max(np.abs(got - exp)) / max(1.0, float(np.max(np.abs(exp)))))
        if err > 1e-4:
            print(f"{name:36s} MISMATCH (max rel err {err:.2e}); not timed")
            continue
        t_ir = median_ms(partial(m.run, feeds), args.repeat)
        t_ov = median_ms(partial(req.infer, feeds), args.repeat)
        note = ""
        if kind == "group":  # the GEMM formulation the direct depthwise kernel replaced
            x = feeds["x"]
            wt = np.asarray(next(op for op in model.get_ordered_ops() if op.get_type_name() == "Constant").get_data())
            g = wt.shape[0]
            wg = np.ascontiguousarray(wt.reshape(g, wt.shape[1], -1))
            out = [(d + 2 * a["p"] - 3) // a["s"] + 1 for d in ds[2:]]
            gemm = partial(conv.conv_forward, x, wg, ws[3:], [a["s"]] * 2, [1, 1], [a["p"]] * 2, out)
            assert np.allclose(gemm(), exp, atol=1e-4)
            t_gemm = median_ms(gemm, args.repeat)
            note = f"grouped-GEMM path {t_gemm:.3f} ms (direct kernel used)"
        print(f"{name:36s} {t_ir:10.3f} {t_ov:12.3f} {t_ir / t_ov:6.2f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
