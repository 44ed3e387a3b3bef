"""Rows for comparison, logic, bitwise, modulo and selection ops (irnorm.ops.logic).

Binary rows draw two shapes that broadcast (numpy rule, both operand orders, scalars, size-1 dims,
zero-size dims now and then) or, for a fifth of the draws, equal shapes with ``auto_broadcast="none"``;
every element type the op takes; dynamic dims for some draws.  Comparison values come from a small
set so that ties are common, with NaN, +-0 and +-inf for floats.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row
from .activation import cpu_f64_inf, values

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64), BF16)
INTS = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.int8), np.dtype(np.uint8))
BOOL = np.dtype(np.bool_)


def broadcast_pair(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """Two shapes and the auto_broadcast mode."""
    r = int(rng.integers(0, 5))
    out = [int(d) for d in rng.integers(1, 5, size=r)]
    if r and rng.random() < 0.08:
        out[int(rng.integers(r))] = 0
    if rng.random() < 0.2:
        return tuple(out), tuple(out), "none"
    rb = int(rng.integers(0, r + 1))
    b = tuple(1 if rng.random() < 0.4 else d for d in out[r - rb:])
    a = tuple(1 if rng.random() < 0.2 else d for d in out)
    return ((a, b) if rng.random() < 0.5 else (b, a)) + ("numpy",)


def _pick(rng, dtypes):
    return dtypes[int(rng.integers(len(dtypes)))]


def _ties(rng, shape, dt: np.dtype) -> np.ndarray:
    """Values from a small set (ties are common); floats add NaN, +-0 and +-inf."""
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = -3 if dt.kind == "i" else 0
        return rng.integers(lo, 4, size=shape).astype(dt)
    pool = np.array([-2.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, np.nan, np.inf, -np.inf])
    return rng.choice(pool, size=shape).astype(dt)


def _binary_case(rng, dtypes, make=_ties, divisor=None, nan_diverges=False) -> Case:
    sa, sb, mode = broadcast_pair(rng)
    dt = _pick(rng, dtypes)
    a = make(rng, sa, dt)
    b = make(rng, sb, dt) if divisor is None else divisor(rng, sb, dt)
    params = (0, 1) if rng.random() < 0.7 else (0,)
    odd = cpu_f64_inf(a, b)
    if nan_diverges and dt.kind == "f" and (np.isnan(a).any() or np.isnan(b).any()):
        odd = "the CPU plugin's Greater/GreaterEqual are true when an operand is NaN"
    if dt in (np.int64, np.uint64) and any(np.any((v < -2 ** 31) | (v >= 2 ** 31)) for v in (a, b)):
        odd = "the CPU plugin computes i64 in i32"
    return Case((a, b), {"auto_broadcast": mode}, params=params, dynamic=bool(rng.integers(2)),
                label=f"{dt.name} {list(sa)} {list(sb)} {mode}", not_openvino=odd)


def _ov_binary(module: str, fn: str):
    def build(nodes, case):
        import importlib

        return getattr(importlib.import_module(f"openvino.{module}"), fn)(*nodes,
                                                                            auto_broadcast=case.attrs["auto_broadcast"])

    return build


def _ov_unary(module: str, fn: str, **kw):
    def build(nodes, case):
        import importlib

        return getattr(importlib.import_module(f"openvino.{module}"), fn)(*nodes, **kw, **case.attrs)

    return build


# ---- Mod / FloorMod: quarter-integer floats (exact in every float type), nonzero integer divisors ----


def _mod_values(rng, shape, dt):
    if dt.kind in "iu":
        lo = -60 if dt.kind == "i" else 0
        return rng.integers(lo, 61, size=shape).astype(dt)
    v = np.round(rng.standard_normal(shape) * 16) / 4
    return v.astype(dt)


def _mod_divisor(rng, shape, dt):
    if dt.kind in "iu":
        v = rng.integers(1, 8, size=shape)
        if dt.kind == "i":
            v = v * rng.choice([-1, 1], size=shape)
        return v.astype(dt)
    v = rng.choice([-3.0, -1.5, -0.25, 0.75, 1.0, 2.0, 5.0], size=shape)
    if rng.random() < 0.3 and v.size:  # zeros, infinities and NaN in the divisor
        v = np.where(rng.random(shape) < 0.3, rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan], size=shape), v)
    return v.astype(dt)


def _mod_case(rng):
    return _binary_case(rng, FLOATS + INTS, _mod_values, _mod_divisor)


# ---- Select -----------------------------------------------------------------------------------------


def _select_case(rng):
    r = int(rng.integers(0, 5))
    out = [int(d) for d in rng.integers(1, 5, size=r)]
    dt = _pick(rng, FLOATS + INTS + (BOOL,))
    if rng.random() < 0.2:
        shapes, mode = [tuple(out)] * 3, "none"
    else:
        shapes = []
        for _ in range(3):
            k = int(rng.integers(0, r + 1))
            shapes.append(tuple(1 if rng.random() < 0.4 else d for d in out[r - k:]))
        mode = "numpy"
    cond = rng.random(shapes[0]) < 0.5
    then = values(rng, shapes[1], dt) if dt != BOOL else rng.random(shapes[1]) < 0.5
    other = values(rng, shapes[2], dt) if dt != BOOL else rng.random(shapes[2]) < 0.5
    params = tuple(i for i in range(3) if rng.random() < 0.7) or (0,)
    return Case((cond, then, other), {"auto_broadcast": mode}, params=params, dynamic=bool(rng.integers(2)),
                label=f"{dt.name} {[list(s) for s in shapes]} {mode}")


def _select_ov(nodes, case):
    import openvino.opset1 as op1

    return op1.select(*nodes, auto_broadcast=case.attrs["auto_broadcast"])


# ---- unary ------------------------------------------------------------------------------------------


def _unary_case(rng, dtypes, attrs=None):
    from .activation import draw_shape

    dt = _pick(rng, dtypes)
    x = _ties(rng, draw_shape(rng), dt)
    return Case((x,), dict(attrs or {}), dynamic=bool(rng.integers(2)), label=f"{dt.name} {list(x.shape)}",
                not_openvino=cpu_f64_inf(x))


def _is_inf_case(rng):
    return _unary_case(rng, FLOATS, {"detect_negative": bool(rng.integers(2)),
                                     "detect_positive": bool(rng.integers(2))})


def _is_inf_ov(nodes, case):
    import openvino.opset10 as op10

    return op10.is_inf(nodes[0], dict(case.attrs))


_ANY = FLOATS + INTS + (BOOL,)
_COMPARE = [("Equal", np.equal, "equal"), ("NotEqual", np.not_equal, "not_equal"), ("Less", np.less, "less"),
            ("LessEqual", np.less_equal, "less_equal"), ("Greater", np.greater, "greater"),
            ("GreaterEqual", np.greater_equal, "greater_equal")]
_LOGIC = [("LogicalAnd", np.logical_and, "logical_and"), ("LogicalOr", np.logical_or, "logical_or"),
          ("LogicalXor", np.logical_xor, "logical_xor")]
_BITWISE = [("BitwiseAnd", np.bitwise_and, "bitwise_and"), ("BitwiseOr", np.bitwise_or, "bitwise_or"),
            ("BitwiseXor", np.bitwise_xor, "bitwise_xor")]


def _f64_compare(fn):
    """Comparisons on float64 (or the integers / booleans themselves): the oracle for every type."""
    def ref(c):
        a, b = (v if v.dtype.kind in "iub" else v.astype(np.float64) for v in c.inputs)
        return [fn(a, b)]

    return ref


ROWS = (
    [Row(f"{t}-1", "opset1", (lambda nan: lambda rng: _binary_case(rng, _ANY, nan_diverges=nan))(t.startswith("G")),
         _f64_compare(fn), _ov_binary("opset1", ov), cases=8) for t, fn, ov in _COMPARE]
    + [Row(f"{t}-1", "opset1", lambda rng: _binary_case(rng, (BOOL,)), (lambda f: lambda c: [f(*c.inputs)])(fn),
           _ov_binary("opset1", ov), cases=6) for t, fn, ov in _LOGIC]
    + [Row(f"{t}-13", "opset13", lambda rng: _binary_case(rng, INTS + (BOOL,), lambda r, s, d: _bits(r, s, d)),
           (lambda f: lambda c: [f(*c.inputs)])(fn), _ov_binary("opset13", ov), cases=6) for t, fn, ov in _BITWISE]
    + [
        Row("Mod-1", "opset1", _mod_case, lambda c: [R.mod(*c.inputs)], _ov_binary("opset1", "mod"), cases=12),
        Row("FloorMod-1", "opset1", _mod_case, lambda c: [R.floor_mod(*c.inputs)], _ov_binary("opset1", "floor_mod"),
            cases=12),
        Row("LogicalNot-1", "opset1", lambda rng: _unary_case(rng, (BOOL,)), lambda c: [~c.inputs[0]],
            _ov_unary("opset1", "logical_not"), cases=4),
        Row("BitwiseNot-13", "opset13", lambda rng: _unary_case(rng, INTS + (BOOL,)),
            lambda c: [np.invert(c.inputs[0])], _ov_unary("opset13", "bitwise_not"), cases=6),
        Row("Select-1", "opset1", _select_case, lambda c: [R.select(*c.inputs)], _select_ov, cases=12),
        Row("IsNaN-10", "opset10", lambda rng: _unary_case(rng, FLOATS), lambda c: [np.isnan(c.inputs[0])],
            _ov_unary("opset10", "is_nan"), cases=4),
        Row("IsFinite-10", "opset10", lambda rng: _unary_case(rng, FLOATS), lambda c: [np.isfinite(c.inputs[0])],
            _ov_unary("opset10", "is_finite"), cases=4),
        Row("IsInf-10", "opset10", _is_inf_case, lambda c: [R.is_inf(c.inputs[0], **c.attrs)], _is_inf_ov, cases=6),
    ]
)


# ---- BitwiseLeftShift / BitwiseRightShift -----------------------------------------------------------

SHIFT_INTS = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                         np.uint64))


def cpu_shift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    """What OpenVINO 2026.4's CPU plugin computes (checked on every type against the plugin): the data wrapped
    to 32 bits (types narrower than 32 bits widened, wider ones cut to their low 32 bits), shifted as i32 by
    the x86 count b & 31, then narrowed (or sign-extended) back to the type."""
    a32 = a.astype(np.int32) if a.dtype.itemsize < 4 else a.astype(np.uint64).astype(np.uint32).view(np.int32) \
        if a.dtype.itemsize == 8 else a.view(np.int32)
    s = (b.astype(np.int64) & 31).astype(np.int32)
    with np.errstate(over="ignore"):
        r = np.left_shift(a32, s) if left else np.right_shift(a32, s)
        return r.astype(a.dtype) if a.dtype.itemsize < 8 else r.astype(np.int64).astype(a.dtype)


def _shift_case(rng, left: bool) -> Case:
    sa, sb, mode = broadcast_pair(rng)
    dt = _pick(rng, SHIFT_INTS)
    info = np.iinfo(dt)
    a = _bits(rng, sa, dt) if rng.random() < 0.5 else rng.integers(max(info.min, -40), 41, size=sa).astype(dt)
    b = rng.integers(0, info.bits, size=sb)
    if rng.random() < 0.3 and b.size:  # counts outside [0, bits): negative (signed types), bits, beyond
        odd = rng.integers(-3 if info.min < 0 else info.bits, info.bits + 70, size=sb)
        b = np.where(rng.random(sb) < 0.4, odd, b)
    b = np.clip(b, info.min, info.max).astype(dt)
    exact = R.bitwise_left_shift(a, b) if left else R.bitwise_right_shift(a, b)
    odd = "" if np.array_equal(cpu_shift(*np.broadcast_arrays(a, b), left), exact) else \
        "the CPU plugin shifts in i32 by b & 31 (docs/ir-format.md)"
    return Case((a, b), {"auto_broadcast": mode}, params=(0, 1) if rng.random() < 0.7 else (0,),
                dynamic=bool(rng.integers(2)), label=f"{dt.name} {list(sa)} {list(sb)} {mode}", not_openvino=odd)


ROWS += [
    Row("BitwiseLeftShift-15", "opset15", lambda rng: _shift_case(rng, True),
        lambda c: [R.bitwise_left_shift(*c.inputs)], _ov_binary("opset15", "bitwise_left_shift"), cases=16),
    Row("BitwiseRightShift-15", "opset15", lambda rng: _shift_case(rng, False),
        lambda c: [R.bitwise_right_shift(*c.inputs)], _ov_binary("opset15", "bitwise_right_shift"), cases=16),
]


def _bits(rng, shape, dt):
    """Full-range integers (every bit matters) or booleans."""
    if dt == BOOL:
        return rng.random(shape) < 0.5
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
