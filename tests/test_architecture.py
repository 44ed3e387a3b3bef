"""The floor plan holds: imports point down only (the import-linter contract in pyproject.toml,
also run by .ci/run), and no import cycle runs among irnorm's modules (a package importing its own
children is fine: that is how the op registry loads its modules)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

grimp = pytest.importorskip("grimp")


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module, ignoring parent -> child edges."""
    modules = sorted(m for m in graph.modules if m == "irnorm" or m.startswith("irnorm."))
    edges = {m: sorted(d for d in graph.find_modules_directly_imported_by(m)
                       if d.startswith("irnorm") and not d.startswith(m + ".")) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(modules) + 100))
    for m in modules:
        if m not in index:
            visit(m)
    return out


def test_no_import_cycles():
    graph = grimp.build_graph("irnorm", cache_dir=None)
    assert _cycles(graph) == []


def test_the_layers_contract_is_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("lint-imports (import-linter, a test dependency) is not installed in this environment")
    r = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
