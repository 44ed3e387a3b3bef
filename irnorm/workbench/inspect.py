"""What is in a model file, even a broken one: inputs, outputs, layers by type and version (the
ones irnorm cannot run marked), opsets, weights and notes -- plain data for `irnorm info`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..ir.dtypes import ELEMENT_TYPES
from ..ir.graph import Graph, Node
from ..ir.tensor import fmt_shape
from ..ops.base import known_versions


def describe(graph: Graph, layers: bool = False) -> dict[str, Any]:
    """A summary of a checked graph; works whether or not the graph has errors.  `layers` adds a
    per-layer listing (``layer_list``)."""
    nodes = graph.nodes
    counts = Counter(n.label for n in nodes)
    unsupported = Counter((n.layer.type, n.layer.version) for n in nodes
                          if n.op is None and n.layer.type and n.layer.version)
    errors = [d for d in graph.diagnostics if d.severity == "error"]
    notes = sorted({d.message.split(":")[0] for d in graph.diagnostics if d.severity == "warning"})
    inputs, outputs = _io(graph)
    dynamic = [f"{s['name']}{s['dims']}" for s in inputs if s["shape"] is None or -1 in s["shape"]]
    if dynamic:
        notes.append(f"dynamic dims: {', '.join(dynamic)} (random inputs use 1 unless --shape NAME=... is given)")
    return {
        "file": graph.path, "name": graph.doc.name, "ir_version": graph.doc.ir_version, "ok": not errors,
        "errors": len(errors), "inputs": inputs, "outputs": outputs, "layers": dict(sorted(counts.items())),
        "unsupported": [{"type": t, "version": v, "count": c, "irnorm_knows": known_versions(t)}
                        for (t, v), c in sorted(unsupported.items())],
        "opsets": sorted({n.layer.version for n in nodes if n.layer.version}),
        "weights_bytes": graph.weights.bytes_read if graph.weights is not None else 0, "notes": notes,
        "variables": _variables(graph),
        **({"layer_list": [_layer(graph, n) for n in _doc_order(graph)]} if layers else {}),
    }


def _variables(graph: Graph) -> list[dict[str, Any]]:
    """A stateful model's variables (ReadValue layers, document order): id, shape and element type."""
    out: dict[str, dict[str, Any]] = {}
    for n in _doc_order(graph):
        if n.layer.type == "ReadValue" and n.op is not None and "variable_id" in n.attrs:
            info = n.outputs[0] if n.outputs and n.outputs[0] is not None else None
            shape = None if info is None or info.shape is None else list(info.shape)
            out.setdefault(n.attrs["variable_id"], {"id": n.attrs["variable_id"], "shape": shape,
                                                   "dims": fmt_shape(shape), "dtype": info.dtype if info else "?"})
    return list(out.values())


def _doc_order(graph: Graph) -> list[Node]:
    position = {id(lay): i for i, lay in enumerate(graph.doc.layers)}
    return sorted(graph.nodes, key=lambda n: position[id(n.layer)])


def _tensor(info: Any, port: Any) -> dict[str, Any]:
    """What is known of one tensor: as checked when available, else as the port declares it."""
    if info is not None:
        return {"shape": None if info.shape is None else list(info.shape), "dtype": info.dtype}
    return {"shape": list(port.dims), "dtype": port.precision or "?", "declared": True}


def _layer(graph: Graph, n: Node) -> dict[str, Any]:
    lay = n.layer
    ins = []
    for i, port in enumerate(lay.inputs):
        src = n.sources[i] if i < len(n.sources) else None
        info = None
        if src is not None and src[1] < len(graph.nodes[src[0]].outputs):
            info = graph.nodes[src[0]].outputs[src[1]]
        ins.append(_tensor(info, port))
    outs = [_tensor(n.outputs[k] if k < len(n.outputs) else None, port) for k, port in enumerate(lay.outputs)]
    # "__" keys are what the checker attached (an If's checked bodies), not attributes of the file
    attrs = {k: v for k, v in n.attrs.items() if not k.startswith("__")} if n.op is not None else dict(lay.data)
    return {"id": lay.id, "name": lay.name, "type": lay.type, "version": lay.version, "line": lay.line,
            "supported": n.op is not None, "ok": n.ok, "attributes": attrs, "inputs": ins, "outputs": outs}


def _io(graph: Graph) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Inputs and outputs by their OpenVINO names when the graph checked out; otherwise as declared
    on the Parameter and Result ports (the model is broken, but its interface is still shown)."""
    if graph.ok:
        from ..runtime.bind import io_specs

        ins, outs, _ = io_specs(graph)
        return [_spec(s) for s in ins], [_spec(s) for s in outs]
    by_type = {"parameter": [], "result": []}
    for n in graph.nodes:
        t = n.layer.type.lower()
        if t in by_type:
            by_type[t].append(n)
    position = {id(lay): i for i, lay in enumerate(graph.doc.layers)}
    ins = [_declared(n, n.layer.outputs[0] if n.layer.outputs else None)
           for n in sorted(by_type["parameter"], key=lambda n: position[id(n.layer)])]
    outs = [_declared(n, n.layer.inputs[0] if n.layer.inputs else None)
            for n in sorted(by_type["result"], key=lambda n: position[id(n.layer)])]
    return ins, outs


def _spec(s: Any) -> dict[str, Any]:
    """A TensorSpec as data: `shape` uses -1 for a dynamic dim; `dims` is the shape as OpenVINO writes
    it, bounds included ("[1..4,16,?]"); `bounds` lists each dim's [lower, upper] (upper null when
    unbounded), or is null when no dynamic dim is bounded."""
    return {"name": s.name, "names": list(s.names), "shape": list(s.shape), "dims": s.dims, "dtype": s.element_type,
            "bounds": None if s.bounds is None else [list(b) for b in s.bounds]}


def _declared(node: Node, port: Any) -> dict[str, Any]:
    names = list(port.names) if port is not None else []
    dtype = port.precision if port is not None and port.precision in ELEMENT_TYPES else "?"
    shape = list(port.dims) if port is not None else None
    return {"name": min(names) if names else node.layer.name, "names": names or [node.layer.name],
            "shape": shape, "dims": fmt_shape(shape), "dtype": dtype, "bounds": None}
