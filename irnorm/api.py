"""Public entry points: load(), validate(), check()."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .check import check_document
from .errors import Diagnostic, IrnormError, exception_for
from .ir.graph import Graph
from .ir.reader import parse_document
from .ir.weights import Weights, default_weights_path

if TYPE_CHECKING:
    from .runtime.model import Model


def read_graph(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None) -> Graph:
    """Read and check a model without planning it: the graph carries every diagnostic (``graph.ok``
    says whether any is an error).  Raises :class:`irnorm.ModelFileError` only when the XML itself
    cannot be read or parsed."""
    path = os.fspath(xml_path)
    doc = parse_document(path)
    wpath = os.fspath(weights) if weights is not None else default_weights_path(path)
    return check_document(doc, Weights(wpath))


def check(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None) -> list[Diagnostic]:
    """Every diagnostic (errors and warnings) for a model, without running it.
    File-level problems (unreadable, not well-formed, unsafe) come back as one diagnostic."""
    try:
        return list(read_graph(xml_path, weights).diagnostics)
    except IrnormError as e:
        return list(e.diagnostics)


def validate(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None) -> list[Diagnostic]:
    """Check a model without running it.  Returns the warnings; raises ValidationError
    (or ModelFileError) listing every error."""
    diags = check(xml_path, weights)
    if any(d.severity == "error" for d in diags):
        raise exception_for(diags)
    return diags


def load(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None, *,
         max_memory: int | None = None, fuse: bool = True) -> Model:
    """Read, validate and plan a model.  `weights` defaults to the XML path with `.bin`.
    `fuse=False` runs every layer on its own (the planner's fusions are for speed; see
    irnorm/runtime/fuse.py).

    Raises an :class:`irnorm.IrnormError` subclass carrying every diagnostic."""
    from .runtime.model import Model

    graph = read_graph(xml_path, weights)
    if not graph.ok:
        raise exception_for(graph.diagnostics)
    return Model(graph, max_memory=max_memory, fuse=fuse)
