"""Progress reporting and cooperative cancellation for long-running tools.

A long tool takes an optional `progress: Progress | None = None` parameter. It calls
`progress.update(done, total, message)` between blocks of work; `update` raises `Cancelled` once the
caller has cancelled, so CPU-bound loops stop at the next block. The MCP layer supplies a `Progress`
bound to the request; direct Python callers may pass their own or none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tools.errors import Cancelled

ProgressCallback = Callable[[float, float | None, str | None], None]


class Progress:
    """Reports `(done, total, message)` to a callback and raises `Cancelled` once cancelled."""

    def __init__(self, callback: ProgressCallback | None = None) -> None:
        self._callback = callback
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Ask the running work to stop at its next `update` or `check`."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        """Raise `Cancelled` if the caller has cancelled."""
        if self._cancelled.is_set():
            raise Cancelled("The operation was cancelled by the caller.")

    def update(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress, then raise `Cancelled` if the caller has cancelled."""
        self.check()
        if self._callback is not None:
            self._callback(done, total, message)


def report(progress: Progress | None, done: float, total: float | None = None, message: str | None = None) -> None:
    """`progress.update(...)` when a `Progress` was given; nothing otherwise."""
    if progress is not None:
        progress.update(done, total, message)
