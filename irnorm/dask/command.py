"""The zarr branch of ``irnorm run``: option checks and what is printed (the work is in zarr_io)."""

from __future__ import annotations

import json
import sys

import click

from .zarr_io import ZarrRun, is_zarr_path


def wants_zarr(inputs: str | None, output: str | None) -> bool:
    return is_zarr_path(inputs) or is_zarr_path(output)


def run_command(model: str, weights: str | None, inputs: str | None, output: str | None, *, workers: int | None,
                scheduler: str | None, chunk: int | None, max_memory: int | None, quiet: bool, as_json: bool,
                other_options: dict[str, bool]) -> None:
    """``irnorm run MODEL --inputs DATA.zarr -o OUT.zarr [--workers N | --scheduler ADDRESS] [--chunk ROWS]``."""
    if not (is_zarr_path(inputs) and output and is_zarr_path(output)):
        raise click.UsageError("a zarr run needs both --inputs DATA.zarr and -o OUT.zarr")
    used = [opt for opt, on in other_options.items() if on]
    if used:
        raise click.UsageError(f"{', '.join(used)} cannot be combined with a zarr run")
    if workers is not None and scheduler is not None:
        raise click.UsageError("--workers and --scheduler cannot be combined")
    from . import require, run_zarr

    try:
        require()
    except ImportError as e:
        raise click.ClickException(str(e)) from None
    progress = not quiet and not as_json and sys.stderr.isatty()

    def announce(r: ZarrRun) -> None:
        if quiet or as_json:
            return
        what = f"{r.rows} rows in {r.chunks} chunk{'s' if r.chunks != 1 else ''} of {r.chunk_rows}"
        if r.already_done:
            what += f"; {r.already_done} already written, {r.chunks - r.already_done} to compute"
        click.echo(f"{model}: {what}", err=True)

    r = run_zarr(model, inputs, output, weights=weights, chunk_rows=chunk, workers=workers, scheduler=scheduler,
                 max_memory=max_memory, progress=progress, on_plan=announce)
    if as_json:
        click.echo(json.dumps({"rows": r.rows, "chunk_rows": r.chunk_rows, "chunks": r.chunks,
                               "already_done": r.already_done, "computed": sorted(r.computed),
                               "outputs": [{"name": k, "shape": list(s), "dtype": d}
                                           for k, (s, d) in r.outputs.items()],
                               "saved": output, "seconds": round(r.seconds, 3)}, indent=2))
    elif not quiet:
        for k, (s, d) in r.outputs.items():
            click.echo(f"{k}: shape {list(s)} {d}")
        click.echo(f"computed {len(r.computed)} chunk(s), {r.already_done} already written; saved to {output} "
                   f"in {r.seconds:.1f} s")
