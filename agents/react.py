"""The ReAct agent: `langchain.agents.create_agent` over every tool the server exposes.

The model (ChatOpenAI at temperature 0.1 on the configured endpoint) calls tools through the one MCP
session, checks intermediate numbers, and answers. Its system prompt is the same text for every
question and step (rules, a one-line catalogue of every tool, the bundled samples), so an endpoint's
prompt cache keeps it; each model call binds the full schemas of a few tools only, and calls written as
text are read, repeats and errors handled (`agents.tooluse.ToolUse`). A tool call that may write outside
the output folder pauses the run for a human's approval (`HumanInTheLoopMiddleware` with a per-call
predicate from `agents.approval`).

A run that ends without any tool having run ends with status `no_tool_call` (the CLI exits 4): the
answer did not come from the tools.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agents.approval import approval_reason
from agents.connection import ServerTarget, ToolBox
from agents.runner import ApprovalMode, RunResult, run_graph
from agents.selection import catalogue, fold_resources
from agents.trace import _text
from tools.paths import output_dir

NO_TOOL_CALL = "no_tool_call"

SYSTEM_PROMPT = """You answer research questions with the tools of an MCP server (earth observation, graph reasoning, \
drug-target interaction, natural-identifier audits, long-document QA).
Rules:
1. Call one tool at a time with exact arguments. Pass bundled data as its sample:// URI and files a tool \
wrote as the path it returned.
2. Check each result: an index like NDVI lies in [-1, 1], a temperature in kelvin is about 180-340 K, a \
fraction lies in [0, 1], counts are whole. If a tool reports an error, fix the arguments and call again.
3. Never repeat a call you already made: its result is above.
4. When the results answer the question, reply with one short sentence and a last line `Answer: <value>` \
(the precision asked for, else 4 significant digits, with units; for a multiple-choice question the letter).
Never invent a tool result; if the tools cannot answer, say so.
"""


def system_prompt(box: ToolBox | None = None, *, resources: list[str] | None = None, limit: int = 40) -> str:
    """The system prompt: the rules, every tool in one line (when `box` is given), the bundled samples."""
    text = SYSTEM_PROMPT
    if box is not None and box.info:
        text += "\nTools (name(required arguments): what it does); any of them can be called:\n" + catalogue(box.info)
    shown = fold_resources(resources if resources is not None else (box.resources if box else []))
    if shown:
        more = f"\n(and {len(shown) - limit} more)" if len(shown) > limit else ""
        text += "\nBundled sample data (pass these URIs as paths):\n" + "\n".join(shown[:limit]) + more
    return text + "\n"


def final_answer(values: dict[str, Any]) -> str | None:
    """The text of the last assistant message that calls no tool.

    When that message only holds tool calls whose arguments were not valid JSON (so none ran), the
    answer says so, naming the tool and the arguments as the model sent them.
    """
    for m in reversed(values.get("messages", [])):
        if getattr(m, "type", "") == "ai" and not getattr(m, "tool_calls", None):
            text = _text(m.content).strip()
            bad = getattr(m, "invalid_tool_calls", None) or []
            if bad and not text:
                said = "; ".join(f"{c.get('name') or '(no name)'} with {str(c.get('args'))[:200]!r}" for c in bad)
                return (f"Stopped: the model called {said}, arguments that are not valid JSON, so no tool ran. "
                        "Use a model that supports tool calling, or ask again.")
            return text
    return None


def tool_results(values: dict[str, Any]) -> int:
    """How many results of the last question's tool calls answer a call of a tool the server has (run,
    failed or declined), not counting a notice about an unknown tool or a repeated call."""
    from agents.tooluse import REPEAT_NOTICE, SCHEMA_NOTICE, UNKNOWN_NOTICE, current_turn

    _, turn = current_turn(list(values.get("messages", [])))
    ids = {c.get("id") for m in turn if getattr(m, "type", "") == "ai" for c in (getattr(m, "tool_calls", None) or [])}
    return sum(1 for m in turn if getattr(m, "type", "") == "tool" and getattr(m, "tool_call_id", None) in ids
               and not _text(m.content).startswith((REPEAT_NOTICE, UNKNOWN_NOTICE, SCHEMA_NOTICE)))


def run_status(status: str, values: dict[str, Any]) -> str:
    """`no_tool_call` for a finished run whose model called no tool the server has; else `status`."""
    if status == "done" and values.get("messages") and tool_results(values) == 0:
        return NO_TOOL_CALL
    return status


def build_agent(box: ToolBox, model: Any, saver: Any, *, out: Path, cwd: Path, max_steps: int = 30) -> Any:
    """The compiled ReAct graph over `box`'s tools, checkpointed by `saver`."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig

    from agents.tooluse import ToolUse

    def gate(name: str) -> InterruptOnConfig:
        info = box.info.get(name)

        def when(request: Any) -> bool:
            return approval_reason(info, request.tool_call.get("args", {}), out, cwd) is not None

        def describe(tool_call: Any, state: Any, runtime: Any) -> str:
            reason = approval_reason(info, tool_call.get("args", {}), out, cwd)
            return f"Approval needed: {reason}."

        return InterruptOnConfig(allowed_decisions=["approve", "reject"], when=when, description=describe)

    gated = {name: gate(name) for name, info in box.info.items() if not info.read_only}
    from tools.settings import get_settings

    middleware: list[Any] = [ToolUse(box, max_steps=max_steps, max_tokens=get_settings().llm.agent_max_tokens,
                                        result_chars=get_settings().llm.agent_result_chars)]
    if gated:
        middleware.append(HumanInTheLoopMiddleware(gated))
    return create_agent(model, list(box.tools.values()), system_prompt=system_prompt(box),
                        middleware=middleware, checkpointer=saver, name="research_agent")


async def ask(
    question: str | None,
    *,
    target: ServerTarget | None = None,
    session: Any = None,
    thread_id: str | None = None,
    resume: bool = False,
    approval: ApprovalMode = "ask",
    max_steps: int = 30,
    console: Any = None,
    model: Any = None,
) -> RunResult:
    """Answer `question` with the ReAct agent (or continue thread `thread_id` with `resume`)."""
    from agents.model import chat_model

    llm = model or chat_model()
    target = session.target if session is not None else (target or ServerTarget())
    out = session.out if session is not None else output_dir()
    cwd = Path(target.cwd or os.getcwd())

    async def build(box: ToolBox, saver: Any) -> Any:
        return build_agent(box, llm, saver, out=out, cwd=cwd, max_steps=max_steps)

    inputs = {"messages": [{"role": "user", "content": question}]} if question else None
    return await run_graph(build, inputs, kind="react", question=question, target=target, session=session,
                           thread_id=thread_id,
                           resume=resume, approval=approval, console=console, answer_of=final_answer,
                           status_of=run_status, model_name=getattr(llm, "model_name", None),
                           recursion_limit=2 * max_steps + 5)
