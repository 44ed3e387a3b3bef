"""The `irnorm` command: click commands only; the work happens in the library.

Exit codes: 0 ok, 1 model / data / comparison failure, 2 usage error,
130 interrupted (Ctrl-C), 3 internal error (a bug in irnorm: please report it).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from typing import Any

import click

from . import __version__
from .errors import MAX_LISTED, Diagnostic, InputError, IrnormError, ResourceLimitError

EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPT = 1, 2, 3, 130


def _parse_size(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    mult = 1
    for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
        if t.endswith(suffix):
            t, mult = t[:-1], m
            break
    try:
        v = float(t)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a size like 512M or 4G") from None
    if v <= 0:
        raise click.BadParameter("must be positive")
    return int(v * mult)


def _err(msg: str) -> None:
    click.echo(msg, err=True)


# ---- input handling ---------------------------------------------------------------


def _load_array_file(path: str, limit: int | None = None) -> Any:
    """An .npy file as an array, or an .npz archive as {name: array}, read completely and
    closed.  Never unpickles; an archive member whose header claims more than `limit`
    bytes is refused before it is decompressed (a tiny .npz can inflate to gigabytes)."""
    import numpy as np

    try:
        with open(path, "rb") as f:
            data = np.load(f, allow_pickle=False)
            if isinstance(data, np.ndarray):
                return data
            with data:
                out = {}
                for k in data.files:
                    try:
                        if limit is not None:
                            _check_member_size(data.zip, k, limit, path)
                        out[k] = data[k]
                    except IrnormError:
                        raise
                    except Exception as e:  # truncated member, bad header, pickled object array ...
                        raise InputError(Diagnostic("IRN063", f"cannot read member {k!r}: {e}", file=path)) from None
                return out
    except FileNotFoundError:
        raise InputError(Diagnostic("IRN063", "no such file", file=path)) from None
    except IrnormError:
        raise
    except Exception as e:  # corrupt zip, bad header, pickled object arrays, a directory ...
        raise InputError(Diagnostic("IRN063", f"cannot read as .npy/.npz: {e}", file=path)) from None


def _check_member_size(zf: Any, key: str, limit: int, path: str) -> None:
    import numpy as np

    fmt = np.lib.format
    member = key if key in zf.namelist() else key + ".npy"
    with zf.open(member) as m:
        version = fmt.read_magic(m)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = read(m)
    need = dtype.itemsize
    for d in shape:
        need *= d
    if need > limit:
        raise ResourceLimitError(Diagnostic("IRN051", f"member {key!r} claims shape {list(shape)} of {dtype} "
                                                      f"({need} bytes), over the memory limit of {limit} bytes",
                                            file=path))


def _bf16_fix(arr: Any, element_type: str) -> Any:
    """np.savez writes ml_dtypes.bfloat16 arrays as raw 2-byte voids; view them back."""
    import numpy as np

    if element_type == "bf16" and isinstance(arr, np.ndarray) and arr.dtype.kind == "V" and arr.dtype.itemsize == 2:
        import ml_dtypes

        return arr.view(ml_dtypes.bfloat16)
    return arr


def _gather_inputs(model: Any, inputs_npz: str | None, items: tuple[str, ...], shapes: dict[str, list[int]],
                   seed: int, quiet: bool, value_ranges: dict[str, tuple[float, float]] | None = None
                   ) -> dict[str, Any]:
    import numpy as np

    given: dict[str, Any] = {}
    if inputs_npz:
        data = _load_array_file(inputs_npz, model.max_memory)
        if not isinstance(data, dict):
            raise InputError(Diagnostic("IRN063", "--inputs expects an .npz archive (use -i NAME=FILE.npy for "
                                                  ".npy files)", file=inputs_npz))
        given.update(data)
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{item!r} is not NAME=FILE.npy", param_hint="-i/--input")
        arr = _load_array_file(path, model.max_memory)
        if not isinstance(arr, np.ndarray):
            raise InputError(Diagnostic("IRN063", "expected a single array (.npy), got an archive", file=path))
        given[name] = arr
    by_name = {n: spec for spec in model.inputs for n in spec.names}
    for k in list(given):
        if k in by_name:
            given[k] = _bf16_fix(given[k], by_name[k].element_type)
    if not given and model.inputs:
        rng = np.random.default_rng(seed)
        notes = []
        for spec in model.inputs:
            shape = list(shapes.get(spec.name) or [d if d != -1 else 1 for d in spec.shape])
            vr = next((value_ranges[n] for n in spec.names if n in value_ranges), None) if value_ranges else None
            given[spec.name] = _random(rng, shape, spec.dtype, vr)
            notes.append(f"{spec.name}{shape}" + (f" in [{vr[0]:g}, {vr[1]:g}]" if vr else ""))
        if not quiet:
            _err(f"irnorm: no inputs given; using random inputs (seed {seed}): {', '.join(notes)}")
    return given


def _random(rng: Any, shape: list[int], dtype: Any, value_range: tuple[float, float] | None = None) -> Any:
    from .workbench.inputs import random_array

    return random_array(rng, shape, dtype, value_range)


def _parse_shapes(items: tuple[str, ...]) -> dict[str, list[int]]:
    out = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            out[name] = [int(d) for d in dims.split(",") if d.strip()] if sep else None
        except ValueError:
            out[name] = None
        if not sep or out[name] is None or any(d < 0 for d in out[name]):
            raise click.BadParameter(f"{item!r} is not NAME=D0,D1,...", param_hint="--shape")
    return out


def _stats(arr: Any) -> str:
    import numpy as np

    if arr.size == 0:
        return "empty"
    a = arr.astype(np.float64) if arr.dtype != np.bool_ else arr.astype(np.float64)
    finite = np.isfinite(a)
    parts = []
    if finite.any():
        f = a[finite]
        parts.append(f"min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}  std {f.std():.6g}")
    bad = a.size - int(finite.sum())
    if bad:
        parts.append(f"non-finite {bad}")
    return "  ".join(parts)


def _check_output_path(path: str) -> None:
    """Refuse an --output whose directory is missing or read-only before any work is done."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise click.BadParameter(f"directory {d} does not exist", param_hint="-o/--output")
    if not os.access(d, os.W_OK | os.X_OK):
        raise click.BadParameter(f"directory {d} is not writable", param_hint="-o/--output")


def _interruptible(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run `fn` in a worker thread so that Ctrl-C ends the process promptly even while a long
    kernel runs (the kernels release the GIL).  On Ctrl-C: wait for any dump being swapped into
    place, remove uncommitted temporary dump directories, exit 130.  Nothing half-written is left
    where a good file stood: outputs are written after the run, to a temporary name."""
    import shutil
    import threading

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # re-raised in the main thread
            box["error"] = e

    t = threading.Thread(target=work, name="irnorm-run", daemon=True)
    t.start()
    try:
        while t.is_alive():
            t.join(0.05)
    except KeyboardInterrupt:
        from .workbench import trace

        with trace.COMMIT_LOCK:
            for d in list(trace.LIVE_TEMP_DIRS):
                shutil.rmtree(d, ignore_errors=True)
            _err("irnorm: interrupted")
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPT)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _save_npz(path: str, arrays: dict[str, Any]) -> None:
    import numpy as np

    from .fileio import atomic_write

    atomic_write(path, lambda f: np.savez(f, **arrays), suffix=".npz.tmp")


# ---- commands ---------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="irnorm")
def cli() -> None:
    """irnorm: read, validate and run OpenVINO IR models (normalization family)."""


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (default: MODEL with .bin).")
@click.option("--inputs", "inputs_npz", type=click.Path(dir_okay=False), help="An .npz whose keys are input names.")
@click.option("-i", "--input", "items", multiple=True, metavar="NAME=FILE.npy", help="One input (repeatable).")
@click.option("--seed", default=0, show_default=True, help="Seed for random inputs (used when none are given).")
@click.option("--shape", "shape_items", multiple=True, metavar="NAME=D0,D1,..",
              help="Concrete shape for a random input with dynamic dims.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Save every output to this .npz.")
@click.option("--cast", is_flag=True, help="Convert inputs to the model's dtypes instead of refusing.")
@click.option("--max-memory", type=str, default=None, help="Refuse plans needing more (e.g. 2G).")
@click.option("--value-range", "range_items", multiple=True, metavar="NAME=LO,HI",
              help="Draw random input NAME uniformly from [LO, HI].")
@click.option("--compare", "compare_npz", type=click.Path(dir_okay=False), metavar="EXPECTED.npz",
              help="Check each output against this .npz (keyed by output name); exit 1 on a mismatch.")
@click.option("--rtol", "rtol_items", multiple=True, metavar="R|NAME=R", help="Relative tolerance for --compare.")
@click.option("--atol", "atol_items", multiple=True, metavar="A|NAME=A", help="Absolute tolerance for --compare.")
@click.option("--dump-dir", type=click.Path(file_okay=False),
              help="Write every layer's outputs here (.npy + index.json).")
@click.option("--dump", "dump_names", multiple=True, metavar="LAYER", help="Only dump this layer (name or id).")
@click.option("--profile", is_flag=True, help="Print per-layer wall time, slowest first.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def run(model: str, weights: str | None, inputs_npz: str | None, items: tuple[str, ...], seed: int,
        shape_items: tuple[str, ...], output: str | None, cast: bool, max_memory: str | None,
        range_items: tuple[str, ...], compare_npz: str | None, rtol_items: tuple[str, ...],
        atol_items: tuple[str, ...], dump_dir: str | None, dump_names: tuple[str, ...], profile: bool, as_json: bool,
        quiet: bool) -> None:
    """Run MODEL and print each output's name, shape, dtype and statistics."""
    import numpy as np

    from .api import load
    from .workbench import commands as wb

    limit = _parse_size(max_memory) if max_memory else None
    if output:
        _check_output_path(output)
    shapes = _parse_shapes(shape_items)
    m = load(model, weights, max_memory=limit)
    for d in m.diagnostics:
        if d.severity == "warning" and d.code != "IRN091" and not quiet and not as_json:
            _err(d.format())
    ranges = wb.parse_value_ranges(range_items)
    wb.check_input_keys(m, ranges)
    feeds = _gather_inputs(m, inputs_npz, items, shapes, seed, quiet or as_json, ranges)
    outs, extras = _interruptible(wb.run_extras, m, feeds, cast=cast, compare_npz=compare_npz,
                                  rtol_items=rtol_items, atol_items=atol_items, dump_dir=dump_dir,
                                  dump_names=dump_names, profile=profile)
    if output:
        saved = {}
        for k, v in outs.items():
            # np.savez cannot round-trip bfloat16: store it widened to float32 (exact).
            saved[k] = v.astype(np.float32) if v.dtype.name == "bfloat16" else v
        _save_npz(output, saved)
    if as_json:
        click.echo(json.dumps({"outputs": [
            {"name": k, "shape": list(v.shape), "dtype": v.dtype.name, "stats": _stats(v)} for k, v in outs.items()
        ], "saved": output, **wb.run_extras_json(extras)}, indent=2))
        if "compare" in extras and not all(c.passed for c in extras["compare"]["checks"]):
            sys.exit(EXIT_FAIL)
        return
    if not quiet:
        for k, v in outs.items():
            click.echo(f"{k}: shape {list(v.shape)} {v.dtype.name}  {_stats(v)}")
        if output:
            click.echo(f"saved {len(outs)} output(s) to {output}")
    if wb.print_run_extras(extras, quiet):
        sys.exit(EXIT_FAIL)


@cli.command()
@click.argument("models", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (only with a single MODEL).")
@click.option("--json", "as_json", is_flag=True, help="Emit diagnostics as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def validate(models: tuple[str, ...], weights: str | None, as_json: bool, quiet: bool) -> None:
    """Check MODELS without running them; one diagnostic per problem."""
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
        click.echo(json.dumps(report, indent=2))
    if failed:
        sys.exit(EXIT_FAIL)


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (default: MODEL with .bin).")
@click.option("--json", "as_json", is_flag=True, help="Emit the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; the exit code says whether MODEL loads.")
def info(model: str, weights: str | None, as_json: bool, quiet: bool) -> None:
    """Summarize MODEL: inputs, outputs, layers by type, opsets, weights, notes."""
    from .api import load
    from .ir.tensor import fmt_shape

    m = load(model, weights)
    g = m.graph
    counts = Counter(f"{n.layer.type}-{n.layer.version}" for n in g.nodes)
    wsize = g.weights.bytes_read if g.weights is not None else 0
    notes = sorted({d.message.split(":")[0] for d in m.diagnostics if d.severity == "warning"})
    dynamic = [f"{s.name}{fmt_shape(s.shape)}" for s in m.inputs if s.is_dynamic]
    if dynamic:
        notes.append(f"dynamic dims: {', '.join(dynamic)} (random inputs use 1 unless --shape NAME=... is given)")
    opsets = sorted({n.layer.version for n in g.nodes})
    if quiet:
        return
    if as_json:
        click.echo(json.dumps({
            "file": model, "name": g.doc.name, "ir_version": g.doc.ir_version,
            "inputs": [{"name": s.name, "names": list(s.names), "shape": list(s.shape), "dtype": s.element_type}
                       for s in m.inputs],
            "outputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.element_type} for s in m.outputs],
            "layers": dict(sorted(counts.items())), "opsets": opsets, "weights_bytes": wsize, "notes": notes,
        }, indent=2))
        return
    click.echo(f"model   {model}  (name '{g.doc.name}', IR v{g.doc.ir_version}, {len(g.nodes)} layers)")
    click.echo("inputs")
    for s in m.inputs:
        alias = [n for n in s.names if n != s.name]
        extra = f"  (also: {', '.join(alias)})" if alias else ""
        click.echo(f"  {s.name:<24} {fmt_shape(s.shape):<20} {s.element_type}{extra}")
    click.echo("outputs")
    for s in m.outputs:
        click.echo(f"  {s.name:<24} {fmt_shape(s.shape):<20} {s.element_type}")
    click.echo("layers")
    for k, v in sorted(counts.items()):
        click.echo(f"  {k:<32} {v}")
    click.echo(f"opsets  {', '.join(opsets)}")
    click.echo(f"weights {wsize} bytes read from {g.weights.path if g.weights else '-'}")
    for n in notes:
        click.echo(f"note    {n}")


def _add_workbench_commands() -> None:
    from .workbench.commands import COMMANDS

    for c in COMMANDS:
        cli.add_command(c, c.name)


_add_workbench_commands()


def main(argv: list[str] | None = None) -> None:
    """Entry point: no traceback ever reaches the user."""
    try:
        rv = cli.main(args=argv, prog_name="irnorm", standalone_mode=False)
        sys.exit(rv if isinstance(rv, int) else 0)
    except click.exceptions.Abort:
        _err("irnorm: interrupted")
        sys.exit(EXIT_INTERRUPT)
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USAGE if isinstance(e, click.UsageError) else e.exit_code)
    except IrnormError as e:
        for d in e.diagnostics[:MAX_LISTED]:
            _err(d.format())
        if len(e.diagnostics) > MAX_LISTED:
            _err(f"... and {len(e.diagnostics) - MAX_LISTED} more (irnorm validate --json lists them all)")
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
        sys.exit(EXIT_FAIL)
    except Exception as e:  # a bug: say so plainly, without a traceback
        _err(f"irnorm: internal error: {type(e).__name__}: {e} (please report this with the model file)")
        if os.environ.get("IRNORM_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)


def console_main() -> None:
    """The ``irnorm`` command: :func:`main`, then leave without the interpreter's teardown.

    Freeing Numba's type registries and LLVM state at exit takes ~0.2 s -- a quarter of a warm
    ``irnorm run``.  Nothing irnorm does relies on exit-time work (output files are written and
    renamed before the command returns), so after flushing stdout and stderr the process ends
    with ``os._exit``.  ``main`` itself still raises SystemExit (tests and embedders call it)."""
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
