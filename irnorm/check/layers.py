"""Per-layer passes: which operation a layer is, its typed attributes, its port counts."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic
from ..ir.attrs import AttrError
from ..ir.graph import layer_diagnostic
from ..ir.reader import IRDocument, LayerRecord
from ..ops.base import EXTENSION_OPSET, LATEST_OPSET, Op, known_versions, lookup

_OPSET_RE = re.compile(r"^opset(\d+)$")


@dataclass
class LayerState:
    """What the per-layer passes learn about one layer."""

    op: Op | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    attrs_ok: bool = True
    arity_ok: bool = True


LayerPass = Callable[[IRDocument, LayerRecord, LayerState, list[Diagnostic]], None]


def resolve_operation(doc: IRDocument, lay: LayerRecord, state: LayerState, diags: list[Diagnostic]) -> None:
    """type + version -> the registered op.  An opset OpenVINO does not define (opset0, opset99) is
    refused as OpenVINO refuses it; a known opset without this op names the versions irnorm knows."""
    if not lay.type or not lay.version:
        return  # the reader reported the missing attribute
    m = _OPSET_RE.match(lay.version)
    if m and not 1 <= int(m.group(1)) <= LATEST_OPSET:
        diags.append(layer_diagnostic(doc, lay, "IRN012", f"unknown opset '{lay.version}': OpenVINO defines opset1 to "
                                                          f"opset{LATEST_OPSET} (and irnorm its extension opset "
                                                          f"'{EXTENSION_OPSET}')"))
        return
    cls = lookup(lay.type, lay.version)
    if cls is None:
        known = known_versions(lay.type)
        hint = f"; irnorm knows {lay.type} in {', '.join(known)}" if known else ""
        diags.append(layer_diagnostic(doc, lay, "IRN012", f"unsupported operation {lay.type} in opset "
                                                          f"'{lay.version}'{hint}"))
        return
    state.op = cls()


def parse_attributes(doc: IRDocument, lay: LayerRecord, state: LayerState, diags: list[Diagnostic]) -> None:
    """``<data>`` values through the op's typed schema; defaults come from the schema.  A missing or
    unusable value makes the layer's rule unrunnable (an unknown attribute alone does not)."""
    op = state.op
    if op is None:
        return
    n_before = len(diags)
    out: dict[str, Any] = {}
    declared = {a.name for a in op.schema.attrs}
    for key in lay.data:
        if key not in declared and key not in op.schema.ignored:
            allowed = ", ".join(sorted(declared)) or "none"
            diags.append(layer_diagnostic(doc, lay, "IRN022", f"unknown attribute '{key}' (allowed: {allowed})",
                                          line=lay.data_line))
    for a in op.schema.attrs:
        text = lay.data.get(a.name)
        if text is None:
            if a.required:
                diags.append(layer_diagnostic(doc, lay, "IRN020", f"required attribute '{a.name}' is missing",
                                              line=lay.data_line))
            out[a.name] = None if a.required else a.default
            continue
        try:
            v = a.parse(text)
            msg = a.check(v) if a.check is not None else None
        except AttrError as e:
            diags.append(layer_diagnostic(doc, lay, e.code, f"attribute {a.name}=\"{text}\": {e}", line=lay.data_line))
            out[a.name] = None
            continue
        if msg:
            diags.append(layer_diagnostic(doc, lay, "IRN023", f"attribute {a.name}=\"{text}\": {msg}",
                                          line=lay.data_line))
            v = None
        out[a.name] = v
    state.attrs = out
    state.attrs_ok = not any(d.code != "IRN022" for d in diags[n_before:])


def check_arity(doc: IRDocument, lay: LayerRecord, state: LayerState, diags: list[Diagnostic]) -> None:
    op = state.op
    if op is None:
        return
    for ports, (lo, hi), verb, kind in ((lay.inputs, op.inputs, "takes", "input"),
                                        (lay.outputs, op.outputs, "produces", "output")):
        if not lo <= len(ports) <= hi:
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            diags.append(layer_diagnostic(doc, lay, "IRN017", f"has {len(ports)} {kind} ports, {op.label()} "
                                                              f"{verb} {want}"))
            state.arity_ok = False


LAYER_PASSES: tuple[LayerPass, ...] = (resolve_operation, parse_attributes, check_arity)
