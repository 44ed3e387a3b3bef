"""Einsum-7: Einstein summation by an equation such as ``bci,bcj->bij`` (ellipsis ``...`` for broadcast
batch dims; without ``->`` the output is the ellipsis then the labels seen once, sorted).

The contraction runs through numpy's einsum with ``optimize=True``, which turns it into BLAS matrix
products; f16/bf16 compute in float32 and round once; integers in their own type.
"""

from __future__ import annotations

import re

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema
from ..ir.dtypes import FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, broadcast_shape, fail, fmt_shape, register, runtime_error

_TERM = re.compile(r"^([a-zA-Z]*)(\.\.\.)?([a-zA-Z]*)$")


def parse_equation(text: str) -> str:
    eq = text.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    for t in terms + ([rhs] if arrow else []):
        if not _TERM.match(t):
            raise AttrError(f"'{text}' is not an einsum equation (letters, at most one '...' per term)")
    if arrow:
        seen = set("".join(terms))
        extra = set(rhs.replace("...", "")) - seen
        if extra:
            raise AttrError(f"'{text}': output labels {sorted(extra)} appear in no input")
        if "..." in rhs and not any("..." in t for t in terms):
            raise AttrError(f"'{text}': '...' in the output but in no input")
    return eq


def _output_shape(eq: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise fail("IRN017", f"the equation names {len(terms)} inputs, the layer has {len(shapes)}")
    size: dict[str, int] = {}
    ell: tuple[int, ...] | None = ()
    for t, shp in zip(terms, shapes, strict=True):
        head, dots, tail = _TERM.match(t).groups()
        n_ell = len(shp) - len(head) - len(tail)
        if n_ell < 0 or (n_ell and not dots):
            raise fail("IRN032", f"term '{t}' does not fit an input of shape {fmt_shape(shp)}")
        labels = list(head) + list(tail)
        dims = list(shp[:len(head)]) + list(shp[len(shp) - len(tail):]) if tail else list(shp[:len(head)])
        for lab, d in zip(labels, dims, strict=True):
            old = size.get(lab, 1 if d != -1 else -1)
            if old not in (1, -1) and d not in (1, -1) and old != d:
                raise fail("IRN032", f"label '{lab}' has sizes {old} and {d}")
            size[lab] = d if old in (1, -1) and d != 1 else old
        if dots:
            ell = broadcast_shape(ell, tuple(shp[len(head):len(head) + n_ell]), "numpy")
    if not arrow:
        once = sorted(c for c in set(lhs.replace(",", "").replace(".", "")) if lhs.count(c) == 1)
        rhs = ("..." if "..." in lhs else "") + "".join(once)
    head, dots, tail = _TERM.match(rhs).groups()
    return tuple(size[c] for c in head) + (tuple(ell) if dots else ()) + tuple(size[c] for c in tail)


@register
class Einsum(Op):
    uses_blas = True
    type = "Einsum"
    version = 7
    opsets = (7, None)
    inputs = (1, 1 << 10)
    schema = AttrSchema([Attr("equation", parse_equation)])
    doc = "Einstein summation by `equation` (ellipsis broadcast; implicit output); numpy einsum -> BLAS."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t = ctx.inputs[0].dtype
        if t not in FLOAT_TYPES + INT_TYPES:
            raise fail("IRN033", f"inputs must be numeric, got {t}")
        for i, info in enumerate(ctx.inputs):
            if info.dtype != t:
                raise fail("IRN033", f"input {i} has element type {info.dtype}, expected {t}")
        if any(i.shape is None for i in ctx.inputs):
            return [TensorInfo(None, t)]
        return [TensorInfo(_output_shape(ctx.attrs["equation"], [tuple(i.shape) for i in ctx.inputs]), t)]

    def build(self, ctx: NodeContext) -> Kernel:
        eq, layer = ctx.attrs["equation"], ctx.layer

        def run(ins):
            dt = ins[0].dtype
            cdt = compute_dtype(dt) if dt.kind == "f" or dt.name == "bfloat16" else dt
            try:
                y = np.einsum(eq, *(np.asarray(a, dtype=cdt) for a in ins), optimize=True)
            except ValueError as e:
                raise runtime_error(layer, f"the operands do not fit the equation: {e}") from None
            return [np.array(cast(y, dt), copy=True, order="C")]  # 0-d stays 0-d

        return run
