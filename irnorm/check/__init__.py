"""Stage 2b: validation, as a sequence of named passes.

``check_document`` turns the reader's records into a checked :class:`~irnorm.ir.graph.Graph`:
every rule that can be checked without running is checked, and every violation becomes a
Diagnostic (all of them, not only the first).  The passes, in order:

per layer (``irnorm.check.layers``): ``resolve_operation`` (type and opset -> a registered op),
``parse_attributes`` (typed, against the op's schema), ``check_arity`` (port counts);
then the layers are connected (``irnorm.ir.graph.connect``: edges, cycles, execution order) and
over the graph: ``open_weights``, ``infer_types`` (each op's shape/type rule, declared dims and
precisions, constant folding, absurd sizes; ``irnorm.check.types``), ``note_compressed_weights``,
``find_inputs_outputs``, ``guard_unchecked`` and ``check_reachability`` (``irnorm.check.structure``).

Nothing here imports Numba: ``irnorm validate`` stays fast.  (Constant folding may build a
kernel, which imports it then.)
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..ir.graph import Graph, connect, index_layers
from ..ir.reader import IRDocument
from ..ir.weights import Weights
from .layers import LAYER_PASSES, LayerState
from .structure import check_reachability, find_inputs_outputs, guard_unchecked, note_compressed_weights, open_weights
from .types import infer_types

GraphPass = Callable[[Graph], None]

GRAPH_PASSES: tuple[GraphPass, ...] = (
    open_weights,
    infer_types,
    note_compressed_weights,
    find_inputs_outputs,
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
