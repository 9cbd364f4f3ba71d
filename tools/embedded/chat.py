"""Chat messages to a Gemma prompt, and tool calls out of the model's text.

The embedded model is a base (pretrained, not instruction-tuned) model, so a chat becomes a plain
transcript (`Question: ...` / `Answer: ...`, system text on top) ending with an open `Answer:` turn; a
base model continues such text far better than Gemma's instruction-turn tokens, which it never
learned, or a `User:` / `Assistant:` dialogue, which it tends to repeat. When the request offers tools,
the prompt lists them and asks for calls as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`;
`parse_tool_calls` reads those (and a bare JSON object with `name` and `arguments`) back. A base model
of this size often answers in prose instead; that reply is returned as text, and the caller sees that no
tool was called.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ROLES = {"user": "Question", "model": "Answer"}
STOP_STRINGS = ["\nQuestion:", "<end_of_turn>", "<start_of_turn>"]


@dataclass
class ToolCall:
    name: str
    arguments: str  # JSON text, as the OpenAI API carries it


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _tools_text(tools: list[dict[str, Any]]) -> str:
    lines = ["You can call these tools:"]
    for tool in tools:
        fn = tool.get("function", tool)
        params = fn.get("parameters", {}).get("properties", {})
        required = set(fn.get("parameters", {}).get("required", []))
        args = ", ".join(f"{k}{'' if k in required else '?'}: {v.get('type', 'any')}" for k, v in params.items())
        desc = (fn.get("description") or "").strip().splitlines()
        lines.append(f"- {fn.get('name')}({args}): {desc[0] if desc else ''}")
    lines.append('To call a tool, reply with one line: <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>')
    lines.append("When you have the answer, reply with the answer alone.")
    return "\n".join(lines)


def prompt_head(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """The start of `render_prompt`'s prompt that only the system messages and the tools decide: chats that
    share it (the steps of an agent, the workers of one job) can share its key/value cache."""
    system = [_content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    if tools:
        system.append(_tools_text(tools))
    return "\n\n".join(x for x in system if x) + "\n\n" if system else ""


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """The transcript prompt for an OpenAI-style message list, ending with an open `Answer:` turn."""
    turns: list[tuple[str, str]] = []
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "assistant":
            text = _content_text(m.get("content"))
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                text += f"<tool_call>{json.dumps({'name': fn.get('name'), 'arguments': args})}</tool_call>"
            turns.append(("model", text))
        elif role == "tool":
            turns.append(("user", f"Tool result: {_content_text(m.get('content'))}"))
        else:
            turns.append(("user", _content_text(m.get("content"))))
    merged: list[tuple[str, str]] = []
    for role, text in turns:
        if merged and merged[-1][0] == role:
            merged[-1] = (role, f"{merged[-1][1]}\n\n{text}")
        else:
            merged.append((role, text))
    head = prompt_head(messages, tools)
    body = "".join(f"{ROLES[role]}: {text.strip()}\n" for role, text in merged)
    return head + body + "Answer:"


_TAGGED = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)", re.S)


def _objects(text: str) -> list[str]:
    """Every balanced top-level `{...}` span of `text`."""
    spans, depth, start, in_str, esc = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def parse_tool_calls(text: str, known: set[str] | None = None) -> tuple[str, list[ToolCall]]:
    """Split a reply into its text and its tool calls; `known` limits bare-JSON calls to offered tools."""
    candidates = [m.group(1) for m in _TAGGED.finditer(text)]
    tagged = bool(candidates)
    if not tagged:
        candidates = _objects(text)
    calls: list[ToolCall] = []
    for raw in candidates:
        for span in _objects(raw) or [raw]:
            try:
                obj = json.loads(span)
            except json.JSONDecodeError:
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                continue
            if not tagged and (known is not None and obj["name"] not in known):
                continue
            args = obj.get("arguments", obj.get("parameters", {}))
            calls.append(ToolCall(obj["name"], json.dumps(args if isinstance(args, dict) else {"value": args})))
            break
    if not calls:
        return text.strip(), []
    cut = text.find("<tool_call>") if tagged else text.find(candidates[0])
    return text[: max(cut, 0)].strip(), calls
