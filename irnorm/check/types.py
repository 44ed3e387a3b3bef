"""The shape/type pass: every op's rule over the graph in execution order, declared port dims and
precisions against what the rules give, constant folding, and sizes no machine can allocate."""

from __future__ import annotations

import numpy as np

from ..errors import IrnormError, RuleError
from ..ir.dtypes import ELEMENT_TYPES, INT_TYPES, MAX_RANK, STORAGE_TYPES
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
        packed = next((i.dtype for i in ins if i.dtype in STORAGE_TYPES), None)
        if packed is not None and node.op_type != "Convert":
            # compressed weights (u4, i4, nf4, f8e4m3, ...) have no kernels: a Convert decompresses them at load
            diags.append(layer_diagnostic(doc, lay, "IRN043", f"reads a {packed} tensor: irnorm supports {packed} "
                                                              f"only as constant weights that a Convert decompresses"))
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
        except IrnormError as e:  # a kernel's own check of its constant inputs while folding (an index out of range)
            diags.extend(layer_diagnostic(doc, lay, "IRN032" if d.code == "IRN064" else d.code, d.message)
                         for d in e.diagnostics)
            node.ok = False
            continue
        except Exception as e:  # an op rule that did not anticipate this input: still a diagnostic
            diags.append(layer_diagnostic(doc, lay, "IRN032", f"the operation's shape rule cannot handle these "
                                                              f"inputs ({type(e).__name__}: {e})"))
            node.ok = False
            continue
        outs = outs[: len(lay.outputs)]
        if outs and outs[0].value is not None and node.op_type in _DECOMPRESSION_OPS:
            decompression_in_f32(node.op_type, ins, outs[0])
        size_msg = next((m for m in (size_problem(o) for o in outs) if m), None)
        if size_msg:  # refused before anything is allocated; downstream layers are not checked against it
            diags.append(layer_diagnostic(doc, lay, "IRN050", size_msg))
            node.ok = False
            continue
        for k, info in enumerate(outs):
            _check_output_port(graph, node, lay.outputs[k], info)
            node.outputs[k] = info
    for node in nodes:  # the decompression chains' float32 values served their folding: not kept with the graph
        for info in node.outputs:
            if info is not None and info.wide is not None:
                info.wide = None
    release_folded_intermediates(graph)


# A folded constant that only other folded layers read -- a compressed weight's f16 or packed codes, the steps of
# its decompression -- is never read again once the graph is checked: the plan keeps the constants its steps read,
# the reference evaluator reads those too.  Above this size its array is replaced by a placeholder of its shape
# and type that holds no memory (the value stays "known": the layer still counts as folded everywhere; small
# shape constants are left alone).  An fp16-compressed model then holds 4 bytes a weight instead of 6 (torchvision's
# ResNeXt-50: peak RSS 416 -> 369 MB), an INT4 one 4 instead of 11.
RELEASE_MIN_BYTES = 1 << 10


def release_folded_intermediates(graph: Graph) -> None:
    users: dict[tuple[int, int], list[Node]] = {}
    for node in graph.nodes:
        for src in node.sources:
            if src is not None:
                users.setdefault(tuple(src), []).append(node)
    for node in graph.nodes:
        for k, info in enumerate(node.outputs):
            if info is None or info.value is None or np.asarray(info.value).nbytes < RELEASE_MIN_BYTES:
                continue
            readers = users.get((node.index, k))
            if readers and all(_is_folded(r) for r in readers):
                info.value = np.broadcast_to(np.zeros((), info.value.dtype), info.value.shape)


def _is_folded(node: Node) -> bool:
    return (node.op is not None and node.op.foldable and bool(node.outputs)
            and all(o is not None and o.value is not None for o in node.outputs))


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


# Weight decompression written in f16 or bf16 -- Convert(integer or storage-type weights -> f16) [- Convert(zero
# point)] * scale [-> Reshape] -> Convert(f32), NNCF's and OpenVINO's compressed-weight pattern -- is computed by
# OpenVINO's CPU plugin in f32, without rounding the products to f16 (it fuses the chain into its weight-compressed
# MatMul kernels): ~1e-3 relative in a layer's outputs.  irnorm folds such a chain at load as the plugin computes
# it: each f16 / bf16 constant of the chain keeps its float32 values (TensorInfo.wide), and the Convert to f32 at
# its end takes those (docs/ir-format.md, section 9).
_DECOMPRESSION_OPS = frozenset({"Convert", "Subtract", "Multiply", "Reshape", "Squeeze", "Unsqueeze"})
_HALF_TYPES = ("f16", "bf16")


def decompression_in_f32(op_type: str, ins: list[TensorInfo], out: TensorInfo) -> None:
    """Give `out` (a folded constant) its float32 values where it is a step of a decompression chain, or give
    the chain's closing Convert to f32 the chain's float32 values."""
    if op_type == "Convert":
        src = ins[0]
        if src.value is None:
            return
        if out.dtype in _HALF_TYPES and (src.dtype in INT_TYPES or src.dtype in STORAGE_TYPES):
            wide = np.asarray(src.value).astype(np.float32)  # integer codes (|v| < 2 ** 24) and codebooks: exact
        elif out.dtype == "f32" and src.wide is not None:
            out.value = src.wide
            return
        else:
            return
    elif out.dtype not in _HALF_TYPES or not any(i.wide is not None for i in ins) or any(i.value is None for i in ins):
        return
    elif op_type == "Subtract":
        a, b = (i.wide if i.wide is not None else np.asarray(i.value).astype(np.float32) for i in ins[:2])
        wide = a - b
    elif op_type == "Multiply":
        a, b = (i.wide if i.wide is not None else np.asarray(i.value).astype(np.float32) for i in ins[:2])
        wide = a * b
    elif ins[0].wide is not None:  # Reshape, Squeeze, Unsqueeze: the data's values in the output's shape
        wide = ins[0].wide.reshape(out.value.shape)
    else:
        return
    if wide.shape == out.value.shape:  # (a broadcast the layer resolved otherwise: no wide values)
        wide.flags.writeable = False
        out.wide = wide


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
    item = (ELEMENT_TYPES[info.dtype].itemsize if info.dtype in ELEMENT_TYPES
            else 1 if info.dtype in STORAGE_TYPES else 8)
    b = count * item
    if b > ABSURD_BYTES:
        return f"shape {fmt_shape(info.shape)} of {info.dtype} needs {b} bytes ({b / 2**40:.0f} TiB): absurd size"
    return None


def dims_agree(declared: list[int], inferred: tuple[int, ...] | None) -> bool:
    if inferred is None:
        return True
    if len(declared) != len(inferred):
        return False
    return all(a == b or a == -1 or b == -1 for a, b in zip(declared, inferred, strict=True))
