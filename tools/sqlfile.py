"""A SQLite file that threads and processes share: one connection a thread, each use one short transaction."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path


class SQLiteFile:
    """`transaction()` yields this thread's connection inside BEGIN ... COMMIT (ROLLBACK on an exception)."""

    def __init__(self, path: Path, *, wal: bool = False) -> None:
        self.path = path
        self._local = threading.local()
        if wal:  # readers never wait for the writer (not inside a transaction: SQLite refuses the switch there)
            self.connection().execute("PRAGMA journal_mode=WAL")

    def connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A writing transaction takes the write lock at once (so it never has to upgrade and fail); a reading one
        sees one snapshot."""
        db = self.connection()
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
