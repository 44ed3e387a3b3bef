"""Graph-level passes: the weights file, fp16-compressed weights, the model's inputs and outputs,
layers left unchecked, and what no Result depends on."""

from __future__ import annotations

from typing import Any

from ..errors import Diagnostic, ModelFileError
from ..ir.dtypes import STORAGE_TYPES
from ..ir.graph import Graph, layer_diagnostic
from ..ir.tensor import fmt_shape


def open_weights(graph: Graph) -> None:
    """Open the .bin once when a Const needs it; an unreadable file is one IRN040 (and no Const values)."""
    if graph.weights is None or not any(n.op_type == "Const" for n in graph.nodes):
        return
    try:
        graph.weights.size  # noqa: B018  (opens the file; errors become a diagnostic)
    except ModelFileError as e:
        graph.diagnostics.extend(e.diagnostics)
        graph.weights = None


def note_compressed_weights(graph: Graph) -> None:
    nodes = graph.nodes
    compressed = [n for n in nodes if n.op_type == "Convert" and "decompression" in n.layer.rt_info
                  and n.sources and n.sources[0] is not None and nodes[n.sources[0][0]].outputs
                  and nodes[n.sources[0][0]].outputs[0] is not None
                  and nodes[n.sources[0][0]].outputs[0].dtype == "f16"]
    if compressed:
        graph.diagnostics.append(layer_diagnostic(
            graph.doc, compressed[0].layer, "IRN091", f"fp16-compressed weights: {len(compressed)} Const(s) stored "
            "as f16 and decompressed once at load time; outputs differ from an f32 original", severity="warning"))
    # weight compression (NNCF): Consts of a storage type, or u8 / i8 ones, that a Convert turns into floats
    packed = [(n, nodes[n.sources[0][0]]) for n in nodes if n.op_type == "Convert" and n.sources
              and n.sources[0] is not None and nodes[n.sources[0][0]].op_type == "Const"
              and n.outputs and n.outputs[0] is not None and n.outputs[0].dtype in ("f16", "bf16", "f32")]
    packed = [(n, c) for n, c in packed if c.outputs and c.outputs[0] is not None
              and (c.outputs[0].dtype in STORAGE_TYPES or c.outputs[0].dtype in ("u8", "i8"))]
    if packed:
        types = sorted({c.outputs[0].dtype for _, c in packed})
        graph.diagnostics.append(layer_diagnostic(
            graph.doc, packed[0][0].layer, "IRN093", f"weight-compressed weights: {len(packed)} Const(s) of "
            f"{', '.join(types)} decompressed once at load time (held decompressed in memory)", severity="warning"))


def find_inputs_outputs(graph: Graph) -> None:
    """Parameters and Results in document order: OpenVINO's input and output order."""
    position = {id(lay): i for i, lay in enumerate(graph.doc.layers)}
    by_doc = sorted(graph.nodes, key=lambda n: position[id(n.layer)])
    graph.parameters = [n.index for n in by_doc if n.op_type == "Parameter"]
    graph.results = [n.index for n in by_doc if n.op_type == "Result"]
    graph.sinks = [n.index for n in by_doc if n.op_type == "Assign"]


def check_variables(graph: Graph) -> None:
    """A stateful model's variables (ops/state.py): every Assign writes a variable some ReadValue declares, of
    the element type and a shape that fits what the ReadValues say (OpenVINO cannot read a file whose Assign
    names no variable: 'map::at'); ReadValues of one variable agree with each other.  Each Assign gets the
    variable's shape as ``__variable_shape`` (checked again at run time, where dims were dynamic)."""
    if not any(n.op_type in ("ReadValue", "Assign") for n in graph.nodes):
        return
    from ..ops.state import fits  # the ops' own rule of shape compatibility

    declared: dict[str, Any] = {}
    for n in graph.nodes:
        if n.op_type != "ReadValue" or not n.outputs or n.outputs[0] is None:
            continue
        vid, info = n.attrs.get("variable_id"), n.outputs[0]
        prev = declared.get(vid)
        if prev is not None and (prev.dtype != info.dtype or not fits(info.shape, prev.shape)):
            graph.diagnostics.append(layer_diagnostic(
                graph.doc, n.layer, "IRN035", f"variable {vid!r} is {info.dtype} {fmt_shape(info.shape)} here but "
                f"{prev.dtype} {fmt_shape(prev.shape)} at another ReadValue"))
        declared.setdefault(vid, info)
    for n in graph.nodes:
        if n.op_type != "Assign" or not n.sources or n.sources[0] is None:
            continue
        vid = n.attrs.get("variable_id")
        var = declared.get(vid)
        src = graph.nodes[n.sources[0][0]].outputs
        value = src[n.sources[0][1]] if src and n.sources[0][1] < len(src) else None
        if var is None:
            graph.diagnostics.append(layer_diagnostic(graph.doc, n.layer, "IRN035", f"Assign writes variable {vid!r}, "
                                                      "which no ReadValue declares"))
        elif value is not None and (value.dtype != var.dtype or not fits(value.shape, var.shape)):
            graph.diagnostics.append(layer_diagnostic(
                graph.doc, n.layer, "IRN035", f"Assign writes {value.dtype} {fmt_shape(value.shape)} to variable "
                f"{vid!r}, which is {var.dtype} {fmt_shape(var.shape)}"))
        else:
            n.attrs["__variable_shape"] = var.shape


def guard_unchecked(graph: Graph) -> None:
    """Every skipped rule must have been explained by an error; if not, say so rather than hand an
    unchecked graph to the runtime."""
    if graph.ok:
        for n in graph.nodes:
            if not n.ok:
                graph.diagnostics.append(layer_diagnostic(graph.doc, n.layer, "IRN032",
                                                          "the layer's shape and type could not be checked"))
                break


def check_reachability(graph: Graph) -> None:
    if not graph.results:
        graph.diagnostics.append(Diagnostic("IRN018", "the model has no Result layer", file=graph.path))
        return  # without a Result every layer would be "dangling": say it once, not per layer
    live: set[int] = set()
    stack = list(graph.results) + list(graph.sinks)
    while stack:
        i = stack.pop()
        if i in live:
            continue
        live.add(i)
        stack.extend(s[0] for s in graph.nodes[i].sources if s is not None)
    for n in graph.nodes:
        if n.index not in live:
            graph.diagnostics.append(layer_diagnostic(graph.doc, n.layer, "IRN090", "dangling layer: no Result "
                                                                                    "depends on it (it is not run)",
                                                      severity="warning"))
