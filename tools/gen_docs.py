"""Regenerate the README's generated sections from the code, so they cannot drift:

- the operator reference (every registered (type, version), from each op's declaration);
- the diagnostic code table (from irnorm.errors.CODES).

    python tools/gen_docs.py          # rewrite README.md in place
    python tools/gen_docs.py --check  # exit 1 if README.md is out of date (used by the tests)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"

_TYPE_NAMES = {
    "parse_int": "int", "parse_float": "float", "parse_bool": "bool", "parse_int_list": "int list",
"parse_shape": "shape", "_element_type": "element type", "_const_element_type": "element type or storage type",
    "_nonneg_int": "int >= 0", "_variable_id": "non-empty string",
}


def _attr_type(parse) -> str:
    name = getattr(parse, "__name__", "value")
    return _TYPE_NAMES.get(name, name.replace("enum(", "one of (").replace("|", " \\| "))


def _opsets(cls) -> str:
    if isinstance(cls.opsets, str):
        return f"`{cls.opsets}`"
    lo, hi = cls.opsets
    return f"opset{lo}..opset{hi}" if hi else f"opset{lo}+"


def _arity(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


def op_reference() -> str:
    from irnorm.ops.base import all_ops

    rows = ["| type | op version | `version=` accepted | inputs | outputs | attributes (default) | semantics |",
            "|---|---|---|---|---|---|---|"]
    for cls in sorted(all_ops(), key=lambda c: (c.type.lower(), c.version)):
        attrs = []
        for a in cls.schema.attrs:
            t = _attr_type(a.parse)
            if a.check is not None and not getattr(a.check, "__name__", "").isidentifier():
                t += f", {a.check.__name__}"
            attrs.append(f"`{a.name}`: {t}" + ("" if a.required else f" (`{a.default}`)"))
        doc = " ".join(cls.doc.split()).replace("|", "\\|")
        rows.append(f"| {cls.type} | {cls.version} | {_opsets(cls)} | {_arity(*cls.inputs)} | "
                    f"{_arity(*cls.outputs)} | {'<br>'.join(attrs) or '-'} | {doc} |")
    return "\n".join(rows)


def code_table() -> str:
    from irnorm.errors import CODES

    rows = ["| code | severity | meaning |", "|---|---|---|"]
    for code, text in CODES.items():
        sev = "warning" if code >= "IRN090" else "error"
        rows.append(f"| {code} | {sev} | {text} |")
    return "\n".join(rows)


SECTIONS = {"ops": op_reference, "codes": code_table}


def render(text: str) -> str:
    for key, fn in SECTIONS.items():
        pat = re.compile(rf"(<!-- BEGIN GENERATED {key} -->\n).*?(<!-- END GENERATED {key} -->)", re.S)
        if not pat.search(text):
            raise SystemExit(f"README.md has no '<!-- BEGIN GENERATED {key} -->' section")
        text = pat.sub(lambda m, fn=fn: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if README.md is out of date")
    args = ap.parse_args()
    old = README.read_text()
    new = render(old)
    if args.check:
        if new != old:
            print("README.md is out of date: run python tools/gen_docs.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
