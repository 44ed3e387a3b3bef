"""Layer-by-layer comparison of irnorm with OpenVINO's CPU plugin or with the float64 reference,
reporting the first layer (in execution order) whose output exceeds tolerance.

irnorm's intermediates are compared as each layer produces them (through Model.run's on_layer
hook) and dropped right after; only the other side's values are held.  OpenVINO: the same XML is
read with ``openvino.Core.read_model``, every layer irnorm executes is added as an extra model
output (``ov.Model.add_outputs`` on the op whose friendly name is the IR layer name), the model is
compiled on CPU with INFERENCE_PRECISION_HINT (default f32 here; the CPU plugin's own default is
bf16 on CPUs with bf16 support) and without its dynamic quantization of weight-compressed MatMuls'
activations, and run once.  Adding outputs can stop the plugin fusing layers,
so its intermediate values are those of the unfused layers.

When the CPU plugin cannot compile or run the model with all those outputs added but can without
them, the outputs are added in batches, halving every batch that fails (bisect_outputs), with the
same inputs each time; an output that fails even alone is reported as one OpenVINO cannot expose.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ArgumentError
from .inputs import random_inputs
from .jsonout import element_type
from .refeval import ReferenceRunner
from .stats import ErrorStats, default_tolerance, error_stats

AGAINST = ("openvino", "reference")
OPENVINO_PRECISIONS = ("f32", "bf16", "f16")
MAX_OPENVINO_RUNS = 64  # default cap on OpenVINO compile-and-run attempts when outputs must be added in batches


class OpenVINOUnavailable(ImportError):
    """The `openvino` package is not installed (needed for against="openvino" only)."""


class OpenVINOFailure(RuntimeError):
    """OpenVINO could not read, compile or run the model."""


@dataclass
class LayerComparison:
    """One layer output port compared with the other side."""

    index: int  # execution order
    layer_id: str
    name: str
    type: str
    version: str
    line: int  # XML line of the <layer>
    port: int  # output operand index
    shape: list[int]
    dtype: str
    status: str  # "ok" | "diverged" | "skipped"
    stats: ErrorStats | None = None
    note: str = ""
    output: str | None = None  # model output name when this tensor is one

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("index", "layer_id", "name", "type", "version", "line", "port", "shape",
                                           "dtype", "status", "note", "output")}
        d["stats"] = self.stats.to_dict() if self.stats is not None else None
        return d

    @property
    def where(self) -> str:
        return f"layer {self.layer_id} '{self.name}' ({self.type}-{self.version}), output {self.port}"


@dataclass
class CompareReport:
    """Result of :func:`compare`: one row per executed layer output, in execution order."""

    model: str
    against: str
    layers: list[LayerComparison]
    inputs: list[dict[str, Any]]
    rtol: float | None
    atol: float | None
    openvino_precision: str | None = None
    notes: list[str] = field(default_factory=list)
    openvino_runs: int | None = None  # OpenVINO compile-and-run attempts (1 unless outputs were added in batches)

    @property
    def first_divergence(self) -> LayerComparison | None:
        """The first layer output (execution order) beyond tolerance, or None."""
        return next((r for r in self.layers if r.status == "diverged"), None)

    @property
    def ok(self) -> bool:
        return self.first_divergence is None

    @property
    def diverged(self) -> list[LayerComparison]:
        return [r for r in self.layers if r.status == "diverged"]

    @property
    def skipped(self) -> list[LayerComparison]:
        return [r for r in self.layers if r.status == "skipped"]

    def to_dict(self) -> dict[str, Any]:
        fd = self.first_divergence
        return {
            "model": self.model, "against": self.against, "openvino_precision": self.openvino_precision,
            "rtol": self.rtol, "atol": self.atol, "ok": self.ok, "inputs": self.inputs,
            "first_divergence": fd.to_dict() if fd else None,
            "compared": sum(r.status != "skipped" for r in self.layers),
            "diverged": len(self.diverged), "skipped": len(self.skipped),
            "layers": [r.to_dict() for r in self.layers], "notes": self.notes,
            "openvino_runs": self.openvino_runs,
        }

    def to_json(self) -> str:
        """to_dict() under the --json contract (irnorm/workbench/jsonout.py)."""
        from .jsonout import dumps

        return dumps(self.to_dict())

    def describe_against(self) -> str:
        if self.against == "openvino":
            return f"OpenVINO CPU (inference precision {self.openvino_precision})"
        return "irnorm's float64 reference"

    def table(self) -> str:
        """The per-layer table as text."""
        rows = [("#", "id", "type", "name", "shape", "dtype", "max abs", "max rel", "beyond", "status")]
        for r in self.layers:
            s = r.stats
            rows.append((
                str(r.index), r.layer_id + (f":{r.port}" if r.port else ""), r.type, _clip(r.name, 28),
                "[" + ",".join(map(str, r.shape)) + "]", r.dtype,
                _g(s.max_abs) if s else "-", _g(s.max_rel) if s else "-",
                f"{s.mismatches}/{s.size}" if s else "-",
                f"skipped: {r.note}" if r.status == "skipped" else
                r.status.upper() + (f" ({r.note})" if r.note else ""),
            ))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
                         for row in rows)

    def summary(self) -> str:
        """The verdict in a few lines: the first divergence with its stats, or that all agree."""
        n = sum(r.status != "skipped" for r in self.layers)
        fd = self.first_divergence
        lines = []
        if fd is None:
            lines.append(f"no divergence: {n} layer output(s) agree with {self.describe_against()}")
        else:
            s = fd.stats
            lines.append(f"first divergence: {fd.where} at {self.model}:{fd.line}")
            if s is not None:
                lines.append(f"  {s.summary()}")
                lines.append(f"  tolerance: |irnorm - {self.against}| <= {s.atol:g} + {s.rtol:g} * |{self.against}|")
            later = len(self.diverged) - 1
            lines.append(f"  {len(self.diverged)} of {n} compared layer output(s) diverge"
                         + (f" ({later} after this one, which may inherit its error)" if later else ""))
        if self.skipped:
            lines.append(f"  {len(self.skipped)} layer output(s) not compared (see the table)")
        lines.extend(f"  note: {t}" for t in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table() + "\n" + self.summary()


def _g(v: float) -> str:
    return f"{v:.3g}"


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _output_names(model: Any) -> dict[tuple[int, int], str]:
    g = model.graph
    out: dict[tuple[int, int], str] = {}
    for spec, ri in zip(model.outputs, g.results, strict=False):
        src = g.nodes[ri].sources[0]
        if src is not None:
            out.setdefault(tuple(src), spec.name)
    return out


def compare(model: Any, against: str = "openvino", inputs: Mapping[str, Any] | None = None, *,
            rtol: float | None = None, atol: float | None = None, openvino_precision: str = "f32",
            seed: int = 0, shapes: Mapping[str, Any] | None = None,
            value_ranges: Mapping[str, tuple[float, float]] | None = None, cast: bool = False,
            weights: str | os.PathLike | None = None, layer_rtol: Mapping[str, float] | None = None,
            layer_atol: Mapping[str, float] | None = None, max_openvino_runs: int = MAX_OPENVINO_RUNS,
            progress: Callable[[str], None] | None = None) -> CompareReport:
    """Run `model` (a Model or a path to its XML) in irnorm and in `against` ("openvino" or
    "reference") with the same inputs and compare every layer's output as irnorm produces it.

    `inputs` defaults to seeded random inputs (`seed`, `shapes` for dynamic dims, `value_ranges`).
    `rtol`/`atol` default per dtype (irnorm.workbench.stats.DEFAULT_TOLERANCES; against OpenVINO the
    looser of the tensor's dtype and the inference precision); `layer_rtol`/`layer_atol` override them
    for single layers, keyed by layer name or id or by the name of a model output (ArgumentError, a
    ValueError, for a key that names none of these).  Raises OpenVINOUnavailable when
    against="openvino" and openvino is not installed, OpenVINOFailure when OpenVINO cannot run it.
    When OpenVINO runs the model but not with all layer outputs added, they are added in batches
    (at most `max_openvino_runs` OpenVINO runs, see openvino_layer_outputs); the outputs it cannot
    expose are "skipped" rows saying so, and the report's notes and openvino_runs say how many runs;
    `progress`, if given, is called with a line of text when that starts (the CLI prints it)."""
    from ..api import load

    if against not in AGAINST:
        raise ArgumentError(f"against must be one of {', '.join(AGAINST)}, got {against!r}")
    if max_openvino_runs < 2:
        raise ArgumentError(f"max_openvino_runs must be at least 2, got {max_openvino_runs}")
    if openvino_precision not in OPENVINO_PRECISIONS:
        raise ArgumentError(f"openvino_precision must be one of {', '.join(OPENVINO_PRECISIONS)}, "
                         f"got {openvino_precision!r}")
    m = load(model, weights) if isinstance(model, (str, os.PathLike)) else model
    notes: list[str] = []
    if m.variables:  # OpenVINO's request and the reference start from the variables' initial values
        m.reset_state()
        notes.append(f"the model's variables ({', '.join(m.variables)}) were reset: both sides ran one call from "
                     "their initial values")
    given = inputs is not None
    feeds = dict(inputs) if given else random_inputs(m, seed, shapes, value_ranges)
    # check (and with cast=True convert) the inputs once, so both sides get the very same arrays
    feeds = m.bind_inputs(feeds, cast)
    input_info = [{"name": k, "shape": list(np.shape(v)), "dtype": element_type(np.asarray(v).dtype),
                   "source": "given" if given else f"random (seed {seed})"} for k, v in feeds.items()]
    outputs_of = _output_names(m)
    rec = _Recorder(outputs_of, _per_layer(m, layer_rtol, outputs_of, "layer_rtol"),
                    _per_layer(m, layer_atol, outputs_of, "layer_atol"), rtol, atol, m.graph)
    runs = None
    if against == "reference":
        m.run(feeds, cast=cast, on_layer=_reference_hook(ReferenceRunner(m.graph), rec))
    else:
        ov_run = openvino_layer_outputs(m, feeds, openvino_precision, cast, max_runs=max_openvino_runs,
                                        progress=progress)
        notes.extend(ov_run.notes)
        runs = ov_run.runs
        m.run(feeds, cast=cast, on_layer=_openvino_hook(ov_run.values, rec, openvino_precision))
    return CompareReport(m.path, against, rec.rows, input_info, rtol, atol,
                         openvino_precision if against == "openvino" else None, notes,
                         runs)


class _Recorder:
    """Collects one LayerComparison per layer output, with the tolerance that applies to it.

    Index outputs (MaxPool's, TopK's: ops with pointed_values) that differ are checked once more: where
    every differing index points at a value within the values' tolerance of the value the other side's
    index points at (both read from irnorm's data input), the two picked equally good maxima -- a tie that
    last-bit differences upstream can flip -- and the row is "ok" with a note saying how many differ.  So
    irnorm keeps a copy of each such layer's data input until that layer has been compared."""

    def __init__(self, outputs_of: Mapping[tuple[int, int], str], per_rtol: Mapping[tuple[int, int], float],
                 per_atol: Mapping[tuple[int, int], float], rtol: float | None, atol: float | None,
                 graph: Any = None):
        self.outputs_of, self.per_rtol, self.per_atol, self.rtol, self.atol = outputs_of, per_rtol, per_atol, rtol, atol
        self.rows: list[LayerComparison] = []
        self.readers: dict[tuple[int, int], int] = {}  # data input of an index-output layer -> such readers left
        self.kept: dict[tuple[int, int], np.ndarray] = {}
        for n in graph.nodes if graph is not None else ():
            if n.op is not None and _has_indices(n.op) and n.sources and n.sources[0] is not None:
                self.readers[n.sources[0]] = self.readers.get(n.sources[0], 0) + 1

    def keep(self, node: Any, outs: Any) -> None:
        """Copy the outputs an index-output layer will read (called for every layer, Parameters too)."""
        for k, o in enumerate(outs):
            if (node.index, k) in self.readers:
                self.kept[(node.index, k)] = np.array(o, copy=True)

    def done_with(self, node: Any) -> None:
        src = node.sources[0] if node.sources else None
        if src in self.readers:
            self.readers[src] -= 1
            if not self.readers[src]:
                self.kept.pop(src, None)

    def _tolerance(self, node: Any, k: int, dtype: Any, precision: str | None) -> tuple[float, float]:
        d_rtol, d_atol = default_tolerance(dtype, precision)
        return (self.per_rtol.get((node.index, k), d_rtol if self.rtol is None else self.rtol),
                self.per_atol.get((node.index, k), d_atol if self.atol is None else self.atol))

    def ties(self, node: Any, k: int, got: np.ndarray, exp: np.ndarray, precision: str | None) -> str | None:
        """The note for an index output whose differing indices all point at tied values, else None."""
        data = self.kept.get(node.sources[0]) if node.op is not None and node.sources else None
        if data is None or got.shape != exp.shape or data.dtype.kind != "f":
            return None
        try:
            mine = node.op.pointed_values(node.attrs, data, k, got)
            theirs = node.op.pointed_values(node.attrs, data, k, exp)
        except (ValueError, IndexError, TypeError):  # indices that do not fit the data's shape
            return None
        if mine is None or theirs is None:
            return None
        differ = got != exp
        r, a = self._tolerance(node, 0, data.dtype, precision)  # the values' tolerance (output 0's)
        a_vals, b_vals = mine[differ], theirs[differ]
        if not np.all(np.abs(a_vals - b_vals) <= a + r * np.abs(b_vals)):  # NaN (outside the data): not a tie
            return None
        return (f"{int(differ.sum())} of {got.size} indices differ, each between values within tolerance "
                "of each other (ties; the values agree)")

    def row(self, node: Any, k: int, arr: np.ndarray, status: str, stats: ErrorStats | None = None,
            note: str = "") -> None:
        lay = node.layer
        self.rows.append(LayerComparison(node.index, lay.id, lay.name, lay.type, lay.version, lay.line, k,
                                         list(arr.shape), element_type(arr.dtype), status, stats, note,
                                         self.outputs_of.get((node.index, k))))

    def check(self, node: Any, k: int, got: np.ndarray, exp: np.ndarray, precision: str | None,
              note: str = "") -> None:
        r, a = self._tolerance(node, k, got.dtype, precision)
        st = error_stats(got, exp, r, a)
        status = "ok" if st.passed else "diverged"
        if not st.passed and got.dtype.kind in "iu":
            tie = self.ties(node, k, got, np.asarray(exp), precision)
            if tie is not None:
                status, note = "ok", "; ".join(t for t in (note, tie) if t)
        self.row(node, k, got, status, st, note)


def _has_indices(op: Any) -> bool:
    from ..ops.base import Op

    return type(op).pointed_values is not Op.pointed_values


def _reference_hook(runner: ReferenceRunner, rec: _Recorder) -> Any:
    """A layer hook comparing each layer with the float64 reference evaluator, fed irnorm's inputs."""
    def hook(node: Any, outs: Any, _s: float) -> None:
        ref, note = runner.step(node, outs)
        rec.keep(node, outs)
        if node.op_type == "Parameter":
            return
        for k, o in enumerate(outs):
            if note:
                rec.row(node, k, o, "skipped", note=note)
            else:
                rec.check(node, k, o, ref[k], None)
        rec.done_with(node)

    return hook


def _openvino_hook(ov_vals: dict[tuple[str, int], Any], rec: _Recorder, precision: str) -> Any:
    """A layer hook comparing each layer with OpenVINO's output of the same name (or saying why not)."""
    def hook(node: Any, outs: Any, _s: float) -> None:
        rec.keep(node, outs)
        if node.op_type == "Parameter":
            return
        for k, o in enumerate(outs):
            exp = ov_vals.get((node.layer.name, k))
            if not isinstance(exp, str):
                ov_vals.pop((node.layer.name, k), None)  # compared once: let it go
            if isinstance(exp, str):
                rec.row(node, k, o, "skipped", note=exp)
            elif exp is None:
                rec.row(node, k, o, "skipped", note="OpenVINO has no output for this layer")
            else:
                note = "" if exp.dtype == o.dtype else f"OpenVINO gives {element_type(exp.dtype)}"
                rec.check(node, k, o, exp, precision, note)
        rec.done_with(node)

    return hook


class ToleranceError(ArgumentError):
    """A layer_rtol/layer_atol entry whose key names no layer, layer id or model output, or whose value
    is not a non-negative number."""


def _per_layer(m: Any, tols: Mapping[str, float] | None, outputs_of: Mapping[tuple[int, int], str], what: str
               ) -> dict[tuple[int, int], float]:
    """{(node index, output): tolerance} from keys naming a layer (all its outputs), a layer id, or a
    model output (that one tensor)."""
    if not tols:
        return {}
    by_output = {name: key for key, name in outputs_of.items()}
    out: dict[tuple[int, int], float] = {}
    for key, tol in tols.items():
        tol = float(tol)
        if not tol >= 0:
            raise ToleranceError(f"{what}[{key!r}] must be a non-negative number, got {tol}")
        key = str(key)  # layer ids are strings in the XML; accept ints too
        if key in by_output:
            out[by_output[key]] = tol
            continue
        hits = [n for n in m.graph.nodes if key in (n.layer.name, n.layer.id)]
        for n in hits:
            for k in range(len(n.outputs)):
                out[(n.index, k)] = tol
        if not hits:
            names = [n.layer.name for n in m.graph.nodes] + list(by_output)
            close = difflib.get_close_matches(key, names, n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise ToleranceError(f"no layer or output named {key!r} in {os.path.basename(m.path)}{hint}")
    return out


def _import_openvino() -> Any:
    try:
        import openvino as ov
    except ImportError:
        raise OpenVINOUnavailable(
            "the openvino package is not installed, so irnorm cannot compare with OpenVINO; install it with "
            "`pip install openvino` (or compare with the float64 reference: --against reference)") from None
    return ov


def run_openvino(model: Any, feeds: Mapping[str, Any], precision: str = "f32", cast: bool = False, *,
                 max_runs: int = MAX_OPENVINO_RUNS) -> tuple[dict[tuple[str, int], Any], list[str]]:
    """Run `model`'s XML on OpenVINO CPU with every layer irnorm executes added as an output: once
    when OpenVINO accepts them all, else in batches (see :func:`openvino_layer_outputs`).
    Returns ({(layer name, output index): array, or a str saying why there is none}, notes)."""
    run = openvino_layer_outputs(model, feeds, precision, cast, max_runs=max_runs)
    return run.values, run.notes


@dataclass
class OpenVINORun:
    """What :func:`openvino_layer_outputs` got from OpenVINO."""

    values: dict[tuple[str, int], Any]  # (layer name, output index) -> array, or why there is none
    notes: list[str]
    runs: int  # OpenVINO compile-and-run attempts made


class AttemptFailed(Exception):
    """OpenVINO could not compile or run the model with one set of added outputs."""

    def __init__(self, stage: str, message: str):
        super().__init__(message)
        self.stage, self.message = stage, message  # stage: "compile" | "run"


def openvino_layer_outputs(model: Any, feeds: Mapping[str, Any], precision: str = "f32", cast: bool = False, *,
                           max_runs: int = MAX_OPENVINO_RUNS, progress: Callable[[str], None] | None = None
                           ) -> OpenVINORun:
    """The OpenVINO CPU output of every layer irnorm executes, with the same inputs in every run.

    First all of them are added as model outputs and the model is compiled and run once.  If that
    fails, the model is compiled and run as it is (if that fails too: OpenVINOFailure, as without
    added outputs), then the wanted outputs are added in batches: the list is halved and every batch
    that fails is halved again (the model's own outputs are in every run), so each output OpenVINO
    can expose is compared and each one it cannot is named with OpenVINO's error.  At most
    `max_runs` attempts in all (at least 2); outputs still unresolved then are reported as such.
    `progress(text)` is told when the batches start."""
    ov = _import_openvino()
    if max_runs < 2:
        raise ArgumentError(f"max_runs must be at least 2 (all outputs, then the model alone), got {max_runs}")
    notes = [f"OpenVINO {ov.get_version().split('-')[0]}"]
    # DYNAMIC_QUANTIZATION_GROUP_SIZE 0: the plugin otherwise quantizes the activations of weight-compressed
    # MatMuls to int8 (an approximation of the model, ~1e-3 relative; docs/ir-format.md section 9)
    config = {"INFERENCE_PRECISION_HINT": precision, "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
    if getattr(model, "variables", None):  # the CPU plugin would keep a fused attention's cache in u8 otherwise
        config["KV_CACHE_PRECISION"] = precision
    core = ov.Core()
    ovm = _read_openvino(core, model)
    wanted, missing = _openvino_outputs(model, ovm)
    ov_feeds: list[Any] = []  # converted once, then the very same arrays in every run

    def attempt(keys: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
        m = ovm.clone()
        if keys:
            ops = {op.get_friendly_name(): op for op in m.get_ordered_ops()}
            try:
                m.add_outputs([ops[name].output(k) for name, k in keys])
            except Exception as e:
                raise AttemptFailed("compile", _first_line(e)) from None
        try:
            compiled = core.compile_model(m, "CPU", config)
        except Exception as e:
            raise AttemptFailed("compile", _first_line(e)) from None
        # compiled outputs follow m.get_results(); map each Result back to (producer name, port)
        result_index: dict[tuple[str, int], int] = {}
        for i, r in enumerate(m.get_results()):
            src = r.input_value(0)
            result_index.setdefault((src.get_node().get_friendly_name(), src.get_index()), i)
        if not ov_feeds:
            ov_feeds.extend(_openvino_feeds(ov, compiled, model, feeds).values())  # in compiled.inputs order
        req = compiled.create_infer_request()
        try:
            req.infer(dict(zip(compiled.inputs, ov_feeds, strict=True)))
        except Exception as e:
            raise AttemptFailed("run", _first_line(e)) from None
        out: dict[tuple[str, int], Any] = {}
        for key in keys:
            i = result_index.get(key)
            out[key] = "OpenVINO did not expose this output" if i is None else _from_ov(req.get_output_tensor(i))
        return out

    keys = [key for key, _o in wanted]
    values: dict[tuple[str, int], Any] = dict(missing)
    try:
        values.update(attempt(keys))
        return OpenVINORun(values, notes, 1)
    except AttemptFailed as e:
        first = e
    try:
        attempt([])
    except AttemptFailed as e:
        verb = "cannot compile" if e.stage == "compile" else "failed to run"
        raise OpenVINOFailure(f"OpenVINO {verb} {model.path}: {e.message}") from None
    if progress is not None and len(keys) > 1:
        progress(f"OpenVINO cannot {'compile' if first.stage == 'compile' else 'run'} the model with all "
                 f"{len(keys)} layer outputs added ({first.message}); adding them in batches, at most "
                 f"{max_runs - 2} more OpenVINO runs...")
    if len(keys) == 1:  # the run with all outputs was the run with this one alone
        got, failed, unresolved, runs = {}, {keys[0]: first.message}, {}, 0
    else:
        got, failed, unresolved, runs = bisect_outputs(keys, attempt, max_runs - 2, first.message)
    values.update(got)
    for key, msg in failed.items():
        values[key] = f"OpenVINO cannot expose this output: {msg}"
    for key, msg in unresolved.items():
        values[key] = f"not isolated within the limit of {max_runs} OpenVINO runs (a batch with it failed: {msg})"
    verb = "compile" if first.stage == "compile" else "run"
    text = (f"OpenVINO could not {verb} the model with all {len(keys)} layer output(s) added ({first.message}) "
            f"but runs it without them, so the outputs were added in batches, each failing batch halved: "
            f"{runs + 2} OpenVINO runs in all (all outputs, the model alone, {runs} batch(es)); "
            f"{len(keys) - len(failed) - len(unresolved)} output(s) exposed, {len(failed)} that OpenVINO cannot "
            f"expose")
    if unresolved:
        text += (f", {len(unresolved)} not compared (limit of {max_runs} runs reached; raise it with "
                 f"--max-openvino-runs, or max_openvino_runs= in Python)")
    notes.append(text)
    return OpenVINORun(values, notes, runs + 2)


def bisect_outputs(keys: list[Any], attempt: Any, budget: int, error: str = ""
                   ) -> tuple[dict[Any, Any], dict[Any, str], dict[Any, str], int]:
    """Find out which of `keys` OpenVINO can expose when a run with all of them failed (with `error`):
    try each half of `keys`, and halve again every batch whose run fails, in order (earliest keys
    first), until a single key fails alone.  `attempt(batch)` returns {key: value} or raises
    AttemptFailed.  At most `budget` attempts.  Returns (values, {key: error of its run alone},
    {key: error of the last batch it failed in} for the keys left when the budget ran out, attempts)."""
    values: dict[Any, Any] = {}
    failed: dict[Any, str] = {}
    unresolved: dict[Any, str] = {}
    runs = 0
    stack = [(half, error) for half in _halves(list(keys))][::-1]  # depth-first, first half first
    while stack:
        batch, why = stack.pop()
        if runs >= budget:
            unresolved.update((k, why) for k in batch)
            continue
        runs += 1
        try:
            values.update(attempt(batch))
        except AttemptFailed as e:
            if len(batch) == 1:
                failed[batch[0]] = e.message
            else:
                stack.extend((half, e.message) for half in _halves(batch)[::-1])
    return values, failed, unresolved, runs


def _halves(keys: list[Any]) -> list[list[Any]]:
    if len(keys) <= 1:
        return [keys] if keys else []
    mid = (len(keys) + 1) // 2
    return [keys[:mid], keys[mid:]]


def _read_openvino(core: Any, model: Any) -> Any:
    g = model.graph
    weights = g.weights.path if g.weights is not None else None
    try:
        return core.read_model(model.path, weights) if weights and os.path.exists(weights) else \
            core.read_model(model.path)
    except Exception as e:
        ext = any(n.layer.version == "irnorm1" for n in g.nodes)
        hint = " (irnorm1 layers are irnorm's own extension ops: use --against reference)" if ext else ""
        raise OpenVINOFailure(f"OpenVINO cannot read {model.path}: {_first_line(e)}{hint}") from None


def _openvino_outputs(model: Any, ovm: Any) -> tuple[list[tuple[tuple[str, int], Any]], dict[tuple[str, int], str]]:
    """The OpenVINO output of every layer irnorm executes, matched by unique layer name; for the
    ones that cannot be matched, why not."""
    g = model.graph
    by_name: dict[str, list[Any]] = {}
    for op in ovm.get_ordered_ops():
        by_name.setdefault(op.get_friendly_name(), []).append(op)
    name_count: dict[str, int] = {}
    for n in g.nodes:
        name_count[n.layer.name] = name_count.get(n.layer.name, 0) + 1
    wanted: list[tuple[tuple[str, int], Any]] = []
    missing: dict[tuple[str, int], str] = {}
    for n in model.layers_run:
        name = n.layer.name
        ops = by_name.get(name, [])
        for k in range(len(n.outputs)):
            if n.op_type == "Assign":  # a sink: OpenVINO cannot add its port as an output
                missing[(name, k)] = "an Assign's output is its input (compared at its producer)"
            elif name_count[name] > 1 or len(ops) > 1:
                missing[(name, k)] = "layer name is not unique in the IR"
            elif not ops:
                missing[(name, k)] = "no OpenVINO op has this name"
            elif k >= ops[0].get_output_size():
                missing[(name, k)] = f"the OpenVINO op has {ops[0].get_output_size()} output(s)"
            else:
                wanted.append(((name, k), ops[0].output(k)))
    return wanted, missing


def _openvino_feeds(ov: Any, compiled: Any, model: Any, feeds: Mapping[str, Any]) -> dict[Any, Any]:
    ov_feeds = {}
    for port in compiled.inputs:
        names = set(port.get_names())
        spec = next((s for s in model.inputs if names & set(s.names)), None)
        key = next((k for k in feeds if spec is not None and k in spec.names), None)
        if key is None:
            raise OpenVINOFailure(f"no input given for OpenVINO input {sorted(names)}")
        ov_feeds[port] = _to_ov(ov, np.asarray(feeds[key]), port)
    return ov_feeds


def _first_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    # OpenVINO messages start with "Exception from src/...": the useful part is the last line
    return lines[-1] if lines else type(e).__name__


def _to_ov(ov: Any, arr: np.ndarray, port: Any) -> Any:
    if arr.dtype.name == "bfloat16":
        return ov.Tensor(arr.view(np.uint16), list(arr.shape), ov.Type.bf16)
    want = port.get_element_type()
    if want.is_static() and want != ov.Type.bf16:
        np_t = want.to_dtype()
        if np.dtype(np_t) != arr.dtype:  # e.g. IR v10: OpenVINO presents an f16 input as f32
            arr = arr.astype(np_t)
    return np.ascontiguousarray(arr)


def _from_ov(t: Any) -> np.ndarray:
    import openvino as ov

    if t.element_type == ov.Type.bf16:
        import ml_dtypes

        return np.array(t.data, copy=True).view(np.uint16).view(ml_dtypes.bfloat16).reshape(list(t.shape))
    return np.array(t.data, copy=True)
