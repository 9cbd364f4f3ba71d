"""What every workflow node shares: calling one MCP tool (with the approval rule) and asking the model."""

from __future__ import annotations

import os
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


async def ask_model(llm: Any, system: str, user: str) -> str:
    """One chat completion (the workflow's model step); the text of the reply."""
    if llm is None:
        raise ResearchError("This step needs a model and no LLM endpoint is configured.",
                            hint="Set OPENAI_BASE_URL / OPENAI_API_KEY and OPENAI_MODEL.")
    reply = await llm.ainvoke([{"role": "system", "content": system}, {"role": "user", "content": user}])
    return _text(reply.content).strip()
