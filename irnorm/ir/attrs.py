"""Typed `<data>` attribute codecs and the attribute schema an op declares.

Parsing is strict: a malformed bool, an integer with a fractional part, an empty
list field or an unknown enum value is an error (OpenVINO would silently keep a
default; see the notes, section 6).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_INT_RE = re.compile(r"^[+-]?[0-9]+$")  # ASCII only: str.isdigit and \\d accept '٨' or '²' too
_FLOAT_RE = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")


class AttrError(ValueError):
    """A value that does not parse; ``code`` says which rule (IRN021 malformed, IRN023 range)."""

    def __init__(self, message: str, code: str = "IRN021"):
        super().__init__(message)
        self.code = code


def parse_int(text: str) -> int:
    t = text.strip()
    if not _INT_RE.match(t):
        raise AttrError(f"'{text}' is not an integer")
    return int(t)


def parse_float(text: str) -> float:
    t = text.strip()
    if t.lower() in ("nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
        raise AttrError(f"'{text}' is not a finite number")
    if not _FLOAT_RE.match(t):
        raise AttrError(f"'{text}' is not a number")
    v = float(t)
    if not math.isfinite(v):
        raise AttrError(f"'{text}' is not a finite number")
    return v


def parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise AttrError(f"'{text}' is not a bool (true/false)")


def parse_int_list(text: str) -> list[int]:
    t = text.strip()
    if t == "":
        return []
    return [parse_int(p) for p in t.split(",")]


DYNAMIC = -1


def parse_shape(text: str) -> list[int] | None:
    """A Parameter/Const `shape`: '1,3,?,8', '1..10' (bounded -> dynamic), '' (scalar), '...' (dynamic rank -> None)."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1].strip()
    if t == "...":
        return None
    if t == "":
        return []
    dims: list[int] = []
    for part in t.split(","):
        p = part.strip()
        if p in ("?", "-1"):
            dims.append(DYNAMIC)
        elif ".." in p:
            lo, _, hi = p.partition("..")
            for b in (lo, hi):
                if b.strip() and not _INT_RE.match(b.strip()):
                    raise AttrError(f"cannot parse dimension '{p}'")
            dims.append(DYNAMIC)
        elif _INT_RE.match(p) and int(p) >= 0:
            dims.append(int(p))
        else:
            raise AttrError(f"cannot parse dimension '{p}' in shape '{text}'")
    return dims


def parse_dim_bounds(text: str) -> tuple[tuple[int, int | None], ...] | None:
    """Each dim's (lower, upper) bound from a Parameter `shape` ('1..4,16,?' -> (1, 4), (16, 16),
    (0, None)); None for a dynamic rank.  Malformed text raises AttrError as parse_shape does."""
    dims = parse_shape(text)
    if dims is None:
        return None
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1].strip()
    out: list[tuple[int, int | None]] = []
    for part, d in zip(t.split(",") if t else [], dims, strict=True):
        p = part.strip()
        if d != DYNAMIC:
            out.append((d, d))
        elif ".." in p:
            lo, _, hi = (b.strip() for b in p.partition(".."))
            out.append((max(int(lo), 0) if lo else 0, int(hi) if hi and int(hi) >= 0 else None))
        else:
            out.append((0, None))
    return tuple(out)


@dataclass(frozen=True)
class Attr:
    """One declared attribute: name, codec, default (None = required), optional check."""

    name: str
    parse: Callable[[str], Any]
    default: Any = None
    required: bool = True
    check: Callable[[Any], str | None] | None = None  # returns an error message or None
    doc: str = ""


def enum(*values: str, case_insensitive: bool = True) -> Callable[[str], str]:
    allowed = {v.lower() if case_insensitive else v: v for v in values}

    def parse(text: str) -> str:
        key = text.strip().lower() if case_insensitive else text.strip()
        if key not in allowed:
            raise AttrError(f"'{text}' is not one of {', '.join(values)}")
        return allowed[key]

    parse.__name__ = "enum(" + "|".join(values) + ")"
    return parse


def positive(v: float) -> str | None:
    return None if v > 0 else f"must be positive, got {v}"


positive.__name__ = "> 0"


def non_negative(v: float) -> str | None:
    return None if v >= 0 else f"must be non-negative, got {v}"


non_negative.__name__ = ">= 0"


def at_least(n: int) -> Callable[[int], str | None]:
    def check(v: int) -> str | None:
        return None if v >= n else f"must be at least {n}, got {v}"

    check.__name__ = f">= {n}"
    return check


@dataclass
class AttrSchema:
    attrs: list[Attr] = field(default_factory=list)
    # attributes the op tolerates without using (e.g. written by some OpenVINO versions)
    ignored: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return [a.name for a in self.attrs]


def optional(name: str, parse: Callable[[str], Any], default: Any, **kw: Any) -> Attr:
    return Attr(name, parse, default=default, required=False, **kw)
