"""Recurrent layers: LSTMSequence-5, GRUSequence-5, RNNSequence-5 (opset5+) and the single steps
LSTMCell-4 (opset4+), GRUCell-3 (opset3+) and RNNCell-0 (written as opset1), as OpenVINO's ONNX and PyTorch frontends
write them.

Layouts (OpenVINO's, batch first): X [N, T, I], initial states [N, D, H], sequence_lengths [N],
W [D, G*H, I], R [D, G*H, H], B [D, G*H] with D = 2 for ``direction="bidirectional"`` else 1 and G
gates in OpenVINO's order: LSTM f, i, c, o (G = 4); GRU z, r, h (G = 3; B holds 4*H values with
``linear_before_reset``: the z and r biases, then the input's and the recurrence's h biases); RNN one
gate.  Outputs: Y [N, D, T, H], the last hidden state [N, D, H] and, for LSTM, the last cell state.

* ``activations`` (f, g, h): sigmoid, tanh or relu (the functions OpenVINO implements); LSTM
  defaults to sigmoid, tanh, tanh, GRU to sigmoid, tanh, RNN to tanh.  ``clip`` > 0 clamps every
  gate's pre-activation to [-clip, clip].
* ``sequence_lengths``: for rows shorter than T, steps at or past their length output zeros and
  leave the state alone; the last state returned is the one after the row's last step (zeros for a
  length of 0), as OpenVINO's reference computes it.  A reverse direction reverses each row's first
  ``length`` steps (ReverseSequence), runs forward and reverses Y back.  (OpenVINO's CPU plugin
  ignores the lengths on dynamic shapes: docs/ir-format.md §12 item 14.)  A length outside [0, T] is a
  run-time error (IRN064): it would read past the sequence.
* f16/bf16 compute in float32 (float64 stays float64) and round once at the end.  The input
  projection X*W' of every step is one matrix product (BLAS); each step then multiplies the state by
  R' -- the recurrence itself is sequential.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema, at_least, enum, non_negative, optional, parse_bool, parse_float
from ..ir.dtypes import INT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, merge_dim, register, runtime_error, same_dim


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


ACTIVATIONS = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": _relu}


def parse_activations(text: str) -> tuple[str, ...]:
    names = tuple(t.strip().lower() for t in text.split(",") if t.strip())
    for n in names:
        if n not in ACTIVATIONS:
            raise AttrError(f"activation '{n}' is not one of {', '.join(ACTIVATIONS)}")
    return names


def parse_float_list(text: str) -> list[float]:
    return [parse_float(t) for t in text.replace(",", " ").split()]


def _schema(default_acts: str, *, sequence: bool, gru: bool) -> AttrSchema:
    attrs = [
        Attr("hidden_size", lambda t: int(t.strip()), check=at_least(1), doc="H, the size of the hidden state"),
        optional("activations", parse_activations, parse_activations(default_acts),
                 doc=f"f, g, h among sigmoid/tanh/relu (default {default_acts})"),
        optional("activations_alpha", parse_float_list, [], doc="unused by sigmoid/tanh/relu"),
        optional("activations_beta", parse_float_list, [], doc="unused by sigmoid/tanh/relu"),
        optional("clip", parse_float, 0.0, check=non_negative, doc="> 0: clamp pre-activations to [-clip, clip]"),
    ]
    if sequence:
        attrs.append(Attr("direction", enum("forward", "reverse", "bidirectional"), doc="which way(s) to run"))
    if gru:
        attrs.append(optional("linear_before_reset", parse_bool, False,
                              doc="apply the reset gate after the recurrence's h product (B then has 4*H values)"))
    return AttrSchema(attrs)


# ---- one step of each cell (float32/float64 numpy; xw already holds X*W' plus the input biases) ------


def _clip(v: np.ndarray, clip: float) -> np.ndarray:
    return np.clip(v, -clip, clip) if clip > 0 else v


def lstm_step(xw, h, c, r, acts, clip):
    f_, g_, h_ = (ACTIVATIONS[a] for a in acts)
    gates = _clip(xw + h @ r.T, clip)
    hs = h.shape[-1]
    f, i, cc, o = (gates[:, k * hs:(k + 1) * hs] for k in range(4))
    c_new = f_(f) * c + f_(i) * g_(cc)
    return f_(o) * h_(c_new), c_new


def gru_step(xw, h, r, rb_h, acts, clip, lbr):
    """xw: X*W' + [bz, br, bh(input)]; rb_h: the recurrence's h bias (linear_before_reset) or None."""
    f_, g_ = (ACTIVATIONS[a] for a in acts[:2])
    hs = h.shape[-1]
    hr = h @ r[: 2 * hs].T
    z = f_(_clip(xw[:, :hs] + hr[:, :hs], clip))
    rr = f_(_clip(xw[:, hs:2 * hs] + hr[:, hs:], clip))
    rh = r[2 * hs:]
    if lbr:
        cand = xw[:, 2 * hs:] + rr * (h @ rh.T + rb_h)
    else:
        cand = xw[:, 2 * hs:] + (rr * h) @ rh.T
    hh = g_(_clip(cand, clip))
    return (1 - z) * hh + z * h


def rnn_step(xw, h, r, acts, clip):
    return ACTIVATIONS[acts[0]](_clip(xw + h @ r.T, clip))


KIND_GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def _reverse_rows(a: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """ReverseSequence along axis 1: each row's first lens[n] steps reversed, the rest as they were."""
    out = a.copy()
    for n, k in enumerate(lens):
        if k > 1:
            out[n, :k] = a[n, k - 1::-1]
    return out


def run_sequence(kind: str, x, h0, c0, lens, w, r, b, *, acts, clip: float, lbr: bool, direction: str):
    """The recurrence over every direction; returns (Y [N, D, T, H], Ho [N, D, H], Co or None) in the
    compute type.  lens must be in [0, T]."""
    n, t_len, _ = x.shape
    nd, hs = w.shape[0], r.shape[-1]
    ct = compute_dtype(x.dtype)
    xs = x.astype(ct, copy=False)
    y = np.zeros((n, nd, t_len, hs), ct)
    ho = np.zeros((n, nd, hs), ct)
    co = np.zeros((n, nd, hs), ct) if kind == "lstm" else None
    masked = bool(np.any(lens != t_len))
    for d in range(nd):
        reverse = direction == "reverse" or d == 1
        xd = _reverse_rows(xs, lens) if reverse and t_len else xs
        wd, rd, bd = (np.asarray(v[d], ct) for v in (w, r, b))
        rb_h = None
        if kind == "gru" and lbr:
            rb_h, bd = bd[3 * hs:], bd[: 3 * hs]
        xw = xd @ wd.T + bd  # [N, T, G*H]: one BLAS product for every step
        h = np.array(h0[:, d], ct)
        c = np.array(c0[:, d], ct) if kind == "lstm" else None
        ys = y[:, d]
        for t in range(t_len):
            if kind == "lstm":
                h_new, c_new = lstm_step(xw[:, t], h, c, rd, acts, clip)
            elif kind == "gru":
                h_new, c_new = gru_step(xw[:, t], h, rd, rb_h, acts, clip, lbr), None
            else:
                h_new, c_new = rnn_step(xw[:, t], h, rd, acts, clip), None
            if masked:
                live = (lens > t)[:, None]
                h = np.where(live, h_new, h)
                ys[:, t] = np.where(live, h_new, 0)
                if c is not None:
                    c = np.where(live, c_new, c)
            else:
                h, c = h_new, c_new
                ys[:, t] = h_new
        if reverse and t_len:
            y[:, d] = _reverse_rows(ys, lens)
        ho[:, d] = np.where((lens > 0)[:, None], h, 0)
        if co is not None:
            co[:, d] = np.where((lens > 0)[:, None], c, 0)
    return y, ho, co


# ---- validation shared by the sequences and the cells ---------------------------------------------


def _expect(info: TensorInfo, what: str, dims: list[int]) -> list[int]:
    """Check a tensor's rank and dims (-1 = anything); returns its dims merged with `dims`."""
    if info.shape is None:
        return dims
    if len(info.shape) != len(dims):
        raise fail("IRN032", f"{what} must have rank {len(dims)}, got {fmt_shape(info.shape)}")
    for k, (a, e) in enumerate(zip(info.shape, dims, strict=True)):
        if not same_dim(a, e):
            raise fail("IRN032", f"{what} {fmt_shape(info.shape)}: dim {k} is {a}, expected {e}")
    return [merge_dim(e, a) for a, e in zip(info.shape, dims, strict=True)]


def _float_inputs(ctx: NodeContext, indices: tuple[int, ...], names: tuple[str, ...]) -> str:
    et = ctx.inputs[indices[0]].dtype
    if et not in ("f16", "bf16", "f32", "f64"):
        raise fail("IRN033", f"{names[0]} must be a floating-point tensor, got {et}")
    for i, nm in zip(indices[1:], names[1:], strict=True):
        if ctx.inputs[i].dtype != et:
            raise fail("IRN033", f"{nm} has element type {ctx.inputs[i].dtype}, expected {et} (same as {names[0]})")
    return et


def _check_acts(ctx: NodeContext, need: int) -> tuple[str, ...]:
    acts = ctx.attrs["activations"]
    if len(acts) < need:
        raise fail("IRN021", f"activations lists {len(acts)} functions, this layer needs {need}")
    return acts


class _Recurrent(Op):
    """The shape rule both forms share: a sequence (X [N, T, I], states and weights with a directions
    dim D, sequence_lengths) or a cell (X [N, I], no D, no lengths)."""
    uses_blas = True

    kind: ClassVar[str]
    sequence: ClassVar[bool]

    def _names(self) -> list[str]:
        return (["X", "initial_hidden_state"] + (["initial_cell_state"] if self.kind == "lstm" else [])
                + (["sequence_lengths"] if self.sequence else []) + ["W", "R", "B"])

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        a = ctx.attrs
        hs = a["hidden_size"]
        _check_acts(ctx, {"lstm": 3, "gru": 2, "rnn": 1}[self.kind])
        g = KIND_GATES[self.kind]
        bg = 4 if self.kind == "gru" and a["linear_before_reset"] else g
        names = self._names()
        at = {nm: i for i, nm in enumerate(names)}
        floats = tuple(i for i, nm in enumerate(names) if nm != "sequence_lengths")
        et = _float_inputs(ctx, floats, tuple(names[i] for i in floats))
        d = [2 if a["direction"] == "bidirectional" else 1] if self.sequence else []  # the directions dim
        x = _expect(ctx.inputs[0], "X", [-1, -1, -1] if self.sequence else [-1, -1])
        n, i_size = x[0], x[-1]
        for nm in ("initial_hidden_state", "initial_cell_state"):
            if nm in at:
                n = _expect(ctx.inputs[at[nm]], nm, [n] + d + [hs])[0]
        if self.sequence:
            lens = ctx.inputs[at["sequence_lengths"]]
            if lens.dtype not in INT_TYPES:
                raise fail("IRN033", f"sequence_lengths must be an integer tensor, got {lens.dtype}")
            n = _expect(lens, "sequence_lengths", [n])[0]
        _expect(ctx.inputs[at["W"]], "W", d + [g * hs, i_size])
        _expect(ctx.inputs[at["R"]], "R", d + [g * hs, hs])
        _expect(ctx.inputs[at["B"]], "B", d + [bg * hs])
        state = TensorInfo((n, *d, hs), et)
        outs = ([TensorInfo((n, d[0], x[1], hs), et)] if self.sequence else []) + [state]
        if self.kind == "lstm":
            outs.append(TensorInfo((n, *d, hs), et))
        return outs[: ctx.num_outputs]


class _Sequence(_Recurrent):
    sequence = True
    outputs = (1, 3)

    def build(self, ctx: NodeContext) -> Kernel:
        a, kind, layer, n_out = ctx.attrs, self.kind, ctx.layer, ctx.num_outputs
        lbr = bool(a.get("linear_before_reset", False))
        o = 1 if kind == "lstm" else 0

        def run(ins):
            x = ins[0]
            lens = np.asarray(ins[2 + o]).astype(np.int64).reshape(-1)
            t_len = x.shape[1]
            if lens.size and (lens.min() < 0 or lens.max() > t_len):
                raise runtime_error(layer, f"sequence_lengths {lens.tolist()[:8]} must lie in [0, {t_len}] "
                                           f"(the sequence has {t_len} steps)")
            c0 = ins[2] if o else None
            y, ho, co = run_sequence(kind, x, ins[1], c0, lens, ins[3 + o], ins[4 + o], ins[5 + o],
                                     acts=a["activations"], clip=a["clip"], lbr=lbr, direction=a["direction"])
            outs = [cast(y, x.dtype), cast(ho, x.dtype)] + ([cast(co, x.dtype)] if co is not None else [])
            return outs[:n_out]

        return run


@register
class LSTMSequence(_Sequence):
    type = "LSTMSequence"
    version = 5
    opsets = (5, None)
    kind = "lstm"
    inputs = (7, 7)
    outputs = (1, 3)
    schema = _schema("sigmoid, tanh, tanh", sequence=True, gru=False)
    doc = ("LSTM over a sequence (gates f, i, c, o; forward, reverse or bidirectional; sequence_lengths; clip); "
           "X*W' in one BLAS product, the recurrence step by step.")


@register
class GRUSequence(_Sequence):
    type = "GRUSequence"
    version = 5
    opsets = (5, None)
    kind = "gru"
    inputs = (6, 6)
    outputs = (1, 2)
    schema = _schema("sigmoid, tanh", sequence=True, gru=True)
    doc = "GRU over a sequence (gates z, r, h; linear_before_reset; directions; sequence_lengths; clip)."


@register
class RNNSequence(_Sequence):
    type = "RNNSequence"
    version = 5
    opsets = (5, None)
    kind = "rnn"
    inputs = (6, 6)
    outputs = (1, 2)
    schema = _schema("tanh", sequence=True, gru=False)
    doc = "simple RNN over a sequence (H = f(X*W' + H*R' + B); directions; sequence_lengths; clip)."


class _Cell(_Recurrent):
    """One step: the sequence's math with T = 1, D = 1 and no lengths."""

    sequence = False

    def build(self, ctx: NodeContext) -> Kernel:
        a, kind, n_out = ctx.attrs, self.kind, ctx.num_outputs
        lbr = bool(a.get("linear_before_reset", False))
        o = 1 if kind == "lstm" else 0

        def run(ins):
            x = ins[0]
            lens = np.ones(x.shape[0], np.int64)
            c0 = ins[2][:, None] if o else None
            w, r, b = (v[None] for v in ins[2 + o:5 + o])
            _, ho, co = run_sequence(kind, x[:, None], ins[1][:, None], c0, lens, w, r, b, acts=a["activations"],
                                     clip=a["clip"], lbr=lbr, direction="forward")
            outs = [cast(ho[:, 0], x.dtype)] + ([cast(co[:, 0], x.dtype)] if co is not None else [])
            return outs[:n_out]

        return run


@register
class LSTMCell(_Cell):
    type = "LSTMCell"
    version = 4
    opsets = (4, None)
    kind = "lstm"
    inputs = (6, 6)
    outputs = (1, 2)
    schema = _schema("sigmoid, tanh, tanh", sequence=False, gru=False)
    doc = "one LSTM step: X [N, I], H and C [N, H], W [4H, I], R [4H, H], B [4H] -> H, C (gates f, i, c, o)."


@register
class GRUCell(_Cell):
    type = "GRUCell"
    version = 3
    opsets = (3, None)
    kind = "gru"
    inputs = (5, 5)
    outputs = (1, 1)
    schema = _schema("sigmoid, tanh", sequence=False, gru=True)
    doc = "one GRU step: X [N, I], H [N, H], W [3H, I], R [3H, H], B [3H or 4H] -> H (gates z, r, h)."


@register
class RNNCell(_Cell):
    type = "RNNCell"
    version = 0
    opsets = (1, None)  # OpenVINO's serializer writes RNNCell-0 as opset1
    kind = "rnn"
    inputs = (5, 5)
    outputs = (1, 1)
    schema = _schema("tanh", sequence=False, gru=False)
    doc = "one RNN step: H = f(X*W' + H*R' + B)."
