"""Durable runs of any agent graph: one MCP session, a SQLite checkpointer, streaming, approval, a trace.

`run_graph` opens the session, builds the graph on its tools, and drives it: every super-step is
checkpointed synchronously in `<output>/agent-runs/checkpoints.sqlite` before the next one starts, so a
killed run resumed with the same thread id continues at the first unfinished step (finished tool calls
are not run again). An approval interrupt is answered by the `Approver` (ask on the terminal, approve
all, reject all, or pause so that `--resume THREAD` answers later). Steps are printed with rich as
they finish and the whole run is recorded by `RunTrace`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.panel import Panel

from agents.connection import ServerTarget, ToolBox, open_tools
from agents.trace import RunTrace, _text
from tools.paths import output_dir

ApprovalMode = Literal["ask", "yes", "no", "pause"]
GraphBuilder = Callable[[ToolBox, Any], Awaitable[Any]]


def runs_dir(out: Path | None = None) -> Path:
    d = (out or output_dir()) / "agent-runs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def trace_path(thread_id: str, out: Path | None = None) -> Path:
    return runs_dir(out) / f"{thread_id}.json"


def load_trace(thread_id: str, out: Path | None = None) -> dict[str, Any] | None:
    p = trace_path(thread_id, out)
    if not p.exists():
        return None
    return json.loads(p.read_text(encoding="utf-8"))


@dataclass
class RunResult:
    """How a run ended: `done`, `awaiting_approval` (resume to answer), `stopped`, `failed`, or a status
    the graph's own judge gives (the ReAct agent's `no_tool_call`)."""

    thread_id: str
    status: str
    answer: str | None
    trace_path: Path
    values: dict[str, Any] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    executed: list[dict[str, Any]] = field(default_factory=list)


def short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_update(console: Console, update: dict[str, Any]) -> None:
    """Print one streamed super-step: model turns, tool calls and results, or a workflow node's output."""
    for node, value in update.items():
        if node == "__interrupt__":
            console.print("[bold yellow]⏸ approval needed[/]")
            continue
        if not value:
            continue
        messages = value.get("messages") if isinstance(value, dict) else None
        if messages:
            for m in messages if isinstance(messages, list) else [messages]:
                kind = getattr(m, "type", "")
                if kind == "ai":
                    text = _text(m.content).strip()
                    if text and m.tool_calls:
                        console.print(f"[dim]{short(text, 400)}[/]")
                    for c in m.tool_calls or []:
                        console.print(f"[bold cyan]→ {c['name']}[/] {short(c.get('args', {}), 300)}")
                    if not m.tool_calls and text:
                        console.print(Panel(text, title="answer", border_style="green"))
                elif kind == "tool":
                    style = "red" if getattr(m, "status", "") == "error" else "green"
                    console.print(f"[{style}]← {m.name}[/] {short(_text(m.content), 300)}")
            continue
        if isinstance(value, dict):
            shown = {k: v for k, v in value.items() if k != "messages"}
            console.print(f"[bold magenta]● {node}[/] {short(shown, 300)}")


def ask_on_terminal(console: Console) -> Callable[[dict[str, Any]], list[dict[str, Any]] | None]:
    """An approver that asks y/n for each action on the terminal."""
    from rich.prompt import Confirm

    def approve(request: dict[str, Any]) -> list[dict[str, Any]] | None:
        decisions = []
        for action in request.get("action_requests", []):
            console.print(Panel(f"{action.get('description', '')}\n\n{action['name']} {short(action['args'], 600)}",
                                title="approval", border_style="yellow"))
            ok = Confirm.ask("Run this tool call?", console=console, default=False)
            decisions.append({"type": "approve"} if ok else {"type": "reject",
                                                             "message": "The user declined this call."})
        return decisions

    return approve


def approver_for(mode: ApprovalMode, console: Console) -> Callable[[dict[str, Any]], list[dict[str, Any]] | None]:
    if mode == "yes":
        return lambda req: [{"type": "approve"} for _ in req.get("action_requests", [])]
    if mode == "no":
        return lambda req: [{"type": "reject", "message": "The user declined this call."}
                            for _ in req.get("action_requests", [])]
    if mode == "ask" and sys.stdin.isatty():
        return ask_on_terminal(console)
    return lambda req: None


async def drive(graph: Any, inputs: Any, config: dict[str, Any], *, console: Console,
                approver: Callable[[dict[str, Any]], list[dict[str, Any]] | None]) -> tuple[str, Any, list[Any]]:
    """Stream `graph` until it finishes or an interrupt cannot be answered now."""
    from langgraph.types import Command

    while True:
        async for update in graph.astream(inputs, config, stream_mode="updates", durability="sync"):
            render_update(console, update)
        snap = await graph.aget_state(config)
        pending = [i for t in snap.tasks for i in (t.interrupts or ())]
        if not pending:
            return ("done" if not snap.next else "stopped"), snap, []
        resume: dict[str, Any] = {}
        for intr in pending:
            decisions = approver(intr.value if isinstance(intr.value, dict) else {})
            if decisions is None:
                return "awaiting_approval", snap, pending
            resume[intr.id] = {"decisions": decisions}
        inputs = Command(resume=resume)


@contextlib.asynccontextmanager
async def checkpointer(db: Path):
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        yield saver


@dataclass
class Session:
    """An open MCP session and checkpointer that several runs may share."""

    box: ToolBox
    saver: Any
    target: ServerTarget
    out: Path


@contextlib.asynccontextmanager
async def open_session(target: ServerTarget, out: Path | None = None):
    """Connect to `target` and open the checkpoint database, for one or many runs."""
    out = out or output_dir()
    if not target.url and target.log_file is None:  # the server's own log goes to a file, not the terminal
        target = dataclasses.replace(target, log_file=runs_dir(out) / "server.log")
    from agents.jobs import BOOK_NAME, JobBook

    book = JobBook(runs_dir(out) / BOOK_NAME)
    async with open_tools(target, book) as box, checkpointer(runs_dir(out) / "checkpoints.sqlite") as saver:
        yield Session(box=box, saver=saver, target=target, out=out)


async def run_graph(
    build: GraphBuilder,
    inputs: dict[str, Any] | None,
    *,
    kind: str,
    question: str | None,
    target: ServerTarget | None = None,
    session: Session | None = None,
    thread_id: str | None = None,
    resume: bool = False,
    approval: ApprovalMode = "ask",
    console: Console | None = None,
    answer_of: Callable[[dict[str, Any]], str | None] | None = None,
    status_of: Callable[[str, dict[str, Any]], str] | None = None,
    model_name: str | None = None,
    recursion_limit: int = 60,
    meta: dict[str, Any] | None = None,
) -> RunResult:
    """Run (or with `resume`, continue) the graph `build` makes, durably, on the tools of `session`
    (or of a session opened on `target` for this run only)."""
    if session is None:
        async with open_session(target or ServerTarget()) as own:
            return await run_graph(build, inputs, kind=kind, question=question, session=own, thread_id=thread_id,
                                   resume=resume, approval=approval, console=console, answer_of=answer_of,
                                   status_of=status_of, model_name=model_name, recursion_limit=recursion_limit,
                                   meta=meta)
    console = console or Console(stderr=True)
    thread_id = thread_id or uuid.uuid4().hex[:12]
    out = session.out
    trace = RunTrace(trace_path(thread_id, out), thread_id=thread_id, kind=kind, question=question,
                     model=model_name, server=session.target.label)
    if meta:
        trace.data.setdefault("options", {}).update(meta)
    config = {"configurable": {"thread_id": thread_id}, "callbacks": [trace], "recursion_limit": recursion_limit}
    status = "failed"
    values: dict[str, Any] = {}
    pending: list[Any] = []
    try:
        graph = await build(session.box, session.saver)
        if resume:
            snap = await graph.aget_state(config)
            if not snap.values and not snap.next:
                from tools.errors import NotFound

                raise NotFound(f"No checkpointed run has thread id {thread_id!r}.",
                               hint=f"Thread ids are the names of the files in {runs_dir(out)}.")
            first: Any = None
        else:
            first = inputs
        console.print(f"[dim]thread {thread_id} · {kind} · {session.target.label}[/]")
        status, snap, pending = await drive(graph, first, config, console=console,
                                            approver=approver_for(approval, console))
        values = dict(snap.values)
        if status_of is not None:
            status = status_of(status, values)
    finally:
        answer = answer_of(values) if (answer_of and values) else None
        trace.finish(status, messages=values.get("messages"), answer=answer,
                     extra={"pending_approval": [p.value for p in pending]} if pending else None)
    if status == "awaiting_approval":
        console.print(f"[yellow]Paused for approval. Continue with: research-mcp agent --resume {thread_id} "
                      "--approve (or --reject)[/]")
    return RunResult(thread_id=thread_id, status=status, answer=answer, trace_path=trace.path, values=values,
                     pending=[p.value for p in pending], executed=trace.executed_calls(trace.segment))
