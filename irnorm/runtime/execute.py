"""Stage 4b: execute a plan -- feed the inputs, run every step, free dead values, collect the
outputs -- and what a run can report on the way (per-layer hooks, captured outputs, layer times)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Diagnostic, InputError, IrnormError, RuleError
from ..ir.graph import Node
from .bind import TensorSpec
from .plan import Plan, Step

# The shape steps' values kept per tuple of input shapes (Plan.shape_cache): at most this many bytes for one
# tuple (a T5 position-bucket table at a long sequence may not pay), this many in all, this many tuples.
SHAPE_VALUES_BYTES = 4 << 20
SHAPE_CACHE_BYTES = 32 << 20
SHAPE_KEYS_KEPT = 64

# Called with (node, its output arrays, seconds its kernel took) for every Parameter (first, 0.0 s)
# and every executed layer, in execution order, right after the layer ran.  The arrays must not be
# modified; copy what you want to keep.
LayerHook = Callable[[Node, Sequence[np.ndarray], float], None]


@dataclass(frozen=True)
class LayerOutput:
    """One captured layer output (a copy): which layer and output port produced it."""

    index: int  # position in execution order
    layer_id: str
    name: str
    type: str
    version: str
    port: int  # output operand index (0-based)
    port_id: int  # the <port id=...> in the XML
    line: int  # XML line of the <layer>
    array: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype


@dataclass(frozen=True)
class LayerTime:
    """Wall time of one executed layer's kernel in one run."""

    index: int
    layer_id: str
    name: str
    type: str
    version: str
    seconds: float


class RunResult(dict):
    """What ``run(..., capture=..., profile=True)`` returns: the usual {output name: array} dict,
    plus ``captures`` (list of LayerOutput, execution order), ``profile`` (list of LayerTime,
    execution order) and ``seconds`` (wall time of the whole run)."""

    def __init__(self, outputs: dict[str, np.ndarray], captures: list[LayerOutput], profile: list[LayerTime],
                 seconds: float):
        super().__init__(outputs)
        self.captures = captures
        self.profile = profile
        self.seconds = seconds


def layer_output(node: Node, k: int, arr: np.ndarray) -> LayerOutput:
    lay = node.layer
    port_id = lay.outputs[k].id if k < len(lay.outputs) else k
    return LayerOutput(node.index, lay.id, lay.name, lay.type, lay.version, k, port_id, lay.line,
                       np.array(arr, copy=True))


def execute(plan: Plan, outputs: Sequence[TensorSpec], copy_out: Sequence[bool], arrays: list[np.ndarray],
            hook: LayerHook | None, dest: list[np.ndarray | None] | None = None, pool_allowance: int | None = None
            ) -> dict[str, np.ndarray]:
    """The one execution loop: feed inputs, run every step, free dead values, collect outputs.
    ``dest``: the caller's out= arrays per output (see Model.run); ``copy_out``: which outputs are
    handed out as copies (a folded constant or an input); ``pool_allowance``: bytes the output pool's
    idle buffers may keep."""
    pool = sys.modules.get("irnorm.kernels.pool")  # imported once a kernel has been built
    if pool is not None:
        if pool_allowance is not None:
            pool.OUTPUTS.trim(pool_allowance)  # idle pooled buffers count against the limit
    slot_of = plan.slot_of
    direct: dict[int, np.ndarray] = {}  # slot -> caller array its kernel may write into
    if dest is not None:
        for d, src in zip(dest, plan.outputs, strict=True):
            # An out array that overlaps an input is filled only after everything has run (a later
            # layer may still read that input); a non-contiguous one is filled by a copy.
            s = slot_of.get(src)
            if (d is not None and s is not None and s not in direct and d.flags.c_contiguous
                    and not any(np.may_share_memory(d, a) for a in arrays)):
                direct[s] = d
    slots: list[np.ndarray | None] = [None] * len(slot_of)
    for pi, arr in zip(plan.parameters, arrays, strict=True):
        slots[slot_of[(pi, 0)]] = arr
        if hook is not None:
            hook(plan.graph.nodes[pi], [arr], 0.0)
    # Floating-point exceptions are results here (inf, NaN), never warnings: one errstate for the run
    # instead of one per kernel (about a microsecond each).
    with np.errstate(all="ignore"):
        if plan.uses_blas:
            from ..kernels import blas  # only here: planning and validation never import kernels

            if blas.enter():
                try:
                    _run_steps(plan, slots, direct, hook)
                finally:
                    blas.leave()
            else:
                _run_steps(plan, slots, direct, hook)
        else:
            _run_steps(plan, slots, direct, hook)
    result: dict[str, np.ndarray] = {}
    views = False  # an output handed out so far is a view (of what another output may be)
    for i, (spec, src) in enumerate(zip(outputs, plan.outputs, strict=True)):
        s = slot_of.get(src)
        v = slots[s] if s is not None else plan.constants[src]
        d = dest[i] if dest is not None else None
        if d is not None:
            if not _same_memory(v, d):  # the kernel wrote elsewhere (or this is a copy-in case)
                np.copyto(d, v.reshape(d.shape))
            v = d
        elif copy_out[i] or (v.base is not None and any(np.may_share_memory(v, a) for a in arrays)):
            # never hand out a constant or the caller's own input -- nor a view into that input, which a
            # layer may return as its output (a Split along the first axis, a no-op Slice, a Reshape)
            v = np.array(v, copy=True)
        elif (v.base is not None or views) and any(np.may_share_memory(v, r) for r in result.values()):
            v = np.array(v, copy=True)  # nor two outputs that share memory (one a Reshape of the other)
        views = views or v.base is not None
        result[spec.name] = v
    return result


def _run_steps(plan: Plan, slots: list[np.ndarray | None], direct: dict[int, np.ndarray],
               hook: LayerHook | None) -> None:
    """Every step in order: operands from the slots, outputs into them (or into the caller's out=
    arrays in `direct`), dead values freed."""
    if hook is None and not direct:
        key = () if plan.run_replay is None else tuple(slots[plan.slot_of[(pi, 0)]].shape for pi in plan.parameters)
        if plan.run_replay is None or not plan.replay_ok.get(key):
            plan.run_plain(slots, lambda e, st: _located(e, st, plan))
            return
        # a dynamic model with shape steps: their values from the last run at these input shapes
        cache = plan.shape_cache
        seen = cache.get(key)
        if seen is not None:
            plan.run_replay(slots, lambda e, st: _located(e, st, plan), seen)
            return
        record: dict[int, Any] = {}
        plan.run_record(slots, lambda e, st: _located(e, st, plan), record)
        size = sum(getattr(v, "nbytes", 0) for v in record.values())
        if size <= SHAPE_VALUES_BYTES:
            total = sum(sum(getattr(v, "nbytes", 0) for v in r.values()) for r in list(cache.values()))
            if len(cache) >= SHAPE_KEYS_KEPT or total + size > SHAPE_CACHE_BYTES:
                cache.clear()  # a model fed ever new shapes starts over (no iteration over a changing dict)
            cache[key] = record
        return
    if direct:
        from ..kernels.pool import OUTPUTS  # only here: planning and validation never import kernels
    for st in plan.steps:
        ins = st.argv.copy()
        for i, s in st.arg_slots:
            ins[i] = slots[s]
        targets = [direct[s] for s in st.out_slots if s in direct] if direct else None
        try:
            if targets:
                with OUTPUTS.provide(targets):
                    outs = _call(st, ins, hook)
            else:
                outs = _call(st, ins, hook)
        except (RuleError, IrnormError) as e:
            raise _located(e, st, plan) from None
        for s, o in zip(st.out_slots, outs, strict=False):
            slots[s] = o
        for s in st.free_slots:
            slots[s] = None


def _located(e: RuleError | IrnormError, st: Step, plan: Plan) -> IrnormError:
    """An error raised by step `st`'s kernel, as the run reports it: a data-dependent rule (e.g. integer
    division by zero) becomes an InputError at the step's layer; other irnorm errors get the model's
    file where they have none."""
    if isinstance(e, RuleError):
        return InputError(Diagnostic(e.code if e.code.startswith("IRN06") else "IRN064", e.message,
                                     **st.node.layer.where(plan.graph.path)))
    for d in e.diagnostics:
        d.file = d.file or plan.graph.path
    return e


def _call(st: Step, ins: list[np.ndarray], hook: LayerHook | None) -> Sequence[np.ndarray]:
    """One step's kernel, timed and reported to the hook when there is one."""
    if hook is None:
        return st.kernel(ins)
    t0 = time.perf_counter()
    outs = st.kernel(ins)
    hook(st.node, outs, time.perf_counter() - t0)
    return outs


def _same_memory(v: np.ndarray, d: np.ndarray) -> bool:
    """v is d's own memory in d's element order (the kernel wrote into the out= array)."""
    return (v.dtype == d.dtype and v.size == d.size and v.flags.c_contiguous and d.flags.c_contiguous
            and v.__array_interface__["data"][0] == d.__array_interface__["data"][0])
