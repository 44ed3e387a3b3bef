"""Rows for SoftMax-1/8, LogSoftmax-5 and ScaledDotProductAttention-13."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row, floats, shape

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float16, np.float64, BF16)


def _softmax_case(negative: bool):
    def sample(rng: np.random.Generator) -> Case:
        rank = int(rng.integers(1, 5))
        x = floats(rng, shape(rng, rank), FLOATS[int(rng.integers(len(FLOATS)))], scale=3.0)
        axis = int(rng.integers(-rank if negative else 0, rank))
        return Case((x,), {"axis": axis}, dynamic=bool(rng.integers(2)), label=f"{x.dtype} {x.shape} axis {axis}")

    return sample


def _softmax_ov(version: int, log: bool = False):
    def build(nodes, c: Case):
        import openvino.opset1 as op1
        import openvino.opset5 as op5
        import openvino.opset8 as op8

        if log:
            return op5.log_softmax(nodes[0], c.attrs["axis"])
        return (op1 if version == 1 else op8).softmax(nodes[0], c.attrs["axis"])

    return build


def _sdpa_case(rng: np.random.Generator) -> Case:
    dt = FLOATS[int(rng.integers(len(FLOATS)))]
    b = tuple(int(d) for d in rng.integers(1, 3, int(rng.integers(1, 3))))
    L, S, E, Ev = (int(d) for d in rng.integers(1, 7, 4))
    q, k, v = floats(rng, b + (L, E), dt), floats(rng, b + (S, E), dt), floats(rng, b + (S, Ev), dt)
    kind = str(rng.choice(["none", "bool", "float", "causal", "scale"]))
    ins: list[np.ndarray] = [q, k, v]
    params = (0, 1, 2)
    attrs = {"causal": kind == "causal"}
    if kind in ("bool", "float", "scale"):
        if kind == "bool":
            m = rng.random((1,) * len(b) + (L, S)) < 0.8
            m[..., 0] = True  # every query attends to something
        else:
            m = floats(rng, (L, S), dt)
        ins.append(m)
        params = (0, 1, 2, 3)
        if kind == "scale":
            ins.append(np.array(float(rng.uniform(0.1, 1.0)), dt))
    return Case(tuple(ins), attrs, params=params, dynamic=bool(rng.integers(2)), label=f"{dt} {kind} b{b} {L}x{S}")


def _sdpa_ref(c: Case) -> list[np.ndarray]:
    ins = c.inputs
    return [R.scaled_dot_product_attention(ins[0], ins[1], ins[2], ins[3] if len(ins) > 3 else None,
                                           float(ins[4]) if len(ins) > 4 else None, c.attrs["causal"])]


def _sdpa_ov(nodes, c: Case):
    import openvino.opset13 as op13

    return op13.scaled_dot_product_attention(*nodes, causal=c.attrs["causal"])


ROWS = [
    Row("SoftMax-1", "opset1", _softmax_case(False), lambda c: [R.softmax(c.inputs[0], c.attrs["axis"])],
        _softmax_ov(1)),
    Row("SoftMax-8", "opset8", _softmax_case(True), lambda c: [R.softmax(c.inputs[0], c.attrs["axis"])],
        _softmax_ov(8)),
    Row("LogSoftmax-5", "opset5", _softmax_case(True), lambda c: [R.softmax(c.inputs[0], c.attrs["axis"], True)],
        _softmax_ov(5, True)),
    Row("ScaledDotProductAttention-13", "opset13", _sdpa_case, _sdpa_ref, _sdpa_ov, cases=16),
]
