"""Rows for the activations and float math ops (irnorm.ops.activation).

Every row draws random shapes (rank 0-5, a zero-size dim now and then, one tensor large enough for the
parallel kernels), a float dtype (f32, f16, f64, bf16; integer types where the op takes them),
dynamic dims for some draws, and, for a third of the draws, nasty values: +-0, +-inf, NaN and values
near the top of the type's range.  Where OpenVINO's CPU plugin departs from OpenVINO's reference on
those values (docs in irnorm.ops.activation) the case says so in ``not_openvino``.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64), BF16)
INTS = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.int8))


def _huge(dt: np.dtype) -> float:
    return 6.0e4 if dt == np.float16 else 1.0e30


def draw_shape(rng: np.random.Generator) -> tuple[int, ...]:
    """Rank 0-5 with dims 1-5; 1 in 12 draws has a zero-size dim, 1 in 12 is large (parallel path)."""
    u = rng.random()
    if u < 1 / 12:
        return (2, 129, 130)
    rank = int(rng.integers(0, 6))
    dims = [int(d) for d in rng.integers(1, 6, size=rank)]
    if u > 11 / 12 and rank:
        dims[int(rng.integers(rank))] = 0
    return tuple(dims)


def values(rng: np.random.Generator, shape, dt: np.dtype, scale: float = 3.0, nasty: bool = False) -> np.ndarray:
    """Normal samples times `scale` in dtype `dt` (integers: -9..9); with `nasty`, about a quarter of the
    elements become +-0, +-inf, NaN or +-huge."""
    dt = np.dtype(dt)
    if dt.kind in "iu":
        return rng.integers(-9 if dt.kind == "i" else 0, 10, size=shape).astype(dt)
    v = rng.standard_normal(shape) * scale
    if nasty and v.size:
        pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, _huge(dt), -_huge(dt), 0.5, -0.5, 2.5])
        mask = rng.random(shape) < 0.25
        v = np.where(mask, rng.choice(pool, size=shape), v)
    return v.astype(dt)


F64_INF = "OpenVINO's CPU plugin runs f64 as f32 and saturates +-inf to +-FLT_MAX"


def cpu_f64_inf(*arrays: np.ndarray) -> str:
    """The reason OpenVINO's CPU plugin is no oracle when an f64 input holds an infinity, else ''."""
    for a in arrays:
        if a.dtype == np.float64 and np.isinf(a).any():
            return F64_INF
    return ""


def _has_nan(x: np.ndarray) -> bool:
    return bool(np.isnan(x.astype(np.float32)).any()) if x.dtype.kind not in "iub" else False


def _has_posinf(x: np.ndarray) -> bool:
    return bool(np.isposinf(x.astype(np.float32)).any()) if x.dtype.kind not in "iub" else False


def _unary_case(rng, dtypes=FLOATS, scale=3.0, attrs=None, diverges: tuple = ()) -> Case:
    """One data input; a third of the float draws are nasty.  `diverges` = (reason, predicate): when the
    predicate holds for the data (the values on which OpenVINO's CPU plugin departs from its reference),
    the case is kept from the OpenVINO comparison."""
    dt = dtypes[int(rng.integers(len(dtypes)))]
    nasty = dt.kind == "f" or dt == BF16
    nasty = nasty and rng.random() < 1 / 3
    x = values(rng, draw_shape(rng), dt, scale, nasty)
    return Case((x,), dict(attrs or {}), dynamic=bool(rng.integers(2)),
                label=f"{dt.name} {list(x.shape)}{' nasty' if nasty else ''}",
                not_openvino=(diverges[0] if diverges and diverges[1](x) else "") or cpu_f64_inf(x))


def _ov(module: str, fn: str, *args, **kw):
    def build(nodes, case: Case):
        import importlib

        m = importlib.import_module(f"openvino.{module}")
        extra = [case.attrs[a] for a in args]
        return getattr(m, fn)(*nodes, *extra, **kw)

    return build


# ---- ops with parameters ---------------------------------------------------------------------------


def _swish_case(rng):
    c = _unary_case(rng)
    dt = c.inputs[0].dtype
    k = int(rng.integers(3))
    if k == 0:  # no beta
        return c
    beta = np.array(rng.choice([0.5, 1.0, 1.75, -1.0]), dt)
    return Case((c.inputs[0], beta), {}, params=(0, 1) if k == 2 else (0,), dynamic=c.dynamic,
                label=c.label + f" beta {float(beta)}", not_openvino=c.not_openvino)


def _swish_ov(nodes, case):
    # openvino.opset4.swish adds an f32 beta when none is given, which breaks other data types
    from openvino.utils.node_factory import NodeFactory

    return NodeFactory("opset4").create("Swish", [n.output(0) for n in nodes])


def _swish_ref(c):
    return R.swish(c.inputs[0], float(c.inputs[1]) if len(c.inputs) > 1 else 1.0)


def _selu_case(rng):
    c = _unary_case(rng)
    dt = c.inputs[0].dtype
    shape = [(), (1,)][int(rng.integers(2))]
    alpha = np.full(shape, rng.choice([1.6732632423543772, 0.5]), dt)
    lam = np.full(shape, rng.choice([1.0507009873554805, 2.0]), dt)
    return Case((c.inputs[0], alpha, lam), {}, dynamic=c.dynamic, label=c.label, not_openvino=c.not_openvino)


def _hard_sigmoid_case(rng):
    c = _unary_case(rng)
    dt = c.inputs[0].dtype
    alpha = np.array(rng.choice([0.2, 1 / 6, -0.5]), dt)
    beta = np.array(rng.choice([0.5, 0.5, 0.0, 1.25]), dt)
    odd = c.not_openvino
    if float(beta) != 0.5:
        odd = "the CPU plugin uses beta = 0.5 whatever the beta input holds"
    return Case((c.inputs[0], alpha, beta), {}, dynamic=c.dynamic, label=c.label, not_openvino=odd)


def _ov_nodes(module: str, fn: str):
    def build(nodes, case):
        import importlib

        return getattr(importlib.import_module(f"openvino.{module}"), fn)(*nodes)

    return build


def _prelu_case(rng):
    """Slope patterns: per channel [C], a single value [1], numpy-broadcast shapes (trailing dims, the
    full shape, [1, C, 1, ...]); integer data too."""
    dtypes = FLOATS + (np.dtype(np.int32),)
    dt = dtypes[int(rng.integers(len(dtypes)))]
    c = _unary_case(rng, (dt,))
    x = c.inputs[0]
    if x.ndim == 0:
        x = x.reshape(1)
    k = int(rng.integers(4))
    ch = 1 if x.ndim > 1 else 0
    if k == 0:
        sshape = (x.shape[ch],)
    elif k == 1:
        sshape = (1,)
    elif k == 2:
        sshape = x.shape[-int(rng.integers(1, x.ndim + 1)):]
    else:
        sshape = tuple(d if i == ch else 1 for i, d in enumerate(x.shape))
    slope = values(rng, sshape, dt, 0.5)
    return Case((x, slope), {}, params=(0,) if rng.random() < 0.6 else (0, 1), dynamic=c.dynamic,
                label=f"{c.label} slope {list(sshape)}", not_openvino=c.not_openvino)


def _round_attrs(rng):
    return {"mode": str(rng.choice(["half_to_even", "half_away_from_zero"]))}


def _round_case(rng):
    c = _unary_case(rng, FLOATS + INTS, attrs=_round_attrs(rng))
    x = c.inputs[0]
    if x.dtype.kind == "f" or x.dtype == BF16:  # many exact halves
        x = (np.round(x.astype(np.float64) * 2) / 2).astype(x.dtype)
    return Case((x,), c.attrs, dynamic=c.dynamic, label=c.label, not_openvino=c.not_openvino)


_GELU_INF = ("the CPU plugin gives NaN for Gelu(+inf) with the erf mode", _has_posinf)


def _gelu7_case(rng):
    mode = str(rng.choice(["ERF", "TANH", "erf", "tanh"]))
    return _unary_case(rng, attrs={"approximation_mode": mode}, diverges=_GELU_INF if mode.upper() == "ERF" else ())


def _elu_case(rng):
    return _unary_case(rng, attrs={"alpha": float(rng.choice([1.0, 0.1, 2.5]))})


def _softplus_ref(c):
    dt = c.inputs[0].dtype
    return [R.softplus(c.inputs[0], math.log(float(np.finfo(np.float64 if dt == np.float64 else np.float32).max)))]


_MATH = [  # (type, opset, numpy name, value scale)
    ("Sin", "opset1", "sin", 3.0), ("Cos", "opset1", "cos", 3.0), ("Tan", "opset1", "tan", 1.0),
    ("Asin", "opset1", "arcsin", 0.7), ("Acos", "opset1", "arccos", 0.7), ("Atan", "opset1", "arctan", 3.0),
    ("Sinh", "opset1", "sinh", 2.0), ("Cosh", "opset1", "cosh", 2.0), ("Asinh", "opset4", "arcsinh", 3.0),
    ("Acosh", "opset4", "arccosh", 3.0), ("Atanh", "opset4", "arctanh", 0.7),
]
_VERSION = {"opset1": 1, "opset4": 3}


def _math_row(type_: str, opset: str, name: str, scale: float) -> Row:
    def sample(rng):
        c = _unary_case(rng, scale=scale)
        if type_ == "Acosh" and c.inputs[0].size:  # mostly inside the domain
            x = (np.abs(c.inputs[0].astype(np.float64)) + 1).astype(c.inputs[0].dtype)
            c = Case((x,), {}, dynamic=c.dynamic, label=c.label, not_openvino=c.not_openvino)
        return c

    return Row(f"{type_}-{_VERSION[opset]}", opset, sample,
               lambda c: [R.math_unary(name, c.inputs[0])], _ov_nodes(opset, name.replace("arc", "a")), cases=6,
               tol={**_TOL, "float32": (2e-5, 2e-5)})


_TOL = {"float64": (1e-10, 1e-10), "float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}

ROWS = [
    Row("Relu-1", "opset1", lambda rng: _unary_case(rng, FLOATS + INTS, diverges=("the CPU plugin gives 0 "
                                                    "for Relu(NaN)", _has_nan)),
        lambda c: [R.relu(c.inputs[0])], _ov_nodes("opset1", "relu"), cases=10),
    Row("Gelu-2", "opset2", lambda rng: _unary_case(rng, diverges=_GELU_INF),
        lambda c: [R.gelu(c.inputs[0])], _ov_nodes("opset2", "gelu"), cases=8),
    Row("Gelu-7", "opset7", _gelu7_case, lambda c: [R.gelu(c.inputs[0], c.attrs["approximation_mode"])],
        _ov("opset7", "gelu", "approximation_mode"), cases=10),
    Row("Swish-4", "opset4", _swish_case, lambda c: [_swish_ref(c)], _swish_ov, cases=10),
    Row("HSwish-4", "opset4", lambda rng: _unary_case(rng), lambda c: [R.hswish(c.inputs[0])],
        _ov_nodes("opset4", "hswish"), cases=8),
    Row("HSigmoid-5", "opset5",
        lambda rng: _unary_case(rng, diverges=("the CPU plugin gives 0 for HSigmoid(NaN)", _has_nan)),
        lambda c: [R.hsigmoid(c.inputs[0])], _ov_nodes("opset5", "hsigmoid"), cases=8),
    Row("Mish-4", "opset4", lambda rng: _unary_case(rng), lambda c: [R.mish(c.inputs[0])],
        _ov_nodes("opset4", "mish"), cases=8),
    Row("SoftPlus-4", "opset4", lambda rng: _unary_case(rng, scale=20.0), _softplus_ref,
        _ov_nodes("opset4", "softplus"), cases=8),
    Row("Elu-1", "opset1", _elu_case, lambda c: [R.elu(c.inputs[0], c.attrs["alpha"])], _ov("opset1", "elu", "alpha"),
        cases=8),
    Row("Selu-1", "opset1", _selu_case,
        lambda c: [R.selu(c.inputs[0], float(c.inputs[1].reshape(-1)[0]), float(c.inputs[2].reshape(-1)[0]))],
        _ov_nodes("opset1", "selu"), cases=8),
    Row("HardSigmoid-1", "opset1", _hard_sigmoid_case,
        lambda c: [R.hard_sigmoid(c.inputs[0], float(c.inputs[1]), float(c.inputs[2]))],
        _ov_nodes("opset1", "hard_sigmoid"), cases=8),
    Row("SoftSign-9", "opset9", lambda rng: _unary_case(rng), lambda c: [R.softsign(c.inputs[0])],
        _ov_nodes("opset9", "softsign"), cases=8),
    Row("PRelu-1", "opset1", _prelu_case, lambda c: [R.prelu(*c.inputs)], _ov_nodes("opset1", "prelu"), cases=12),
    Row("Floor-1", "opset1", lambda rng: _unary_case(rng, FLOATS + INTS), lambda c: [R.floor(c.inputs[0])],
        _ov_nodes("opset1", "floor"), cases=8),
    Row("Ceiling-1", "opset1", lambda rng: _unary_case(rng, FLOATS + INTS), lambda c: [R.ceiling(c.inputs[0])],
        _ov_nodes("opset1", "ceiling"), cases=8),
    Row("Round-5", "opset5", _round_case, lambda c: [R.round_(c.inputs[0], c.attrs["mode"])],
        _ov("opset5", "round", "mode"), cases=10),
    Row("Sign-1", "opset1", lambda rng: _unary_case(rng, FLOATS + INTS), lambda c: [R.sign(c.inputs[0])],
        _ov_nodes("opset1", "sign"), cases=8),
] + [_math_row(*m) for m in _MATH]
