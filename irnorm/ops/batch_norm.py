"""BatchNormInference-1 (opset1..opset4) and BatchNormInference-5 (opset5+).

y = (x - mean[c]) / sqrt(variance[c] + epsilon) * gamma[c] + beta[c], channel axis 1,
data rank >= 2, every parameter 1-D [C] of the data's element type, epsilon >= 0.

The two versions differ only in their **input port order** (checked on files written
by ``openvino.save_model``; the Python API takes data first for both and reorders):
BN-1 is gamma, beta, data, mean, variance; BN-5 is data, gamma, beta, mean, variance.
(The stored BN-1 doc page shows BN-5's order.)

The kernel is ``(x - mean[c]) * a[c] + beta[c]`` with ``a = gamma / sqrt(variance + eps)``
computed in float64 (once at load when the parameters are constant).  OpenVINO's CPU
plugin folds the mean into the shift (``x * a + b``), which loses about 2% of the output
range at mean 1e4 / variance 1e-4 in f32, and gives NaN instead of +-inf for
variance + epsilon == 0 with x != mean; irnorm follows the formula.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, non_negative, parse_float
from .base import NodeContext, Op, TensorInfo, fail, fmt_shape, merge_dim, register, require_float

_PARAMS = ("gamma", "beta", "mean", "variance")


class _BatchNormInference(Op):
    type = "BatchNormInference"
    schema = AttrSchema([Attr("epsilon", parse_float, check=non_negative, doc="added to the variance; 0 allowed")])
    inputs = (5, 5)
    # port index of data, then of gamma, beta, mean, variance
    data_port: int
    param_ports: tuple[int, int, int, int]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        d = self.data_port
        x = ctx.inputs[d]
        t = require_float(ctx, d, "data")
        c = -1 if x.shape is None or len(x.shape) < 2 else x.shape[1]
        if x.shape is not None and len(x.shape) < 2:
            raise fail("IRN032", f"data must have rank >= 2 [N, C, ...], got {fmt_shape(x.shape)}")
        for name, port in zip(_PARAMS, self.param_ports, strict=True):
            info = ctx.inputs[port]
            if info.dtype != t:
                raise fail("IRN033", f"{name} (input {port}) has element type {info.dtype}, expected {t} "
                                     f"(the data's type)")
            if info.shape is None:
                continue
            if len(info.shape) != 1:
                raise fail("IRN032", f"{name} (input {port}) must be 1-D [C], got {fmt_shape(info.shape)}")
            n = info.shape[0]
            if c != -1 and n != -1 and n != c:
                where = "data has C=" if x.shape is not None and x.shape[1] != -1 else "another parameter has "
                raise fail("IRN032", f"{name} (input {port}) has {n} values but {where}{c}")
            c = merge_dim(c, n)
        shape = None if x.shape is None else (x.shape[0], c) + tuple(x.shape[2:])
        return [TensorInfo(shape, t)]

    def build(self, ctx: NodeContext):
        from ..kernels.affine import channel_affine  # lazy: validate never imports numba

        eps = float(ctx.attrs["epsilon"])
        d = self.data_port
        ports = self.param_ports

        def coefficients(params: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # errstate: a signalling NaN in the weights raises 'invalid' when widened to float64
            with np.errstate(divide="ignore", invalid="ignore"):
                g, b, m, v = (np.asarray(p, np.float64) for p in params)
                mult = g / np.sqrt(v + eps)
            return m, mult, b

        values = [ctx.inputs[p].value for p in ports]
        fixed = coefficients(values) if all(v is not None for v in values) else None

        def run(ins):
            x = ins[d]  # shapes were checked by infer (re-run with concrete shapes for dynamic models)
            params = [ins[p] for p in ports]
            shift, mult, add = fixed if fixed is not None else coefficients(params)
            with np.errstate(over="ignore"):  # gamma/sqrt(var+eps) beyond float32 becomes inf, per IEEE, silently
                return [channel_affine(x, mult, add, shift=shift, axis=1, ndims=1)]

        return run


@register
class BatchNormInference1(_BatchNormInference):
    version = 1
    opsets = (1, 4)
    data_port = 2
    param_ports = (0, 1, 3, 4)
    doc = ("ports gamma [C], beta [C], data [N,C,...] (rank >= 2), mean [C], variance [C]; "
           "y = (x - mean) * gamma / sqrt(variance + epsilon) + beta, coefficients in float64 (OpenVINO's CPU "
           "plugin folds the mean into the shift and loses accuracy for large means).")


@register
class BatchNormInference5(_BatchNormInference):
    version = 5
    opsets = (5, None)
    data_port = 0
    param_ports = (1, 2, 3, 4)
    doc = ("ports data [N,C,...] (rank >= 2), gamma [C], beta [C], mean [C], variance [C]; "
           "y = (x - mean) * gamma / sqrt(variance + epsilon) + beta, coefficients in float64 (OpenVINO's CPU "
           "plugin folds the mean into the shift and loses accuracy for large means).")
