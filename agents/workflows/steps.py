"""What every workflow node shares: calling one MCP tool (with the approval rule) and asking the model."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

from agents.approval import approval_reason
from agents.connection import ToolBox
from agents.trace import _text
from tools.errors import ResearchError, UpstreamError
from tools.paths import output_dir


class ToolFailed(UpstreamError):
    """A tool answered with an error result inside a workflow."""

    kind = "tool_failed"


async def call_tool(box: ToolBox, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call tool `name` through the session and return its structured result.

    A call that may write outside the output folder first asks for approval with a LangGraph
    interrupt (the same request shape as the ReAct agent's); a rejected call raises `ToolFailed`.
    """
    reason = approval_reason(box.info.get(name), args, output_dir(), Path(os.getcwd()))
    if reason is not None:
        from langgraph.types import interrupt

        answer = interrupt({"action_requests": [{"name": name, "args": args,
                                                 "description": f"Approval needed: {reason}."}],
                            "review_configs": [{"action_name": name, "allowed_decisions": ["approve", "reject"]}]})
        decisions = (answer or {}).get("decisions") or [{}]
        if decisions[0].get("type") != "approve":
            raise ToolFailed(f"The call {name} was not approved, so the workflow stopped.",
                             hint="Resume with --approve to run it.")
    tool = box.get(name)
    msg = await tool.ainvoke({"type": "tool_call", "id": "wf_" + uuid.uuid4().hex[:10], "name": name, "args": args})
    if getattr(msg, "status", "success") == "error":
        raise ToolFailed(f"{name} failed: {_text(msg.content)}")
    artifact = getattr(msg, "artifact", None)
    if isinstance(artifact, dict) and isinstance(artifact.get("structured_content"), dict):
        return artifact["structured_content"]
    return {"text": _text(msg.content)}


ANSWER_LINE = re.compile(r"^[ \t*]*answer[ \t*]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
PLACEHOLDER = re.compile(r"^<[^<>\n]{1,40}>$|^\.\.\.$|^…$")


def stated_answer(reply: str) -> str | None:
    """The value on the reply's last `Answer:` line; None when there is none, it is empty, or it is a template
    placeholder copied from the prompt (`<value>`), as small models do."""
    found = ANSWER_LINE.findall(reply or "")
    value = found[-1].strip().strip("`").strip() if found else ""
    return value if value and not PLACEHOLDER.match(value) else None


async def ask_model(llm: Any, system: str, user: str, *, fallback: str | None = None) -> str:
    """One chat completion (the workflow's model step); the text of the reply.

    With `fallback` (the step's plain report of the tool results), a reply that states no answer (no
    `Answer:` line, or a placeholder on it) gets the report after it, and a model that fails gives the report
    with the reason: the answer always comes from the tool results, whatever the model writes."""
    if llm is None:
        raise ResearchError("This step needs a model and no LLM endpoint is configured.",
                            hint="Set OPENAI_BASE_URL / OPENAI_API_KEY and OPENAI_MODEL.")
    try:
        reply = await llm.ainvoke([{"role": "system", "content": system}, {"role": "user", "content": user}])
    except Exception as exc:
        if fallback is None:
            raise
        return f"(The model did not answer: {type(exc).__name__}: {exc})\n{fallback}"
    text = _text(reply.content).strip()
    if fallback is not None and stated_answer(text) is None:
        text = f"{text}\n\n{fallback}" if text else fallback
    return text
