"""Normalization (TensorRT INormalizationLayer, ``addNormalization``) as the irnorm extension layer
``type="Normalization" version="irnorm1"``.

Y = (X - Mean(X, axes)) / sqrt(Var(X, axes) + epsilon) * S + B, biased variance.

Ports (by position): inputs 0 ``input`` (T1, rank r >= 1), 1 ``scale`` (T1), 2 ``bias`` (T1);
output 0 ``output`` (T1, input's shape).  T1 in {f32, f16, bf16} (the spec's types).

Attributes (``<data>``):

* ``axes`` (required): the spec's uint32 bitmask, written as a decimal integer; bit i selects
  axis i (``axes="12"`` is 1<<2 | 1<<3, i.e. axes 2 and 3).  Bits at or above the input rank are
  an error (IRN023).  0 (no axes) is allowed: each element is its own mean, so Y = B
  (NaN where X is not finite, or when epsilon is 0).
* ``epsilon``: float >= 0, default 1e-5.
* ``num_groups``: int >= 1, default 1.
* ``compute_precision``: ``f32`` (default) or ``f16`` (element type names, any letter case), for
  TensorRT's setComputePrecision (kFLOAT / kHALF).  irnorm always accumulates the moments in
  float64 and applies them in float32, which is at least the requested precision, so the value
  is validated but does not change the result (TensorRT at f16 can be less accurate).

Flavours, following the spec's shape rules:

* num_groups == 1 (instance norm: axes = the spatial axes; layer norm: axes = a trailing range
  such as 2..r-1, or any other mask): statistics over the mask's axes.  ``scale`` and ``bias``
  must have rank r and each dim 1 or the input's dim: the spec's [1, C, 1, ..., 1] (instance) and
  [1, 1, D2, ..., DN] (layer, shape following the axes) both qualify.
* num_groups == G > 1 (group norm): the input [N, C, ...] (r >= 2) is split into G groups of C/G
  channels (G must divide C); statistics per (n, group) over the C/G channels plus the mask's
  axes.  The mask must not contain axis 1 (IRN023; onnx-tensorrt PR #1052).  ``scale`` / ``bias``
  are either per group [1, G, 1, ..., 1] (the TensorRT docs) or per channel [1, C, 1, ..., 1]
  (ONNX GroupNormalization-21, PyTorch, OpenVINO, TensorRT's GroupNorm plugin), chosen by shape;
  when G == C both readings are the same.  Both must use the same granularity; any other shape
  is rejected (IRN032) with the two accepted shapes in the message.

The affine is fused into the shared moments engine (per channel or per group runs of the reduced
extent); a scale/bias that varies along an axis that is neither reduced nor ahead of the reduced
ones (e.g. [1, 1, 1, W] with axes {2}) falls back to normalizing first and applying the broadcast
affine in float32 afterwards (one rounding to T1 either way).
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema, at_least, enum, non_negative, optional, parse_float, parse_int
from .base import NodeContext, Op, TensorInfo, fail, fmt_shape, register, require_same_type

TRT_TYPES = ("f32", "f16", "bf16")


def _uint32_mask(text: str) -> int:
    v = parse_int(text)
    if not 0 <= v < 1 << 32:
        raise AttrError(f"must be a uint32 bitmask (0 .. 4294967295), got {v}", code="IRN023")
    return v


_uint32_mask.__name__ = "uint32 bitmask (bit i = axis i)"


def mask_axes(mask: int, rank: int) -> list[int]:
    """The axes a bitmask selects; fails (IRN023) if it selects an axis the input does not have."""
    if mask >> rank:
        top = mask.bit_length() - 1
        raise fail("IRN023", f"axes={mask} (bitmask {mask:#x}) selects axis {top}, but the input has rank {rank} "
                             f"(bits 0..{rank - 1} only)")
    return [i for i in range(rank) if mask >> i & 1]


def affine_granularity(x_shape: tuple[int, ...], p_shape: tuple[int, ...] | None, g: int, what: str) -> str | None:
    """For group norm: 'group' for [1, G, 1, ...], 'channel' for [1, C, 1, ...] (G == C counts as
    'group'; both readings agree), None if unknown yet (dynamic).  Fails (IRN032) otherwise."""
    if p_shape is None:
        return None
    r = len(x_shape)
    c = x_shape[1]
    ok_rank = len(p_shape) == r and all(d in (1, -1) for i, d in enumerate(p_shape) if i != 1)
    k = p_shape[1] if len(p_shape) > 1 else None
    if ok_rank and k is not None:
        if k == g:
            return "group"
        if k == -1:
            return None
        if c == -1 or k == c:
            return "channel"
    per_group = fmt_shape((1, g) + (1,) * (r - 2))
    per_channel = fmt_shape((1, c) + (1,) * (r - 2))
    raise fail("IRN032", f"{what} has shape {fmt_shape(p_shape)}; with num_groups={g} it must be per group "
                         f"{per_group} (TensorRT) or per channel {per_channel} (ONNX-21/PyTorch/OpenVINO)")


def check_instance_param(x_shape: tuple[int, ...], p_shape: tuple[int, ...] | None, what: str) -> None:
    """num_groups == 1: same rank as the input, each dim 1 or the input's."""
    if p_shape is None:
        return
    r = len(x_shape)
    bad = len(p_shape) != r or any(not (p in (1, -1) or xd == -1 or p == xd) for p, xd in zip(p_shape, x_shape,
                                                                                              strict=False))
    if bad:
        raise fail("IRN032", f"{what} has shape {fmt_shape(p_shape)}; it must have the input's rank {r} with each "
                             f"dim 1 or the input's dim (input {fmt_shape(x_shape)}; e.g. [1,C,1,...] for instance "
                             f"norm, [1,1,D2,...,DN] for layer norm over axes 2..N)")


@register
class Normalization(Op):
    type = "Normalization"
    version = 1
    opsets = "irnorm1"
    schema = AttrSchema([
        Attr("axes", _uint32_mask, doc="bit i selects axis i"),
        optional("epsilon", parse_float, 1e-5, check=non_negative),
        optional("num_groups", parse_int, 1, check=at_least(1)),
        optional("compute_precision", enum("f32", "f16"), "f32",
                 doc="TensorRT compute precision; irnorm always computes at least in f32"),
    ])
    inputs = (3, 3)
    doc = ("TensorRT INormalization. Inputs input (T1, rank >= 1), scale (T1), bias (T1); output (T1). "
           "`axes` is the uint32 bitmask (bit i = axis i). num_groups=1: statistics over the mask's axes, "
           "scale/bias of the input's rank broadcasting to it ([1,C,1,...] instance, [1,1,D2,...,DN] layer). "
           "num_groups=G>1: group norm over C/G channels + mask axes (mask must not contain axis 1), scale/bias "
           "per group [1,G,1,...] or per channel [1,C,1,...]. T1 in f32, f16, bf16; moments in float64, "
           "affine in float32.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, scale, bias = ctx.inputs
        t = x.dtype
        if t not in TRT_TYPES:
            raise fail("IRN033", f"input must be f32, f16 or bf16 (TensorRT's T1), got {t}")
        require_same_type(ctx, 0, 1, "scale")
        require_same_type(ctx, 0, 2, "bias")
        if x.shape is None:
            return [TensorInfo(None, t)]
        r = len(x.shape)
        if r == 0:
            raise fail("IRN032", "input must have rank >= 1, got a scalar")
        axes = mask_axes(ctx.attrs["axes"], r)
        g = ctx.attrs["num_groups"]
        if g == 1:
            check_instance_param(x.shape, scale.shape, "scale")
            check_instance_param(x.shape, bias.shape, "bias")
            return [TensorInfo(tuple(x.shape), t)]
        if r < 2:
            raise fail("IRN032", f"group normalization (num_groups={g}) needs an input [N, C, ...] of rank >= 2, "
                                 f"got {fmt_shape(x.shape)}")
        if 1 in axes:
            raise fail("IRN023", f"axes={ctx.attrs['axes']} (bitmask {ctx.attrs['axes']:#x}) contains axis 1 (the "
                                 f"channel axis), which is not allowed when num_groups={g} > 1: the channels of a "
                                 f"group are always reduced together")
        c = x.shape[1]
        if c != -1:
            if g > c:
                raise fail("IRN023", f"num_groups={g} exceeds the channel count C={c}")
            if c % g:
                raise fail("IRN023", f"C={c} channels are not divisible by num_groups={g}")
        gs = affine_granularity(x.shape, scale.shape, g, "scale")
        gb = affine_granularity(x.shape, bias.shape, g, "bias")
        if gs is not None and gb is not None and gs != gb and c != g:
            raise fail("IRN032", f"scale {fmt_shape(scale.shape)} is per {gs} but bias {fmt_shape(bias.shape)} is "
                                 f"per {gb}; use the same granularity for both")
        return [TensorInfo(tuple(x.shape), t)]

    def build(self, ctx: NodeContext):
        from .layer_norm import normalize_affine

        mask = ctx.attrs["axes"]
        eps = float(ctx.attrs["epsilon"])
        g = ctx.attrs["num_groups"]

        memo: dict | None = {} if all(i.value is not None for i in ctx.inputs[1:]) else None

        def run(ins):
            x, scale, bias = ins
            r = x.ndim
            axes = mask_axes(mask, r)
            if g == 1:
                return [normalize_affine(x, axes, eps, scale, bias, memo=memo)]
            n, c = x.shape[0], x.shape[1]
            gshape = (n, g, c // g) + x.shape[2:]
            xg = x.reshape(gshape)
            gaxes = [2] + [a + 1 for a in axes if a >= 2] + ([0] if 0 in axes else [])
            params = []
            for p in (scale, bias):
                if p.shape[1] == g:  # per group (or G == C: the same thing)
                    params.append(p.reshape((1, g, 1) + (1,) * (r - 2)))
                else:  # per channel
                    params.append(p.reshape((1, g, c // g) + (1,) * (r - 2)))
            y = normalize_affine(xg, sorted(gaxes), eps, params[0], params[1])
            return [np.ascontiguousarray(y).reshape(x.shape)]

        return run
