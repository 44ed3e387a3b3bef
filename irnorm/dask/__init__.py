"""Scale out on Dask: run a model over data chunked along the batch axis (axis 0 of every input).

    import dask.array as da, irnorm.dask
    x = da.from_zarr("embeddings.zarr")             # [N, 384], chunked along axis 0
    y = irnorm.dask.run("l2.xml", {"x": x})["y"]    # lazy, chunked like x
    y.to_zarr("normalized.zarr")

Each chunk runs ``Model.run`` on its rows.  A worker loads a model once (cached per process by the
file's path and a hash of its content) and keeps its kernels; a task carries only the path and the
hash, never the model.  Works with dask's default scheduler and with a ``distributed.Client``.

A model can run chunk by chunk only when no layer mixes rows of the batch axis.  ``batch_plan``
decides that before anything runs, conservatively, from each layer's type and attributes: a layer
that reduces over the batch axis, moves it, reshapes it away, or is not known to keep rows apart is
refused with IRN070 naming the layer (results are then never wrong, only refused).  Outputs are
bit-identical to ``irnorm.load(model).run`` on the same rows.

Needs the optional extra: ``pip install irnorm[dask]``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..api import load
from ..errors import Diagnostic, InputError, ValidationError
from ..runtime.model import Model

_MODELS: dict[tuple[str, str | None, str], Model] = {}
_LOCK = threading.Lock()


def model_key(path: str, weights: str | None) -> tuple[str, str | None, str]:
    """(absolute xml path, weights path, sha256 of both files' bytes): what a worker caches by."""
    h = hashlib.sha256()
    for p in (path, weights):
        if p and os.path.exists(p):
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):  # noqa: B023 - f is the loop's own file
                    h.update(block)
    return os.path.abspath(path), weights and os.path.abspath(weights), h.hexdigest()


def cached_model(key: tuple[str, str | None, str]) -> Model:
    """This process's Model for `key`, loaded on first use."""
    with _LOCK:
        m = _MODELS.get(key)
        if m is None:
            m = _MODELS[key] = load(key[0], key[1])
        return m


def _run_chunk(key: tuple[str, str | None, str], *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    m = cached_model(key)
    return tuple(m.run(list(arrays)).values())


# ---- which models can run chunk by chunk ---------------------------------------------------------

_ELEMENTWISE = {
    "Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "Power", "SquaredDifference", "Mod", "FloorMod",
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalXor",
    "LogicalNot", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Select", "Convert", "Clamp", "Sqrt", "Abs",
    "Negative", "Exp", "Log", "Erf", "Sigmoid", "Tanh", "Relu", "Gelu", "Swish", "HSwish", "HSigmoid", "Mish",
    "SoftPlus", "Elu", "Selu", "HardSigmoid", "SoftSign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
    "Asinh", "Acosh", "Atanh", "Floor", "Ceiling", "Round", "Sign", "IsNaN", "IsInf", "IsFinite", "PRelu",
}
# ops that keep the N axis (0) apart when the batch axis is 0 and their other inputs are constants
_PER_SAMPLE = {"GroupNormalization", "BatchNormInference", "Convolution", "GroupConvolution",
               "ConvolutionBackpropData", "MaxPool", "AvgPool", "Scale"}


def _refuse(m: Model, node: Any, why: str) -> ValidationError:
    return ValidationError(Diagnostic("IRN070", f"cannot run chunk by chunk along the batch axis: {why}",
                                      **node.layer.where(m.path)))


def _const_ints(m: Model, node: Any, i: int) -> list[int] | None:
    src = node.sources[i] if i < len(node.sources) else None
    if src is None:
        return None
    info = m.graph.nodes[src[0]].outputs[src[1]]
    return None if info is None or info.value is None else [int(v) for v in np.asarray(info.value).reshape(-1)]


def batch_plan(m: Model) -> None:
    """Raise ValidationError IRN070 at the first layer that would mix rows of the batch axis, or when
    an output does not carry the batch axis first; return quietly when every layer keeps rows apart."""
    g = m.graph
    axis: dict[tuple[int, int], int] = {(p, 0): 0 for p in g.parameters}  # value -> its batch axis
    for node in m.layers_run:
        ins = [axis.get(tuple(s)) if s is not None else None for s in node.sources]
        batch = [(i, a) for i, a in enumerate(ins) if a is not None]
        if not batch:
            continue  # does not depend on the data (shape arithmetic on constants)
        out = _out_axis(m, node, ins, batch)
        for k in range(len(node.outputs)):
            axis[(node.index, k)] = out
    for spec, src in zip(m.outputs, m.output_sources, strict=True):
        if axis.get(tuple(src)) != 0:
            ri = next(r for r, s in zip(g.results, m.output_sources, strict=True) if s == src)
            raise _refuse(m, g.nodes[ri], f"output {spec.name!r} does not carry the batch axis first")


def _rank(m: Model, node: Any, i: int) -> int | None:
    s = node.sources[i]
    info = m.graph.nodes[s[0]].outputs[s[1]]
    return None if info is None or info.shape is None else len(info.shape)


def _out_axis(m: Model, node: Any, ins: list[int | None], batch: list[tuple[int, int]]) -> int:
    t = node.op_type
    out_rank = len(node.outputs[0].shape) if node.outputs and node.outputs[0] is not None and \
        node.outputs[0].shape is not None else None
    if t in _ELEMENTWISE and out_rank is not None:
        aligned = {out_rank - _rank(m, node, i) + a for i, a in batch}
        if len(aligned) != 1:
            raise _refuse(m, node, f"{t} combines inputs whose batch axes do not line up")
        pos = aligned.pop()
        for i, a in enumerate(ins):  # a non-batch operand must not vary along the batch axis
            if a is None and node.sources[i] is not None:
                info = m.graph.nodes[node.sources[i][0]].outputs[node.sources[i][1]]
                r = len(info.shape) if info.shape is not None else None
                j = pos - (out_rank - r) if r is not None else None
                if r is None or (j is not None and 0 <= j < r and info.shape[j] != 1):
                    raise _refuse(m, node, f"{t}'s input {i} varies along the batch axis without being chunked")
        return pos
    only_first = [i for i, _ in batch] == [0]
    if t in _PER_SAMPLE and only_first and ins[0] == 0:
        return 0
    if t in ("MVN", "NormalizeL2", "LRN", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
             "ReduceL1", "ReduceL2", "ReduceLogicalAnd", "ReduceLogicalOr") and only_first:
        r = _rank(m, node, 0)
        if t == "MVN" and node.op.version == 1:
            axes = list(range(1 if node.attrs["across_channels"] else 2, r or 0))
        else:
            axes = _const_ints(m, node, 1)
        if axes is None or r is None:
            raise _refuse(m, node, f"{t}'s axes are not known when the model is loaded")
        axes = sorted({a % r for a in axes})
        if ins[0] in axes:
            raise _refuse(m, node, f"{t} reduces over the batch axis")
        if t.startswith("Reduce") and not node.attrs.get("keep_dims"):
            return ins[0] - sum(1 for a in axes if a < ins[0])
        return ins[0]
    if t in ("LayerNormalization", "SoftMax", "LogSoftmax") and only_first:
        r = _rank(m, node, 0)
        ax = int(node.attrs["axis"]) % r
        if (t == "LayerNormalization" and ax <= ins[0]) or (t != "LayerNormalization" and ax == ins[0]):
            raise _refuse(m, node, f"{t} normalizes over the batch axis")
        return ins[0]
    if t == "MatMul" and only_first:
        r = _rank(m, node, 0)
        if ins[0] < r - 2 or (ins[0] == r - 2 and not node.attrs["transpose_a"]):
            return ins[0] + (len(node.outputs[0].shape) - r if out_rank else 0)
        raise _refuse(m, node, "MatMul contracts over the batch axis")
    if t == "Transpose" and only_first:
        perm = _const_ints(m, node, 1)
        if perm is not None:
            r = _rank(m, node, 0)
            perm = [p % r for p in perm] or list(range(r))[::-1]
            return perm.index(ins[0])
    if t in ("Reshape",) and only_first and ins[0] == 0:
        target = _const_ints(m, node, 1)
        if target and (target[0] == -1 or (target[0] == 0 and node.attrs.get("special_zero"))) and \
                target[1:].count(-1) == 0:
            return 0
    raise _refuse(m, node, f"{node.label} is not known to keep rows of the batch axis apart")


# ---- the public entry point ----------------------------------------------------------------------


def run(model: str | os.PathLike | Model, inputs: Mapping[str, Any], weights: str | None = None
        ) -> dict[str, Any]:
    """Lazy dask arrays, one per model output (by output name, in output order), chunked along axis 0
    as the inputs are.  `inputs` maps input names to dask arrays (numpy arrays are wrapped whole)."""
    import dask
    import dask.array as da

    m = model if isinstance(model, Model) else load(model, weights)
    path = m.path
    wpath = m.graph.weights.path if m.graph.weights is not None else weights
    batch_plan(m)
    arrays = []
    by_name = {n: spec for spec in m.inputs for n in spec.names}
    given: dict[str, Any] = {}
    for k, v in inputs.items():
        spec = by_name.get(k)
        if spec is None:
            raise InputError(Diagnostic("IRN060", f"unknown input {k!r}; the model's inputs are "
                                                  f"{', '.join(repr(s.name) for s in m.inputs)}", file=path))
        given[spec.name] = v
    for spec in m.inputs:
        if spec.name not in given:
            raise InputError(Diagnostic("IRN060", f"missing input {spec.name!r}", file=path))
        a = given[spec.name]
        a = a if isinstance(a, da.Array) else da.from_array(np.asarray(a), chunks=(-1,) * np.ndim(a))
        if a.dtype != spec.dtype:
            raise InputError(Diagnostic("IRN062", f"input {spec.name!r} has dtype {a.dtype}, the model expects "
                                                  f"{spec.dtype} ({spec.element_type})", file=path))
        arrays.append(a)
    rows = {a.shape[0] for a in arrays}
    if len(rows) != 1:

        raise InputError(Diagnostic("IRN061", f"the inputs have different batch sizes {sorted(rows)}", file=path))
    chunks0 = arrays[0].chunks[0]
    arrays = [a.rechunk((chunks0,) + (-1,) * (a.ndim - 1)) for a in arrays]
    key = model_key(path, wpath)
    outs: list[list[Any]] = [[] for _ in m.outputs]
    for i, n in enumerate(chunks0):
        shapes = m.output_shapes([(n,) + tuple(a.shape[1:]) for a in arrays])
        d = dask.delayed(_run_chunk, pure=True, nout=len(m.outputs))(key, *(a.blocks[i] for a in arrays))
        for k, (spec, shape) in enumerate(zip(m.outputs, shapes, strict=True)):
            outs[k].append(da.from_delayed(d[k], shape=shape, dtype=spec.dtype))
    return {spec.name: da.concatenate(parts, axis=0) for spec, parts in zip(m.outputs, outs, strict=True)}
