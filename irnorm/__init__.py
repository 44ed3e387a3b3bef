"""irnorm: a lightweight interpreter for OpenVINO-style IR models, with Numba kernels
for the normalization family.

    >>> import irnorm
    >>> m = irnorm.load("model.xml")
    >>> m.inputs, m.outputs
    >>> outputs = m.run({"x": array})
"""

from __future__ import annotations

from .startup import pause_if_command, resume_collector

# In the irnorm command's own process the collector is paused from here (startup.pause_if_command).
_paused_for_import = pause_if_command()
try:
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
except BaseException:
    if _paused_for_import:
        resume_collector()
    raise

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


def _version() -> str:
    # one source for the version: the installed distribution's metadata (pyproject.toml)
    from importlib import metadata

    try:
        return metadata.version("irnorm")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str):
    """Looked up on first use, since neither is needed to load or run a model: irnorm.compare (the
    workbench) and irnorm.__version__ (importlib.metadata costs ~60 ms of start-up)."""
    if name == "compare":
        from .workbench.compare import compare

        return compare
    if name == "__version__":
        version = _version()
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module 'irnorm' has no attribute {name!r}")
