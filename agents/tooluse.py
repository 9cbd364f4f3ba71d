"""How the ReAct agent keeps a model, small or large, on the tools: `ToolUse`, a LangChain agent middleware.

Every MCP tool is registered with the agent, so any tool the model names can run; each model call binds
the compact schemas of a few (`agents.selection.select_tools`: from the question, plus the tools the run
has used), while the system prompt lists all of them in one line each. Around each model call:

- a reply that writes its call as text (a ```json fence, bare JSON, `<tool_call>` tags...) becomes a
  real tool call (`agents.toolcalls`), the first one only when it writes several (the later ones guess
  at files the first has not written yet); a misspelt tool name is resolved to the tool it means;
- a reply cut at the token cap in the middle of a call (a graph's edge list written out) is asked for
  again with four times the cap;
- a call whose arguments are the tool's schema (`type`, `properties`) is not run: the model is shown
  values to send, from the argument descriptions' examples;
- one value where the schema asks for a list becomes a one-item list, a number written as a string a
  number (`coerce_args`);
- a reply that calls no tool before any tool has run is asked once more, with a reminder to call one;
- a call that repeats an earlier one (same tool, same arguments) is not run again: the model is told
  so once, and if it repeats again the run ends with an answer written from the results it has;
- at the step limit the model is asked for its answer with no tools bound, so a run always ends with
  an answer rather than an exhausted recursion limit;
- a final answer whose number no tool result holds (to the digits it gives) is asked for once more, from
  the results, with that said.

Around each tool call: an unknown tool gets a "did you mean" reply listing the family's tools; a
tool's error goes back with the server's message (its own "did you mean") and a request to fix the
arguments and call again; a result that is JSON is sent to the model without indentation.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from agents.choices import with_choice
from agents.connection import ToolBox
from agents.selection import ToolIndex, family, named_tools, openai_tool, select_tools, words
from agents.shorten import fit_result
from agents.toolcalls import balanced_end, parse_tool_calls, prose, resolve_name
from agents.trace import _text

TEXT_CALL_PREFIX = "call_txt_"
SCHEMA_CHARS = 3200          # the bound schemas of a first prompt, about 900 tokens
LONG_CALL_FACTOR = 4         # a call cut at the reply cap is asked for again with this many times the cap
REPEAT_NOTICE = "Repeated call:"
UNKNOWN_NOTICE = "Unknown tool:"
SCHEMA_NOTICE = "Schema sent as arguments:"
FIX_HINT = "Fix the arguments and call the tool again."
RETRY = ("The tool call failed; its error says why. Fix the arguments, or first call the tool that makes what "
         "this one needs, and reply with that call as JSON.")
NEXT = ("The question's steps also use {tools}. Call {first} next as JSON, or, if the results already answer "
        "the question, reply with a last line `Answer: <value>`.")
NUDGE = ("You have not called a tool yet, and the answer must come from the tools. Reply with one tool call "
         "now, as JSON: {\"name\": \"<tool>\", \"arguments\": {...}}.")
UNSUPPORTED = "The value {value} is in none of the tool results above. "
FINAL = ("Stop calling tools. From the tool results above, reply with one short sentence and a last line "
         "`Answer: <value>`.")


ANSWER_LINE = re.compile(r"^[ \t*]*(final )?answer[ \t*]*:", re.IGNORECASE | re.MULTILINE)
ANSWER_LINE_VALUE = re.compile(r"^[ \t*]*(?:final )?answer[ \t*]*:(.*)$", re.IGNORECASE | re.MULTILINE)
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
NAMED = re.compile(r"\b[A-Z][A-Za-z]*[ -]$")
STOPS = ("<tool_response>", "</tools>")
ECHO = re.compile(r"</?(tools|tool_call|tool_response|function_call)>", re.IGNORECASE)


def call_key(name: str, args: Any) -> str:
    return name + " " + json.dumps(args, sort_keys=True, default=str)


def current_turn(messages: list[AnyMessage]) -> tuple[str, list[AnyMessage]]:
    """The last human message's text, and the messages since it (the current question's run)."""
    for i in range(len(messages) - 1, -1, -1):
        if getattr(messages[i], "type", "") == "human":
            return _text(messages[i].content), list(messages[i + 1:])
    return "", list(messages)


def compact_result(text: str) -> str:
    """A JSON tool result without indentation (fewer tokens, same content); other text unchanged."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return text
    try:
        return json.dumps(json.loads(stripped), ensure_ascii=False)
    except json.JSONDecodeError:
        return text


class ToolUse(AgentMiddleware):
    """Tool selection per model call, lenient call reading, repeat and error handling (module docstring)."""

    def __init__(self, box: ToolBox, *, k: int = 3, max_steps: int = 30, max_tokens: int | None = None,
                 result_chars: int | None = None) -> None:
        super().__init__()
        self.infos = dict(box.info)
        self.names = list(self.infos)
        self.families = sorted({family(n) for n in self.names})
        self.index = ToolIndex.build(self.infos)
        self.tool_words = frozenset(w for n in self.names for w in words(n))
        self._fitted: dict[tuple[str, str], dict[str, Any]] = {}
        self.k = k
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.result_chars = result_chars

    # what the run has done ------------------------------------------------------------------------------
    @staticmethod
    def _calls(turn: list[AnyMessage]) -> list[dict[str, Any]]:
        return [c for m in turn if getattr(m, "type", "") == "ai" for c in (getattr(m, "tool_calls", None) or [])]

    @staticmethod
    def _tool_messages(turn: list[AnyMessage]) -> list[ToolMessage]:
        return [m for m in turn if isinstance(m, ToolMessage)]

    def _ran(self, turn: list[AnyMessage]) -> list[ToolMessage]:
        """Tool results that came from a tool (not from this middleware's notices)."""
        return [m for m in self._tool_messages(turn) if m.name in self.infos
                and not _text(m.content).startswith((REPEAT_NOTICE, UNKNOWN_NOTICE, SCHEMA_NOTICE))]

    def schema(self, name: str, question: str) -> dict[str, Any]:
        """Tool `name`'s entry as bound for `question`: only the optional arguments the question cues
        (`agents.selection.fit_schema`); the same at every step of the question."""
        key = (name, question)
        if key not in self._fitted:
            self._fitted[key] = openai_tool(self.infos[name], question, self.tool_words)
        return self._fitted[key]

    def selected(self, question: str, turn: list[AnyMessage]) -> list[str]:
        """The tools to bind: the question's picks that fit `SCHEMA_CHARS` (the first always), then the
        tools used so far, whatever their size."""
        used = [c["name"] for c in self._calls(turn) if c["name"] in self.infos]
        picks = select_tools(question, self.infos, k=self.k, index=self.index)
        kept, size = [], 0
        for n in picks:
            size += len(json.dumps(self.schema(n, question)))
            if not kept or size <= SCHEMA_CHARS:
                kept.append(n)
        return kept + [n for n in dict.fromkeys(used) if n not in kept]

    # reading a reply ----------------------------------------------------------------------------------
    def read_calls(self, ai: AIMessage) -> AIMessage:
        """`ai` with its tool calls as the model meant them: the first call written as text read into
        `tool_calls`, misspelt names resolved, the same call given twice kept once."""
        calls = list(ai.tool_calls or [])
        content = ai.content
        if not calls:
            text = _text(ai.content)
            found = parse_tool_calls(text, self.names, families=self.families)
            if not found:
                return ai
            # the first call only: a model that writes its whole chain at once fills the later calls' inputs
            # (a file the first call writes) with guesses; one at a time, each sees the results before it
            calls = [{"name": c.name, "args": c.args, "id": TEXT_CALL_PREFIX + uuid.uuid4().hex[:12],
                      "type": "tool_call"} for c in found[:1]]
            content = prose(text, found)
        out, seen = [], set()
        for c in calls:
            name = resolve_name(c["name"], self.names) or c["name"]
            key = call_key(name, c.get("args", {}))
            if key in seen:
                continue
            seen.add(key)
            out.append({**c, "name": name})
        if out == list(ai.tool_calls or []) and content == ai.content:
            return ai
        return ai.model_copy(update={"content": content, "tool_calls": out, "invalid_tool_calls": []})

    # the model call -----------------------------------------------------------------------------------
    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        question, turn = current_turn(request.messages)
        steps = sum(1 for m in turn if getattr(m, "type", "") == "ai")
        if steps >= self.max_steps - 1:
            return await self.final_answer(request, handler, turn)
        names = self.selected(question, turn)
        settings = self.settings(request)
        messages = self.with_hint(request.messages, question)
        bound = request.override(tools=[self.schema(n, question) for n in names], model_settings=settings,
                                 messages=messages)
        response = await handler(bound)
        ai = self.read_calls(_last_ai(response))
        if not ai.tool_calls and self.cut_in_a_call(ai):
            cap = LONG_CALL_FACTOR * (self.max_tokens or 0)
            longer = bound.override(model_settings={**settings, "max_tokens": cap})
            response = await handler(longer)
            ai = self.read_calls(_last_ai(response))
        if not ai.tool_calls and not ai.invalid_tool_calls:
            ran = self._ran(turn)
            failed = bool(ran) and all(m.status == "error" for m in ran)
            called = {c["name"] for c in self._calls(turn)}
            missing = [n for n in named_tools(question, self.names) if n not in called]
            reminder = (NUDGE if not ran and not called else RETRY if failed
                        else NEXT.format(tools=", ".join(missing), first=missing[0]) if missing else None)
            if reminder:
                retry = await handler(bound.override(messages=[*messages, ai, HumanMessage(reminder)]))
                again = self.read_calls(_last_ai(retry))
                if again.tool_calls:
                    return _replace_ai(retry, again)
                if is_echo(_text(ai.content)) and not is_echo(_text(again.content)):
                    response, ai = retry, again
            if ran and is_echo(_text(ai.content)):     # the template's tags or a tool result copied back
                return await self.final_answer(request, handler, turn)
            if not ran:
                return _replace_ai(response, ai)
            final = self.with_answer_line(ai, turn, question)
            value = self.unsupported(_text(final.content), turn)
            if value is not None:                       # a number no tool gave: asked once to answer from them
                return await self.final_answer(request, handler, turn, UNSUPPORTED.format(value=value) + FINAL)
            return _replace_ai(response, final)
        if ai.tool_calls:
            done = {call_key(c["name"], c.get("args", {})) for c in self._calls(turn)}
            repeats = [c for c in ai.tool_calls if call_key(c["name"], c.get("args", {})) in done]
            told = any(_text(m.content).startswith(REPEAT_NOTICE) for m in self._tool_messages(turn))
            if repeats and told:
                return await self.final_answer(request, handler, turn)
        return _replace_ai(response, ai)

    def cut_in_a_call(self, ai: AIMessage) -> bool:
        """Whether the reply stopped at the token cap while writing a tool call (a graph's edge list written out
        runs past 256 tokens): it names a tool and has an object left open."""
        if not self.max_tokens or (ai.response_metadata or {}).get("finish_reason") != "length":
            return False
        text = _text(ai.content)
        start = text.find("{")
        return start >= 0 and balanced_end(text, start) is None and any(n in text for n in self.names)

    def with_answer_line(self, ai: AIMessage, turn: list[AnyMessage], question: str = "") -> AIMessage:
        """A final reply that states a tool result's number but no `Answer:` line gets one with that number
        (the last it states; `0.5306` is the result 0.530563... to the digits given). Numbers in names
        (`stated_numbers`) and in code do not count. On a question with range options, an answer line that
        states a number gets the letter of the option holding it (`agents.choices.with_choice`)."""
        text = _text(ai.content).strip()
        if not text or "```" in text or "{" in text:
            return ai
        if not ANSWER_LINE.search(text):
            results = {float(m.group(0)) for m in self._ran(turn) for m in NUMBER.finditer(_text(m.content))}
            held = [x for x in stated_numbers(text) if _rounds_to(x, results)]
            if not held:
                return ai
            text = f"{text}\nAnswer: {held[-1]}"
        text = with_choice(text, question)
        return ai if text == _text(ai.content).strip() else ai.model_copy(update={"content": text})

    def unsupported(self, text: str, turn: list[AnyMessage]) -> str | None:
        """The number a final reply answers with (its `Answer:` line's, else the last it states) when no tool
        result holds it to the digits given (`4.0000` for a standard deviation of 0.1154), else None. A letter
        or a text answer is not checked."""
        lines = ANSWER_LINE_VALUE.findall(text)
        stated = NUMBER.findall(lines[-1]) if lines else stated_numbers(text)
        if not stated:
            return None
        value = stated[0] if lines else stated[-1]
        results = {float(m.group(0)) for r in self._ran(turn) for m in NUMBER.finditer(_text(r.content))}
        return None if _rounds_to(value, results) else value

    def settings(self, request: ModelRequest) -> dict[str, Any]:
        """The call's settings: the reply cap, and stops where a small model starts copying the chat template
        (a tool result's `<tool_response>`, the tool list's `</tools>`) instead of writing its own reply."""
        return {**request.model_settings, "stop": list(STOPS),
                **({"max_tokens": self.max_tokens} if self.max_tokens else {})}

    def hint(self, question: str) -> str:
        """The line a question gets at every model call: the tools chosen for it, in the order they fit (none
        when the question names its tools itself)."""
        if named_tools(question, self.names):
            return ""
        picks = select_tools(question, self.infos, k=self.k, index=self.index)[:2]
        return f"\n\n(Tools that fit this question, in order: {', '.join(picks)}. Call one at a time.)" if picks else ""

    def with_hint(self, messages: list[AnyMessage], question: str) -> list[AnyMessage]:
        """`messages` with the hint after the current question: the same text at every step, so the prompt's
        prefix stays the same; the run's own record keeps the question as asked."""
        hint = self.hint(question)
        if not hint:
            return messages
        for i in range(len(messages) - 1, -1, -1):
            if getattr(messages[i], "type", "") == "human":
                asked = messages[i].model_copy(update={"content": _text(messages[i].content) + hint})
                return [*messages[:i], asked, *messages[i + 1:]]
        return messages

    async def final_answer(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
                           turn: list[AnyMessage], ask: str = FINAL) -> ModelResponse:
        """The model's answer from the results so far, asked with `ask` and no tool bound (given its `Answer:`
        line from the number it states, as any final reply is); if it still writes a call, an answer that quotes
        the last result."""
        settings = self.settings(request)
        response = await handler(request.override(tools=[], model_settings=settings,
                                                  messages=[*request.messages, HumanMessage(ask)]))
        ai = _last_ai(response)
        text = _text(ai.content).strip()
        if not is_echo(text) and not parse_tool_calls(text, self.names, families=self.families):
            answer = ai.model_copy(update={"tool_calls": [], "invalid_tool_calls": []})
            return _replace_ai(response, self.with_answer_line(answer, turn, current_turn(request.messages)[0]))
        ran = self._ran(turn)
        last = _text(ran[-1].content)[:1500] if ran else "no tool result"
        said = (f"The model did not state an answer. The last tool result ({ran[-1].name}): {last}" if ran
                else "The model did not state an answer, and no tool ran.")
        return _replace_ai(response, AIMessage(content=said, id=ai.id))

    # the tool call ------------------------------------------------------------------------------------
    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call = request.tool_call
        name = call["name"]
        if request.tool is None:
            return ToolMessage(self.unknown(name), name=name, tool_call_id=call["id"], status="error")
        _, turn = current_turn(list(request.state.get("messages", [])) if isinstance(request.state, dict) else [])
        key = call_key(name, call.get("args", {}))
        earlier = [m for m in turn if getattr(m, "type", "") == "ai"
                   and any(c["id"] != call["id"] and call_key(c["name"], c.get("args", {})) == key
                           for c in (m.tool_calls or []))]
        if earlier:
            return ToolMessage(f"{REPEAT_NOTICE} {name} was already called with these arguments; its result is "
                               "above. Do not call it again: call another tool, or answer from the results with a "
                               "last line `Answer: <value>`.", name=name, tool_call_id=call["id"], status="error")
        if is_schema_echo(call.get("args"), self.infos[name].input_schema if name in self.infos else None):
            return ToolMessage(self.schema_sent(name), name=name, tool_call_id=call["id"], status="error")
        fixed = coerce_args(call.get("args"), self.infos[name].input_schema if name in self.infos else None)
        if fixed != call.get("args"):
            call = {**call, "args": fixed}
            request = request.override(tool_call=call)
        result = await handler(request)
        if isinstance(result, ToolMessage):
            text = _text(result.content)
            if result.status == "error":
                if FIX_HINT not in text:
                    result.content = f"{text}\n{FIX_HINT}"
            else:
                compact = compact_result(text)
                if self.result_chars:
                    compact = fit_result(compact, self.result_chars)
                if compact != text:
                    result.content = compact
        return result

    def schema_sent(self, name: str) -> str:
        """The reply to a call whose arguments were the tool's schema: what to send instead, by example."""
        schema = self.infos[name].input_schema or {}
        props = schema.get("properties") or {}
        example = {k: example_value(props.get(k) or {}) for k in schema.get("required") or list(props)[:1]}
        return (f"{SCHEMA_NOTICE} {name} was sent its schema (type, properties) as its arguments, so it did not run. "
                f"Send the values themselves, for example {json.dumps(example)}.")

    def unknown(self, name: str) -> str:
        import difflib

        close = difflib.get_close_matches(name, self.names, n=3, cutoff=0.5)
        fam = family(name)
        same = [n for n in self.names if family(n) == fam]
        listing = f" The {fam}_ tools are: {', '.join(same)}." if same else \
            f" Tool names start with {', '.join(f + '_' for f in self.families)}."
        mean = f" Did you mean {', '.join(close)}?" if close else ""
        return f"{UNKNOWN_NOTICE} {name} is not a valid tool.{mean}{listing}"


def coerce_args(args: Any, schema: Any) -> Any:
    """`args` with the slips a small model makes against the schema mended where the intent is plain: one value
    where a list is asked for becomes a one-item list (`"smiles": "CCO"` for `["CCO"]`), a number written as a
    string where a number is asked for becomes that number. Anything else is left for the tool to judge."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(args, dict) or not isinstance(props, dict):
        return args
    out = dict(args)
    for key, value in args.items():
        prop = props.get(key)
        if not isinstance(prop, dict) or value is None:
            continue
        kinds = {alt.get("type") for alt in [prop, *(prop.get("anyOf") or [])] if isinstance(alt, dict)}
        if "array" in kinds and not isinstance(value, list | dict) and len(kinds - {"null"}) == 1:
            out[key] = [value]
        elif isinstance(value, str) and kinds & {"integer", "number"} and "string" not in kinds:
            try:
                number = float(value.strip())
            except ValueError:
                continue
            out[key] = int(number) if "integer" in kinds and number.is_integer() else number
    return out


def is_schema_echo(args: Any, schema: Any) -> bool:
    """Whether `args` is a JSON schema (`type` and `properties`) sent in place of values, for a tool that has no
    argument named `properties`."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    return (isinstance(args, dict) and isinstance(args.get("properties"), dict) and "type" in args
            and not (isinstance(props, dict) and "properties" in props))


def example_value(prop: dict[str, Any]) -> Any:
    """A value for an argument to show a model: the first example its description gives, else its first enum
    value, else a placeholder of its type."""
    m = re.search(r"e\.g\.,?\s*([^\s,;)]+)", str(prop.get("description", "")))
    if m:
        return m.group(1).rstrip(".")
    for alt in [prop, *(prop.get("anyOf") or [])]:
        if isinstance(alt, dict) and alt.get("enum"):
            return alt["enum"][0]
    kinds = {alt.get("type") for alt in [prop, *(prop.get("anyOf") or [])] if isinstance(alt, dict)}
    return 0 if kinds & {"integer", "number"} else [] if "array" in kinds else {} if "object" in kinds else "..."


def is_echo(text: str) -> bool:
    """A reply that says nothing of its own: empty once the chat template's tags are taken out, or a JSON
    object copied back (a tool result; a call would have been read as one)."""
    rest = ECHO.sub("", text or "").strip()
    return not rest or rest.startswith("{")


def stated_numbers(text: str) -> list[str]:
    """The numbers `text` states: not those inside a name (`landsat8`) or naming a thing after a capitalised
    word (`Landsat 8`, `Sentinel-2`, `Band 4`)."""
    return [m.group(0) for m in NUMBER.finditer(text) if not NAMED.search(text[:m.start()])]


def _rounds_to(stated: str, values: set[float]) -> bool:
    """Whether one of `values`, rounded to the decimals `stated` gives, is `stated`."""
    decimals = len(stated.split(".", 1)[1]) if "." in stated and "e" not in stated.lower() else 0
    x = float(stated)
    half = 0.5 * 10 ** -decimals
    return any(abs(v - x) <= half * (1 + 1e-9) for v in values)


def _last_ai(response: Any) -> AIMessage:
    result = response.result if isinstance(response, ModelResponse) else [response]
    for m in reversed(result):
        if isinstance(m, AIMessage):
            return m
    return AIMessage(content="")


def _replace_ai(response: Any, ai: AIMessage) -> ModelResponse:
    if not isinstance(response, ModelResponse):
        return ModelResponse(result=[ai])
    result = list(response.result)
    for i in range(len(result) - 1, -1, -1):
        if isinstance(result[i], AIMessage):
            result[i] = ai
            return ModelResponse(result=result, structured_response=response.structured_response)
    return ModelResponse(result=[*result, ai], structured_response=response.structured_response)
