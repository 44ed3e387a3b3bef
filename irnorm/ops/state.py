"""ReadValue-3/-6 and Assign-3/-6: a model's variables (its state), as OpenVINO's stateful models use them
(an LLM's key/value cache kept between calls, a streaming model's last frame).

A variable is named by ``variable_id``.  ReadValue gives the variable's current value, or -- before any
run has assigned it, or after ``Model.reset_state()`` -- its initial value: the ReadValue's input when it
has one (computed at every call, used only then), else zeros of ``variable_shape`` with each dynamic dim 0
(what OpenVINO's CPU plugin gives, docs/ir-format.md "ReadValue and Assign").  Assign gives its input
unchanged; the value becomes the variable's once the whole run has succeeded, so every ReadValue of a run
sees the state from before it.  The state lives with the Model (``NodeContext.variables``, supplied by
the runtime); an Assign of a variable no ReadValue declares, or of another element type or shape, is
refused when the model is checked (irnorm.check.check_variables, IRN035).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema, optional, parse_shape
from ..ir.dtypes import ELEMENT_TYPES
from ..ir.tensor import TensorInfo
from .base import Kernel, NodeContext, Op, fail, fmt_shape, register, runtime_error, same_dim
from .io import _element_type


def _variable_id(text: str) -> str:
    if not text.strip():
        raise AttrError("must not be empty")
    return text


def _declared(ctx: NodeContext) -> tuple[tuple[int, ...] | None, str | None]:
    """The variable's (shape, element type) as ReadValue-6 declares them (None where it does not)."""
    shape = ctx.attrs.get("variable_shape")
    return (None if shape is None else tuple(shape)), ctx.attrs.get("variable_type")


def fits(shape: tuple[int, ...] | None, declared: tuple[int, ...] | None) -> bool:
    """A (possibly partial) shape is compatible with a declared (possibly partial) one."""
    if shape is None or declared is None:
        return True
    return len(shape) == len(declared) and all(same_dim(a, b) for a, b in zip(shape, declared, strict=True))


def _store(ctx: NodeContext) -> Any:
    if ctx.variables is None:
        raise RuntimeError(f"{ctx.layer.type} needs the runtime's variable store (NodeContext.variables)")
    return ctx.variables


class _ReadValue(Op):
    type = "ReadValue"
    foldable = False  # its value is the state's, not its input's

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        shape, dtype = _declared(ctx)
        if ctx.variables is not None:  # a run's shape check: the value this call will read, exactly
            value = ctx.variables.read(ctx.attrs["variable_id"])
            if value is not None:
                return [TensorInfo(tuple(value.shape), dtype or ctx.inputs[0].dtype)]
            if ctx.inputs:  # the initial value, as the rules computed it at this call
                return [TensorInfo(ctx.inputs[0].shape, ctx.inputs[0].dtype)]
            if shape is not None:
                return [TensorInfo(tuple(max(d, 0) for d in shape), dtype)]
        if ctx.inputs:
            init = ctx.inputs[0]
            if dtype is not None and init.dtype != dtype:
                raise fail("IRN033", f"the initial value is {init.dtype}, the variable {dtype}")
            if not fits(init.shape, shape):
                raise fail("IRN032", f"the initial value {fmt_shape(init.shape)} does not fit the variable's shape "
                                     f"{fmt_shape(shape)}")
            dtype = init.dtype
            if "variable_shape" not in ctx.attrs:  # ReadValue-3: the variable has its initial value's shape
                shape = init.shape
        if dtype is None:
            raise fail("IRN020", "a ReadValue without an initial value needs variable_type")
        return [TensorInfo(shape, dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        store, layer = _store(ctx), ctx.layer
        name = ctx.attrs["variable_id"]
        shape, _ = _declared(ctx)
        dtype = ELEMENT_TYPES[self.infer(ctx)[0].dtype]
        store.declare(name)

        def run(ins):
            value = store.read(name)
            if value is not None:
                return [value.copy()]  # the state stays the store's: kernels may write into what they get
            if ins:
                return [np.array(ins[0], copy=True)]
            if shape is None:
                raise runtime_error(layer, f"variable {name!r} has no initial value and a dynamic rank")
            return [np.zeros([max(d, 0) for d in shape], dtype)]

        return run


@register
class ReadValue3(_ReadValue):
    version = 3
    opsets = (3, 5)
    inputs = (1, 1)
    schema = AttrSchema([Attr("variable_id", _variable_id)])
    doc = ("the variable's value (state kept by the Model between runs), or its initial value (the input) before "
           "any run assigned it and after Model.reset_state().")


@register
class ReadValue6(_ReadValue):
    version = 6
    opsets = (6, None)
    inputs = (0, 1)
    schema = AttrSchema([Attr("variable_id", _variable_id), optional("variable_type", _element_type, None),
                         optional("variable_shape", parse_shape, None)])
    doc = ("ReadValue-3 with the variable's declared type and shape; without an input the initial value is zeros "
           "(dynamic dims 0, as OpenVINO's CPU plugin).")


class _Assign(Op):
    type = "Assign"
    inputs = (1, 1)
    outputs = (0, 1)
    foldable = False
    schema = AttrSchema([Attr("variable_id", _variable_id)])

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        return [TensorInfo(ctx.inputs[0].shape, ctx.inputs[0].dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        store, layer = _store(ctx), ctx.layer
        name = ctx.attrs["variable_id"]
        declared = ctx.attrs.get("__variable_shape")  # the ReadValue's, attached by check_variables

        def run(ins):
            value = ins[0]
            if declared is not None and not fits(value.shape, declared):
                raise runtime_error(layer, f"the value {fmt_shape(value.shape)} does not fit variable {name!r} "
                                           f"{fmt_shape(declared)}")
            store.stage(name, np.array(value, copy=True))  # becomes the state when the run succeeds
            return [value]

        return run


@register
class Assign3(_Assign):
    version = 3
    opsets = (3, 5)
    doc = "sets the variable (ReadValue's) to its input once the run succeeds; outputs the input."


@register
class Assign6(_Assign):
    version = 6
    opsets = (6, None)
    doc = "Assign-3 for ReadValue-6's variables."
