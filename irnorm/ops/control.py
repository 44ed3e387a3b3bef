"""If-8: run one of two sub-graphs, chosen by a boolean condition.

The layer holds ``<then_body>`` and ``<else_body>``, each a network of its own (Parameters, layers, Results),
and ``<then_port_map>`` / ``<else_port_map>``: ``<input external_port_id=P internal_layer_id=L/>`` feeds the If's
input port P to the body's Parameter L, ``<output external_port_id=P internal_layer_id=L/>`` makes the body's
Result L the If's output port P.  Input 0 is the condition (a boolean scalar or one-element 1-D tensor) and is
never mapped; a body need not use every other input.  ``irnorm.check.check_bodies`` checks each body as a
document (same weights file) and attaches the checked graphs and port maps as ``__then_body`` /
``__then_port_map`` (and ``__else_...``); the kernel runs the chosen body through the runtime's own loader,
which the planner hands in (``NodeContext.subgraph``), so this module needs nothing above ``ops``.

Shape rule: with a constant condition the chosen body's Result infos; otherwise, per output, both bodies'
infos merged (a dim the two agree on is kept, others are dynamic; ranks that differ leave the rank unknown)
-- OpenVINO's rule.  The two bodies must give each output the same element type.  torchvision's detection
models (SSD, SSDLite, Faster R-CNN, RetinaNet) export their post-processing's ``if boxes.numel() == 0``
branches this way.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from ..errors import IrnormError
from ..ir.tensor import TensorInfo
from .base import Kernel, NodeContext, Op, fail, fmt_shape, register, runtime_error

BODIES = ("then_body", "else_body")


def port_map(layer: Any, attrs: dict[str, Any], tag: str) -> tuple[Any, list[int], list[int]]:
    """(the checked body Graph, for each body Parameter in order the If operand that feeds it, for each If
    output in order the position of its Result among the body's Results).  Raises IRN010 / IRN013 for a
    port map that does not fit the layer or the body."""
    body = attrs["__" + tag]
    entries = attrs["__" + tag.replace("_body", "_port_map")]
    lay = layer
    in_index, out_index, by_id, param_pos, result_pos = port_lookups(lay, body)
    feeds: list[int | None] = [None] * len(body.parameters)
    picks: list[int | None] = [None] * len(lay.outputs)
    pm = tag.replace("_body", "_port_map")
    for e in entries:
        if e.internal_layer_id not in by_id:
            raise fail("IRN013", f"<{pm}> line {e.line}: the {tag} has no layer {e.internal_layer_id}")
        if e.kind == "input":
            if e.external_port_id not in in_index or in_index[e.external_port_id] == 0:
                raise fail("IRN013", f"<{pm}> line {e.line}: input port {e.external_port_id} is not a data input "
                                     f"of the If (port 0, the condition, is never mapped)")
            k = param_pos.get(e.internal_layer_id)
            if k is None:
                raise fail("IRN013", f"<{pm}> line {e.line}: layer {e.internal_layer_id} of the {tag} is not a "
                                     f"Parameter")
            if feeds[k] is not None:
                raise fail("IRN013", f"<{pm}>: Parameter {e.internal_layer_id} of the {tag} is mapped twice")
            feeds[k] = in_index[e.external_port_id]
        else:
            if e.external_port_id not in out_index:
                raise fail("IRN013", f"<{pm}> line {e.line}: the If has no output port {e.external_port_id}")
            k = result_pos.get(e.internal_layer_id)
            if k is None:
                raise fail("IRN013", f"<{pm}> line {e.line}: layer {e.internal_layer_id} of the {tag} is not a "
                                     f"Result")
            if picks[out_index[e.external_port_id]] is not None:
                raise fail("IRN013", f"<{pm}>: output port {e.external_port_id} is mapped twice")
            picks[out_index[e.external_port_id]] = k
    check_port_map_complete(lay, body, feeds, picks, owner="If", tag=tag, pm=pm)
    return body, feeds, picks  # type: ignore[return-value]


def port_lookups(layer: Any, body: Any) -> tuple[dict[int, int], dict[int, int], dict[int, Any], dict[int, int],
                                                 dict[int, int]]:
    """What a port map's entries are resolved with (If, TensorIterator, Loop): the layer's input and output port
    indices by port id, the body's nodes by layer id, and the positions of its Parameters and Results (in the
    body's order) by layer id."""
    in_index = {p.id: p.index for p in layer.inputs}
    out_index = {p.id: p.index for p in layer.outputs}
    by_id = {n.layer.id: n for n in body.nodes}
    param_pos = {body.nodes[i].layer.id: k for k, i in enumerate(body.parameters)}
    result_pos = {body.nodes[i].layer.id: k for k, i in enumerate(body.results)}
    return in_index, out_index, by_id, param_pos, result_pos


def check_port_map_complete(layer: Any, body: Any, feeds: list[Any], outs: list[Any], *, owner: str, tag: str,
                            pm: str) -> None:
    """IRN013 for a body Parameter no port map entry feeds (its `feeds` item None) or an output port of the
    layer no entry gives a Result (its `outs` item None).  `owner` names the layer's kind in the message (If,
    TensorIterator, Loop), `tag` the body (then_body, else_body, body), `pm` the port map element."""
    for k, f in enumerate(feeds):
        if f is None:
            lid = body.nodes[body.parameters[k]].layer.id
            raise fail("IRN013", f"<{pm}>: Parameter {lid} of the {tag} is fed by no input of the {owner}")
    for k, o in enumerate(outs):
        if o is None:
            raise fail("IRN013", f"<{pm}>: output port {layer.outputs[k].id} of the {owner} comes from no Result of "
                                 f"the {tag}")


def result_info(body: Any, k: int) -> TensorInfo:
    """The info of what feeds the body's k-th Result."""
    node = body.nodes[body.results[k]]
    src = node.sources[0]
    return body.nodes[src[0]].outputs[src[1]]


def _merge(a: TensorInfo, b: TensorInfo) -> tuple[int, ...] | None:
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return None
    return tuple(x if x == y else -1 for x, y in zip(a.shape, b.shape, strict=True))


@register
class If8(Op):
    type = "If"
    version = 8
    opsets = (8, None)
    inputs = (1, 1 << 10)
    outputs = (1, 1 << 10)
    bodies: ClassVar[tuple[str, ...]] = BODIES
    foldable = False  # a body runs through the runtime's loader, which a check does not have
    doc = ("cond (boolean, one element), data inputs: runs <then_body> when cond is true, else <else_body>; "
           "<then_port_map> / <else_port_map> map the If's ports to each body's Parameters and Results.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        cond = ctx.inputs[0]
        if cond.dtype != "boolean":
            raise fail("IRN033", f"the condition (input 0) must be boolean, got {cond.dtype}")
        if cond.shape is not None and (len(cond.shape) > 1 or (len(cond.shape) == 1 and cond.shape[0] not in (1, -1))):
            raise fail("IRN032", f"the condition (input 0) must be a scalar or hold one element, got "
                                 f"{fmt_shape(cond.shape)}")
        per_body = {}
        for tag in BODIES:
            body, feeds, picks = port_map(ctx.layer, ctx.attrs, tag)
            for k, operand in enumerate(feeds):
                param = body.nodes[body.parameters[k]]
                given, declared = ctx.inputs[operand], param.outputs[0]
                if given.dtype != declared.dtype:
                    raise fail("IRN031", f"input {operand} is {given.dtype} but feeds Parameter {param.layer.id} "
                                         f"'{param.layer.name}' of the {tag}, declared {declared.dtype}")
                if (given.shape is not None and declared.shape is not None and len(given.shape) != len(declared.shape)):
                    raise fail("IRN030", f"input {operand} {fmt_shape(given.shape)} feeds Parameter "
                                         f"{param.layer.id} '{param.layer.name}' of the {tag}, declared "
                                         f"{fmt_shape(declared.shape)}")
            per_body[tag] = [result_info(body, pk) for pk in picks]
        then_infos, else_infos = per_body["then_body"], per_body["else_body"]
        outs = []
        for k, (a, b) in enumerate(zip(then_infos, else_infos, strict=True)):
            if a.dtype != b.dtype:
                raise fail("IRN033", f"output {k}: the then_body gives {a.dtype}, the else_body {b.dtype} (they must "
                                     f"agree)")
            if cond.value is not None:
                chosen = a if bool(np.asarray(cond.value).reshape(-1)[0]) else b
                outs.append(TensorInfo(chosen.shape, chosen.dtype))
            else:
                outs.append(TensorInfo(_merge(a, b), a.dtype))
        return outs

    def build(self, ctx: NodeContext) -> Kernel:
        if ctx.subgraph is None:
            raise RuntimeError("If needs the runtime's sub-graph loader (NodeContext.subgraph)")
        layer = ctx.layer
        branches = []
        for tag in BODIES:
            body, feeds, picks = port_map(ctx.layer, ctx.attrs, tag)
            try:
                branches.append((ctx.subgraph(body), feeds, picks, tag))
            except IrnormError as e:  # e.g. the body's plan over the memory limit (IRN051)
                raise _in_body(e, layer, tag) from None
        then_branch, else_branch = branches

        def run(ins):
            cond = ins[0]
            if cond.size != 1:
                raise runtime_error(layer, f"the condition must hold one element, got shape {list(cond.shape)}")
            body, feeds, picks, tag = then_branch if bool(cond.reshape(-1)[0]) else else_branch
            try:
                results = body([ins[i] for i in feeds])
            except IrnormError as e:
                raise _in_body(e, layer, tag) from None
            return [results[k] for k in picks]

        return run


def _in_body(e: IrnormError, layer: Any, tag: str) -> IrnormError:
    """An error a body raised, as the model reports it: each message prefixed with where the body sits (as
    check_bodies prefixes a body's diagnostics), a model-wide one (no line: a memory limit) at the If's line."""
    prefix = f"in the {tag} of layer {layer.id} '{layer.name}': "
    diags = [dataclasses.replace(d, message=prefix + d.message, line=d.line if d.line is not None else layer.line)
             for d in e.diagnostics]
    try:
        return type(e)(diags)
    except TypeError:  # a subclass with a constructor of its own
        return IrnormError(diags)
