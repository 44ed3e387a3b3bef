"""Stage 2: records -> a checked graph of nodes, ports and edges.

Every rule that can be checked without running is checked here, and every
violation becomes a Diagnostic (all of them, not only the first).  Shapes and
types are inferred by each op's own rule; declared port dims and precisions must
agree with them.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic, ModelFileError
from ..ops.base import NodeContext, Op, RuleError, TensorInfo, fmt_shape, known_versions, lookup
from .attrs import AttrError
from .dtypes import ELEMENT_TYPES, MAX_RANK
from .reader import IRDocument, LayerRecord
from .weights import Weights

# Larger tensors are absurd on any machine (64 TiB) and refused while checking, before any allocation.
ABSURD_BYTES = 1 << 46
MAX_ELEMENTS = (1 << 63) - 1


@dataclass
class Node:
    index: int  # position in execution (topological) order
    layer: LayerRecord
    op: Op | None
    attrs: dict[str, Any]
    sources: list[tuple[int, int] | None]  # per input operand: (producer node index, output index)
    outputs: list[TensorInfo | None] = field(default_factory=list)
    ok: bool = True  # rule checks passed
    arity_ok: bool = True  # port counts fit the op (its rule is not run otherwise)
    attrs_ok: bool = True  # every attribute parsed and passed its check (None is a legal value)

    @property
    def label(self) -> str:
        return f"{self.layer.type}-{self.layer.version}"


@dataclass
class Graph:
    path: str
    doc: IRDocument
    nodes: list[Node]
    parameters: list[int]  # node indices, in document order (OpenVINO's input order)
    results: list[int]  # node indices, in document order (OpenVINO's output order)
    diagnostics: list[Diagnostic]
    weights: Weights | None

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def _diag(doc: IRDocument, layer: LayerRecord, code: str, msg: str, line: int | None = None,
          severity: str = "error") -> Diagnostic:
    w = layer.where(doc.path)
    if line is not None:
        w["line"] = line
    return Diagnostic(code, msg, severity=severity, **w)


def build_graph(doc: IRDocument, weights: Weights | None) -> Graph:
    diags = list(doc.diagnostics)
    layers = doc.layers
    by_id: dict[str, int] = {}
    for i, lay in enumerate(layers):
        if lay.id in by_id:
            first = layers[by_id[lay.id]]
            diags.append(_diag(doc, lay, "IRN011", f"duplicate layer id {lay.id} (first used at line {first.line} "
                                                   f"by '{first.name}')"))
            continue
        by_id[lay.id] = i

    # op lookup + attributes
    ops: list[Op | None] = []
    attrs: list[dict[str, Any]] = []
    bad_arity: set[int] = set()
    bad_attrs: set[int] = set()
    for li, lay in enumerate(layers):
        cls = lookup(lay.type, lay.version) if lay.type and lay.version else None
        if cls is None and lay.type and lay.version:
            known = known_versions(lay.type)
            hint = f"; irnorm knows {lay.type} in {', '.join(known)}" if known else ""
            diags.append(_diag(doc, lay, "IRN012", f"unsupported operation {lay.type} in opset '{lay.version}'{hint}"))
        op = cls() if cls else None
        ops.append(op)
        n_before = len(diags)
        attrs.append(_parse_attrs(doc, lay, op, diags) if op else {})
        if any(d.code != "IRN022" for d in diags[n_before:]):  # a value is missing or unusable
            bad_attrs.add(li)
        if op is not None:
            lo, hi = op.inputs
            if not lo <= len(lay.inputs) <= hi:
                want = f"{lo}" if lo == hi else f"{lo} to {hi}"
                diags.append(_diag(doc, lay, "IRN017", f"has {len(lay.inputs)} input ports, {op.label()} takes {want}"))
                bad_arity.add(li)
            lo, hi = op.outputs
            if not lo <= len(lay.outputs) <= hi:
                want = f"{lo}" if lo == hi else f"{lo} to {hi}"
                diags.append(_diag(doc, lay, "IRN017", f"has {len(lay.outputs)} output ports, {op.label()} "
                                                       f"produces {want}"))
                bad_arity.add(li)

    # edges -> sources per (layer, input operand)
    sources: list[list[tuple[int, int] | None]] = [[None] * len(lay.inputs) for lay in layers]
    succ: list[set[int]] = [set() for _ in layers]
    # port id -> operand index per layer (the first port with that id), so each edge is O(1):
    # a hostile file with one layer of 10^5 ports must not make validation quadratic.
    out_index = [_port_index(lay.outputs) for lay in layers]
    in_index = [_port_index(lay.inputs) for lay in layers]
    for e in doc.edges:
        src_i, dst_i = by_id.get(e.from_layer), by_id.get(e.to_layer)
        if src_i is None or dst_i is None:
            missing = e.from_layer if src_i is None else e.to_layer
            diags.append(Diagnostic("IRN014", f"edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port} refers "
                                              f"to layer {missing}, which does not exist", file=doc.path, line=e.line))
            continue
        src, dst = layers[src_i], layers[dst_i]
        out_idx = out_index[src_i].get(e.from_port)
        in_idx = in_index[dst_i].get(e.to_port)
        if out_idx is None:
            diags.append(Diagnostic("IRN014", f"edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port}: layer "
                                              f"{src.id} '{src.name}' has no output port {e.from_port}",
                                    file=doc.path, line=e.line))
            continue
        if in_idx is None:
            diags.append(Diagnostic("IRN014", f"edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port}: layer "
                                              f"{dst.id} '{dst.name}' has no input port {e.to_port}",
                                    file=doc.path, line=e.line))
            continue
        if sources[dst_i][in_idx] is not None:
            diags.append(_diag(doc, dst, "IRN015", f"input port {e.to_port} has more than one producer",
                               line=e.line))
            continue
        sources[dst_i][in_idx] = (src_i, out_idx)
        succ[src_i].add(dst_i)
    for i, lay in enumerate(layers):
        for p in lay.inputs:
            if sources[i][p.index] is None:
                diags.append(_diag(doc, lay, "IRN015", f"input port {p.id} is not connected to any producer",
                                   line=p.line))

    # topological order (document order among ready layers, so it is deterministic)
    indeg = [0] * len(layers)
    for i in range(len(layers)):
        indeg[i] = len({s[0] for s in sources[i] if s is not None})
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
        rest = {i for i in range(len(layers)) if i not in done}
        # Drop layers that only hang below a cycle: what remains lies on (or between) cycles.
        # A worklist (linear), not repeated sweeps: a long chain below a cycle made those quadratic.
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
        in_cycle = [layers[i] for i in sorted(rest)] or [layers[i] for i in range(len(layers)) if i not in done]
        names = ", ".join(f"{lay.id} '{lay.name}'" for lay in in_cycle[:6])
        diags.append(_diag(doc, in_cycle[0], "IRN016", f"the graph has a cycle through layers {names}"))
        order += [i for i in range(len(layers)) if i not in done]
    pos = {li: k for k, li in enumerate(order)}

    nodes: list[Node] = []
    for k, li in enumerate(order):
        srcs = [(pos[s[0]], s[1]) if s is not None else None for s in sources[li]]
        nodes.append(Node(k, layers[li], ops[li], attrs[li], srcs, arity_ok=li not in bad_arity,
                          attrs_ok=li not in bad_attrs))

    weights_failed = False
    if weights is not None and any(n.op is not None and n.op.type == "Const" for n in nodes):
        try:
            weights.size  # noqa: B018  (opens the file; errors become a diagnostic)
        except ModelFileError as e:
            diags.extend(e.diagnostics)
            weights, weights_failed = None, True

    _infer_all(doc, nodes, weights, diags, weights_failed)
    compressed = [n for n in nodes if n.op is not None and n.op.type == "Convert" and "decompression" in n.layer.rt_info
                  and n.sources and n.sources[0] is not None and nodes[n.sources[0][0]].outputs
                  and nodes[n.sources[0][0]].outputs[0] is not None
                  and nodes[n.sources[0][0]].outputs[0].dtype == "f16"]
    if compressed:
        diags.append(_diag(doc, compressed[0].layer, "IRN091", f"fp16-compressed weights: {len(compressed)} Const(s) "
                           "stored as f16 and decompressed once at load time; outputs differ from an f32 original",
                           severity="warning"))

    parameters = [pos[i] for i, lay in enumerate(layers) if ops[i] is not None and ops[i].type == "Parameter"]
    results = [pos[i] for i, lay in enumerate(layers) if ops[i] is not None and ops[i].type == "Result"]
    if not any(d.severity == "error" for d in diags):
        # Every skipped rule must have been explained by an error; if not, say so rather than
        # hand an unchecked graph to the runtime.
        for n in nodes:
            if not n.ok:
                diags.append(_diag(doc, n.layer, "IRN032", "the layer's shape and type could not be checked"))
                break
    if not results:
        diags.append(Diagnostic("IRN018", "the model has no Result layer", file=doc.path))
    else:  # without a Result every layer would be "dangling": say it once (above), not per layer
        _reachability(doc, nodes, results, diags)
    return Graph(doc.path, doc, nodes, parameters, results, diags, weights)


def _port_index(ports: list) -> dict[int, int]:
    index: dict[int, int] = {}
    for p in ports:
        index.setdefault(p.id, p.index)
    return index


def _parse_attrs(doc: IRDocument, lay: LayerRecord, op: Op, diags: list[Diagnostic]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    declared = {a.name for a in op.schema.attrs}
    for key in lay.data:
        if key not in declared and key not in op.schema.ignored:
            allowed = ", ".join(sorted(declared)) or "none"
            diags.append(_diag(doc, lay, "IRN022", f"unknown attribute '{key}' (allowed: {allowed})",
                               line=lay.data_line))
    for a in op.schema.attrs:
        text = lay.data.get(a.name)
        if text is None:
            if a.required:
                diags.append(_diag(doc, lay, "IRN020", f"required attribute '{a.name}' is missing",
                                   line=lay.data_line))
                out[a.name] = None
            else:
                out[a.name] = a.default
            continue
        try:
            v = a.parse(text)
        except AttrError as e:
            diags.append(_diag(doc, lay, e.code, f"attribute {a.name}=\"{text}\": {e}", line=lay.data_line))
            out[a.name] = None
            continue
        if a.check is not None:
            msg = a.check(v)
            if msg:
                diags.append(_diag(doc, lay, "IRN023", f"attribute {a.name}=\"{text}\": {msg}", line=lay.data_line))
                out[a.name] = None
                continue
        out[a.name] = v
    return out


def _infer_all(doc: IRDocument, nodes: list[Node], weights: Weights | None, diags: list[Diagnostic],
               weights_failed: bool = False) -> None:
    for node in nodes:
        lay = node.layer
        node.outputs = [None] * len(lay.outputs)
        if node.op is None or not node.arity_ok or not node.attrs_ok:
            node.ok = False
            continue
        if weights_failed and node.op.type == "Const":  # already reported (IRN040); no value to give
            node.ok = False
            continue
        ins: list[TensorInfo] = []
        upstream_ok = True
        for i, src in enumerate(node.sources):
            if src is None:
                upstream_ok = False
                continue
            prod = nodes[src[0]]
            info = prod.outputs[src[1]] if src[1] < len(prod.outputs) else None
            if info is None:
                upstream_ok = False
                continue
            port = lay.inputs[i]
            if not _dims_agree(port.dims, info.shape):
                diags.append(_diag(doc, lay, "IRN030", f"input port {port.id} declares dims {fmt_shape(port.dims)} but "
                                                       f"its producer '{prod.layer.name}' gives "
                                                       f"{fmt_shape(info.shape)}", line=port.line))
            if port.precision is not None and port.precision not in ("dynamic", info.dtype):
                diags.append(_diag(doc, lay, "IRN031", f"input port {port.id} declares precision {port.precision_raw} "
                                                       f"but its producer '{prod.layer.name}' gives {info.dtype}",
                                   line=port.line))
            ins.append(info)
        if not upstream_ok:
            node.ok = False
            continue
        attrs = dict(node.attrs)
        if node.op.type == "Const":
            attrs["__weights__"] = weights
        ctx = NodeContext(lay, attrs, ins, len(lay.outputs))
        try:
            outs = node.op.infer(ctx)
            if node.op.foldable and outs and all(o.value is None for o in outs) and all(
                    i.value is not None for i in ins) and ins:
                outs = _fold(node, ctx, outs)
        except RuleError as e:
            diags.append(_diag(doc, lay, e.code, e.message))
            node.ok = False
            continue
        except Exception as e:  # an op rule that did not anticipate this input: still a diagnostic
            diags.append(_diag(doc, lay, "IRN032", f"the operation's shape rule cannot handle these inputs "
                                                   f"({type(e).__name__}: {e})"))
            node.ok = False
            continue
        outs = outs[: len(lay.outputs)]
        size_msg = next((m for m in (_size_problem(o) for o in outs) if m), None)
        if size_msg:  # refused before anything is allocated; downstream layers are not checked against it
            diags.append(_diag(doc, lay, "IRN050", size_msg))
            node.ok = False
            continue
        for k, info in enumerate(outs):
            port = lay.outputs[k]
            if not _dims_agree(port.dims, info.shape):
                given = (f"its <data shape=\"{lay.data.get('shape', '')}\"> gives" if node.op.type == "Parameter"
                         else "the operation gives")
                diags.append(_diag(doc, lay, "IRN030", f"output port {port.id} declares dims {fmt_shape(port.dims)} "
                                                       f"but {given} {fmt_shape(info.shape)}",
                                   line=port.line))
            if port.precision is not None and port.precision not in ("dynamic", info.dtype):
                diags.append(_diag(doc, lay, "IRN031", f"output port {port.id} declares precision "
                                                       f"{port.precision_raw} but the operation gives {info.dtype}",
                                   line=port.line))
            node.outputs[k] = info


def _fold(node: Node, ctx: NodeContext, outs: list[TensorInfo]) -> list[TensorInfo]:
    """Run a node whose inputs are all constant once, at load time."""
    kernel = node.op.build(ctx)
    values = kernel([i.value for i in ctx.inputs])
    for info, v in zip(outs, values, strict=False):
        v.flags.writeable = False
        info.value = v
    return outs


def _size_problem(info: TensorInfo) -> str | None:
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


def _dims_agree(declared: list[int], inferred: tuple[int, ...] | None) -> bool:
    if inferred is None:
        return True
    if len(declared) != len(inferred):
        return False
    return all(a == b or a == -1 or b == -1 for a, b in zip(declared, inferred, strict=True))


def _reachability(doc: IRDocument, nodes: list[Node], results: list[int], diags: list[Diagnostic]) -> None:
    live: set[int] = set()
    stack = list(results)
    while stack:
        i = stack.pop()
        if i in live:
            continue
        live.add(i)
        stack.extend(s[0] for s in nodes[i].sources if s is not None)
    for n in nodes:
        if n.index not in live:
            diags.append(_diag(doc, n.layer, "IRN090", "dangling layer: no Result depends on it (it is not run)",
                               severity="warning"))
