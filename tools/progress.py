"""Progress reporting and cooperative cancellation for long-running tools.

A long tool takes an optional `progress: Progress | None = None` parameter. It calls
`progress.update(done, total, message)` between blocks of work; `update` raises `Cancelled` once the
caller has cancelled, so CPU-bound loops stop at the next block. The MCP layer supplies a `Progress`
bound to the request; direct Python callers may pass their own or none.

The MCP layer also makes the request's `Progress` the current one while the tool runs, so code deep
inside a tool that has no `progress` parameter can still stop at a cancel with `checkpoint()`.

Inside `collecting_outputs()`, every finished output file (`tools.atomic` calls `note_output` when it
puts one in place) is added to the collected list, so a caller learns which files a call wrote.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

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


_CURRENT: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("research_mcp_progress", default=None)


def current() -> Progress | None:
    """The `Progress` of the tool call running in this thread or task, if any."""
    return _CURRENT.get()


def checkpoint(progress: Progress | None = None) -> None:
    """Raise `Cancelled` if `progress` (or, when None, the current call's `Progress`) was cancelled."""
    p = progress if progress is not None else _CURRENT.get()
    if p is not None:
        p.check()


@contextlib.contextmanager
def running(progress: Progress) -> Iterator[Progress]:
    """Make `progress` the current one for the duration of the block."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


_OUTPUTS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("research_mcp_outputs", default=None)


@contextlib.contextmanager
def collecting_outputs() -> Iterator[list[str]]:
    """Collect, in the yielded list, the output files finished inside the block (worker threads it starts too)."""
    files: list[str] = []
    token = _OUTPUTS.set(files)
    try:
        yield files
    finally:
        _OUTPUTS.reset(token)


def note_output(path: str | Path) -> None:
    """Record that `path` was just put in place as a finished output (nothing happens outside a collection)."""
    files = _OUTPUTS.get()
    if files is not None:
        text = str(path)
        if text not in files:
            files.append(text)
