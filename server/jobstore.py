"""The job store: one SQLite file in the output folder that every server process using that folder shares.

A tool call that outlives the inline budget becomes a job (see `server.jobs`); its row holds the tool, the
arguments, the state (`running`, then `done`, `failed`, `cancelled` or `interrupted`), the progress, the
result or error, the timings and the files it wrote. The process running a job owns its row: it writes the
progress, a heartbeat every few seconds and the outcome. Any process can read a row, and can ask for a cancel
by setting a flag its owner polls. A `running` row whose owner is gone (its process died, or, on another
machine, its heartbeat stopped) is reported `interrupted`, never left running. Finished rows are deleted
after the output folder's retention (`RESEARCH_MCP_OUTPUT_RETENTION_DAYS`; 0 keeps them).

The file is `<output folder>/.research-mcp-jobs.sqlite` (in WAL mode, so readers never wait for the
writer); the retention sweep of output files leaves it alone.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.paths import state_path
from tools.settings import get_settings
from tools.sqlfile import SQLiteFile

_RUNNING_CHECK: list[Callable[[str], bool]] = []


def set_running_check(check: Callable[[str], bool]) -> None:
    """How this process tells whether it is still running one of its own jobs (`server.jobs` sets it), so that a
    job of this process that nothing runs any more reads `interrupted`."""
    _RUNNING_CHECK[:] = [check]


STORE_NAME = "jobs.sqlite"
FORMAT = 1
RUNNING = "running"
TERMINAL = ("done", "failed", "cancelled", "interrupted")
STATES = (RUNNING, *TERMINAL)
HEARTBEAT_S = 5.0
STALE_S = 60.0  # a running job owned on another machine whose heartbeat is this old has lost its process
PRUNE_EVERY_S = 3600.0
RECONCILE_EVERY_S = 1.0  # a listing checks the owners of running jobs at most this often (a status, every time)
MAX_ARGUMENT_CHARS = 100_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    heartbeat REAL NOT NULL,
    finished REAL,
    progress TEXT,
    result TEXT,
    error TEXT,
    files TEXT NOT NULL DEFAULT '[]',
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_by_created ON jobs (created);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);
"""


# ---------------------------------------------------------------------------------------------- owners


def this_owner() -> str:
    """This process as a job owner: host, process id and the process's start time (so a reused pid differs)."""
    return _owner_of(os.getpid())


@functools.cache
def _owner_of(pid: int) -> str:
    import psutil

    return f"{socket.gethostname()}|{pid}|{psutil.Process(pid).create_time():.3f}"


def owner_alive(owner: str, heartbeat: float, now: float) -> bool:
    """Whether the process that owns a running job still exists (on another host: whether it beats)."""
    import psutil

    host, _, rest = owner.partition("|")
    pid_text, _, started = rest.partition("|")
    if host != socket.gethostname():
        return now - heartbeat < STALE_S
    try:
        return abs(psutil.Process(int(pid_text)).create_time() - float(started)) < 0.01
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


# ---------------------------------------------------------------------------------------------- rows


@dataclass
class JobRow:
    """One job as stored."""

    id: str
    tool: str
    arguments: dict[str, Any] | None
    state: str
    owner: str
    created: float
    updated: float
    heartbeat: float
    finished: float | None = None
    progress: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    files: list[str] = field(default_factory=list)
    cancel_requested: bool = False
    arguments_note: str | None = None

    @classmethod
    def from_sql(cls, row: sqlite3.Row) -> JobRow:
        args = json.loads(row["arguments"])
        note = None
        if isinstance(args, dict) and set(args) == {"__not_kept__"}:
            note, args = args["__not_kept__"], None
        return cls(id=row["id"], tool=row["tool"], arguments=args, state=row["state"], owner=row["owner"],
                   created=row["created"], updated=row["updated"], heartbeat=row["heartbeat"],
                   finished=row["finished"], progress=json.loads(row["progress"]) if row["progress"] else None,
                   result=json.loads(row["result"]) if row["result"] else None, error=row["error"],
                   files=json.loads(row["files"]), cancel_requested=bool(row["cancel_requested"]),
                   arguments_note=note)


def arguments_text(arguments: dict[str, Any]) -> str:
    """The arguments as stored: JSON, or a note of their size where they are too large to keep."""
    text = json.dumps(arguments, default=str)
    if len(text) > MAX_ARGUMENT_CHARS:
        return json.dumps({"__not_kept__": f"the arguments ({len(text):,} characters of JSON) were too large to keep"})
    return text


# ---------------------------------------------------------------------------------------------- the store


class JobStore:
    """The jobs of one output folder. Each thread uses its own connection; every method is one short transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SQLiteFile(path, wal=True)
        self._pruned = 0.0
        self._reconciled = 0.0
        with self._connect() as tx:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                tx.execute(statement)
            tx.execute(f"PRAGMA user_version={FORMAT}")
        self.prune()

    def _connect(self, write: bool = True) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._file.transaction(write)

    # -- written by the owner

    def insert(self, row: JobRow) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO jobs (id, tool, arguments, state, owner, created, updated, heartbeat, progress, files) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.id, row.tool, arguments_text(row.arguments or {}), row.state, row.owner, row.created,
                 row.updated, row.heartbeat, json.dumps(row.progress) if row.progress else None,
                 json.dumps(row.files)),
            )

    def save_progress(self, job_id: str, progress: dict[str, Any] | None, files: list[str]) -> None:
        now = time.time()
        with self._connect() as db:
            db.execute("UPDATE jobs SET progress = ?, files = ?, updated = ?, heartbeat = ? WHERE id = ?",
                       (json.dumps(progress) if progress else None, json.dumps(files), now, now, job_id))

    def beat(self, job_ids: list[str]) -> None:
        """The owner's heartbeat for its running jobs."""
        if not job_ids:
            return
        marks = ",".join("?" * len(job_ids))
        with self._connect() as db:
            db.execute(f"UPDATE jobs SET heartbeat = ? WHERE state = 'running' AND id IN ({marks})",
                       (time.time(), *job_ids))

    def finish(self, job_id: str, state: str, *, result: dict[str, Any] | None = None, error: str | None = None,
               progress: dict[str, Any] | None = None, files: list[str] | None = None) -> None:
        if state not in TERMINAL:
            raise ValueError(f"not a final state: {state}")
        now = time.time()
        with self._connect() as db:
            db.execute(
                "UPDATE jobs SET state = ?, result = ?, error = ?, finished = ?, updated = ?, "
                "progress = COALESCE(?, progress), files = COALESCE(?, files) WHERE id = ?",
                (state, json.dumps(result) if result is not None else None, error, now, now,
                 json.dumps(progress) if progress else None, json.dumps(files) if files is not None else None,
                 job_id),
            )

    def cancel_requests(self, job_ids: list[str]) -> list[str]:
        """Those of `job_ids` (running) whose cancel another process asked for."""
        if not job_ids:
            return []
        marks = ",".join("?" * len(job_ids))
        with self._connect(write=False) as db:
            rows = db.execute(f"SELECT id FROM jobs WHERE cancel_requested = 1 AND state = 'running' "
                              f"AND id IN ({marks})", job_ids).fetchall()
        return [r["id"] for r in rows]

    # -- anyone

    def request_cancel(self, job_id: str) -> bool:
        """Ask the owner to stop a running job; False when it is not running."""
        with self._connect() as db:
            n = db.execute("UPDATE jobs SET cancel_requested = 1, updated = ? WHERE id = ? AND state = 'running'",
                           (time.time(), job_id)).rowcount
        return n > 0

    def get(self, job_id: str) -> JobRow | None:
        with self._connect(write=False) as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            return None
        job = JobRow.from_sql(row)
        if job.state == RUNNING and self._lost(job):
            self.reconcile()
            with self._connect(write=False) as db:
                job = JobRow.from_sql(db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone())
        return job

    def recent(self, limit: int, state: str | None = None, tool: str | None = None) -> tuple[list[JobRow], int]:
        """The newest `limit` jobs (optionally of one state or tool), newest first, and how many match in all."""
        self.reconcile(every_s=RECONCILE_EVERY_S)
        self.prune()
        where, params = [], []
        if state:
            where.append("state = ?")
            params.append(state)
        if tool:
            where.append("tool = ?")
            params.append(tool)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        with self._connect(write=False) as db:
            total = db.execute(f"SELECT COUNT(*) FROM jobs{clause}", params).fetchone()[0]
            rows = db.execute(f"SELECT id, tool, '{{}}' AS arguments, state, owner, created, updated, heartbeat, "
                              f"finished, progress, NULL AS result, error, files, cancel_requested FROM jobs{clause} "
                              "ORDER BY created DESC, id LIMIT ?", [*params, limit]).fetchall()
        return [JobRow.from_sql(r) for r in rows], total

    def _lost(self, job: JobRow, now: float | None = None) -> bool:
        if job.owner == this_owner():
            return not any(check(job.id) for check in _RUNNING_CHECK)
        return not owner_alive(job.owner, job.heartbeat, time.time() if now is None else now)

    def reconcile(self, every_s: float = 0.0) -> int:
        """Mark `interrupted` every running job whose owning process is gone (unless a check ran in the last
        `every_s` seconds); how many were."""
        now = time.time()
        if now - self._reconciled < every_s:
            return 0
        self._reconciled = now
        with self._connect(write=False) as db:
            rows = db.execute("SELECT * FROM jobs WHERE state = 'running'").fetchall()
        lost = [JobRow.from_sql(r) for r in rows]
        lost = [j for j in lost if self._lost(j, now)]
        for job in lost:
            with self._connect() as db:
                db.execute(
                    "UPDATE jobs SET state = 'interrupted', finished = ?, updated = ?, error = ? "
                    "WHERE id = ? AND state = 'running' AND owner = ?",
                    (now, now, "The server process running this job stopped (it was killed, restarted or shut "
                     "down) before the job finished.", job.id, job.owner),
                )
        return len(lost)

    def prune(self, now: float | None = None) -> int:
        """Delete finished jobs older than the output retention (at most once an hour); how many were."""
        now = time.time() if now is None else now
        days = get_settings().output_retention_days
        if days <= 0 or now - self._pruned < PRUNE_EVERY_S:
            return 0
        self._pruned = now
        with self._connect() as db:
            return db.execute("DELETE FROM jobs WHERE state != 'running' AND COALESCE(finished, updated) < ?",
                              (now - days * 86400.0,)).rowcount


_stores: dict[tuple[Path, int], JobStore] = {}
_stores_lock = threading.Lock()


def job_store() -> JobStore:
    """The store of the current output folder (opened once per process and folder; a forked child opens its own)."""
    key = (state_path(STORE_NAME), os.getpid())
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = JobStore(key[0])
    return store
