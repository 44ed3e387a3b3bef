"""Public entry points: load() and validate()."""

from __future__ import annotations

import os

from .errors import Diagnostic, IrnormError, ModelFileError, ResourceLimitError, ValidationError
from .ir.graph import Graph, build_graph
from .ir.reader import parse_document
from .ir.weights import Weights, default_weights_path


def _graph(xml_path: str | os.PathLike, weights: str | os.PathLike | None) -> Graph:
    path = os.fspath(xml_path)
    doc = parse_document(path)
    wpath = os.fspath(weights) if weights is not None else default_weights_path(path)
    return build_graph(doc, Weights(wpath))


def check(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None) -> list[Diagnostic]:
    """Every diagnostic (errors and warnings) for a model, without running it.
    File-level problems (unreadable, not well-formed, unsafe) come back as one diagnostic."""
    try:
        return list(_graph(xml_path, weights).diagnostics)
    except IrnormError as e:
        return list(e.diagnostics)


def validate(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None) -> list[Diagnostic]:
    """Check a model without running it.  Returns the warnings; raises ValidationError
    (or ModelFileError) listing every error."""
    diags = check(xml_path, weights)
    if any(d.severity == "error" for d in diags):
        raise _error_class(diags)(diags)
    return diags


def _error_class(diags: list[Diagnostic]) -> type[IrnormError]:
    """The most specific exception for a set of diagnostics: file-level problems are
    ModelFileError, only size problems ResourceLimitError, anything else ValidationError."""
    errors = [d for d in diags if d.severity == "error"]
    if all(d.code < "IRN010" or d.code.startswith("IRN04") for d in errors):
        return ModelFileError
    if all(d.code.startswith("IRN05") for d in errors):
        return ResourceLimitError
    return ValidationError


def load(xml_path: str | os.PathLike, weights: str | os.PathLike | None = None, *,
         max_memory: int | None = None):
    """Read, validate and plan a model.  `weights` defaults to the XML path with `.bin`.

    Raises an :class:`irnorm.IrnormError` subclass carrying every diagnostic."""
    from .runtime.model import Model

    graph = _graph(xml_path, weights)
    if not graph.ok:
        raise _error_class(graph.diagnostics)(graph.diagnostics)
    return Model(graph, max_memory=max_memory)
