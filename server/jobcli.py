"""`research-mcp jobs list|status|wait|result|cancel` and the job-following part of `research-mcp call`.

Both go through the job tools of an in-process server, which reads the job store of the output folder: a job
started by any server using the same folder (a Claude Desktop stdio server, `serve --http --workers N`) can be
listed, waited on and cancelled from the shell.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

USAGE = "research-mcp jobs {list,status,wait,result,cancel} ..."

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


async def call_and_wait(client: Any, tool: str, arguments: dict[str, Any], on_progress: ProgressFn) -> Any:
    """Call `tool`; if it answers with a job handle, wait for the job (jobs_wait, again and again) and return
    the tool's own result."""
    from server.jobs import is_handle

    result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    while not result.is_error and is_handle(result.structured_content):
        job = result.structured_content["job"]
        p = job.get("progress") or {}
        await on_progress(p.get("done") or 0, p.get("total"), f"{tool} (job {job['id']}) {p.get('message') or ''}")
        result = await client.call_tool("jobs_wait", {"job_id": job["id"]}, progress_callback=on_progress)
    return result


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="research-mcp jobs", description="The jobs that long tool calls became, in "
                                "this output folder (RESEARCH_MCP_OUTPUT_DIR).")
    sub = p.add_subparsers(dest="action", required=True)
    ls = sub.add_parser("list", help="recent jobs, newest first")
    ls.add_argument("--limit", type=int, default=20, help="most jobs shown (1-100, default 20)")
    ls.add_argument("--state", choices=["running", "done", "failed", "cancelled", "interrupted"])
    ls.add_argument("--tool", help="only jobs of this tool")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    for name, what in (("status", "a job's state, progress, arguments and files"),
                       ("wait", "wait for a job to end (progress bar) and print its result"),
                       ("result", "print a finished job's result"),
                       ("cancel", "cancel a running job")):
        one = sub.add_parser(name, help=what)
        one.add_argument("job_id", help="the job id (job-xxxxxxxx-xxxxxxxxxxxxxxxx)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    import anyio
    from mcp import Client
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from server.app import build_server
    from server.jobs import is_handle

    err = Console(stderr=True)

    async def run() -> Any:
        async with Client(build_server(log_level="CRITICAL")) as client:
            if args.action == "list":
                return await client.call_tool("jobs_list", {k: v for k, v in {
                    "limit": args.limit, "state": args.state, "tool": args.tool}.items() if v is not None})
            if args.action in ("status", "result", "cancel"):
                return await client.call_tool(f"jobs_{args.action}", {"job_id": args.job_id})
            with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:g}/{task.total}"),
                          TimeElapsedColumn(), console=err, transient=True) as bar:
                task = bar.add_task(args.job_id, total=None)

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    bar.update(task, completed=done, total=total, description=message or args.job_id)

                result = await client.call_tool("jobs_wait", {"job_id": args.job_id}, progress_callback=on_progress)
                while not result.is_error and is_handle(result.structured_content):
                    result = await client.call_tool("jobs_wait", {"job_id": args.job_id},
                                                    progress_callback=on_progress)
                return result

    result = anyio.run(run)
    if result.is_error:
        from rich.markup import escape

        err.print("[bold red]error[/] " + escape(" ".join(getattr(c, "text", "") for c in result.content)),
                  highlight=False, soft_wrap=True)  # one line, whatever the terminal's width
        return 1
    data = result.structured_content
    if args.action == "list" and not args.json:
        _table(data, err)
        return 0
    print(json.dumps(data, indent=2, default=str) if data is not None
          else "\n".join(getattr(c, "text", str(c)) for c in result.content))
    return 0


def _table(data: dict[str, Any], err: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=data["message"])
    for col in ("id", "tool", "state", "created", "elapsed_s", "progress"):
        table.add_column(col, no_wrap=col in ("id", "tool"))
    for job in data["jobs"]:
        p = job.get("progress") or {}
        shown = f"{p.get('done'):g}/{p.get('total') or '?'} {p.get('message') or ''}" if p else ""
        table.add_row(job["id"], job["tool"], job["state"], job["created"] or "", f"{job['elapsed_s']:g}", shown)
    Console(file=sys.stdout).print(table)
