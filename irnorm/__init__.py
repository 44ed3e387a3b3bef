"""irnorm: a lightweight interpreter for OpenVINO-style IR models, with Numba kernels
for the normalization family.

    >>> import irnorm
    >>> m = irnorm.load("model.xml")
    >>> m.inputs, m.outputs
    >>> outputs = m.run({"x": array})
"""

from __future__ import annotations

from .api import check, load, validate
from .errors import (
    CODES,
    Diagnostic,
    InputError,
    IrnormError,
    ModelFileError,
    ResourceLimitError,
    ValidationError,
)
from .workbench.compare import compare

__version__ = "0.1.0"

__all__ = [
    "CODES",
    "Diagnostic",
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
