"""The workbench's click commands (`irnorm compare`, `bench`, `graph`) and the pieces `irnorm run`
uses for --compare, --dump-dir, --profile.  Argument handling only; the work is in the modules
beside this one.  irnorm/cli.py adds COMMANDS to the `irnorm` group."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..errors import Diagnostic, InputError
from .args import fuse_option, input_options, load_and_feed, parse_tol
from .jsonout import dumps, failure

EXIT_FAIL = 1


# ---- colour: only on a terminal, never with NO_COLOR ------------------------------------


def color_enabled(err: bool = False) -> bool:
    """Colour only when the stream is a terminal and NO_COLOR is unset or empty (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = sys.stderr if err else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, fg: str, err: bool = False, bold: bool = False) -> str:
    return click.style(text, fg=fg, bold=bold) if color_enabled(err) else text


def verdict(ok: bool) -> str:
    return paint("PASS", "green", bold=True) if ok else paint("FAIL", "red", bold=True)


# ---- irnorm run: --compare / --dump-dir / --profile -------------------------------------


def run_extras(m: Any, feeds: dict[str, Any], *, cast: bool, compare_npz: str | None, rtol_items: tuple[str, ...],
               atol_items: tuple[str, ...], dump_dir: str | None, dump_names: tuple[str, ...], profile: bool,
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run `m` with the debugging extras.  Returns (outputs, extras) where extras holds the
    results to print: "profile" (rows + text), "dump" (dir, entries), "compare" (checks)."""
    if dump_names and not dump_dir:
        raise click.UsageError("--dump needs --dump-dir DIR")
    rtol, rtol_per = parse_tol(rtol_items, "--rtol")
    atol, atol_per = parse_tol(atol_items, "--atol")
    if (rtol_items or atol_items) and not compare_npz:
        raise click.UsageError("--rtol/--atol need --compare EXPECTED.npz")
    expected = _load_expected(compare_npz, m.max_memory) if compare_npz else None
    writer = None
    if dump_dir:
        from .trace import DumpError, DumpWriter  # here: a plain run needs none of it (~2 ms of start-up)

        wanted = None
        if dump_names:
            try:
                wanted = m.find_layers(list(dump_names))
            except InputError as e:
                raise click.BadParameter(str(e), param_hint="--dump") from None
        try:
            writer = DumpWriter(dump_dir, wanted, m.path)
        except (DumpError, OSError) as e:
            raise click.ClickException(str(e)) from None
        if _stderr_tty():  # large dumps take a while: show them being written
            writer = _DumpProgress(writer, len(wanted) if isinstance(wanted, list) else len(m.layers_run) + 1)
    if profile:  # one untimed run first, so the table shows kernels, not their JIT compilation
        m.run(feeds, cast=cast)
    try:
        res = m.run(feeds, cast=cast, profile=profile, on_layer=writer)
        if writer is not None:
            writer.commit()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    extras: dict[str, Any] = {}
    if profile:
        from .trace import profile_rows, profile_table

        extras["profile"] = {"rows": profile_rows(res.profile), "text": profile_table(res.profile, res.seconds),
                             "wall_ms": res.seconds * 1e3}
    if writer is not None:
        extras["dump"] = {"dir": dump_dir, "layers": writer.entries}
    if expected is not None:
        from .trace import check_outputs

        checks, notes = check_outputs(m, res, expected, rtol, atol, rtol_per, atol_per)
        extras["compare"] = {"file": compare_npz, "checks": checks, "notes": notes}
    return dict(res), extras


def _load_expected(path: str, limit: int | None = None) -> dict[str, Any]:
    import numpy as np

    from .inputs import load_array_file

    data = load_array_file(path, limit)
    if isinstance(data, np.ndarray):
        raise InputError(Diagnostic("IRN063", "--compare expects an .npz archive keyed by output name", file=path))
    return dict(data)


def print_run_extras(extras: dict[str, Any], quiet: bool) -> int:
    """Human output for run_extras; returns the exit code (1 when --compare fails)."""
    code = 0
    if "profile" in extras and not quiet:
        click.echo("profile of a second run (the first one compiled the kernels):")
        click.echo(extras["profile"]["text"])
    if "dump" in extras and not quiet:
        click.echo(f"dumped {len(extras['dump']['layers'])} layer output(s) to {extras['dump']['dir']}")
    if "compare" in extras:
        c = extras["compare"]
        for chk in c["checks"]:
            if not chk.passed:
                code = EXIT_FAIL
            if quiet and chk.passed:
                continue
            detail = chk.stats.summary() if chk.stats is not None else chk.note
            tol = f"  [rtol {chk.stats.rtol:g}, atol {chk.stats.atol:g}]" if chk.stats is not None else ""
            click.echo(f"{verdict(chk.passed)} {chk.name}: {detail}{tol}")
        for n in c["notes"]:
            if not quiet:
                click.echo(f"note: {n}", err=True)
        if not quiet:
            bad = sum(not chk.passed for chk in c["checks"])
            click.echo(f"compare: {len(c['checks']) - bad}/{len(c['checks'])} output(s) pass "
                       f"({verdict(bad == 0)})")
    return code


def run_extras_json(extras: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "profile" in extras:
        out["profile"] = {"layers": extras["profile"]["rows"], "wall_ms": extras["profile"]["wall_ms"]}
    if "dump" in extras:
        out["dump"] = extras["dump"]
    if "compare" in extras:
        c = extras["compare"]
        out["compare"] = {"file": c["file"], "passed": all(chk.passed for chk in c["checks"]),
                          "outputs": [chk.to_dict() for chk in c["checks"]], "notes": c["notes"]}
    return out


# ---- irnorm compare -----------------------------------------------------------------------


@click.command("compare")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--against", type=click.Choice(["openvino", "reference"]), default="openvino", show_default=True,
              help="OpenVINO's CPU plugin (needs the openvino package) or irnorm's float64 numpy reference.")
@click.option("--openvino-precision", type=click.Choice(["f32", "bf16", "f16"]), default="f32", show_default=True,
              help="OpenVINO INFERENCE_PRECISION_HINT (the CPU plugin's own default is bf16 on bf16-capable CPUs).")
# default: compare.MAX_OPENVINO_RUNS (not imported here, to keep `irnorm --help` light)
@click.option("--max-openvino-runs", type=click.IntRange(min=2), default=64, show_default=True, metavar="N",
              help="If OpenVINO cannot compile or run the model with every layer output added, add them in "
                   "halving batches, in at most N OpenVINO runs.")
@input_options
@click.option("--rtol", "rtol_items", multiple=True, metavar="R|LAYER=R",
              help="Relative tolerance (default: per dtype); LAYER=R for one layer (name or id) or model output.")
@click.option("--atol", "atol_items", multiple=True, metavar="A|LAYER=A",
              help="Absolute tolerance (default: per dtype); LAYER=A for one layer (name or id) or model output.")
@click.option("--graph", "graph_path", type=click.Path(dir_okay=False), metavar="FILE.html|.svg|.dot",
              help="Also draw the graph with the diverging layers in red.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the verdict line(s).")
def compare_cmd(model: str, against: str, openvino_precision: str, max_openvino_runs: int, weights: str | None,
                inputs_npz: str | None, items: tuple[str, ...], seed: int, shape_items: tuple[str, ...],
                range_items: tuple[str, ...], cast: bool, save_inputs: str | None, rtol_items: tuple[str, ...],
                atol_items: tuple[str, ...], graph_path: str | None, as_json: bool, quiet: bool) -> None:
    """Compare every layer's output of MODEL with OpenVINO or the float64 reference and name the
    first layer (in execution order) whose error exceeds tolerance.  Exit 1 when one does.

    Against OpenVINO, every layer irnorm executes is added as a model output and the model runs
    once; if OpenVINO cannot compile or run it so (but can without them), the outputs are added in
    batches and each one it cannot expose is reported as not compared, with OpenVINO's error.

    \b
    Example:  irnorm compare model.xml --against openvino --graph diff.html"""
    from .compare import OpenVINOFailure, OpenVINOUnavailable, ToleranceError, compare

    rtol, rtol_per = parse_tol(rtol_items, "--rtol")
    atol, atol_per = parse_tol(atol_items, "--atol")
    m, feeds, _ = load_and_feed(model, weights, inputs_npz, items, seed, shape_items, range_items, quiet or as_json,
                                save_inputs=save_inputs)
    talk = against == "openvino" and not (quiet or as_json) and _stderr_tty()
    if talk:
        click.echo("irnorm: compiling the model in OpenVINO and running both (every layer is compared)...", err=True)
    try:
        report = compare(m, against, feeds, rtol=rtol, atol=atol, openvino_precision=openvino_precision,
                         cast=cast, layer_rtol=rtol_per, layer_atol=atol_per, max_openvino_runs=max_openvino_runs,
                         progress=(lambda text: click.echo(f"irnorm: {text}", err=True)) if talk else None)
    except ToleranceError as e:  # a LAYER= key that names no layer or output
        raise click.BadParameter(str(e), param_hint="--rtol/--atol") from None
    except (OpenVINOUnavailable, OpenVINOFailure) as e:
        click.echo(f"irnorm: {e}", err=True)
        if as_json:  # the --json contract: a failure is one JSON object on stdout too
            click.echo(failure("openvino", str(e), EXIT_FAIL))
        sys.exit(EXIT_FAIL)
    report.model = model
    if graph_path:
        from .dot import write_graph

        marks = {}
        for r in report.diverged:
            marks.setdefault(r.index, f"DIVERGED: {r.stats.summary() if r.stats else r.note}")
        write_graph(m, graph_path, marks=marks)
    if not (items or inputs_npz):
        for i in report.inputs:
            i["source"] = f"random (seed {seed})"
    if as_json:
        click.echo(dumps(report.to_dict()))
    else:
        if not quiet:
            click.echo(f"irnorm compare {model} against {report.describe_against()}")
            click.echo("inputs: " + ", ".join(f"{i['name']} {i['shape']} {i['dtype']}" for i in report.inputs)
                       + ("" if items or inputs_npz else f" (random, seed {seed})"))
            click.echo(_colour_table(report.table()))
        fd = report.first_divergence
        head, _, rest = report.summary().partition("\n")
        click.echo((paint(head, "red", bold=True) if fd else paint(head, "green")) + ("\n" + rest if rest else ""))
    if not report.ok:
        sys.exit(EXIT_FAIL)


def _colour_table(text: str) -> str:
    if not color_enabled():
        return text
    out = []
    for line in text.splitlines():
        if line.endswith("DIVERGED"):
            line = click.style(line, fg="red")
        elif "skipped:" in line:
            line = click.style(line, fg="yellow")
        out.append(line)
    return "\n".join(out)


# ---- irnorm bench ---------------------------------------------------------------------


@click.command("bench")
@click.argument("model", type=click.Path(dir_okay=False))
@input_options
@click.option("-n", "--runs", type=click.IntRange(min=1), default=None, help="Timed runs (default 10).")
@click.option("-t", "--time", "seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Run for this many seconds instead of a count.")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True, help="Warm-up runs (untimed).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Numba threads (default: all).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs in flight at once, each from its own thread (a Model is thread-safe).")
@click.option("--profile", is_flag=True, help="Per-layer times, averaged over the timed runs.")
@fuse_option
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the result line.")
def bench_cmd(model: str, weights: str | None, inputs_npz: str | None, items: tuple[str, ...], seed: int,
              shape_items: tuple[str, ...], range_items: tuple[str, ...], cast: bool, save_inputs: str | None,
              runs: int | None,
              seconds: float | None, warmup: int, threads: int | None, concurrency: int, profile: bool,
              no_fuse: bool, as_json: bool, quiet: bool) -> None:
    """Benchmark MODEL: load and first-run times, warm-up, then timed runs; latency min/median/p90/p99
    and throughput (with --concurrency N, from N threads); --profile adds per-layer times.

    \b
    Example:  irnorm bench model.xml --shape x=1,3,224,224 -t 10 --profile"""
    import time

    from .bench import bench
    from .machine import environment

    if runs is not None and seconds is not None:
        raise click.UsageError("give either -n/--runs or -t/--time, not both")
    t0 = time.perf_counter()
    m, feeds, _ = load_and_feed(model, weights, inputs_npz, items, seed, shape_items, range_items, quiet or as_json,
                                fuse=not no_fuse, need_shapes=True, save_inputs=save_inputs)
    load_s = time.perf_counter() - t0
    show = not quiet and not as_json and _stderr_tty()
    progress = _Progress(runs, seconds) if show else None
    try:
        res = bench(m, feeds, runs, seconds, warmup=warmup, threads=threads, cast=cast, progress=progress,
                    profile=profile, concurrency=concurrency)
    except ValueError as e:  # the thread count, or --concurrency on a stateful model
        hint = "--concurrency" if "concurrency" in str(e) else "--threads"
        raise click.BadParameter(str(e), param_hint=hint) from None
    finally:
        if progress is not None:
            progress.done()
    if as_json:
        click.echo(dumps({"ok": True, "model": model, "inputs": {k: list(v.shape) for k, v in feeds.items()},
                          "load_seconds": load_s, **res.to_dict(), "environment": environment()}))
        return
    line = (f"latency ms: min {res.min_ms:.3f}  median {res.median_ms:.3f}  p90 {res.p90_ms:.3f}  "
            f"p99 {res.p99_ms:.3f}  max {res.max_ms:.3f}   throughput {res.throughput:.1f} runs/s")
    if quiet:
        click.echo(line)
        return
    env = environment()
    click.echo(f"irnorm bench {model}: {res.runs} runs in {res.total_seconds:.3f} s after {res.warmup_runs} warm-up "
               f"run(s), {res.threads} Numba thread(s) (parallel loops: {env['parallel_loops']})"
               + (f", {res.concurrency} in flight" if res.concurrency > 1 else "")
               + (", each from the variables' initial values" if res.stateful else ""))
    click.echo(f"load {load_s * 1e3:.1f} ms, first run {res.first_run_ms:.1f} ms (kernel compilation or cache loading)")
    click.echo(line)
    if res.profile is not None:
        from .trace import profile_rows_table

        click.echo(f"per-layer times, mean of {res.runs} timed run(s):")
        click.echo(profile_rows_table(res.profile))


def _stderr_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _DumpProgress:
    """A DumpWriter (the layer hook) that shows a click progress bar of the layers written."""

    def __init__(self, writer: Any, layers: int):
        self.writer = writer
        self.bar = click.progressbar(length=max(layers, 1), label="dumping layers", file=sys.stderr, show_eta=False)
        self.bar.__enter__()

    def __call__(self, node: Any, outs: Any, seconds: float) -> None:
        self.writer(node, outs, seconds)
        self.bar.update(1)

    def __getattr__(self, name: str) -> Any:  # commit, abort, entries: the writer's
        return getattr(self.writer, name)

    def commit(self) -> None:
        self.bar.__exit__(None, None, None)
        self.writer.commit()


class _Progress:
    """bench's progress on stderr with click.progressbar (only used when stderr is a terminal): runs
    done out of -n, or seconds elapsed out of -t."""

    def __init__(self, runs: int | None, seconds: float | None):
        self.runs, self.seconds, self.shown = runs, seconds, 0
        length = runs if runs is not None else max(int((seconds or 1.0) * 10), 1)
        self.bar = click.progressbar(length=length, label="timing", file=sys.stderr,
                                     show_pos=runs is not None, show_eta=False)
        self.bar.__enter__()

    def __call__(self, done: int, runs: int | None, elapsed: float) -> None:
        now = done if runs is not None else min(int(elapsed * 10), self.bar.length)
        if now > self.shown:
            self.bar.update(now - self.shown)
            self.shown = now

    def done(self) -> None:
        self.bar.__exit__(None, None, None)


# ---- irnorm graph -----------------------------------------------------------------------


@click.command("graph")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Picture to write: .dot (always works), .svg / .png (need Graphviz), .html.")
@click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (default: MODEL with .bin).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def graph_cmd(model: str, output: str, weights: str | None, as_json: bool, quiet: bool) -> None:
    """Draw MODEL's graph: layers with type and key attributes, edges with shapes and dtypes.

    A broken model is drawn too, its bad layers in red (exit 1 then: irnorm validate lists the errors).

    \b
    Example:  irnorm graph model.xml -o graph.html"""
    from ..api import read_graph
    from .dot import FORMATS, GraphvizMissing, graphviz_available, write_graph

    ext = os.path.splitext(output)[1].lower()
    if ext not in FORMATS:
        raise click.BadParameter(f"unknown picture format {ext or '(none)'!r}; use .dot, .svg, .png or .html",
                                 param_hint="-o/--output")
    m = read_graph(model, weights)
    try:
        fmt = write_graph(m, output)
    except GraphvizMissing as e:
        click.echo(f"irnorm: cannot write {output}: {e}", err=True)
        sys.exit(EXIT_FAIL)
    except (RuntimeError, OSError) as e:
        click.echo(f"irnorm: cannot write {output}: {e}", err=True)
        sys.exit(EXIT_FAIL)
    rendered = fmt in ("svg", "png") or (fmt == "html" and graphviz_available())
    if as_json:
        click.echo(dumps({"ok": m.ok, "file": output, "format": fmt, "layers": len(m.nodes),
                          "errors": sum(d.severity == "error" for d in m.diagnostics),
                          "rendered_by_graphviz": rendered}))
    elif not quiet:
        click.echo(f"wrote {output} ({fmt}, {len(m.nodes)} layers)")
    if not m.ok:
        if not quiet:
            errors = [d for d in m.diagnostics if d.severity == "error"]
            click.echo(f"{model}: {len(errors)} error(s), drawn in red; irnorm validate lists them", err=True)
        sys.exit(EXIT_FAIL)


COMMANDS = (compare_cmd, bench_cmd, graph_cmd)
