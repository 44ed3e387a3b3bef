"""Running a test's work in several threads at once."""

from __future__ import annotations

import threading
from collections.abc import Callable


def in_threads(work: Callable[[int], None], count: int, timeout: float = 120.0) -> list[str]:
    """Run work(0), ..., work(count - 1) in `count` threads started together; what they raised (an
    assert included), as 'thread i: Type: message' lines.  A thread still running after `timeout`
    seconds is reported as hung."""
    errors: list[str] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except Exception as e:  # noqa: BLE001 - reported to the test
            errors.append(f"thread {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    errors += [f"thread {i}: still running after {timeout} s" for i, t in enumerate(threads) if t.is_alive()]
    return errors
