"""The job tools: wait for, look at, collect, cancel and list the jobs that long calls became (`server.jobs`).

They answer within the inline budget themselves and never become jobs. `jobs_wait` and `jobs_result` return
the job's tool result unchanged (its content and structured content), so a client reads a job's result
exactly as it would have read the call's.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from server import jobs
from server.jobstore import STATES
from server.registry import ResearchTool, described_with_bounds, strict_arguments
from tools.errors import ResearchError

MAX_LIST = 100

JobId = Annotated[str, Field(description="The handle's job.id.")]


class JobTool(ResearchTool):
    """A job tool: strict arguments like every tool, and always answered inline."""

    becomes_job = False


def _structured(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, indent=2, default=str))],
                          structured_content=payload)


def _worded(fn: Callable[..., Awaitable[CallToolResult]]) -> Callable[..., Awaitable[CallToolResult]]:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return await fn(*args, **kwargs)
        except ResearchError as exc:
            raise ToolError(f"[{exc.kind}] {exc}") from exc

    return call


@_worded
async def jobs_wait(
    job_id: JobId,
    timeout_s: Annotated[float | None, Field(ge=0, description="Default and most: the inline budget.")] = None,
    ctx: Context | None = None,
) -> CallToolResult:
    """Wait for a job; its tool's result or error once it ends, else the handle again (call again)."""
    row = await jobs.wait(job_id, jobs.wait_budget(timeout_s), watcher=ctx)
    if row.state == jobs.RUNNING:
        return jobs.handle_result(row)
    return jobs.result_of(row)


@_worded
async def jobs_status(job_id: JobId) -> CallToolResult:
    """A job's state, progress, arguments, times and files."""
    return _structured(jobs.status_payload(jobs.find(job_id)))


@_worded
async def jobs_result(job_id: JobId) -> CallToolResult:
    """A finished job's result as its tool returned it; else an error saying why."""
    return jobs.result_of(jobs.find(job_id))


@_worded
async def jobs_cancel(job_id: JobId) -> CallToolResult:
    """Cancel a running job (it stops within a second); returns its status."""
    return _structured(jobs.status_payload(await jobs.cancel(job_id)))


@_worded
async def jobs_list(
    limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
    state: Literal[STATES] | None = None,  # type: ignore[valid-type]
    tool: Annotated[str | None, Field(max_length=200)] = None,
) -> CallToolResult:
    """Recent jobs of this output folder, newest first."""
    return _structured(jobs.listing(limit, state, tool))


_TOOLS = (
    (jobs_wait, "Wait for a job", True),
    (jobs_status, "Job status", True),
    (jobs_result, "Job result", True),
    (jobs_cancel, "Cancel a job", False),
    (jobs_list, "Recent jobs", True),
)


def job_tools() -> list[ResearchTool]:
    """The five job tools, with strict, compact input schemas."""
    out = []
    for fn, title, read_only in _TOOLS:
        hints = ToolAnnotations(read_only_hint=read_only or None, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
        tool = JobTool.from_function(fn, name=fn.__name__, title=title, annotations=hints,
                                     description=described_with_bounds("jobs", inspect.getdoc(fn) or ""))
        out.append(strict_arguments(tool, tool.fn_metadata))
    return out
