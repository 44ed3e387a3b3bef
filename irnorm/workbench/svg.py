"""A picture of a graph without Graphviz: a layered layout computed here and written as inline SVG,
so `irnorm graph -o g.html` always shows the graph (no network, no JavaScript, no external program).

Layout: each layer's rank is one more than its deepest producer's (execution order guarantees the
producers come first); within a rank, layers are ordered by the mean position of their producers
(one barycenter sweep), then placed left to right.  Edges run from the bottom of the producer to the
top of the consumer as cubic curves, labelled with the tensor's shape and type."""

from __future__ import annotations

import html
from typing import Any

from ..ir.tensor import fmt_shape

CHAR_W, LINE_H, PAD, GAP_X, GAP_Y = 6.6, 13.0, 6.0, 24.0, 46.0


def _box(lines: list[str]) -> tuple[float, float]:
    return max(len(t) for t in lines) * CHAR_W + 2 * PAD, len(lines) * LINE_H + 2 * PAD


def to_svg(g: Any, labels: dict[int, str], fills: dict[int, str], strokes: dict[int, str],
           tips: dict[int, str]) -> str:
    """SVG text for graph `g`: `labels` per node index (lines separated by \\n), fill and stroke
    colours, and a tooltip per node."""
    nodes = g.nodes
    rank: dict[int, int] = {}
    for n in nodes:  # execution order: producers first (layers on a cycle: rank 0)
        rank[n.index] = 1 + max((rank.get(s[0], -1) for s in n.sources if s is not None), default=-1)
    by_rank: dict[int, list[int]] = {}
    for n in nodes:
        by_rank.setdefault(rank[n.index], []).append(n.index)
    size = {i: _box(labels[i].split("\n")) for i in labels}
    x_center: dict[int, float] = {}
    y_top: dict[int, float] = {}
    y = 20.0
    width = 0.0
    for r in sorted(by_rank):
        row = by_rank[r]

        def bary(i: int) -> float:
            xs = [x_center[s[0]] for s in nodes[i].sources if s is not None and s[0] in x_center]
            return sum(xs) / len(xs) if xs else float(i)

        row.sort(key=bary)
        x = 20.0
        for i in row:
            w, _ = size[i]
            x_center[i] = x + w / 2
            y_top[i] = y
            x += w + GAP_X
        width = max(width, x)
        y += max(size[i][1] for i in row) + GAP_Y
    height = y
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for n in nodes:
        for k, src in enumerate(n.sources):
            if src is None or src[0] not in x_center:
                continue
            p = src[0]
            x1, y1 = x_center[p], y_top[p] + size[p][1]
            x2, y2 = x_center[n.index], y_top[n.index]
            mid = (y1 + y2) / 2
            prod = nodes[p]
            info = prod.outputs[src[1]] if src[1] < len(prod.outputs) else None
            text = (f"{fmt_shape(info.shape)} {info.dtype}" if info is not None else "?") + (f" (in {k})" if k else "")
            out.append(f'<path d="M {x1:.1f} {y1:.1f} C {x1:.1f} {mid:.1f}, {x2:.1f} {mid:.1f}, {x2:.1f} {y2:.1f}" '
                       'fill="none" stroke="#555" marker-end="url(#arrow)"/>')
            out.append(f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{mid:.1f}" fill="#555" font-size="9">'
                       f"{html.escape(text)}</text>")
    for n in nodes:
        i = n.index
        w, h = size[i]
        x0 = x_center[i] - w / 2
        stroke = strokes.get(i, "#333")
        out.append(f'<g><title>{html.escape(tips.get(i, ""))}</title>'
                   f'<rect x="{x0:.1f}" y="{y_top[i]:.1f}" width="{w:.1f}" height="{h:.1f}" rx="5" '
                   f'fill="{fills.get(i, "#fff")}" stroke="{stroke}" stroke-width="{2 if i in strokes else 1}"/>')
        for k, line in enumerate(labels[i].split("\n")):
            weight = ' font-weight="bold"' if k == 0 else ""
            out.append(f'<text x="{x_center[i]:.1f}" y="{y_top[i] + PAD + (k + 0.8) * LINE_H:.1f}" '
                       f'text-anchor="middle" fill="{strokes.get(i, "#000")}"{weight}>{html.escape(line)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)
