"""The ReAct agent: `langchain.agents.create_agent` over every tool the server exposes.

The model (ChatOpenAI at temperature 0.1 on the configured endpoint) plans, calls tools through the
one MCP session, checks intermediate numbers, and answers. A tool call that may write outside the
output folder pauses the run for a human's approval (`HumanInTheLoopMiddleware` with a per-call
predicate from `agents.approval`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agents.approval import approval_reason
from agents.connection import ServerTarget, ToolBox
from agents.runner import ApprovalMode, RunResult, run_graph
from agents.trace import _text
from tools.paths import output_dir

SYSTEM_PROMPT = """\
You are a careful research analyst with expert tools (earth observation, graph reasoning, drug-target \
interaction, natural-identifier audits, long-document QA), reached through an MCP server.
Work like this:
1. Plan: before the first call, write a short numbered plan of the tool calls the question needs.
2. Act: call one tool at a time with exact arguments. Pass bundled data as its sample:// URI and \
files the tools wrote as the paths they returned.
3. Check: after each result, check that the numbers are plausible (an index like NDVI lies in [-1, 1], \
a temperature in kelvin is roughly 180-340 K, a fraction lies in [0, 1], counts are whole and not \
negative, a pixel count is at most the raster size). If a value is implausible or a tool reports an \
error, fix the arguments and call again rather than guessing.
4. Answer: when the evidence is in, reply with a short explanation and a last line \
`Answer: <value>`. Give numbers with the precision asked for (else 4 significant digits) and units. \
For a multiple-choice question the last line is `Answer: <letter>`.
Never invent a tool result; if the tools cannot answer, say so.
"""


def system_prompt(resources: list[str], limit: int = 80) -> str:
    """The system prompt, listing the bundled sample files the tools accept."""
    if not resources:
        return SYSTEM_PROMPT
    shown = resources[:limit]
    more = f"\n(and {len(resources) - limit} more)" if len(resources) > limit else ""
    return SYSTEM_PROMPT + "\nBundled sample data (pass these URIs as paths):\n" + "\n".join(shown) + more


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


def build_agent(box: ToolBox, model: Any, saver: Any, *, out: Path, cwd: Path) -> Any:
    """The compiled ReAct graph over `box`'s tools, checkpointed by `saver`."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig

    def gate(name: str) -> InterruptOnConfig:
        info = box.info.get(name)

        def when(request: Any) -> bool:
            return approval_reason(info, request.tool_call.get("args", {}), out, cwd) is not None

        def describe(tool_call: Any, state: Any, runtime: Any) -> str:
            reason = approval_reason(info, tool_call.get("args", {}), out, cwd)
            return f"Approval needed: {reason}."

        return InterruptOnConfig(allowed_decisions=["approve", "reject"], when=when, description=describe)

    gated = {name: gate(name) for name, info in box.info.items() if not info.read_only}
    middleware = [HumanInTheLoopMiddleware(gated)] if gated else []
    return create_agent(model, list(box.tools.values()), system_prompt=system_prompt(box.resources),
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
        return build_agent(box, llm, saver, out=out, cwd=cwd)

    inputs = {"messages": [{"role": "user", "content": question}]} if question else None
    return await run_graph(build, inputs, kind="react", question=question, target=target, session=session,
                           thread_id=thread_id,
                           resume=resume, approval=approval, console=console, answer_of=final_answer,
                           model_name=getattr(llm, "model_name", None), recursion_limit=2 * max_steps + 5)
