"""The agents wait for jobs: a tool call that answers with a job handle is followed to its result.

The server answers a call that outlives its inline budget with `{"job": {"id": ...}}` and goes on with the
work (see `server.jobs`). Each LangChain tool of a session is wrapped so that it then calls `jobs_wait` until
the job ends and hands the graph the tool's own result (or error), as if the call had simply taken longer.

Inside a run (a LangGraph thread), the job of a call is also written down in a small book,
`<output>/agent-runs/tool-jobs.sqlite`, keyed by the thread, the tool and its arguments, until its result
is delivered. A run killed while it waited, resumed with the same thread id, reaches the same call again
(the step was not checkpointed) and finds the job there: it collects that job's result instead of starting
the work again. A job that can give no result (cancelled, interrupted, or unknown to the server) is
forgotten and the call runs afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from tools.sqlfile import SQLiteFile

BOOK_NAME = "tool-jobs.sqlite"
FOLLOW_STATES = ("running", "done", "failed")


class JobBook:
    """Which job each call of a run is waiting for, until its result is delivered."""

    def __init__(self, path: Path) -> None:
        self._file = SQLiteFile(path)
        with self._tx() as db:
            db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, job_id TEXT NOT NULL, "
                       "tool TEXT NOT NULL, created REAL NOT NULL)")

    def _tx(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._file.transaction()

    def pending(self, key: str) -> str | None:
        with self._tx() as db:
            row = db.execute("SELECT job_id FROM calls WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def remember(self, key: str, job_id: str, tool: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO calls (key, job_id, tool, created) VALUES (?, ?, ?, ?)",
                       (key, job_id, tool, time.time()))

    def forget(self, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM calls WHERE key = ?", (key,))


def call_key(tool: str, arguments: dict[str, Any]) -> str | None:
    """The thread, tool and arguments of a call made inside a LangGraph run; None outside one."""
    try:
        from langgraph.config import get_config

        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        return None
    if not thread:
        return None
    args = json.dumps(arguments, sort_keys=True, default=str)
    return f"{thread}:{tool}:{hashlib.sha256(args.encode()).hexdigest()[:32]}"


def handle_id(artifact: Any) -> str | None:
    """The job id when a tool's artifact holds a job handle."""
    structured = artifact.get("structured_content") if isinstance(artifact, dict) else None
    if isinstance(structured, dict) and set(structured) == {"job"} and isinstance(structured["job"], dict):
        job_id = structured["job"].get("id")
        return job_id if isinstance(job_id, str) else None
    return None


def follow_jobs(tools: dict[str, Any], book: JobBook | None = None) -> dict[str, Any]:
    """The tools, each waiting for the job its call may become; unchanged where the server has no job tools."""
    waiter, status = tools.get("jobs_wait"), tools.get("jobs_status")
    if waiter is None or status is None:
        return tools
    return {name: tool if name.startswith("jobs_") else _following(tool, waiter, status, book)
            for name, tool in tools.items()}


def _following(tool: Any, waiter: Any, status: Any, book: JobBook | None) -> Any:
    from langchain_core.tools import StructuredTool, ToolException

    inner, wait, look = tool.coroutine, waiter.coroutine, status.coroutine

    async def state_of(job_id: str) -> str | None:
        try:
            _, artifact = await look(job_id=job_id)
        except ToolException:  # unknown to the server (another folder, past retention)
            return None
        structured = (artifact or {}).get("structured_content") or {}
        return structured.get("state")

    async def call(**arguments: Any) -> tuple[Any, Any]:
        key = call_key(tool.name, arguments) if book is not None else None
        job_id = book.pending(key) if key else None
        if job_id is not None and await state_of(job_id) not in FOLLOW_STATES:
            book.forget(key)  # type: ignore[union-attr, arg-type]
            job_id = None
        if job_id is None:
            content, artifact = await inner(**arguments)
            job_id = handle_id(artifact)
            if job_id is None:
                return content, artifact
            if key:
                book.remember(key, job_id, tool.name)  # type: ignore[union-attr]
        try:
            while True:
                content, artifact = await wait(job_id=job_id)
                if handle_id(artifact) is None:
                    break
        except ToolException:
            if key:
                book.forget(key)  # type: ignore[union-attr]  # the job's error is its result, delivered now
            raise
        if key:
            book.forget(key)  # type: ignore[union-attr]
        return content, artifact

    return StructuredTool(name=tool.name, description=tool.description, args_schema=tool.args_schema,
                          coroutine=call, response_format="content_and_artifact", metadata=tool.metadata,
                          handle_tool_error=tool.handle_tool_error)
