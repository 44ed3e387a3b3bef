"""Stage 2b: validation, as a sequence of named passes.

``check_document`` turns the reader's records into a checked :class:`~irnorm.ir.graph.Graph`:
every rule that can be checked without running is checked, and every violation becomes a
Diagnostic (all of them, not only the first).  The passes, in order:

per layer (``irnorm.check.layers``): ``resolve_operation`` (type and opset -> a registered op),
``parse_attributes`` (typed, against the op's schema), ``check_arity`` (port counts);
then the layers are connected (``irnorm.ir.graph.connect``: edges, cycles, execution order) and
over the graph: ``open_weights``, ``check_bodies`` (an If's two sub-graphs, a TensorIterator's or Loop's one, each
checked as a document of its own by these same passes), ``infer_types`` (each op's shape/type rule, declared dims
and precisions, constant folding, absurd sizes; ``irnorm.check.types``), ``note_compressed_weights``,
``find_inputs_outputs``, ``guard_unchecked`` and ``check_reachability`` (``irnorm.check.structure``).

Nothing here imports Numba: ``irnorm validate`` stays fast.  (Constant folding may build a
kernel, which imports it then.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..errors import Diagnostic
from ..ir.graph import Graph, connect, index_layers, layer_diagnostic
from ..ir.reader import IRDocument
from ..ir.weights import Weights
from .layers import LAYER_PASSES, LayerState
from .structure import (
    check_reachability,
    check_variables,
    find_inputs_outputs,
    guard_unchecked,
    note_compressed_weights,
    open_weights,
)
from .types import infer_types

GraphPass = Callable[[Graph], None]



def port_map_tag(tag: str) -> str:
    """The port map that goes with a body: then_body -> then_port_map, body -> port_map."""
    return "port_map" if tag == "body" else tag.replace("_body", "_port_map")


def check_bodies(graph: Graph) -> None:
    """An If's <then_body> / <else_body>, a TensorIterator's or Loop's <body> are checked as documents of their
    own (same passes, same weights file); each checked body Graph and its port map go into the layer's
    attributes as ``__then_body`` / ``__then_port_map`` (``__body`` / ``__port_map``, and ``__back_edges`` for
    TensorIterator and Loop; ``__``: not an attribute of the file, so not shown as one), where the op's rule and
    kernel find them.  A body's diagnostics are reported in the file, prefixed with where the body sits; a
    layer with a body, port map or back edges it cannot have (IRN006) or without one it needs (IRN010) is
    refused."""
    for node in graph.nodes:
        lay = node.layer
        if node.op is None or not (lay.bodies or lay.port_maps or lay.back_edges is not None
                                   or getattr(node.op, "bodies", ())):
            continue
        wanted = getattr(node.op, "bodies", ())
        loops = getattr(node.op, "back_edges", False)
        stray = [f"<{t}>" for t in sorted(set(lay.bodies) - set(wanted))]
        stray += [f"<{t}>" for t in sorted(set(lay.port_maps) - {port_map_tag(t) for t in wanted})]
        if lay.back_edges is not None and not loops:
            stray.append("<back_edges>")
        for what in stray:
            graph.diagnostics.append(layer_diagnostic(graph.doc, lay, "IRN006", f"a {lay.type} layer cannot have "
                                                                                f"a {what}"))
            node.attrs_ok = False
        if loops:
            node.attrs["__back_edges"] = list(lay.back_edges or [])
        for tag in wanted:
            body, port_map = lay.bodies.get(tag), lay.port_maps.get(port_map_tag(tag))
            if body is None or port_map is None:
                missing = f"<{tag}>" if body is None else f"<{port_map_tag(tag)}>"
                graph.diagnostics.append(layer_diagnostic(graph.doc, lay, "IRN010", f"{lay.type} needs {missing}"))
                node.attrs_ok = False
                continue
            checked = check_document(body, graph.weights)
            prefix = f"in the {tag} of layer {lay.id} '{lay.name}': "
            # (the body's own compressed-weights notes would repeat the document's)
            graph.diagnostics.extend(dataclasses.replace(d, message=prefix + d.message) for d in checked.diagnostics
                                     if d.code not in ("IRN091", "IRN093"))
            if not checked.ok:
                node.attrs_ok = False
            node.attrs["__" + tag] = checked
            node.attrs["__" + port_map_tag(tag)] = port_map


GRAPH_PASSES: tuple[GraphPass, ...] = (
    open_weights,
    check_bodies,
    infer_types,
    note_compressed_weights,
    find_inputs_outputs,
    check_variables,
    guard_unchecked,
    check_reachability,
)


def check_document(doc: IRDocument, weights: Weights | None) -> Graph:
    """Run every pass; the returned graph carries all diagnostics (``graph.ok`` says whether any is an error)."""
    diags: list[Diagnostic] = list(doc.diagnostics)
    by_id = index_layers(doc, diags)
    states: dict[int, LayerState] = {}
    for lay in doc.layers:
        state = LayerState()
        for run_pass in LAYER_PASSES:
            run_pass(doc, lay, state, diags)
        states[id(lay)] = state
    nodes = connect(doc, by_id, diags)
    for node in nodes:
        state = states[id(node.layer)]
        node.op, node.attrs, node.attrs_ok, node.arity_ok = state.op, state.attrs, state.attrs_ok, state.arity_ok
    graph = Graph(doc.path, doc, nodes, diags, weights)
    for run_pass in GRAPH_PASSES:
        run_pass(graph)
    return graph
