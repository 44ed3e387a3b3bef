"""A model's variables between runs (ReadValue / Assign, ops/state.py): the Model's own store, as OpenVINO
keeps them per infer request.

A run reads the values committed by the runs before it; what its Assigns write is staged and committed
only when the run succeeds (a failed run leaves the state as it was).  The Model serializes the runs of a
model that has variables (one lock), so a run's reads and its commit are not interleaved with another's.
"""

from __future__ import annotations

import threading

import numpy as np


class VariableStore:
    def __init__(self) -> None:
        self.names: list[str] = []  # declared variable ids, in the order their ReadValues were built
        self._values: dict[str, np.ndarray] = {}
        self._staged: dict[str, np.ndarray] = {}
        self.lock = threading.RLock()  # Model.run holds it for a whole run, _execute and state again inside

    def declare(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def read(self, name: str) -> np.ndarray | None:
        """The committed value, or None before any run assigned it (and after reset)."""
        return self._values.get(name)

    def stage(self, name: str, value: np.ndarray) -> None:
        self._staged[name] = value

    def commit(self) -> None:
        self._values.update(self._staged)
        self._staged.clear()

    def discard(self) -> None:
        self._staged.clear()

    def reset(self) -> None:
        self._values.clear()
        self._staged.clear()

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """{variable id: shape} of the committed values."""
        return {k: v.shape for k, v in self._values.items()}

    def snapshot(self) -> dict[str, np.ndarray]:
        """{variable id: a copy of its committed value} for the variables assigned so far."""
        return {k: v.copy() for k, v in self._values.items()}
