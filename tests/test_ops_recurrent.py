"""LSTM/GRU/RNN sequences and cells: what the conformance rows (tests/conformance/recurrent.py) do
not cover -- malformed layers get coded errors naming the rule, sequence lengths outside [0, T] are
a run-time error (never a read past the sequence), and a static-shape model with short rows matches
OpenVINO's CPU plugin."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model
from ovutil import compare_with_openvino, requires_openvino, save

import irnorm
from irnorm.errors import InputError

N, T, I, H = 2, 3, 4, 5


def _lstm(attrs=None, *, x=(N, T, I), h=(N, 1, H), w=(1, 4 * H, I), r=(1, 4 * H, H), b=(1, 4 * H),
          lens_et="i64", x_et="f32"):
    rng = np.random.default_rng(0)
    a = {"hidden_size": H, "direction": "forward"}
    a.update(attrs or {})
    inputs = [("param:x", (x, x_et)), ("param:h", (h, "f32")), ("param:c", (h, "f32")),
              ("param:lens", ((x[0] if x else N,), lens_et)),
              ("w", rng.standard_normal(w).astype(np.float32)), ("r", rng.standard_normal(r).astype(np.float32)),
              ("b", rng.standard_normal(b).astype(np.float32))]
    nd = 2 if a["direction"] == "bidirectional" else 1
    outs = [((N, nd, T, H), "f32"), ((N, nd, H), "f32"), ((N, nd, H), "f32")]
    return single_op_model("LSTMSequence", inputs, outs, a, version="opset5")


@pytest.mark.parametrize("kw,code,fragments", [
    ({"attrs": {"hidden_size": "0"}}, "IRN023", ("hidden_size",)),
    ({"attrs": {"direction": "sideways"}}, "IRN021", ("direction",)),
    ({"attrs": {"activations": "sigmoid,softsign,tanh"}}, "IRN021", ("softsign",)),
    ({"attrs": {"activations": "sigmoid"}}, "IRN021", ("activations lists 1",)),
    ({"attrs": {"clip": "-1"}}, "IRN023", ("clip",)),
    ({"w": (1, 4 * H, I + 1)}, "IRN032", ("W", "dim 2")),
    ({"r": (1, 3 * H, H)}, "IRN032", ("R", "dim 1")),
    ({"b": (2, 4 * H)}, "IRN032", ("B", "dim 0")),
    ({"attrs": {"direction": "bidirectional"}}, "IRN032", ("initial_hidden_state", "dim 1")),
    ({"x": (N, T)}, "IRN032", ("X must have rank 3",)),
    ({"lens_et": "f32"}, "IRN033", ("sequence_lengths", "integer")),
    ({"x_et": "i32"}, "IRN033", ("X must be a floating-point",)),
])
def test_malformed_lstm_sequence(tmp_path, kw, code, fragments):
    expect_error(_lstm(**kw), tmp_path, code, *fragments)


def test_sequence_lengths_out_of_range_are_a_runtime_error(tmp_path):
    m = irnorm.load(_lstm().save(tmp_path, "lens"))
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((N, T, I)).astype(np.float32),
             "h": np.zeros((N, 1, H), np.float32), "c": np.zeros((N, 1, H), np.float32)}
    out = m.run({**feeds, "lens": np.array([T, 1], np.int64)})
    assert np.all(out["y"][1, 0, 1:] == 0) and np.any(out["y"][1, 0, 0] != 0)
    np.testing.assert_array_equal(out["y1"][1, 0], out["y"][1, 0, 0])  # the state after the row's last step
    for bad in ([T + 1, 1], [-1, 2]):
        with pytest.raises(InputError) as e:
            m.run({**feeds, "lens": np.array(bad, np.int64)})
        assert e.value.code == "IRN064" and "sequence_lengths" in str(e.value)


@requires_openvino
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_short_rows_match_openvino_on_static_shapes(tmp_path, kind, direction):
    ov = pytest.importorskip("openvino")
    op5 = pytest.importorskip("openvino.opset5")
    rng = np.random.default_rng(5)
    g = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    nd = 2 if direction == "bidirectional" else 1
    n, t, i, hs = 4, 5, 3, 6
    x = op5.parameter([n, t, i], np.float32, name="x")
    h = op5.parameter([n, nd, hs], np.float32, name="h")
    lens = op5.parameter([n], np.int32, name="lens")
    shapes = ((nd, g * hs, i), (nd, g * hs, hs), (nd, g * hs))
    w, r, b = (rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes)
    if kind == "lstm":
        c = op5.parameter([n, nd, hs], np.float32, name="c")
        node, params = op5.lstm_sequence(x, h, c, lens, w, r, b, hs, direction, clip=2.0), [x, h, c, lens]
    else:
        fn = op5.gru_sequence if kind == "gru" else op5.rnn_sequence
        node, params = fn(x, h, lens, w, r, b, hs, direction), [x, h, lens]
    for k, o in enumerate(node.outputs()):
        o.get_tensor().set_names({f"y{k}"})
    xml = save(ov.Model(node.outputs(), params, kind), tmp_path, kind)
    feeds = {"x": rng.standard_normal((n, t, i)).astype(np.float32),
             "h": rng.standard_normal((n, nd, hs)).astype(np.float32), "lens": np.array([5, 3, 1, 0], np.int32)}
    if kind == "lstm":
        feeds["c"] = rng.standard_normal((n, nd, hs)).astype(np.float32)
    assert len(compare_with_openvino(xml, feeds)) == len(node.outputs())
