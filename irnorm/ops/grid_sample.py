"""GridSample-9: sample data [N, C, H, W] at the normalized positions of grid [N, Hout, Wout, 2].

* ``grid[n, y, x] = (gx, gy)`` in [-1, 1] spans the data's width and height; the output is
  ``[N, C, Hout, Wout]`` of the data's type.  The grid may be of any floating-point type.
* ``align_corners`` (default false): -1 and 1 are the centres of the corner pixels, otherwise
  their outer edges.
* ``mode``: bilinear (default), bicubic (cubic convolution, A = -0.75), nearest (half to even).
* ``padding_mode``: zeros (default), border, reflection -- what a position outside the data reads.

The rules are PyTorch's grid_sample, which ONNX GridSample-16 follows and OpenVINO's CPU plugin
matches (tests/test_ops_sample.py, every mode x padding x align_corners, 1-pixel data included).
Any grid value, NaN and inf included, reads only inside the data.
The kernel is Numba (irnorm/kernels/sample.py): per output pixel the taps and weights are
computed once and blended over all channels.
"""

from __future__ import annotations

from ..ir.attrs import AttrSchema, enum, optional, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, merge_dim, register, runtime_error, same_dim


@register
class GridSample(Op):
    type = "GridSample"
    version = 9
    opsets = (9, None)
    inputs = (2, 2)
    schema = AttrSchema([
        optional("align_corners", parse_bool, False),
        optional("mode", enum("bilinear", "bicubic", "nearest"), "bilinear"),
        optional("padding_mode", enum("zeros", "border", "reflection"), "zeros"),
    ])
    doc = ("sample NCHW data at grid positions [N, Hout, Wout, 2] in [-1, 1]: bilinear, bicubic or nearest; "
           "zeros, border or reflection padding; align_corners.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, g = ctx.inputs
        if x.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"data must be a floating-point tensor, got {x.dtype}")
        if g.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"grid must be a floating-point tensor, got {g.dtype}")
        if x.shape is not None and len(x.shape) != 4:
            raise fail("IRN032", f"data must be 4-D [N, C, H, W], got {fmt_shape(x.shape)}")
        if g.shape is not None:
            if len(g.shape) != 4:
                raise fail("IRN032", f"grid must be 4-D [N, Hout, Wout, 2], got {fmt_shape(g.shape)}")
            if not same_dim(g.shape[3], 2):
                raise fail("IRN032", f"grid's last dim must be 2 (x, y), got {fmt_shape(g.shape)}")
        xs = x.shape if x.shape is not None else (-1,) * 4
        gs = g.shape if g.shape is not None else (-1,) * 4
        if not same_dim(xs[0], gs[0]):
            raise fail("IRN032", f"data {fmt_shape(xs)} and grid {fmt_shape(gs)} disagree on the batch (dim 0)")
        return [TensorInfo((merge_dim(xs[0], gs[0]), xs[1], gs[1], gs[2]), x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import sample as kernel

        a, layer = ctx.attrs, ctx.layer
        dt = ELEMENT_TYPES[ctx.inputs[0].dtype]
        cdt = compute_dtype(dt)

        def run(ins):
            x, g = ins
            if x.ndim != 4 or g.ndim != 4 or g.shape[3] != 2 or x.shape[0] != g.shape[0]:
                raise runtime_error(layer, f"data {fmt_shape(x.shape)} and grid {fmt_shape(g.shape)} do not fit "
                                           f"(need [N, C, H, W] and [N, Hout, Wout, 2])")
            y = kernel.grid_sample(x, g, a["mode"], a["padding_mode"], a["align_corners"], cdt)
            return [y if y.dtype == dt else cast(y, dt)]

        return run
