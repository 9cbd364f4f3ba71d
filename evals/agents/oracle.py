"""The scripted oracle policy: a ScriptedLLM rule that follows each task's expected chain.

It recognises the task by the question in the request, issues the chain's next tool call (filling
references from the earlier tool results in the conversation), and when the chain is done answers
from those results with the task's reading of them. Run through the real agent (ChatOpenAI, MCP,
tools), it checks the harness and the tools end to end; its accuracy measures the tools (given the
right chain) against the independent reference answers, not a model.
"""

from __future__ import annotations

import json
from typing import Any

from evals.agents.suite import Task, resolve_refs


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def first_user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages", []):
        if m.get("role") == "user":
            return _content_text(m.get("content"))
    return ""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in the conversation so far, parsed from JSON (text results as `{"text": ...}`)."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            text = _content_text(m.get("content"))
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = {"text": text}
            out.append(value if isinstance(value, dict) else {"value": value})
    return out


class Oracle:
    """A rule for `ScriptedLLM` over `tasks`: `Oracle(tasks)(body) -> reply`."""

    def __init__(self, tasks: list[Task], styles: tuple[str, ...] = ("instruction", "goal")) -> None:
        self.by_question = {t.question(s): t for t in tasks for s in styles}

    def __call__(self, body: dict[str, Any]) -> str | dict[str, Any]:
        task = self.by_question.get(first_user_text(body))
        if task is None:
            return "I do not know this task. Answer: unknown"
        results = tool_results(body)
        step = len(results)
        if step < len(task.steps):
            s = task.steps[step]
            try:
                args = resolve_refs(s.args, results)
            except (KeyError, IndexError) as exc:
                return f"Step {step} did not return {exc}: {json.dumps(results[-1])[:300]}\nAnswer: unknown"
            plan = "Plan: " + "; ".join(f"{i + 1}. {x.name}" for i, x in enumerate(task.steps)) if step == 0 else ""
            return {"content": plan or f"Step {step + 1}: {s.name}.",
                    "tool_calls": [{"function": {"name": s.name, "arguments": args}}]}
        try:
            return f"The tool results give the answer.\nAnswer: {task.read(results)}"
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            return f"The results could not be read ({type(exc).__name__}: {exc}).\nAnswer: unknown"
