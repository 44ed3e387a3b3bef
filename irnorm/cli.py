"""The `irnorm` command: click commands only; the work happens in the library and the workbench.

Exit codes: 0 ok, 1 model / data / comparison failure, 2 usage error,
130 interrupted (Ctrl-C), 3 internal error (a bug in irnorm: please report it).
"""

from __future__ import annotations

import os
import sys

import click

from .errors import MAX_LISTED, IrnormError
from .startup import collector_paused, command_started, defer_imports, ending_after_command
from .workbench.args import fuse_option, input_options, load_and_feed, max_memory_option
from .workbench.commands import COMMANDS

EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPT = 1, 2, 3, 130


def _err(msg: str) -> None:
    click.echo(msg, err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(None, "--version", package_name="irnorm", prog_name="irnorm")
def cli() -> None:
    """irnorm: read, validate and run OpenVINO IR models (model.xml + model.bin).

    \b
    Example:  irnorm run model.xml --inputs in.npz -o out.npz
    Exit codes: 0 ok, 1 model/data/comparison failure, 2 usage error, 3 internal error, 130 interrupted.
    With --json every command prints one JSON object on stdout, on failure too."""


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False))
@input_options
@click.option("-o", "--output", type=click.Path(), help="Save every output to this .npz (or an OUT.zarr group).")
@max_memory_option
@fuse_option
@click.option("--compare", "compare_npz", type=click.Path(dir_okay=False), metavar="EXPECTED.npz",
              help="Check each output against this .npz (keyed by output name); exit 1 on a mismatch.")
@click.option("--rtol", "rtol_items", multiple=True, metavar="R|NAME=R", help="Relative tolerance for --compare.")
@click.option("--atol", "atol_items", multiple=True, metavar="A|NAME=A", help="Absolute tolerance for --compare.")
@click.option("--dump-dir", type=click.Path(file_okay=False),
              help="Write every layer's outputs here (.npy + index.json).")
@click.option("--dump", "dump_names", multiple=True, metavar="LAYER", help="Only dump this layer (name or id).")
@click.option("--profile", is_flag=True, help="Print per-layer wall time, slowest first.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="With .zarr data: a local cluster of N worker processes (default: threads in this process).")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="With .zarr data: a dask scheduler's address.")
@click.option("--chunk", "chunk_rows", type=click.IntRange(min=1), default=None, metavar="ROWS",
              help="With .zarr data: rows per task (default: ~64 MiB, a multiple of the input's chunking).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def run(model: str, weights: str | None, inputs_npz: str | None, items: tuple[tuple[str, str], ...], seed: int,
        shape_items: tuple[tuple[str, list[int]], ...], range_items: tuple[tuple[str, tuple[float, float]], ...],
        cast: bool, save_inputs: str | None, output: str | None, max_memory: int | None, no_fuse: bool,
        compare_npz: str | None,
        rtol_items: tuple[str, ...], atol_items: tuple[str, ...], dump_dir: str | None, dump_names: tuple[str, ...],
        profile: bool, workers: int | None, scheduler: str | None, chunk_rows: int | None, as_json: bool,
        quiet: bool) -> None:
    """Run MODEL and print each output's name, shape, dtype and statistics.

    With --inputs DATA.zarr -o OUT.zarr the model runs chunk by chunk over the zarr group on dask
    (the [dask] extra); an interrupted run started again finishes the missing chunks.

    \b
    Example:  irnorm run model.xml --inputs in.npz -o out.npz"""
    import numpy as np

    from .workbench import commands as wb
    from .workbench.jsonout import dumps, element_type
    from .workbench.outputs import check_output_path, interruptible, save_npz, stats, stats_text

    if (inputs_npz or "").rstrip("/").endswith(".zarr") or (output or "").rstrip("/").endswith(".zarr"):
        _run_zarr(model, weights, inputs_npz, output, workers, scheduler, chunk_rows, as_json, quiet)
        return
    if workers or scheduler or chunk_rows:
        raise click.UsageError("--workers, --scheduler and --chunk go with --inputs DATA.zarr -o OUT.zarr")
    if output:
        check_output_path(output)
    with collector_paused():  # one model run: start-up's objects live to its end (irnorm/startup.py)
        m, feeds, note = load_and_feed(model, weights, inputs_npz, items, seed, shape_items, range_items,
                                       quiet or as_json, max_memory, fuse=not no_fuse, save_inputs=save_inputs)
        if compare_npz and note and not quiet:
            _err(f"irnorm: warning: --compare {compare_npz} with random inputs (seed {seed}): the expected outputs "
                 "must come from these very inputs (give them with --inputs, or save them with --save-inputs)")
        for d in m.diagnostics:
            if d.severity == "warning" and d.code not in ("IRN091", "IRN093") and not quiet and not as_json:
                _err(d.format())
        outs, extras = interruptible(wb.run_extras, m, feeds, cast=cast, compare_npz=compare_npz,
                                     rtol_items=rtol_items, atol_items=atol_items, dump_dir=dump_dir,
                                     dump_names=dump_names, profile=profile, slow_note=not (quiet or as_json))
        if output:
            # np.savez cannot round-trip bfloat16: store it widened to float32 (exact).
            save_npz(output, {k: v.astype(np.float32) if v.dtype.name == "bfloat16" else v for k, v in outs.items()})
        if as_json:
            failed = "compare" in extras and not all(c.passed for c in extras["compare"]["checks"])
            click.echo(dumps({"ok": not failed, "outputs": [
                {"name": k, "shape": list(v.shape), "dtype": element_type(v.dtype), "stats": stats(v)}
                for k, v in outs.items()
            ], "inputs": [{"name": k, "shape": list(v.shape), "dtype": element_type(v.dtype)}
                           for k, v in feeds.items()],
                "inputs_note": note, "saved": output, **wb.run_extras_json(extras)}))
            if failed:
                sys.exit(EXIT_FAIL)
            return
        if not quiet:
            for k, v in outs.items():
                click.echo(f"{k}: shape {list(v.shape)} {element_type(v.dtype)}  {stats_text(v)}")
            if output:
                click.echo(f"saved {len(outs)} output(s) to {output}")
        if wb.print_run_extras(extras, quiet):
            sys.exit(EXIT_FAIL)


def _run_zarr(model: str, weights: str | None, in_path: str | None, out_path: str | None, workers: int | None,
              scheduler: str | None, chunk_rows: int | None, as_json: bool, quiet: bool) -> None:
    if not (in_path and out_path and in_path.rstrip("/").endswith(".zarr") and out_path.rstrip("/").endswith(".zarr")):
        raise click.UsageError("chunked runs take both --inputs DATA.zarr and -o OUT.zarr")
    if workers and scheduler:
        raise click.UsageError("give --workers or --scheduler, not both")
    try:
        from .dask.zarr_io import run_zarr
    except ImportError:
        raise click.UsageError("zarr data needs the dask extra: pip install 'irnorm[dask]'") from None
    show = not (quiet or as_json) and sys.stderr.isatty()
    counts = run_zarr(model, in_path, out_path, weights=weights, workers=workers, scheduler=scheduler,
                      chunk_rows=chunk_rows, progress=show).counts()
    if as_json:
        from .workbench.jsonout import dumps

        click.echo(dumps({"ok": True, "inputs": in_path, "saved": out_path, **counts}))
    elif not quiet:
        click.echo(f"wrote {counts['rows']} rows to {out_path}: {counts['computed']} chunk(s) computed, "
                   f"{counts['skipped']} already done")


@cli.command()
@click.argument("models", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (only with a single MODEL).")
@click.option("--json", "as_json", is_flag=True, help="Emit diagnostics as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def validate(models: tuple[str, ...], weights: str | None, as_json: bool, quiet: bool) -> None:
    """Check MODELS without running them; one diagnostic per problem.

    \b
    Example:  irnorm validate model.xml --json"""
    from .api import check

    if weights and len(models) > 1:
        raise click.UsageError("--weights can only be used with a single model")
    failed = False
    report = []
    for path in models:
        diags = check(path, weights)
        errors = [d for d in diags if d.severity == "error"]
        failed |= bool(errors)
        report.append({"file": path, "ok": not errors, "diagnostics": [d.to_dict() for d in diags]})
        if as_json:
            continue
        shown = [d for d in diags if d.severity == "error" or not quiet]
        for d in shown[:MAX_LISTED]:
            click.echo(d.format(), err=bool(errors))
        if len(shown) > MAX_LISTED:
            click.echo(f"{path}: ... and {len(shown) - MAX_LISTED} more (--json lists them all)", err=bool(errors))
        if not errors and not quiet:
            warn = sum(1 for d in diags if d.severity == "warning")
            click.echo(f"{path}: OK" + (f" ({warn} warning{'s' if warn != 1 else ''})" if warn else ""))
    if as_json:
        from .workbench.jsonout import dumps

        click.echo(dumps(report))
    if failed:
        sys.exit(EXIT_FAIL)


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (default: MODEL with .bin).")
@click.option("--layers", "list_layers", is_flag=True,
              help="List every layer: id, name, type-version, attributes, input and output shapes and dtypes.")
@click.option("--json", "as_json", is_flag=True, help="Emit the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; the exit code says whether MODEL is valid.")
def info(model: str, weights: str | None, list_layers: bool, as_json: bool, quiet: bool) -> None:
    """Summarize MODEL: inputs, outputs, layers by type and version, opsets, weights, notes.

    Works on a broken model too: the layers irnorm cannot run are marked, and the exit code is 1
    when the model has any error (irnorm validate lists them).

    \b
    Example:  irnorm info model.xml --layers"""
    from .api import read_graph
    from .ir.tensor import fmt_shape
    from .workbench.inspect import describe

    graph = read_graph(model, weights)
    summary = describe(graph, layers=list_layers)
    if quiet:
        pass
    elif as_json:
        from .workbench.jsonout import dumps

        click.echo(dumps(summary))
    else:
        bad = {f"{u['type']}-{u['version']}": u for u in summary["unsupported"]}
        click.echo(f"model   {model}  (name '{summary['name']}', IR v{summary['ir_version']}, "
                   f"{sum(summary['layers'].values())} layers)")
        for title, specs in (("inputs", summary["inputs"]), ("outputs", summary["outputs"])):
            click.echo(title)
            for s in specs:
                alias = [n for n in s["names"] if n != s["name"]]
                extra = f"  (also: {', '.join(alias)})" if alias and title == "inputs" else ""
                click.echo(f"  {s['name']:<24} {s['dims']:<20} {s['dtype']}{extra}")
        if summary["variables"]:  # a stateful model: kept between runs (Model.state / reset_state())
            click.echo("variables")
            for v in summary["variables"]:
                click.echo(f"  {v['id']:<24} {v['dims']:<20} {v['dtype']}")
        click.echo("layers")
        for k, v in summary["layers"].items():
            mark = "  UNSUPPORTED" if k in bad else ""
            click.echo(f"  {k:<32} {v}{mark}")
        click.echo(f"opsets  {', '.join(summary['opsets'])}")
        click.echo(f"weights {summary['weights_bytes']} bytes read")
        for n in summary["notes"]:
            click.echo(f"note    {n}")
        for lay in summary.get("layer_list", []):
            io = " -> ".join(", ".join(f"{fmt_shape(t['shape'])} {t['dtype']}" for t in side) or "-"
                             for side in (lay["inputs"], lay["outputs"]))
            attrs = " ".join(f"{k}={_attr_text(v)}" for k, v in lay["attributes"].items())
            mark = "" if lay["supported"] else "  UNSUPPORTED"
            click.echo(f"  {lay['id']:>4} {lay['name']}  {lay['type']}-{lay['version']}{mark}  {attrs}  [{io}]")
        if bad:
            known = "; ".join(f"{k} (irnorm knows {', '.join(u['irnorm_knows'])})" if u["irnorm_knows"] else k
                              for k, u in bad.items())
            click.echo(f"irnorm cannot run {len(bad)} operation(s) in this file: {known}")
        if not summary["ok"]:
            errors = [d for d in graph.diagnostics if d.severity == "error"]
            for d in errors[:MAX_LISTED]:
                _err(d.format())
            more = f" ({len(errors) - MAX_LISTED} not shown; irnorm validate --json lists them all)" \
                if len(errors) > MAX_LISTED else ""
            _err(f"{model}: {len(errors)} error(s){more}")
    if not summary["ok"]:
        sys.exit(EXIT_FAIL)


def _attr_text(v: object) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v).lower() if isinstance(v, bool) else str(v)


for _command in COMMANDS:
    cli.add_command(_command, _command.name)


def _json_failure(argv: list[str], code: str, message: str, exit_code: int, diagnostics: list | None = None) -> None:
    """With --json, a failure is a JSON object on stdout too (workbench/jsonout.py)."""
    if "--json" in argv:
        from .workbench.jsonout import failure

        click.echo(failure(code, message, exit_code, [d.to_dict() for d in diagnostics or []]))


def main(argv: list[str] | None = None) -> None:
    """Entry point: no traceback ever reaches the user."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = cli.main(args=args, prog_name="irnorm", standalone_mode=False)
        sys.exit(rv if isinstance(rv, int) else 0)
    except click.exceptions.Abort:
        _err("irnorm: interrupted")
        sys.exit(EXIT_INTERRUPT)
    except click.ClickException as e:
        e.show()
        code = EXIT_USAGE if isinstance(e, click.UsageError) else e.exit_code
        _json_failure(args, "usage", e.format_message(), code)
        sys.exit(code)
    except IrnormError as e:
        for d in e.diagnostics[:MAX_LISTED]:
            _err(d.format())
        if len(e.diagnostics) > MAX_LISTED:
            _err(f"... and {len(e.diagnostics) - MAX_LISTED} more (irnorm validate --json lists them all)")
        first = e.errors[0] if e.errors else e.diagnostics[0]
        _json_failure(args, first.code, first.message, e.exit_code, e.diagnostics)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        _err("irnorm: interrupted")
        sys.exit(EXIT_INTERRUPT)
    except BrokenPipeError:
        sys.exit(EXIT_FAIL)
    except MemoryError:
        _err("irnorm: out of memory (try --max-memory to refuse such plans up front)")
        sys.exit(EXIT_FAIL)
    except SystemExit:
        raise
    except OSError as e:  # disk full, permissions, a path that vanished: not a bug in irnorm
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        _err(f"irnorm: {e.strerror or e}{where}")
        _json_failure(args, "os", f"{e.strerror or e}{where}", EXIT_FAIL)
        sys.exit(EXIT_FAIL)
    except Exception as e:  # a bug: say so plainly, without a traceback
        _err(f"irnorm: internal error: {type(e).__name__}: {e} (please report this with the model file)")
        if os.environ.get("IRNORM_DEBUG"):
            raise
        _json_failure(args, "internal", f"{type(e).__name__}: {e}", EXIT_INTERNAL)
        sys.exit(EXIT_INTERNAL)


def console_main() -> None:
    """The ``irnorm`` command: :func:`main`, then leave without the interpreter's teardown.

    Freeing Numba's type registries and LLVM state at exit takes ~0.2 s -- a quarter of a warm
    ``irnorm run``.  Nothing irnorm does relies on exit-time work (output files are written and
    renamed before the command returns), so after flushing stdout and stderr the process ends
    with ``os._exit``.  ``main`` itself still raises SystemExit (tests and embedders call it).
    Modules Numba imports for what a command rarely does are deferred first, and a collector paused for
    a run stays paused to the end (irnorm/startup.py)."""
    command_started()
    defer_imports()
    ending_after_command()
    try:
        main()
        code: object = 0
    except SystemExit as e:
        code = e.code
    if not isinstance(code, int):
        if code is not None:
            _err(str(code))
        code = 0 if code is None else EXIT_FAIL
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            code = code or EXIT_FAIL
    os._exit(code)


if __name__ == "__main__":
    console_main()
