"""Einsum-7: Einstein summation by an equation such as ``bci,bcj->bij`` (ellipsis ``...`` for broadcast
batch dims; without ``->`` the output is the ellipsis then the labels seen once, sorted).

A two-input equation that is a batched matrix product (what exported attention blocks write) runs as
one matmul between transposes (``matmul_plan``, kept per input shapes); others run through numpy's
einsum with ``optimize=True``, which turns them into BLAS matrix products; f16/bf16 compute in float32
and round once; integers in their own type.
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


def matmul_plan(eq: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]):
    """For a two-input equation that is a batched matrix product -- explicit output, no '...', no label
    twice in a term, every label one size, every label kept or contracted (none summed away by one
    input alone) -- a function (a, b) -> result doing it with one matmul between two transposes; else
    None.  numpy's einsum(optimize=True) finds the same product but spends tens of us in Python on
    the path each call ("bci,bcj->bij" on [1, 32, 256]: 70 against 36 us)."""
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if not arrow or len(terms) != 2 or "..." in eq:
        return None
    ta, tb = terms
    if any(len(set(t)) != len(t) for t in (ta, tb, out)) or len(ta) != len(shape_a) or len(tb) != len(shape_b):
        return None
    size: dict[str, int] = {}
    for t, shp in ((ta, shape_a), (tb, shape_b)):
        for lab, d in zip(t, shp, strict=True):
            if size.setdefault(lab, d) != d:
                return None  # a broadcast size-1 label: einsum's job
    if any(lab not in out and (lab not in ta or lab not in tb) for lab in size):
        return None  # a label summed by one input alone
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c in ta and c not in tb]
    right = [c for c in out if c in tb and c not in ta]
    contract = [c for c in ta if c in tb and c not in out]
    perm_a = [ta.index(c) for c in batch + left + contract]
    perm_b = [tb.index(c) for c in batch + contract + right]
    nb, nl, nk, nr = (int(np.prod([size[c] for c in g], dtype=np.int64)) for g in (batch, left, contract, right))
    mid = tuple(size[c] for c in batch + left + right)
    order = batch + left + right
    perm_out = [order.index(c) for c in out]

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        am = a.transpose(perm_a).reshape(nb, nl, nk)
        bm = b.transpose(perm_b).reshape(nb, nk, nr)
        y = np.matmul(am, bm).reshape(mid).transpose(perm_out)  # a fresh product: only a permuted one copies
        return y if y.flags.c_contiguous else y.copy()

    return run


@register
class Einsum(Op):
    uses_blas = True
    type = "Einsum"
    version = 7
    opsets = (7, None)
    inputs = (1, 1 << 10)
    schema = AttrSchema([Attr("equation", parse_equation)])
    doc = ("Einstein summation by `equation` (ellipsis broadcast; implicit output); a two-input batched "
           "matrix product as one matmul, other equations through numpy einsum -> BLAS.")

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

        products: dict[tuple, object] = {}  # (input shapes) -> matmul_plan's function or None

        def run(ins):
            dt = ins[0].dtype
            cdt = compute_dtype(dt) if dt.kind == "f" or dt.name == "bfloat16" else dt
            if len(ins) == 2 and cdt.kind == "f":
                key = (ins[0].shape, ins[1].shape)
                product = products.get(key, False)
                if product is False:
                    product = matmul_plan(eq, *key)
                    if len(products) < 64:
                        products[key] = product
                if product is not None:
                    y = product(np.asarray(ins[0], dtype=cdt), np.asarray(ins[1], dtype=cdt))
                    return [y if y.dtype == dt else cast(y, dt)]
            try:
                y = np.einsum(eq, *(np.asarray(a, dtype=cdt) for a in ins), optimize=True)
            except ValueError as e:
                raise runtime_error(layer, f"the operands do not fit the equation: {e}") from None
            return [np.array(cast(y, dt), copy=True, order="C")]  # 0-d stays 0-d

        return run
