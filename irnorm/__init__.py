"""irnorm: a lightweight interpreter for OpenVINO-style IR models, with Numba kernels
for the normalization family.

    >>> import irnorm
    >>> m = irnorm.load("model.xml")
    >>> m.inputs, m.outputs
    >>> outputs = m.run({"x": array})
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .api import check, load, validate
from .errors import (
    CODES,
    ArgumentError,
    Diagnostic,
    InputError,
    IrnormError,
    ModelFileError,
    ResourceLimitError,
    ValidationError,
)
from .runtime.bind import TensorSpec
from .runtime.execute import LayerOutput, LayerTime, RunResult
from .runtime.model import Model

try:  # one source for the version: the installed distribution's metadata (pyproject.toml)
    __version__ = _metadata.version("irnorm")
except _metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "CODES",
    "ArgumentError",
    "Diagnostic",
    "LayerOutput",
    "LayerTime",
    "Model",
    "RunResult",
    "TensorSpec",
    "InputError",
    "IrnormError",
    "ModelFileError",
    "ResourceLimitError",
    "ValidationError",
    "__version__",
    "check",
    "compare",
    "load",
    "validate",
]


def __getattr__(name: str):
    """irnorm.compare is imported on first use: the workbench is not needed to load or run a model."""
    if name == "compare":
        from .workbench.compare import compare

        return compare
    raise AttributeError(f"module 'irnorm' has no attribute {name!r}")
