"""Rows for the recurrent layers: LSTM/GRU/RNN sequences (opset5) and cells (LSTMCell-4, GRUCell-3,
RNNCell-0), with random directions, sequence lengths (shorter than T, and 0), clip, activations and
linear_before_reset, f32/f16/f64."""

from __future__ import annotations

import numpy as np

from irnorm import reference as R

from . import Case, Row, floats

GATES = {"lstm": 4, "gru": 3, "rnn": 1}
DEFAULT_ACTS = {"lstm": ["sigmoid", "tanh", "tanh"], "gru": ["sigmoid", "tanh"], "rnn": ["tanh"]}


def _attrs(rng, kind: str, hs: int) -> dict:
    a = {"hidden_size": hs}
    if rng.integers(3) == 0:  # another activation choice (the functions OpenVINO implements)
        a["activations"] = ",".join(str(rng.choice(["sigmoid", "tanh", "relu"])) for _ in DEFAULT_ACTS[kind])
    if rng.integers(3) == 0:
        a["clip"] = float(rng.choice([0.5, 1.0, 3.0]))
    if kind == "gru":
        a["linear_before_reset"] = bool(rng.integers(2))
    return a


def _sequence(kind: str):
    def sample(rng: np.random.Generator) -> Case:
        dt = (np.float32, np.float32, np.float16, np.float64)[int(rng.integers(4))]
        n, t, i, hs = (int(v) for v in rng.integers(1, 5, 4))
        direction = str(rng.choice(["forward", "reverse", "bidirectional"]))
        nd = 2 if direction == "bidirectional" else 1
        a = _attrs(rng, kind, hs)
        a["direction"] = direction
        g = GATES[kind]
        bg = 4 if a.get("linear_before_reset") else g
        lens = rng.integers(0, t + 1, n) if rng.integers(2) else np.full(n, t)
        ins = [floats(rng, (n, t, i), dt), floats(rng, (n, nd, hs), dt)]
        if kind == "lstm":
            ins.append(floats(rng, (n, nd, hs), dt))
        ins += [lens.astype(np.int64), floats(rng, (nd, g * hs, i), dt, 0.5), floats(rng, (nd, g * hs, hs), dt, 0.5),
                floats(rng, (nd, bg * hs), dt, 0.5)]
        o = 1 if kind == "lstm" else 0
        params = (0, 1) + ((2,) if o else ()) + ((2 + o,) if rng.integers(2) else ())
        dynamic = bool(rng.integers(2))
        not_ov = ""
        if dynamic and np.any(lens != t):
            not_ov = "OpenVINO's CPU plugin ignores sequence_lengths when shapes are dynamic (docs/ir-format.md §12)"
        return Case(tuple(ins), a, params=params, dynamic=dynamic, not_openvino=not_ov,
                    label=f"{np.dtype(dt).name} {direction} lens {lens.tolist()} {a}")

    return sample


def _sequence_ref(kind: str):
    def ref(c: Case) -> list[np.ndarray]:
        o = 1 if kind == "lstm" else 0
        ins, a = c.inputs, c.attrs
        acts = a["activations"].split(",") if "activations" in a else ()
        return R.recurrent_sequence(kind, ins[0], ins[1], ins[2] if o else None, ins[2 + o], ins[3 + o], ins[4 + o],
                                    ins[5 + o], a["direction"], acts, a.get("clip", 0.0),
                                    a.get("linear_before_reset", False))

    return ref


def _ov_kwargs(c: Case, kind: str) -> dict:
    a = c.attrs
    kw = {"hidden_size": a["hidden_size"], "clip": a.get("clip", 0.0),
          "activations": a["activations"].split(",") if "activations" in a else DEFAULT_ACTS[kind],
          "activations_alpha": [], "activations_beta": []}
    if kind == "gru":
        kw["linear_before_reset"] = a["linear_before_reset"]
    return kw


def _ov_sequence(kind: str):
    def build(nodes, c: Case):
        import openvino.opset5 as op5

        fn = {"lstm": op5.lstm_sequence, "gru": op5.gru_sequence, "rnn": op5.rnn_sequence}[kind]
        return fn(*nodes, direction=c.attrs["direction"], **_ov_kwargs(c, kind))

    return build


def _cell(kind: str):
    def sample(rng: np.random.Generator) -> Case:
        dt = (np.float32, np.float32, np.float16, np.float64)[int(rng.integers(4))]
        n, i, hs = (int(v) for v in rng.integers(1, 6, 3))
        a = _attrs(rng, kind, hs)
        g = GATES[kind]
        bg = 4 if a.get("linear_before_reset") else g
        ins = [floats(rng, (n, i), dt), floats(rng, (n, hs), dt)]
        if kind == "lstm":
            ins.append(floats(rng, (n, hs), dt))
        ins += [floats(rng, (g * hs, i), dt, 0.5), floats(rng, (g * hs, hs), dt, 0.5), floats(rng, (bg * hs,), dt, 0.5)]
        params = (0, 1, 2) if kind == "lstm" else (0, 1)
        return Case(tuple(ins), a, params=params, dynamic=bool(rng.integers(2)), label=f"{np.dtype(dt).name} {a}")

    return sample


def _cell_ref(kind: str):
    def ref(c: Case) -> list[np.ndarray]:
        o = 1 if kind == "lstm" else 0
        ins, a = c.inputs, c.attrs
        acts = a["activations"].split(",") if "activations" in a else ()
        w, r, b = (np.asarray(v)[None] for v in ins[2 + o:5 + o])
        outs = R.recurrent_sequence(kind, np.asarray(ins[0])[:, None], np.asarray(ins[1])[:, None],
                                    np.asarray(ins[2])[:, None] if o else None, np.ones(ins[0].shape[0], np.int64),
                                    w, r, b, "forward", acts, a.get("clip", 0.0), a.get("linear_before_reset", False))
        return [v[:, 0] for v in outs[1:]]

    return ref


def _ov_cell(kind: str):
    def build(nodes, c: Case):
        import openvino.opset3 as op3
        import openvino.opset4 as op4

        fn = {"lstm": op4.lstm_cell, "gru": op3.gru_cell, "rnn": op3.rnn_cell}[kind]
        return fn(*nodes, **_ov_kwargs(c, kind))

    return build


ROWS = [
    Row("LSTMSequence-5", "opset5", _sequence("lstm"), _sequence_ref("lstm"), _ov_sequence("lstm")),
    Row("GRUSequence-5", "opset5", _sequence("gru"), _sequence_ref("gru"), _ov_sequence("gru")),
    Row("RNNSequence-5", "opset5", _sequence("rnn"), _sequence_ref("rnn"), _ov_sequence("rnn")),
    Row("LSTMCell-4", "opset4", _cell("lstm"), _cell_ref("lstm"), _ov_cell("lstm")),
    Row("GRUCell-3", "opset3", _cell("gru"), _cell_ref("gru"), _ov_cell("gru")),
    Row("RNNCell-0", "opset3", _cell("rnn"), _cell_ref("rnn"), _ov_cell("rnn")),
]
