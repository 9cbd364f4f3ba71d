"""The JSON record of every run: messages, tool calls with arguments and results, tokens, time.

A `RunTrace` is a LangChain callback handler, so the same record is kept for the ReAct agent and for
every workflow: it sees each model call (tokens, seconds) and each tool call (name, arguments, result,
seconds). A resumed thread appends a new segment to the same file, so the file shows which calls ran
in which process. Written to `<output>/agent-runs/<thread>.json`.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler

from tools.atomic import write_text

RESULT_CHARS = 4000
REPLY_CHARS = 2000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def message_record(m: Any) -> dict[str, Any]:
    """A JSON-able view of one LangChain message."""
    rec: dict[str, Any] = {"type": getattr(m, "type", type(m).__name__), "content": _text(getattr(m, "content", ""))}
    for attr in ("name", "tool_call_id", "status"):
        v = getattr(m, attr, None)
        if v:
            rec[attr] = v
    calls = getattr(m, "tool_calls", None)
    if calls:
        rec["tool_calls"] = [{"id": c.get("id"), "name": c["name"], "args": c.get("args", {})} for c in calls]
    bad = getattr(m, "invalid_tool_calls", None)
    if bad:  # calls whose arguments were not valid JSON: never executed
        rec["invalid_tool_calls"] = [{"id": c.get("id"), "name": c.get("name"), "args": c.get("args"),
                                      "error": c.get("error")} for c in bad]
    usage = getattr(m, "usage_metadata", None)
    if usage:
        rec["usage"] = dict(usage)
    artifact = getattr(m, "artifact", None)
    if isinstance(artifact, dict) and "structured_content" in artifact:
        rec["structured_content"] = artifact["structured_content"]
    return rec


class RunTrace(AsyncCallbackHandler):
    """Records model and tool calls of one thread; `save()` writes the JSON file."""

    def __init__(self, path: Path, *, thread_id: str, kind: str, question: str | None, model: str | None,
                 server: str) -> None:
        super().__init__()
        self.path = path
        self.data: dict[str, Any] = {
            "thread_id": thread_id, "kind": kind, "question": question, "model": model, "server": server,
            "segments": [], "tool_calls": [], "llm_calls": [], "messages": [], "answer": None,
            "tokens": {"prompt": 0, "completion": 0, "total": 0},
        }
        if path.exists():
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
                if old.get("thread_id") == thread_id:
                    self.data.update({k: v for k, v in old.items() if k in self.data and v is not None})
            except (OSError, json.JSONDecodeError):
                pass
        for seg in self.data["segments"]:
            if seg.get("status") == "running":  # that process ended without closing its segment (killed)
                seg["status"] = "killed"
        self.segment = len(self.data["segments"])
        self.data["segments"].append({"index": self.segment, "started": _now(), "ended": None, "status": "running",
                                      "seconds": None})
        self._t0 = time.perf_counter()
        self._open: dict[UUID, dict[str, Any]] = {}
        self._llm_open: dict[UUID, float] = {}

    # tools
    async def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: UUID,
                            inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        args = inputs if isinstance(inputs, dict) else {}
        if not args:
            try:
                parsed = json.loads(input_str)
                args = parsed if isinstance(parsed, dict) else {"input": parsed}
            except (TypeError, json.JSONDecodeError):
                args = {"input": input_str}
        self._open[run_id] = {"name": (serialized or {}).get("name") or kwargs.get("name"), "args": args,
                              "segment": self.segment, "started": _now(), "_t": time.perf_counter()}

    def _close_tool(self, run_id: UUID, status: str, text: str, structured: Any, call_id: str | None) -> None:
        rec = self._open.pop(run_id, None)
        if rec is None:
            return
        rec["seconds"] = round(time.perf_counter() - rec.pop("_t"), 4)
        rec.update(status=status, result=text[:RESULT_CHARS], structured_content=structured, id=call_id)
        self.data["tool_calls"].append(rec)
        self.save()  # after every tool call, so a killed run's finished calls stay on record

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        artifact = getattr(output, "artifact", None)
        structured = artifact.get("structured_content") if isinstance(artifact, dict) else None
        status = getattr(output, "status", "success") or "success"
        self._close_tool(run_id, status, _text(getattr(output, "content", output)), structured,
                         getattr(output, "tool_call_id", None))

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._close_tool(run_id, "error", f"{type(error).__name__}: {error}", None, None)

    # models
    async def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID,
                                  **kwargs: Any) -> None:
        self._llm_open[run_id] = time.perf_counter()

    async def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        t = self._llm_open.pop(run_id, None)
        prompt = completion = 0
        replies = []
        for gens in response.generations or []:
            for g in gens:
                message = getattr(g, "message", None)
                usage = getattr(message, "usage_metadata", None) or {}
                prompt += int(usage.get("input_tokens", 0))
                completion += int(usage.get("output_tokens", 0))
                replies.append(_text(getattr(message, "content", None) or getattr(g, "text", ""))[:REPLY_CHARS])
        tok = self.data["tokens"]
        tok["prompt"] += prompt
        tok["completion"] += completion
        tok["total"] += prompt + completion
        self.data["llm_calls"].append({"segment": self.segment, "prompt_tokens": prompt,
                                       "completion_tokens": completion, "reply": "\n".join(replies),
                                       "seconds": round(time.perf_counter() - t, 4) if t else None})

    # the run
    def executed_calls(self, segment: int | None = None) -> list[dict[str, Any]]:
        """Tool calls run in `segment` (all segments when None)."""
        return [c for c in self.data["tool_calls"] if segment is None or c["segment"] == segment]

    def finish(self, status: str, *, messages: list[Any] | None = None, answer: str | None = None,
               extra: dict[str, Any] | None = None) -> Path:
        seg = self.data["segments"][self.segment]
        seg.update(ended=_now(), status=status, seconds=round(time.perf_counter() - self._t0, 3))
        if messages is not None:
            self.data["messages"] = [message_record(m) for m in messages]
        if answer is not None:
            self.data["answer"] = answer
        if extra:
            self.data.update(extra)
        return self.save()

    def save(self) -> Path:
        """Write the record atomically: a killed process leaves the previous complete file, never half of one."""
        return write_text(self.path, json.dumps(self.data, indent=2, default=str))
