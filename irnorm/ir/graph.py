"""Stage 2a: records -> a graph of nodes and edges in execution order (plain data).

This stage knows the document's structure only: layer ids, ports, edges and their order.  What
the layers mean (which operation, its attributes, shapes and types) is filled in by
``irnorm.check``, whose passes run over this graph.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic
from .reader import IRDocument, LayerRecord
from .tensor import TensorInfo
from .weights import Weights


@dataclass
class Node:
    index: int  # position in execution (topological) order
    layer: LayerRecord
    sources: list[tuple[int, int] | None]  # per input operand: (producer node index, output index)
    op: Any = None  # the resolved operation (an irnorm.ops.base.Op), set by irnorm.check; None if unknown
    attrs: dict[str, Any] = field(default_factory=dict)  # typed attribute values, set by irnorm.check
    outputs: list[TensorInfo | None] = field(default_factory=list)
    ok: bool = True  # rule checks passed
    arity_ok: bool = True  # port counts fit the op (its rule is not run otherwise)
    attrs_ok: bool = True  # every attribute parsed and passed its check (None is a legal value)

    @property
    def label(self) -> str:
        return f"{self.layer.type}-{self.layer.version}"

    @property
    def op_type(self) -> str | None:
        """The resolved operation's type (e.g. 'Parameter'), or None when the layer's op is unknown."""
        return None if self.op is None else self.op.type


@dataclass
class Graph:
    path: str
    doc: IRDocument
    nodes: list[Node]
    diagnostics: list[Diagnostic]
    weights: Weights | None
    parameters: list[int] = field(default_factory=list)  # node indices, in document order (OpenVINO's input order)
    results: list[int] = field(default_factory=list)  # node indices, in document order (OpenVINO's output order)
    sinks: list[int] = field(default_factory=list)  # Assign nodes (they run though no Result reads them)

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def layer_diagnostic(doc: IRDocument, layer: LayerRecord, code: str, msg: str, line: int | None = None,
                     severity: str = "error") -> Diagnostic:
    """A diagnostic located at a layer (its line, or `line` when given)."""
    w = layer.where(doc.path)
    if line is not None:
        w["line"] = line
    return Diagnostic(code, msg, severity=severity, **w)


def index_layers(doc: IRDocument, diags: list[Diagnostic]) -> dict[str, int]:
    """Layer id -> position in the document; a repeated id is IRN011 (the first one wins)."""
    by_id: dict[str, int] = {}
    for i, lay in enumerate(doc.layers):
        if lay.id in by_id:
            first = doc.layers[by_id[lay.id]]
            diags.append(layer_diagnostic(doc, lay, "IRN011", f"duplicate layer id {lay.id} (first used at line "
                                                              f"{first.line} by '{first.name}')"))
            continue
        by_id[lay.id] = i
    return by_id


def connect(doc: IRDocument, by_id: dict[str, int], diags: list[Diagnostic]) -> list[Node]:
    """Wire the edges to input ports and order the layers for execution (document order among
    ready layers, so the order is deterministic).  Broken edges, unconnected or doubly connected
    inputs and cycles are diagnosed; layers on a cycle are appended at the end."""
    layers = doc.layers
    sources, succ = _wire(doc, by_id, diags)
    order = _topological_order(doc, sources, succ, diags)
    pos = {li: k for k, li in enumerate(order)}
    return [Node(k, layers[li], [(pos[s[0]], s[1]) if s is not None else None for s in sources[li]])
            for k, li in enumerate(order)]


def _wire(doc: IRDocument, by_id: dict[str, int], diags: list[Diagnostic]
          ) -> tuple[list[list[tuple[int, int] | None]], list[set[int]]]:
    layers = doc.layers
    sources: list[list[tuple[int, int] | None]] = [[None] * len(lay.inputs) for lay in layers]
    succ: list[set[int]] = [set() for _ in layers]
    # port id -> operand index per layer (the first port with that id), so each edge is O(1):
    # a hostile file with one layer of 10^5 ports must not make validation quadratic.
    out_index = [_port_index(lay.outputs) for lay in layers]
    in_index = [_port_index(lay.inputs) for lay in layers]
    for e in doc.edges:
        label = f"edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port}"
        src_i, dst_i = by_id.get(e.from_layer), by_id.get(e.to_layer)
        if src_i is None or dst_i is None:
            missing = e.from_layer if src_i is None else e.to_layer
            diags.append(Diagnostic("IRN014", f"{label} refers to layer {missing}, which does not exist",
                                    file=doc.path, line=e.line))
            continue
        src, dst = layers[src_i], layers[dst_i]
        out_idx = out_index[src_i].get(e.from_port)
        in_idx = in_index[dst_i].get(e.to_port)
        if out_idx is None or in_idx is None:
            lay, side, port = (src, "output", e.from_port) if out_idx is None else (dst, "input", e.to_port)
            diags.append(Diagnostic("IRN014", f"{label}: layer {lay.id} '{lay.name}' has no {side} port {port}",
                                    file=doc.path, line=e.line))
            continue
        if sources[dst_i][in_idx] is not None:
            diags.append(layer_diagnostic(doc, dst, "IRN015", f"input port {e.to_port} has more than one producer",
                                          line=e.line))
            continue
        sources[dst_i][in_idx] = (src_i, out_idx)
        succ[src_i].add(dst_i)
    for i, lay in enumerate(layers):
        for p in lay.inputs:
            if sources[i][p.index] is None:
                diags.append(layer_diagnostic(doc, lay, "IRN015", f"input port {p.id} is not connected to any "
                                                                  "producer", line=p.line))
    return sources, succ


def _topological_order(doc: IRDocument, sources: list[list[tuple[int, int] | None]], succ: list[set[int]],
                       diags: list[Diagnostic]) -> list[int]:
    layers = doc.layers
    indeg = [len({s[0] for s in srcs if s is not None}) for srcs in sources]
    ready = [i for i in range(len(layers)) if indeg[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in sorted(succ[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(layers):
        done = set(order)
        in_cycle = _cycle_members(layers, sources, succ, done)
        names = ", ".join(f"{lay.id} '{lay.name}'" for lay in in_cycle[:6])
        diags.append(layer_diagnostic(doc, in_cycle[0], "IRN016", f"the graph has a cycle through layers {names}"))
        order += [i for i in range(len(layers)) if i not in done]
    return order


def _cycle_members(layers: list[LayerRecord], sources: list[list[tuple[int, int] | None]], succ: list[set[int]],
                   done: set[int]) -> list[LayerRecord]:
    """The layers that lie on (or between) cycles: the unordered ones minus those that only hang
    below a cycle.  A worklist (linear), not repeated sweeps: a long chain below a cycle made those
    quadratic."""
    rest = {i for i in range(len(layers)) if i not in done}
    out_deg = {i: len(succ[i] & rest) for i in rest}
    work = [i for i in rest if out_deg[i] == 0]
    while work:
        i = work.pop()
        rest.discard(i)
        for p in {s[0] for s in sources[i] if s is not None}:
            if p in rest:
                out_deg[p] -= 1
                if out_deg[p] == 0:
                    work.append(p)
    return [layers[i] for i in sorted(rest)] or [layers[i] for i in range(len(layers)) if i not in done]


def _port_index(ports: list) -> dict[int, int]:
    index: dict[int, int] = {}
    for p in ports:
        index.setdefault(p.id, p.index)
    return index
