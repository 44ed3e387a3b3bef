"""Operations, one module per op family.  Importing a module registers its ops."""

from __future__ import annotations

import importlib

# Explicit list (not directory scanning): adding an op family is one line here.
OP_MODULES = (
    "io",
    "group_normalization",
    "normalize_l2",
    "mvn",
    "batch_norm",
    "lrn",
    "layer_norm",
    "trt_normalization",
    "scale",
    "elementwise",
    "reduce",
    "shape_ops",
    "matmul",
    "convolution",
    "activation",
    "logic",
    "pooling",
    "softmax",
    "attention",
    "movement",
    "range",
    "interpolate",
    "einsum",
    "recurrent",
    "selection",
    "rearrange",
    "roi",
    "detection",
    "quantize",
    "grid_sample",
    "deformable_conv",
    "indexing",
    "embedding",
    "col2im",
    "control",
    "loops",
    "state",
    "bucketing",
    "linalg",
    "fourier",
    "shuffle",
)


def load_all() -> None:
    for name in OP_MODULES:
        importlib.import_module(f"{__name__}.{name}")


def load_for(type_: str) -> bool:
    """Import the modules that register layer type `type_` (case-insensitive), as listed by the generated
    index; False, importing nothing, for a type the index does not name."""
    from .index import MODULES_BY_TYPE

    names = MODULES_BY_TYPE.get(type_.lower())
    if names is None:
        return False
    for name in names:
        importlib.import_module(f"{__name__}.{name}")
    return True


def registering_modules() -> dict[str, tuple[str, ...]]:
    """For each registered layer type (lowercase), the modules of OP_MODULES whose import registers it, in
    OP_MODULES order: each module imported in turn, what it adds recorded.  Only meaningful in a process
    that has imported no op module yet (tools/gen_docs.py runs it in a fresh one)."""
    from .base import _REGISTRY

    before = {t: len(cs) for t, cs in _REGISTRY.items()}
    found: dict[str, list[str]] = {}
    for name in OP_MODULES:
        importlib.import_module(f"{__name__}.{name}")
        for t, cs in _REGISTRY.items():
            if len(cs) > before.get(t, 0):
                found.setdefault(t, []).append(name)
                before[t] = len(cs)
    return {t: tuple(found[t]) for t in sorted(found)}
