"""The shape/type pass: every op's rule over the graph in execution order, declared port dims and
precisions against what the rules give, constant folding, and sizes no machine can allocate."""

from __future__ import annotations

from ..errors import RuleError
from ..ir.dtypes import ELEMENT_TYPES, MAX_RANK
from ..ir.graph import Graph, Node, layer_diagnostic
from ..ir.reader import PortRecord
from ..ir.tensor import TensorInfo, fmt_shape
from ..ops.base import NodeContext

# Larger tensors are absurd on any machine (64 TiB) and refused while checking, before any allocation.
ABSURD_BYTES = 1 << 46
MAX_ELEMENTS = (1 << 63) - 1


def infer_types(graph: Graph) -> None:
    doc, nodes, diags = graph.doc, graph.nodes, graph.diagnostics
    weights_failed = graph.weights is None and any(d.code == "IRN040" for d in diags)
    for node in nodes:
        lay = node.layer
        node.outputs = [None] * len(lay.outputs)
        if node.op is None or not node.arity_ok or not node.attrs_ok:
            node.ok = False
            continue
        if weights_failed and node.op_type == "Const":
            node.ok = False  # already reported (IRN040); no value to give
            continue
        ins = _input_infos(graph, node)
        if ins is None:
            node.ok = False
            continue
        ctx = NodeContext(lay, node.attrs, ins, len(lay.outputs), graph.weights)
        try:
            outs = node.op.infer(ctx)
            if node.op.foldable and ins and outs and all(o.value is None for o in outs) and all(
                    i.value is not None for i in ins):
                outs = _fold(node, ctx, outs)
        except RuleError as e:
            diags.append(layer_diagnostic(doc, lay, e.code, e.message))
            node.ok = False
            continue
        except Exception as e:  # an op rule that did not anticipate this input: still a diagnostic
            diags.append(layer_diagnostic(doc, lay, "IRN032", f"the operation's shape rule cannot handle these "
                                                              f"inputs ({type(e).__name__}: {e})"))
            node.ok = False
            continue
        outs = outs[: len(lay.outputs)]
        size_msg = next((m for m in (size_problem(o) for o in outs) if m), None)
        if size_msg:  # refused before anything is allocated; downstream layers are not checked against it
            diags.append(layer_diagnostic(doc, lay, "IRN050", size_msg))
            node.ok = False
            continue
        for k, info in enumerate(outs):
            _check_output_port(graph, node, lay.outputs[k], info)
            node.outputs[k] = info


def _input_infos(graph: Graph, node: Node) -> list[TensorInfo] | None:
    """The producers' infos, with the input ports' declared dims and precisions checked against
    them; None when an input is unconnected or its producer could not be checked."""
    doc, lay = graph.doc, node.layer
    ins: list[TensorInfo] = []
    upstream_ok = True
    for i, src in enumerate(node.sources):
        if src is None:
            upstream_ok = False
            continue
        prod = graph.nodes[src[0]]
        info = prod.outputs[src[1]] if src[1] < len(prod.outputs) else None
        if info is None:
            upstream_ok = False
            continue
        port = lay.inputs[i]
        if not dims_agree(port.dims, info.shape):
            graph.diagnostics.append(layer_diagnostic(
                doc, lay, "IRN030", f"input port {port.id} declares dims {fmt_shape(port.dims)} but its producer "
                                    f"'{prod.layer.name}' gives {fmt_shape(info.shape)}", line=port.line))
        if (port.precision is not None and port.precision not in ("dynamic", info.dtype)
                and port.precision != decompression_source(graph, prod)):
            graph.diagnostics.append(layer_diagnostic(
                doc, lay, "IRN031", f"input port {port.id} declares precision {port.precision_raw} but its producer "
                                    f"'{prod.layer.name}' gives {info.dtype}", line=port.line))
        ins.append(info)
    return ins if upstream_ok else None


def _check_output_port(graph: Graph, node: Node, port: PortRecord, info: TensorInfo) -> None:
    doc, lay = graph.doc, node.layer
    if not dims_agree(port.dims, info.shape):
        given = (f"its <data shape=\"{lay.data.get('shape', '')}\"> gives" if node.op_type == "Parameter"
                 else "the operation gives")
        graph.diagnostics.append(layer_diagnostic(
            doc, lay, "IRN030", f"output port {port.id} declares dims {fmt_shape(port.dims)} but {given} "
                                f"{fmt_shape(info.shape)}", line=port.line))
    if port.precision is None or port.precision in ("dynamic", info.dtype, decompression_source(graph, node)):
        return
    graph.diagnostics.append(layer_diagnostic(
        doc, lay, "IRN031", f"output port {port.id} declares precision {port.precision_raw} but the operation "
                            f"gives {info.dtype}", line=port.line))


def decompression_source(graph: Graph, node: Node) -> str | None:
    """The source element type of a weight-decompression Convert (rt_info "decompression"), else None.

    When such a Convert feeds a Result, OpenVINO's serializer writes the *source's* precision (FP16
    for f16 -> f32) on the Convert's output port and on every port that consumes it, and reads the
    file back without complaint (the tensor is f32); irnorm accepts exactly that (docs/ir-format.md,
    "Decompression Convert feeding a Result")."""
    if node.op_type != "Convert" or "decompression" not in node.layer.rt_info or len(node.sources) != 1:
        return None
    src = node.sources[0]
    if src is None:
        return None
    info = graph.nodes[src[0]].outputs[src[1]] if src[1] < len(graph.nodes[src[0]].outputs) else None
    return None if info is None else info.dtype


def _fold(node: Node, ctx: NodeContext, outs: list[TensorInfo]) -> list[TensorInfo]:
    """Run a node whose inputs are all constant once, at load time."""
    kernel = node.op.build(ctx)
    values = kernel([i.value for i in ctx.inputs])
    for info, v in zip(outs, values, strict=False):
        v.flags.writeable = False
        info.value = v
    return outs


def size_problem(info: TensorInfo) -> str | None:
    """Why a tensor of this (possibly partly dynamic) shape can never be allocated, or None."""
    if info.shape is None:
        return None
    if len(info.shape) > MAX_RANK:
        return f"shape {fmt_shape(info.shape)} has rank {len(info.shape)}, over irnorm's limit of {MAX_RANK} dims"
    count = 1
    for d in info.shape:
        count *= max(d, 1)
    if count > MAX_ELEMENTS:
        return f"shape {fmt_shape(info.shape)} has {count} elements, more than int64 can count"
    b = count * (ELEMENT_TYPES[info.dtype].itemsize if info.dtype in ELEMENT_TYPES else 8)
    if b > ABSURD_BYTES:
        return f"shape {fmt_shape(info.shape)} of {info.dtype} needs {b} bytes ({b / 2**40:.0f} TiB): absurd size"
    return None


def dims_agree(declared: list[int], inferred: tuple[int, ...] | None) -> bool:
    if inferred is None:
        return True
    if len(declared) != len(inferred):
        return False
    return all(a == b or a == -1 or b == -1 for a, b in zip(declared, inferred, strict=True))
