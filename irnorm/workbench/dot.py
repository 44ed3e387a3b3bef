"""Graph drawing: Graphviz DOT text for a model (always available), rendered to SVG/PNG by the
Graphviz `dot` program when it is on PATH, or wrapped in a self-contained HTML page.

Layers are labelled with type-opset, name and key attributes (small constants show their
values); edges with the tensor's shape and element type.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..fileio import atomic_write
from ..ir.tensor import fmt_shape
from .svg import to_svg

FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".html": "html", ".htm": "html"}
GRAPHVIZ_HINT = ("Graphviz's `dot` program is not on PATH; install Graphviz (Debian/Ubuntu: "
                 "`sudo apt-get install graphviz`, macOS: `brew install graphviz`, conda: "
                 "`conda install graphviz`) or write DOT text with `-o graph.dot`")

_FILL = {"Parameter": "#cfe8ff", "Result": "#e6e6e6", "Const": "#f4f4f4"}
_NORM = {"groupnormalization", "normalizel2", "mvn", "batchnorminference", "lrn", "layernormalization",
         "normalization", "scale"}


class GraphvizMissing(RuntimeError):
    """Rendering needs the Graphviz `dot` program."""


def _q(text: str) -> str:
    """A DOT double-quoted string body (escape backslash, quote; newlines as \\n)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _fmt_value(v: Any, limit: int = 40) -> str:
    if isinstance(v, (list, tuple)):
        s = "[" + ",".join(_fmt_value(x, limit) for x in v) + "]"
    elif isinstance(v, float):
        s = f"{v:.6g}"
    else:
        s = str(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _const_label(value: np.ndarray | None) -> str:
    if value is None:
        return ""
    if value.size <= 8:
        flat = value.reshape(-1)
        if flat.dtype.kind in "fV":
            return "[" + ",".join(f"{float(x):.4g}" for x in flat) + "]"
        return "[" + ",".join(str(x) for x in flat.tolist()) + "]"
    return ""


def _label(node: Any) -> str:
    lay = node.layer
    lines = [f"{lay.type}-{lay.version}", lay.name]
    t = lay.type
    if t == "Const":
        info = node.outputs[0] if node.outputs else None
        if info is not None:
            lines.append(f"{fmt_shape(info.shape)} {info.dtype}")
            small = _const_label(info.value)
            if small:
                lines.append(small)
    elif t == "Parameter":
        info = node.outputs[0] if node.outputs else None
        if info is not None:
            lines.append(f"{fmt_shape(info.shape)} {info.dtype}")
    else:
        for k, v in node.attrs.items():
            if k.startswith("__"):
                continue
            lines.append(f"{k}={_fmt_value(v)}")
    if node.outputs and node.op is not None and t not in ("Const", "Parameter") and all(
            o is not None and o.value is not None for o in node.outputs):
        lines.append("(folded at load time)")
    return "\n".join(_clip(x, 60) for x in lines)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _bad_layers(g: Any) -> dict[int, str]:
    """Node index -> the first error reported at that layer (layers are matched by id)."""
    by_id = {n.layer.id: n.index for n in g.nodes}
    out: dict[int, str] = {}
    for d in g.diagnostics:
        if d.severity == "error" and d.layer_id in by_id:
            out.setdefault(by_id[d.layer_id], f"{d.code} {d.message}")
    return out


@dataclass
class Styles:
    labels: dict[int, str]
    fills: dict[int, str]
    strokes: dict[int, str]  # only the marked layers
    tips: dict[int, str]


def styles(g: Any, marks: dict[int, str] | None = None) -> Styles:
    """How each layer is drawn.  Layers with an error (a broken model is drawn too) and the layers in
    `marks` (node index -> note, e.g. compare's divergences) are red, with the note."""
    bad = _bad_layers(g)
    bad.update(marks or {})
    st = Styles({}, {}, {}, {})
    for n in g.nodes:
        t = n.layer.type
        label, tip = _label(n), f"layer id {n.layer.id}, line {n.layer.line}"
        fill = _FILL.get(t, "#ffe3bf" if t.lower() in _NORM else "#ffffff")
        if n.index in bad:
            fill = "#ffd6d6"
            st.strokes[n.index] = "#c00000"
            label += "\n" + _clip(bad[n.index], 60)
            tip += ": " + bad[n.index]
        st.labels[n.index], st.fills[n.index], st.tips[n.index] = label, fill, tip
    return st


def to_dot(model: Any, name: str | None = None, marks: dict[int, str] | None = None) -> str:
    """DOT text for `model` (a Model or a Graph); `marks` (node index -> note) are drawn in red."""
    g = getattr(model, "graph", model)
    title = name or g.doc.name or os.path.basename(g.path)
    out = [f'digraph "{_q(title)}" {{',
           '  graph [rankdir=TB, fontname="Helvetica", labelloc=t, label="' + _q(title) + '"];',
           '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8, color="#555555"];']
    st = styles(g, marks)
    for n in g.nodes:
        t = n.layer.type
        shape = {"Parameter": "ellipse", "Result": "ellipse", "Const": "note"}.get(t, "box")
        extra = ", fontsize=8" if t == "Const" else ""
        if n.index in st.strokes:
            c = st.strokes[n.index]
            extra += f', color="{c}", penwidth=2, fontcolor="{c}"'
        out.append(f'  n{n.index} [label="{_q(st.labels[n.index])}", shape={shape}, '
                   f'fillcolor="{st.fills[n.index]}"{extra}, tooltip="{_q(st.tips[n.index])}"];')
    for n in g.nodes:
        for i, src in enumerate(n.sources):
            if src is None:
                continue
            prod = g.nodes[src[0]]
            info = prod.outputs[src[1]] if src[1] < len(prod.outputs) else None
            label = f"{fmt_shape(info.shape)} {info.dtype}" if info is not None else "?"
            if i:
                label = f"{label} (input {i})"
            out.append(f'  n{src[0]} -> n{n.index} [label="{_q(label)}"];')
    out.append("}")
    return "\n".join(out) + "\n"


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def render(dot_text: str, fmt: str, timeout: float = 120.0) -> bytes:
    """Run Graphviz `dot -T<fmt>` on the text; raises GraphvizMissing when it is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissing(GRAPHVIZ_HINT)
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"Graphviz `dot` took longer than {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"Graphviz `dot` failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def to_html(dot_text: str, svg: bytes | None, title: str) -> str:
    """A self-contained page: the SVG inline (Graphviz's, or irnorm's own layout when Graphviz is not
    installed) and the DOT text below it."""
    head = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:1em}svg{max-width:100%;height:auto}"
            "pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n")
    if svg is not None:
        text = svg.decode("utf-8")
        start = text.find("<svg")  # drop the XML declaration and DOCTYPE: the SVG is inline
        body = text[start:] if start >= 0 else text
    else:
        body = ""
    body += f"\n<details><summary>DOT text</summary><pre>{html.escape(dot_text)}</pre></details>"
    return head + body + "\n</body></html>\n"


def write_graph(model: Any, path: str, fmt: str | None = None, marks: dict[int, str] | None = None) -> str:
    """Write the picture of `model` to `path` (format from the extension unless `fmt`), atomically;
    `marks` (node index -> note) are drawn in red.  Returns the format written.  Raises
    GraphvizMissing for svg/png without Graphviz; .html always works (irnorm's own layout then)."""
    if fmt is None:
        ext = os.path.splitext(path)[1].lower()
        if ext not in FORMATS:
            raise ArgumentError(f"unknown picture format {ext or '(none)'!r}; use .dot, .svg, .png or .html")
        fmt = FORMATS[ext]
    g = getattr(model, "graph", model)
    text = to_dot(g, marks=marks)
    title = g.doc.name or os.path.basename(g.path)
    if fmt == "dot":
        data = text.encode()
    elif fmt in ("svg", "png"):
        data = render(text, fmt)
    elif fmt == "html":
        if graphviz_available():
            svg = render(text, "svg")
        else:
            st = styles(g, marks)
            svg = to_svg(g, st.labels, st.fills, st.strokes, st.tips).encode()
        data = to_html(text, svg, title).encode()
    else:
        raise ArgumentError(f"unknown picture format {fmt!r}")
    atomic_write(path, lambda f: f.write(data))
    return fmt
