"""The command line's shared options, declared once: click parameter types that parse each value
(so every error names its option) and the option groups the commands share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


class ShapeItem(click.ParamType):
    """NAME=D0,D1,... -> (NAME, [D0, D1, ...])."""

    name = "NAME=D0,D1,.."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, list[int]]:
        if isinstance(value, tuple):
            return value
        name, sep, dims = str(value).partition("=")
        try:
            shape = [int(d) for d in dims.split(",") if d.strip()] if sep else None
        except ValueError:
            shape = None
        if not name or shape is None or any(d < 0 for d in shape):
            self.fail(f"{value!r} is not NAME=D0,D1,... (non-negative integers)", param, ctx)
        return name, shape


class NamedFile(click.ParamType):
    """NAME=FILE.npy -> (NAME, FILE)."""

    name = "NAME=FILE.npy"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        name, sep, path = str(value).partition("=")
        if not sep or not name or not path:
            self.fail(f"{value!r} is not NAME=FILE.npy", param, ctx)
        return name, path


class ValueRange(click.ParamType):
    """NAME=LO,HI -> (NAME, (LO, HI))."""

    name = "NAME=LO,HI"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> tuple[str, tuple[float, float]]:
        if isinstance(value, tuple):
            return value
        from .inputs import parse_value_range  # numpy: not imported for --help

        try:
            return parse_value_range(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


class Size(click.ParamType):
    """512M, 4G, 1.5T, 1000000 -> bytes."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        t = str(value).strip().upper().removesuffix("B")
        mult = 1
        for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
            if t.endswith(suffix):
                t, mult = t[:-1], m
                break
        try:
            v = float(t)
        except ValueError:
            self.fail(f"{value!r} is not a size like 512M or 4G", param, ctx)
        if not v > 0 or v * mult > 1 << 62:
            self.fail(f"{value!r} must be a positive size", param, ctx)
        return int(v * mult)


def _apply(options: list[Callable[[Any], Any]], f: Any) -> Any:
    for opt in reversed(options):
        f = opt(f)
    return f


def input_options(f: Any) -> Any:
    """--weights, --inputs, -i, --seed, --shape, --value-range, --cast: how a command gets its inputs."""
    return _apply([
        click.option("--weights", type=click.Path(dir_okay=False), help="Weights file (default: MODEL with .bin)."),
        click.option("--inputs", "inputs_npz", type=click.Path(),
                     help="An .npz whose keys are input names (irnorm run: or a DATA.zarr group)."),
        click.option("-i", "--input", "items", multiple=True, type=NamedFile(), help="One input (repeatable)."),
        click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
                     help="Seed for random inputs (used when none are given)."),
        click.option("--shape", "shape_items", multiple=True, type=ShapeItem(),
                     help="Concrete shape for a random input with dynamic dims (repeatable)."),
        click.option("--value-range", "range_items", multiple=True, type=ValueRange(),
                     help="Draw random input NAME uniformly from [LO, HI] (integers: inclusive)."),
        click.option("--cast", is_flag=True, help="Convert inputs to the model's dtypes instead of refusing."),
        click.option("--save-inputs", type=click.Path(dir_okay=False), metavar="FILE.npz",
                     help="Save the inputs used (random ones included) to replay them with --inputs."),
    ], f)


def fuse_option(f: Any) -> Any:
    return click.option("--no-fuse", "no_fuse", is_flag=True,
                        help="Run every layer on its own (no planner fusions; for debugging).")(f)


def max_memory_option(f: Any) -> Any:
    return click.option("--max-memory", type=Size(), default=None,
                        help="Refuse plans needing more than this (e.g. 2G; default 3/4 of RAM).")(f)


def load_and_feed(model: str, weights: str | None, inputs_npz: str | None, items: tuple[tuple[str, str], ...],
                  seed: int, shape_items: tuple[tuple[str, list[int]], ...],
                  range_items: tuple[tuple[str, tuple[float, float]], ...], quiet: bool,
                  max_memory: int | None = None, fuse: bool = True, need_shapes: bool = False,
                  save_inputs: str | None = None) -> tuple[Any, dict[str, Any], str | None]:
    """Load MODEL and gather its inputs from the shared input options.  Returns (model, inputs, a note
    saying which random inputs were drawn, or None); the note is also printed on stderr unless
    `quiet`.  --shape and --value-range must name model inputs, and apply to random inputs only.
    `need_shapes`: random inputs for dynamic dims need --shape (benchmark_app's "Provide data shapes")."""
    from ..api import load
    from .inputs import gather_inputs

    if save_inputs:
        from .outputs import check_output_path

        check_output_path(save_inputs, "--save-inputs")
    if (shape_items or range_items) and (inputs_npz or items):
        which = "--shape" if shape_items else "--value-range"
        raise click.UsageError(f"{which} applies to random inputs only; it cannot be combined with --inputs/-i")
    m = load(model, weights, max_memory=max_memory, fuse=fuse)
    shapes, ranges = dict(shape_items), dict(range_items)
    known = {n for s in m.inputs for n in s.names}
    for opt, keyed in (("--shape", shapes), ("--value-range", ranges)):
        for k in keyed:
            if k not in known:
                raise click.BadParameter(f"no model input named {k!r}; the inputs are "
                                         f"{', '.join(repr(s.name) for s in m.inputs)}", param_hint=opt)
    if need_shapes and not (inputs_npz or items):
        missing = [f"{s.name}{s.dims}" for s in m.inputs if s.is_dynamic and not any(n in shapes for n in s.names)]
        if missing:
            raise click.UsageError(f"the model has dynamic dims ({', '.join(missing)}): give their sizes with "
                                   "--shape NAME=D0,D1,... (or real inputs with --inputs/-i)")
    feeds, note = gather_inputs(m, inputs_npz, items, shapes, seed, ranges)
    if note and not quiet:
        click.echo(f"irnorm: {note}", err=True)
    if save_inputs:
        from .outputs import save_npz

        save_npz(save_inputs, feeds)
    return m, feeds, note


def parse_tol(items: tuple[str, ...], what: str) -> tuple[float | None, dict[str, float]]:
    if not items:  # the usual run: workbench.trace not imported (~2 ms of start-up)
        return None, {}
    from .trace import parse_tolerances

    try:
        return parse_tolerances(items, what)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=what) from None
