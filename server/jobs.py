"""Long calls become jobs: a call still running after the inline budget answers with a handle and goes on.

MCP hosts give up on a tool call after a fixed time (Claude Desktop, VS Code and Cursor after about 60 s,
whatever progress they receive), and the protocol's own tasks are not in the SDKs. So every tool call runs
as a task of the server's event loop, and its request waits at most `RESEARCH_MCP_INLINE_BUDGET_S` (40 s by
default) for it. A call that ends in time answers as it always did. One that does not is recorded in the
job store (`server.jobstore`) and the request answers with a handle, `{"job": {"id", "tool", "state",
"progress", "elapsed_s", "poll_after_s", "message"}}`, while the work goes on; `jobs_wait` (see
`server.jobtools`) then returns the tool's own result, exactly as the call would have.

While a call is inline its progress goes to the request; once it is a job, to the store (at most once a
second) and to whoever waits on it with `jobs_wait`. A cancel of the request before the budget cancels the
call as before; `jobs_cancel` cancels a job the same way (its worker thread stops at its next block, Dask
futures are cancelled); one asked from another process is seen by the owner within `CANCEL_POLL_S`. A call
that lends the client's model in rounds of `InputRequiredResult` cannot outlive its request and is never
made a job.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.types import CallToolResult, TextContent

from server.jobstore import RUNNING, TERMINAL, JobRow, JobStore, job_store, set_running_check, this_owner
from tools.errors import Cancelled, InvalidInput, NotFound, ResearchError
from tools.progress import collecting_outputs
from tools.settings import get_settings

logger = logging.getLogger("research_mcp.jobs")

JOB_ID = re.compile(r"^job-([0-9a-f]{8})-([0-9a-f]{16})$")
PROGRESS_SAVE_S = 1.0
CANCEL_POLL_S = 0.2
WAIT_POLL_S = 0.25
HEARTBEAT_S = 5.0
CANCEL_WAIT_S = 3.0


class JobNotReady(ResearchError):
    """The job is still running, so it has no result yet."""

    kind = "not_ready"


class JobInterrupted(ResearchError):
    """The process that ran the job stopped before it finished."""

    kind = "interrupted"


# ---------------------------------------------------------------------------------------------- ids


def output_folder() -> Path:
    return get_settings().output_dir.expanduser().resolve()


def folder_tag(folder: Path | None = None) -> str:
    """Eight hex digits naming the output folder; every job id carries its folder's tag."""
    return hashlib.sha256(str(folder or output_folder()).encode()).hexdigest()[:8]


def new_job_id() -> str:
    return f"job-{folder_tag()}-{secrets.token_hex(8)}"


# ---------------------------------------------------------------------------------------------- live jobs


_CURRENT: contextvars.ContextVar[Job | None] = contextvars.ContextVar("research_mcp_job", default=None)
_LIVE: dict[str, Job] = {}  # the jobs this process runs, by id, until they end
_TASKS: set[asyncio.Task[Any]] = set()
_MONITORS: dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] = {}


def running_here(job_id: str) -> bool:
    """Whether this process is running the job `job_id`."""
    job = _LIVE.get(job_id)
    return job is not None and job.state == RUNNING


set_running_check(running_here)


def progress_target(ctx: Any) -> Any:
    """Where a tool call reports progress: its job (which passes it on) or, outside any job, `ctx`."""
    return _CURRENT.get() or ctx


def pin_current_call() -> None:
    """Keep the current call inline whatever its length (it needs its request, e.g. for sampling rounds)."""
    job = _CURRENT.get()
    if job is not None:
        job.pinned = True


def _error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class Job:
    """A tool call running as a task of this process's event loop; a job once it outlives the budget."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.id: str | None = None
        self.store: JobStore | None = None
        self.created = time.time()
        self.state = RUNNING
        self.progress: dict[str, Any] | None = None
        self.files: list[str] = []
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()
        self.loop = asyncio.get_running_loop()
        self.watchers: list[Any] = []
        self.pinned = False
        self.cancel_requested = False
        self.outcome: Any = None
        self.exception: Exception | None = None
        self._saved = 0.0

    async def report_progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Record the progress, pass it to whoever watches, and save it (at most once a second) once a job."""
        self.progress = {"done": done, "total": total, "message": message}
        for ctx in tuple(self.watchers):
            try:
                await ctx.report_progress(done, total, message)
            except Exception:  # a watcher that went away stops watching; the work goes on
                logger.debug("progress to a watcher of %s failed", self.tool, exc_info=True)
                if ctx in self.watchers:
                    self.watchers.remove(ctx)
        if self.store is not None and self.id is not None and time.monotonic() - self._saved >= PROGRESS_SAVE_S:
            self._saved = time.monotonic()
            self.store.save_progress(self.id, self.progress, self.files)

    def cancel(self) -> None:
        """Stop the call: its task is cancelled, so its worker thread stops at its next block."""
        self.cancel_requested = True
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.scope.cancel()
        else:
            self.loop.call_soon_threadsafe(self.scope.cancel)

    def row(self) -> JobRow:
        """The job as the store would hold it now (with the latest progress and files)."""
        now = time.time()
        return JobRow(id=self.id or "", tool=self.tool, arguments=self.arguments, state=self.state,
                      owner=this_owner(), created=self.created, updated=now, heartbeat=now,
                      progress=self.progress, files=list(self.files), cancel_requested=self.cancel_requested)

    def hand_over(self) -> None:
        """Make the call a job: give it an id, record it in the store, and watch the store for cancels."""
        self.store = job_store()
        self.id = new_job_id()
        self.store.insert(self.row())
        self._saved = time.monotonic()
        _LIVE[self.id] = self
        if self.loop not in _MONITORS:
            task = self.loop.create_task(_monitor(self.loop))
            _MONITORS[self.loop] = task
        logger.info("%s became job %s after %.1f s", self.tool, self.id, time.time() - self.created)

    def settle(self, state: str, error: str | None = None) -> None:
        """The call ended in `state`; a job's outcome goes to the store."""
        if self.store is not None and self.id is not None:
            result = None
            if state == "done" and not isinstance(self.outcome, CallToolResult):  # only a pinned call answers so
                state, error = "failed", f"[internal_error] {self.tool} answered with no tool result."
            elif state == "done":
                result = self.outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
            try:
                self.store.finish(self.id, state, result=result, error=error, progress=self.progress,
                                  files=list(self.files))
            except Exception:  # the waiters here still learn the outcome; the store reads it interrupted
                logger.exception("job %s (%s): its outcome could not be saved", self.id, self.tool)
            finally:
                _LIVE.pop(self.id, None)
            logger.info("job %s (%s) %s after %.1f s", self.id, self.tool, state, time.time() - self.created)
        self.state = state
        self.done.set()


_STOPPED = "The server stopped before the job finished."


async def _execute(job: Job, body: Callable[[], Awaitable[Any]]) -> None:
    """Run the call to its end and settle the job."""
    _CURRENT.set(job)  # this task's own context
    finished = False
    try:
        with collecting_outputs() as files:
            job.files = files
            with job.scope:
                job.outcome = await body()
                finished = True
    except Exception as exc:
        job.exception = exc
    except BaseException:  # the event loop is closing: the process is stopping
        job.settle("interrupted", _STOPPED)
        raise
    if job.cancel_requested:
        job.settle("cancelled", "The job was cancelled (jobs_cancel) before it finished; it returned no result "
                   "and its unfinished outputs were discarded.")
    elif job.exception is not None:
        job.settle("failed", _error_text(job.exception))
    elif not finished:
        job.settle("interrupted", _STOPPED)
    else:
        job.settle("done")


def _spawn(job: Job, body: Callable[[], Awaitable[Any]]) -> None:
    task = job.loop.create_task(_execute(job, body), name=f"research-mcp {job.tool}")
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def _monitor(loop: asyncio.AbstractEventLoop) -> None:
    """While this loop runs jobs: pass on the cancels other processes ask for, and beat for the jobs."""
    beat = 0.0
    try:
        while True:
            mine = [j for j in list(_LIVE.values()) if j.loop is loop and j.state == RUNNING and j.store]
            if not mine:
                return
            stores: dict[Path, tuple[JobStore, list[str]]] = {}
            for j in mine:
                stores.setdefault(j.store.path, (j.store, []))[1].append(j.id)  # type: ignore[union-attr]
            for store, ids in stores.values():
                try:
                    for job_id in store.cancel_requests(ids):
                        job = _LIVE.get(job_id)
                        if job is not None:
                            logger.info("job %s: cancel asked through the store", job_id)
                            job.cancel()
                    if time.monotonic() - beat >= HEARTBEAT_S:
                        store.beat(ids)
                except Exception:  # a locked or unreadable store: try again at the next round
                    logger.warning("the job store %s could not be read", store.path, exc_info=True)
            if time.monotonic() - beat >= HEARTBEAT_S:
                beat = time.monotonic()
            await anyio.sleep(CANCEL_POLL_S)
    finally:
        _MONITORS.pop(loop, None)


async def run_call(tool: str, arguments: dict[str, Any], context: Any,
                   body: Callable[[], Awaitable[Any]]) -> Any:
    """Run one tool call; answer with its result if it ends within the inline budget, else with a job handle.

    `body` runs the call and returns its `CallToolResult` (or raises as the SDK expects). A call made inside
    another call, and every call when the budget is 0, runs inline to its end.
    """
    budget = get_settings().inline_budget_s
    if budget <= 0 or _CURRENT.get() is not None:
        return await body()
    job = Job(tool, arguments)
    if context is not None and hasattr(context, "report_progress"):
        job.watchers.append(context)
    _spawn(job, body)
    try:
        with anyio.move_on_after(budget):
            await job.done.wait()
        if not job.done.is_set() and job.pinned:
            await job.done.wait()
    except BaseException:  # the request was cancelled (or the server is closing) while the call was inline
        if not job.done.is_set():
            job.cancel()
            with anyio.CancelScope(shield=True):
                await job.done.wait()
        raise
    finally:
        if context in job.watchers:
            job.watchers.remove(context)
    if job.done.is_set():
        if job.exception is not None:
            raise job.exception
        return job.outcome
    job.hand_over()
    return handle_result(job.row())


# ---------------------------------------------------------------------------------------------- what a client sees


def _progress_text(progress: dict[str, Any] | None) -> str:
    if not progress:
        return "no progress reported yet"
    done, total, message = progress.get("done"), progress.get("total"), progress.get("message")
    text = f"{done:g}/{total:g}" if isinstance(total, int | float) and total else f"{done:g} done"
    return f"{text}, {message}" if message else text


def poll_after_s(row: JobRow, now: float | None = None) -> float:
    """Seconds worth waiting before asking again: the time left at the pace so far, within [1, budget]."""
    budget = get_settings().inline_budget_s or 60.0
    now = time.time() if now is None else now
    p = row.progress or {}
    done, total = p.get("done"), p.get("total")
    if isinstance(done, int | float) and isinstance(total, int | float) and 0 < done < total:
        left = (now - row.created) * (total - done) / done
        return round(min(max(left, 1.0), budget), 1)
    return round(min(5.0, budget), 1)


def handle_payload(row: JobRow) -> dict[str, Any]:
    """The structured content of a job handle."""
    budget = get_settings().inline_budget_s
    elapsed = time.time() - row.created
    message = (f"{row.tool} is still running as job {row.id} after {elapsed:.0f} s ({_progress_text(row.progress)}) "
               f"and goes on in the background. Call jobs_wait with job_id=\"{row.id}\" to wait up to "
               f"{budget:g} s for its result; call it again while it answers 'running'. jobs_status shows the "
               "progress, jobs_cancel stops it.")
    return {"job": {"id": row.id, "tool": row.tool, "state": row.state, "elapsed_s": round(elapsed, 1),
                    "progress": row.progress, "poll_after_s": poll_after_s(row), "message": message}}


def _as_result(payload: dict[str, Any]) -> CallToolResult:
    import json

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, indent=2, default=str))],
                          structured_content=payload)


def handle_result(row: JobRow) -> CallToolResult:
    """A job handle as a tool result (what a call that outlived the budget answers)."""
    return _as_result(handle_payload(row))


HANDLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"job": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "tool": {"type": "string"}, "state": {"enum": [RUNNING]},
                       "elapsed_s": {"type": "number"}, "progress": {"type": ["object", "null"]},
                       "poll_after_s": {"type": "number"}, "message": {"type": "string"}},
        "required": ["id", "tool", "state", "message"],
    }},
    "required": ["job"],
}


def with_job_handle(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A tool's output schema with the job handle declared as its other answer (None stays None: nothing published).

    Every tool may answer with a handle, so a published output schema must go through here, or a client that
    checks results against it (the MCP SDKs, the Inspector) would refuse the handle.
    """
    if schema is None:
        return None
    return {"type": "object", "anyOf": [schema, HANDLE_SCHEMA]}


def is_handle(structured: Any) -> bool:
    """Whether a tool's structured result is a job handle."""
    return (isinstance(structured, dict) and set(structured) == {"job"} and isinstance(structured["job"], dict)
            and isinstance(structured["job"].get("id"), str))


def _stamp(t: float | None) -> str | None:
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + f".{int((t % 1) * 1000):03d}"


def rerun_text(row: JobRow) -> str:
    import json

    if row.arguments is None:
        return f"call {row.tool} again with the same arguments ({row.arguments_note})"
    return f"call {row.tool} with {json.dumps(row.arguments, default=str)[:2000]}"


def state_message(row: JobRow) -> str:
    """What to do next with a job in its state."""
    if row.state == RUNNING:
        extra = " A cancel was asked for; it stops within a second." if row.cancel_requested else ""
        return (f"Running ({_progress_text(row.progress)}). Call jobs_wait with job_id=\"{row.id}\" for its "
                f"result.{extra}")
    if row.state == "done":
        return f"Finished. jobs_result (or jobs_wait) with job_id=\"{row.id}\" returns its result."
    if row.state == "failed":
        return f"Failed: {row.error} Fix what the error names, then call {row.tool} again."
    if row.state == "cancelled":
        return f"Cancelled before it finished; it has no result. To run it again, {rerun_text(row)}."
    return f"Interrupted: {row.error} It has no result. To run it again, {rerun_text(row)}."


def status_payload(row: JobRow) -> dict[str, Any]:
    """The structured content of jobs_status and jobs_cancel."""
    end = row.finished if row.state in TERMINAL and row.finished else time.time()
    return {"id": row.id, "tool": row.tool, "state": row.state, "arguments": row.arguments,
            "progress": row.progress, "created": _stamp(row.created), "finished": _stamp(row.finished),
            "elapsed_s": round(end - row.created, 1), "error": row.error, "files": row.files,
            "cancel_requested": row.cancel_requested, "message": state_message(row)}


def summary_payload(row: JobRow) -> dict[str, Any]:
    end = row.finished if row.state in TERMINAL and row.finished else time.time()
    return {"id": row.id, "tool": row.tool, "state": row.state, "created": _stamp(row.created),
            "elapsed_s": round(end - row.created, 1), "progress": row.progress}


# ---------------------------------------------------------------------------------------------- the service


def find(job_id: str) -> JobRow:
    """The job `job_id` of this output folder, with its latest progress; a worded error when there is none."""
    text = job_id.strip() if isinstance(job_id, str) else ""
    m = JOB_ID.match(text)
    if not m:
        shown = text[:80] + ("..." if len(text) > 80 else "")
        raise InvalidInput(f"{shown!r} is not a job id; ids look like job-1a2b3c4d-0123456789abcdef.",
                           hint="Pass the job.id of a job handle exactly, or call jobs_list to see the recent jobs.")
    if m.group(1) != folder_tag():
        raise NotFound(f"Job {text} was started by a server writing to another output folder; this server writes "
                       f"to {output_folder()} and keeps only that folder's jobs.",
                       hint="Ask the server that started it, or run this one with RESEARCH_MCP_OUTPUT_DIR set to "
                       "that server's output folder.")
    row = job_store().get(text)
    if row is None:
        days = get_settings().output_retention_days
        kept = f"finished jobs are kept {days:g} days (RESEARCH_MCP_OUTPUT_RETENTION_DAYS)" if days else "none expire"
        raise NotFound(f"No job {text} in {output_folder()} ({kept}).",
                       hint="Check the id against jobs_list, which shows the recent jobs newest first.")
    live = _LIVE.get(text)
    if live is not None and row.state == RUNNING:
        row.progress, row.files = live.progress, list(live.files)
    return row


def result_of(row: JobRow) -> CallToolResult:
    """The tool's own result of a finished job (its error result for a failed one); a worded error otherwise."""
    if row.state == "done" and row.result is not None:
        return CallToolResult.model_validate(row.result)
    if row.state == "failed":
        return CallToolResult(content=[TextContent(type="text", text=row.error or "The job failed.")], is_error=True)
    if row.state == RUNNING:
        raise JobNotReady(f"Job {row.id} ({row.tool}) is still running ({_progress_text(row.progress)}), so it has "
                          "no result yet.", hint=f"Call jobs_wait with job_id=\"{row.id}\" to wait for it.")
    if row.state == "cancelled":
        raise Cancelled(f"Job {row.id} ({row.tool}) was cancelled before it finished, so it has no result "
                        "(asking again gives this same answer).", hint=f"To run it again, {rerun_text(row)}.")
    raise JobInterrupted(f"Job {row.id} ({row.tool}) was interrupted: {row.error} It has no result.",
                         hint=f"To run it again, {rerun_text(row)}.")


def wait_budget(timeout_s: float | None) -> float:
    budget = get_settings().inline_budget_s or 40.0
    return budget if timeout_s is None else max(0.0, min(float(timeout_s), budget))


async def wait(job_id: str, timeout_s: float, watcher: Any = None) -> JobRow:
    """The job once it has ended, or as it stands after `timeout_s`; progress goes to `watcher` meanwhile."""
    row = find(job_id)
    if row.state != RUNNING:
        return row
    live = _LIVE.get(row.id)
    with anyio.move_on_after(timeout_s):
        if live is not None and live.loop is asyncio.get_running_loop():
            if watcher is not None:
                live.watchers.append(watcher)
            try:
                await live.done.wait()
            finally:
                if watcher in live.watchers:
                    live.watchers.remove(watcher)
        else:
            store, seen = job_store(), row.progress
            while True:
                await anyio.sleep(WAIT_POLL_S)
                now = await anyio.to_thread.run_sync(store.get, row.id)
                if now is None or now.state != RUNNING:
                    break
                if watcher is not None and now.progress and now.progress != seen:
                    seen = now.progress
                    p = now.progress
                    await watcher.report_progress(p.get("done") or 0, p.get("total"), p.get("message"))
    return find(job_id)


async def cancel(job_id: str, timeout_s: float = CANCEL_WAIT_S) -> JobRow:
    """Stop a running job (here, or through the store in the process that runs it) and wait for it to stop."""
    row = find(job_id)
    if row.state != RUNNING:
        return row
    live = _LIVE.get(row.id)
    if live is not None:
        live.cancel()
    else:
        job_store().request_cancel(row.id)
    return await wait(row.id, timeout_s)


def listing(limit: int, state: str | None = None, tool: str | None = None) -> dict[str, Any]:
    """The newest `limit` jobs of this output folder (optionally one state or tool) and how many there are."""
    rows, total = job_store().recent(limit, state, tool)
    for row in rows:
        live = _LIVE.get(row.id)
        if live is not None and row.state == RUNNING:
            row.progress = live.progress
    more = total - len(rows)
    message = (f"{len(rows)} of {total} jobs, newest first." +
               (f" {more} older ones are not shown: pass state or tool to narrow, or a larger limit." if more else ""))
    return {"jobs": [summary_payload(r) for r in rows], "shown": len(rows), "total": total, "message": message}
