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
