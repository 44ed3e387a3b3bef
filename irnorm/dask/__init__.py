"""irnorm on Dask: run a model over arrays chunked along the batch axis (``pip install irnorm[dask]``).

    >>> import dask.array as da, irnorm.dask
    >>> x = da.from_zarr("embeddings.zarr", component="x")       # [N, 384] f32, chunked by rows
    >>> y = irnorm.dask.run("l2norm.xml", {"x": x})["y"]         # lazy, same row chunks
    >>> y.to_zarr("normalized.zarr", component="y")

* :func:`run` -- lazy Dask arrays, one per model output (:mod:`irnorm.dask.array`);
* :func:`analyze` -- the plan-time proof that a model never mixes rows, or IRN070 naming the layer
  that does (:mod:`irnorm.dask.batch`; needs no Dask);
* :func:`run_zarr` -- a zarr group of inputs to a zarr group of outputs, resumable, as
  ``irnorm run model.xml --inputs in.zarr -o out.zarr`` does (:mod:`irnorm.dask.zarr_io`, which
  imports Dask and zarr).

Importing this package does not import Dask; the functions do, and say how to install it.
"""

from __future__ import annotations

from typing import Any

from . import array as _array
from .batch import analyze

__all__ = ["analyze", "require", "run", "run_zarr"]

EXTRA_HINT = "irnorm.dask needs dask[array], distributed and zarr: pip install 'irnorm[dask]'"


def require() -> None:
    """ImportError with the install hint when Dask or zarr is missing."""
    try:
        import dask.array  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as e:
        raise ImportError(f"{EXTRA_HINT} ({e})") from None


def run(model: Any, inputs: Any, **kwargs: Any) -> Any:
    require()
    from .array import run as _run

    return _run(model, inputs, **kwargs)


def run_zarr(*args: Any, **kwargs: Any) -> Any:
    require()
    from .zarr_io import run_zarr as _run_zarr

    return _run_zarr(*args, **kwargs)


run.__doc__ = _array.run.__doc__
