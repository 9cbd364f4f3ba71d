"""Tool calls that a model wrote as text, read leniently.

Small models served without a tool-call parser (or whose chat template the server does not parse) write
their call in the reply: in a ```json fence, as bare JSON, between `<tool_call>` tags, after
`[TOOL_CALLS]`, as XML (`<tool name="..." arguments="{...}"/>`, or `<tool name="..."><arguments>` with an
element per argument), as
`{"name": ..., "arguments": {...}}`, `{"tool": ..., "args": {...}}`,
`{"function": {"name": ..., "arguments": "..."}}` or `{"name": ..., "parameters": {...}}`, sometimes
with Python literals (`'single quotes'`, `True`, `None`). `parse_tool_calls` finds such calls, so that
none is lost to its formatting; a reply that merely contains JSON (a result quoted, an example) is not
taken for a call: the object must have a call's shape and name a known tool (or one of a known tool
family, so that the model hears that the name is wrong), and a reply that goes on to state its
`Answer:` after the JSON is an answer.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name", "action")
ARG_KEYS = ("arguments", "args", "parameters", "params", "input", "tool_input", "action_input", "kwargs")
TAGS = re.compile(r"<(tool_call|function_call|tool_use|toolcall)>\s*(.*?)\s*(?:</\1>|$)", re.DOTALL | re.IGNORECASE)
ATTRS = re.compile(r"""<(?:tool|function|tool_call|invoke)\s+name=["']([\w.-]+)["']\s+(?:arguments|args|parameters)"""
                   r"""=(?:"(.*?)"|'(.*?)')\s*/?>""", re.DOTALL | re.IGNORECASE)
ATTR_OBJECT = re.compile(r"""<(?:tool|function|tool_call|invoke)\s+name=["']([\w.-]+)["']\s+"""
                         r"""(?:arguments|args|parameters)=(?=\{)""", re.IGNORECASE)
ELEMENT = re.compile(r"""<(tool|function|tool_call|invoke)\b([^>]*)>(.*?)(?:</\1>|$)""", re.DOTALL | re.IGNORECASE)
NAME_ATTR = re.compile(r"""\bname=["']([\w.-]+)["']""")
CHILD = re.compile(r"<([A-Za-z_][\w.-]*)>(.*?)</\1>", re.DOTALL)
FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
ANSWER_LINE = re.compile(r"^\s*\**\s*(final\s+)?answer\s*\**\s*:", re.IGNORECASE | re.MULTILINE)


@dataclass
class TextCall:
    """A call read from a reply: the tool's name as resolved, its arguments, and where the JSON lay."""

    name: str
    args: dict[str, Any]
    start: int
    end: int
    written: str = ""          # the name as the model wrote it
    known: bool = True         # the name resolved to a known tool
    extras: dict[str, Any] = field(default_factory=dict)


def resolve_name(written: str, names: Iterable[str]) -> str | None:
    """The known tool `written` means: exact, case or separator slips (`EO-Statistics`), a missing family
    prefix (`statistics` for `eo_statistics`), or one unambiguous close spelling; None when unsure."""
    names = list(names)
    if written in names:
        return written
    norm = re.sub(r"[^a-z0-9]+", "_", written.strip().lower()).strip("_")
    norm = re.sub(r"^(functions?|tools?)_", "", norm)
    lowered = {n.lower(): n for n in names}
    if norm in lowered:
        return lowered[norm]
    suffix = [n for n in names if n.lower().split("_", 1)[-1] == norm]
    if len(suffix) == 1:
        return suffix[0]
    close = difflib.get_close_matches(norm, list(lowered), n=2, cutoff=0.88)
    if len(close) == 1 or (len(close) == 2 and difflib.SequenceMatcher(None, norm, close[0]).ratio()
                           - difflib.SequenceMatcher(None, norm, close[1]).ratio() > 0.05):
        return lowered[close[0]]
    return None


def _loads(text: str) -> Any:
    """JSON, else a Python literal (single quotes, True/False/None); raises ValueError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as exc:
        raise ValueError(str(exc)) from exc


def _objects(text: str, offset: int = 0) -> Iterator[tuple[int, int, Any]]:
    """Every top-level JSON object or array in `text` (balanced brackets, strings respected), parsed."""
    i, n = 0, len(text)
    while i < n:
        if text[i] not in "{[":
            i += 1
            continue
        end = balanced_end(text, i)
        if end is None:
            i += 1
            continue
        try:
            value = _loads(text[i:end])
        except ValueError:
            i += 1
            continue
        yield offset + i, offset + end, value
        i = end


def balanced_end(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at `start` (quotes respected), or None if it stays open."""
    depth, quote, escape = 0, "", False
    for j in range(start, len(text)):
        ch = text[j]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
    return None


def _call_shape(value: Any) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) when `value` is shaped like one tool call."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):          # OpenAI's own shape, sent as text
        return _call_shape(value["function"])
    name = next((value[k] for k in NAME_KEYS if isinstance(value.get(k), str) and value.get(k)), None)
    if name is None:
        return None
    present = [k for k in ARG_KEYS if k in value]
    if not present:
        other = set(value) - set(NAME_KEYS) - {"type", "id"}
        if other:
            return None   # {"name": "Landsat 8", "mean": 0.5}: a record, not a call
        return name, {}
    args = value[present[0]]
    if isinstance(args, str):
        try:
            args = _loads(args) if args.strip() else {}
        except ValueError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return name, args


def _candidates(text: str) -> Iterator[tuple[int, int, Any]]:
    seen: set[tuple[int, int]] = set()
    for m in ATTRS.finditer(text):      # <tool name="x" arguments="{...}"/>
        seen.add((m.start(), m.end()))
        args = m.group(2) if m.group(2) is not None else m.group(3)
        yield m.start(), m.end(), {"name": m.group(1), "arguments": args}
    for m in ATTR_OBJECT.finditer(text):     # <tool name="x" arguments={...} />: the object unquoted
        end = balanced_end(text, m.end())
        if end is not None:
            seen.add((m.start(), end))
            yield m.start(), end, {"name": m.group(1), "arguments": text[m.end():end]}
    for m in ELEMENT.finditer(text):    # <tool name="x"><arguments><scene>...</scene></arguments></tool>
        call = _element_call(m.group(2), m.group(3))
        if call is not None and not any(a <= m.start() < b for a, b in seen):
            seen.add((m.start(), m.end()))
            yield m.start(), m.end(), call
    for m in TAGS.finditer(text):
        for item in _objects(m.group(2), m.start(2)):
            seen.add(item[:2])
            yield m.start(), m.end(), item[2]
    for m in FENCE.finditer(text):
        for item in _objects(m.group(2), m.start(2)):
            if item[:2] not in seen:
                seen.add(item[:2])
                yield m.start(), m.end(), item[2]
    for item in _objects(text):
        if not any(a <= item[0] < b for a, b in seen):
            yield item


def _element_value(text: str) -> Any:
    """An XML element's text as a value: JSON or a Python literal when it is one, else the text itself."""
    text = text.strip()
    try:
        return _loads(text)
    except ValueError:
        return text


def _element_call(attrs: str, body: str) -> dict[str, Any] | None:
    """{"name", "arguments"} from a call written as XML elements: the name as an attribute or a `<name>` child,
    the arguments as one child element each inside `<arguments>` (or `<parameters>`, `<args>`), or as JSON
    there. None when the element holds no name (a `<tool_call>` wrapping JSON is read elsewhere)."""
    named = NAME_ATTR.search(attrs)
    children = {m.group(1).lower(): m.group(2) for m in CHILD.finditer(body)}
    name = named.group(1) if named else (children.get("name") or "").strip()
    if not name or not re.fullmatch(r"[\w.-]+", name):
        return None
    inner = next((children[k] for k in ("arguments", "parameters", "args") if k in children), None)
    if inner is None:
        return {"name": name, "arguments": {}} if named and not body.strip() else None
    if inner.strip().startswith("{"):
        return {"name": name, "arguments": inner.strip()}
    return {"name": name, "arguments": {m.group(1): _element_value(m.group(2)) for m in CHILD.finditer(inner)}}


def parse_tool_calls(text: str, names: Iterable[str], *, families: Iterable[str] = ()) -> list[TextCall]:
    """The tool calls written in `text`, in order; [] when it holds none.

    A call names a tool in `names` (after `resolve_name`), or one that starts with a family prefix in
    `families` (kept as written, marked unknown, so that the model can be told which names exist). A
    reply whose `Answer:` line follows its last call is an answer, and gives [].
    """
    if not text or ("{" not in text and "[" not in text and "<" not in text):
        return []
    names = list(names)
    prefixes = tuple(f"{f}_" for f in families)
    calls: list[TextCall] = []
    for start, end, value in _candidates(text):
        items = value if isinstance(value, list) else [value]
        for item in items:
            shape = _call_shape(item)
            if shape is None:
                continue
            written, args = shape
            name = resolve_name(written, names)
            if name is not None:
                calls.append(TextCall(name, args, start, end, written=written))
            elif prefixes and written.lower().startswith(prefixes):
                calls.append(TextCall(written, args, start, end, written=written, known=False))
    if not calls:
        return []
    last = max(c.end for c in calls)
    if ANSWER_LINE.search(text[last:]):
        return []
    return calls


def prose(text: str, calls: list[TextCall]) -> str:
    """`text` without the spans its calls were read from (and without empty fences left behind)."""
    out, pos = [], 0
    for a, b in sorted({(c.start, c.end) for c in calls}):
        if a >= pos:
            out.append(text[pos:a])
            pos = b
    out.append(text[pos:])
    rest = "".join(out)
    rest = re.sub(r"```[A-Za-z_]*\s*```", "", rest)
    rest = re.sub(r"\[TOOL_CALLS\]|<\|python_tag\|>", "", rest)
    return rest.strip()
