"""Turns each family's `ToolSpec`s into MCP tools.

The tool functions in `tools/` know nothing of MCP. Here each one is wrapped so that:
its schema comes from its own type hints (minus the injected `progress` and `llm` parameters), with
`additionalProperties: false`, and a misspelt or missing argument gets an error naming the known ones;
CPU-bound work runs in a worker thread, heavy tools and light ones in separate pools, with a bounded
queue for heavy work that answers `busy` when full; a cancel marks the call's `Progress` cancelled and
waits for the thread to stop at its next block; progress goes to the client as MCP progress
notifications; a `ResearchError` becomes an error result carrying its message and fix; any other
exception becomes a generic error result.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import difflib
import functools
import importlib
import inspect
import json
import logging
import pkgutil
import re
import sys
import threading
import time
import typing
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, ToolAnnotations
from mcp_types import InputRequiredResult
from pydantic import BaseModel, Field, RootModel, ValidationError

import tools
from server.jobs import pin_current_call, progress_target, run_call
from server.links import attach_outputs
from server.sampling import RoundSampling
from server.schemas import portable
from tools.errors import Busy, Cancelled, LimitExceeded, NotFound, ResearchError
from tools.llm import ChatModel
from tools.paths import maybe_sweep
from tools.progress import Progress, running
from tools.settings import get_settings
from tools.spec import ToolSpec

logger = logging.getLogger("research_mcp")

INJECTED = ("progress", "llm")
LLMFactory = Callable[[Context], ChatModel | None]
SLOW_STOP_S = 1.0
INTERRUPT_AFTER_S = 0.3


# ---------------------------------------------------------------------------------------------- catalogue


def family_names() -> list[str]:
    """Every `tools/<family>/` package that declares a `catalog` module, sorted."""
    names = []
    for info in pkgutil.iter_modules(tools.__path__):
        if info.ispkg and importlib.util.find_spec(f"tools.{info.name}.catalog") is not None:
            names.append(info.name)
    return sorted(names)


def enabled_families(families: list[str] | None = None) -> list[str]:
    """`families`, else RESEARCH_MCP_FAMILIES, else every family; unknown names are refused with the known ones."""
    known = family_names()
    chosen = list(families) if families else list(get_settings().families) or known
    for name in chosen:
        if name not in known:
            err = NotFound(f"Unknown tool family {name!r}. Known: {', '.join(known)}.",
                           hint="Set RESEARCH_MCP_FAMILIES to a comma-separated subset, e.g. eo,graph.")
            close = difflib.get_close_matches(name, known, n=1)
            if close:
                err = NotFound(err.message, hint=f"Did you mean {close[0]!r}? {err.hint}")
            raise err
    return chosen


def load_specs(families: list[str] | None = None) -> list[ToolSpec]:
    """The `ToolSpec`s of the given families (by default those RESEARCH_MCP_FAMILIES enables), in catalogue order."""
    specs: list[ToolSpec] = []
    for fam in enabled_families(families):
        module = importlib.import_module(f"tools.{fam}.catalog")
        specs.extend(module.TOOLS)
    return specs


def annotations_for(spec: ToolSpec) -> ToolAnnotations:
    """The tool's MCP hints. readOnlyHint and idempotentHint are left out where false, the protocol's default for
    both; destructiveHint and openWorldHint are always stated (their default is true)."""
    return ToolAnnotations(
        read_only_hint=spec.read_only or None,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent or None,
        open_world_hint=spec.open_world,
    )


def _error_text(exc: ResearchError) -> str:
    return f"[{exc.kind}] {exc}"


# ---------------------------------------------------------------------------------------------- capacity


@dataclass
class Capacity:
    """Worker pools of one event loop: heavy calls, light calls, and the threads both run on."""

    heavy: anyio.CapacityLimiter
    light: anyio.CapacityLimiter
    threads: anyio.CapacityLimiter
    heavy_queue: int
    heavy_pending: int = 0

    @classmethod
    def from_settings(cls) -> Capacity:
        s = get_settings()
        return cls(heavy=anyio.CapacityLimiter(s.heavy_workers), light=anyio.CapacityLimiter(s.light_workers),
                   threads=anyio.CapacityLimiter(s.heavy_workers + s.light_workers), heavy_queue=s.heavy_queue)

    @contextlib.asynccontextmanager
    async def slot(self, heavy: bool, name: str) -> AsyncIterator[None]:
        """Hold a heavy or light slot for the block; `Busy` when the heavy queue is full."""
        if not heavy:
            async with self.light:
                yield
            return
        workers = int(self.heavy.total_tokens)
        if self.heavy_pending >= workers + self.heavy_queue:
            raise Busy(
                f"The server is busy: {workers} heavy calls are running and {self.heavy_queue} are waiting, "
                f"so {name} was not queued.",
                hint="Retry in a little while (after other calls finish), or ask the operator to raise "
                "RESEARCH_MCP_HEAVY_WORKERS or RESEARCH_MCP_HEAVY_QUEUE.",
            )
        self.heavy_pending += 1
        try:
            async with self.heavy:
                yield
        finally:
            self.heavy_pending -= 1


_capacities: weakref.WeakKeyDictionary[Any, Capacity] = weakref.WeakKeyDictionary()


def capacity() -> Capacity:
    """The pools of the running event loop (each loop gets its own, read from the settings)."""
    loop = asyncio.get_running_loop()
    cap = _capacities.get(loop)
    if cap is None:
        cap = _capacities[loop] = Capacity.from_settings()
    return cap


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_memory() -> bool:
    """Give freed heap pages back to the OS (glibc `malloc_trim`); False where there is no such call."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


# ---------------------------------------------------------------------------------------------- schemas


def _compact(schema: Any) -> Any:
    """The schema without what the client's model does not need and what validates the same without it.

    Dropped: titles, `default: null`, empty `items: {}`, `additionalProperties: true`, and the description of a
    `$defs` model (the argument that holds it describes it).
    """
    if isinstance(schema, list):
        return [_compact(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" or (key == "default" and value is None) or (key == "items" and value == {}):
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _compact(sub) for name, sub in value.items()}
        elif key == "$defs" and isinstance(value, dict):
            out[key] = {name: {k: v for k, v in _compact(sub).items() if k != "description"}
                        for name, sub in value.items()}
        else:
            out[key] = _compact(value)
    return out


def _refs(schema: Any) -> list[str]:
    """The `$defs` names that `schema` refers to, once per reference."""
    if isinstance(schema, list):
        return [r for x in schema for r in _refs(x)]
    if not isinstance(schema, dict):
        return []
    own = [schema["$ref"].rsplit("/", 1)[-1]] if isinstance(schema.get("$ref"), str) else []
    return own + [r for key, value in schema.items() if key != "$ref" for r in _refs(value)]


def _inline_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each `$defs` model used once written in place (its description dropped, as in `_compact`).

    A model referred to twice, or one that refers to others, stays in `$defs`.
    """
    defs = dict(schema.get("$defs") or {})
    body = {k: v for k, v in schema.items() if k != "$defs"}
    counts: dict[str, int] = {}
    for name in _refs([body, defs]):
        counts[name] = counts.get(name, 0) + 1
    once = {n: {k: v for k, v in d.items() if k != "description"} for n, d in defs.items()
            if counts.get(n) == 1 and not _refs(d)}

    def put(s: Any) -> Any:
        if isinstance(s, list):
            return [put(x) for x in s]
        if not isinstance(s, dict):
            return s
        name = s["$ref"].rsplit("/", 1)[-1] if isinstance(s.get("$ref"), str) else None
        if name in once and set(s) == {"$ref"}:
            return once[name]
        return {k: put(v) for k, v in s.items()}

    out = put(body)
    kept = {n: put(d) for n, d in defs.items() if n not in once}
    if kept:
        out["$defs"] = kept
    return out


def _shallow_type(prop: dict[str, Any]) -> dict[str, Any]:
    """A top-level property's JSON type only (a relaxation: anything the full schema accepts, this accepts)."""
    kinds: set[str] = set()

    def collect(s: Any) -> bool:
        if not isinstance(s, dict) or not s:
            return False
        if "$ref" in s:
            kinds.add("object")
            return True
        t = s.get("type")
        if isinstance(t, str):
            kinds.add(t)
            return True
        if isinstance(t, list):
            kinds.update(t)
            return True
        for key in ("anyOf", "oneOf"):
            if key in s:
                return all(collect(x) for x in s[key])
        return False

    if not collect(prop):
        return {}
    if "integer" in kinds and "number" in kinds:
        kinds.discard("integer")
    return {"type": kinds.pop()} if len(kinds) == 1 else {"type": sorted(kinds)}


def shallow_output_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The published output schema: the result's top-level field names and JSON types.

    The full nested schema of every result would more than double the size of `tools/list`; the field
    meanings are in each tool's description, and the result itself is validated on the server against
    the full model.
    """
    if schema is None:
        return None
    props = schema.get("properties")
    if not isinstance(props, dict):
        return {"type": "object"}
    return {"type": "object", "properties": {name: _shallow_type(p) for name, p in props.items()}}


def _example_value(name: str, prop: dict[str, Any]) -> Any:
    if "enum" in prop:
        return prop["enum"][0]
    if "default" in prop and prop["default"] is not None:
        return prop["default"]
    t = prop.get("type")
    t = next((x for x in t if x != "null"), None) if isinstance(t, list) else t
    if t == "integer":
        return int(prop.get("minimum", 1))
    if t == "number":
        return float(prop.get("minimum", 1.0))
    if t == "boolean":
        return True
    if t == "array":
        return [_example_value(name, prop.get("items") or {})]
    chosen = [alt for alt in prop.get("anyOf") or [] if isinstance(alt, dict) and alt.get("type") != "null"]
    if chosen and "$ref" not in chosen[0]:
        return _example_value(name, chosen[0])
    if t == "object" or "$ref" in prop or "anyOf" in prop:
        return {}
    return f"<{name}>"


def example_call(name: str, schema: dict[str, Any]) -> str:
    """A call of tool `name` with its required arguments: the bundled example when there is one."""
    from server.examples import EXAMPLES

    for ex in EXAMPLES:
        if ex.tool == name:
            return f"{name}({json.dumps(ex.arguments)})"
    props = schema.get("properties", {})
    # nothing required: the tool takes one of its inputs that have no default (`smiles` or `path`)
    keys = schema.get("required") or [k for k, p in props.items() if p.get("default") is None][:1]
    args = {k: _example_value(k, props.get(k, {})) for k in keys}
    return f"{name}({json.dumps(args)})"


def _by_closeness(word: str, names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: (-difflib.SequenceMatcher(None, word.lower(), n.lower()).ratio(), n))


def argument_problem(name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with the argument names of a call (unknown or missing ones), or None."""
    props = list(schema.get("properties", {}))
    unknown = [k for k in arguments if k not in props]
    if unknown:
        parts = []
        for key in unknown:
            ranked = _by_closeness(key, props)
            close = difflib.get_close_matches(key, props, n=1, cutoff=0.6)
            guess = f" Did you mean {close[0]!r}?" if close else ""
            known = ", ".join(ranked) if ranked else "(none: call it with {})"
            parts.append(f"{name} has no argument {key!r}.{guess} Its arguments (closest first): {known}.")
        return "[invalid_input] " + " ".join(parts)
    missing = [k for k in schema.get("required", []) if k not in arguments]
    if missing:
        descs = "; ".join(f"{k}: {schema['properties'].get(k, {}).get('description', '')}".strip(": ")
                          for k in missing)
        return (f"[invalid_input] {name} needs the argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(k) for k in missing)} ({descs}). Example call: {example_call(name, schema)}")
    return None


def validation_text(name: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """A pydantic argument error as one line per argument, without the pydantic documentation links."""
    lines = []
    for err in exc.errors(include_url=False)[:8]:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        lines.append(f"argument {loc or '(arguments)'}: {err.get('msg', 'invalid')} (got {got})")
    more = exc.error_count() - len(lines)  # errors() above is the costly part: a bounded argument size bounds it
    if more > 0:
        lines.append(f"and {more} more")
    return (f"[invalid_input] {name}: " + "; ".join(lines)
            + f". Example call: {example_call(name, schema)}")


class ArgumentsRejected(Exception):  # carries the worded argument error through `Tool.run`
    """The worded validation error of a call's arguments."""


_CONTAINERS = (dict, list, tuple)


def count_values(value: Any, limit: int) -> int:
    """JSON values in `value` (containers and leaves), counting stops once past `limit`."""
    if not isinstance(value, _CONTAINERS):
        return 1
    count = 1
    stack = [value]
    while stack and count <= limit:
        v = stack.pop()
        items = v.values() if isinstance(v, dict) else v
        count += len(items)  # leaves are counted by their container's length; only containers are visited
        for item in items:
            if isinstance(item, _CONTAINERS):
                stack.append(item)
    return count


class ArgumentsModel(FuncMetadata):
    """Validates arguments and words a failure itself, so a million bad items never become a million lines."""

    tool_name: str = ""
    tool_schema: dict[str, Any] = Field(default_factory=dict)

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().validate_arguments(arguments_to_validate)
        except ValidationError as exc:
            raise ArgumentsRejected(validation_text(self.tool_name, exc, self.tool_schema)) from None


class ResearchTool(Tool):
    """A `Tool` that refuses unknown arguments with the known ones and words argument errors plainly.

    A call still running after the inline budget answers with a job handle and goes on as a job (`server.jobs`).
    """

    becomes_job: ClassVar[bool] = True

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        problem = argument_problem(self.name, self.parameters, arguments)
        if problem:
            raise ToolError(problem)
        limit = get_settings().max_argument_values
        size = count_values(arguments, limit)
        if size > limit:
            raise ToolError(f"[limit_exceeded] The arguments of {self.name} hold more than {limit:,} JSON values "
                            "(list items and object members). Pass a large input as a file path instead, or raise "
                            "the bound with the environment variable RESEARCH_MCP_MAX_ARGUMENT_VALUES.")

        async def call() -> Any:
            try:
                result = await Tool.run(self, arguments, context, convert_result=convert_result)
            except ToolError as exc:
                if isinstance(exc.__cause__, ArgumentsRejected):  # the arguments, not the tool body
                    raise ToolError(str(exc.__cause__)) from None
                raise
            if isinstance(result, CallToolResult):  # its output files as resource links, its pictures inline
                result = await anyio.to_thread.run_sync(attach_outputs, result)
            return result

        if not (convert_result and self.becomes_job):
            return await call()
        return await run_call(self.name, arguments, context, call)

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        # Not published: the results' full schemas would more than double `tools/list`. Each result still carries
        # structured content, validated on the server against the full model; the description says what returns.
        # A schema published here must pass through `server.jobs.with_job_handle`: any call may answer with a handle.
        return None


# Stands in for the output schema of a tool returning a plain pydantic model: the SDK returns structured content
# (validated against the model) only when a schema is set, and `ResearchTool` publishes none, so deriving the full
# schema of every result at start-up (about a third of the time it takes to build the tools) would be wasted.
_UNPUBLISHED_OUTPUT = {"type": "object"}


def result_model(fn: Callable[..., Any]) -> type[BaseModel] | None:
    """The pydantic model `fn` returns (an `InputRequiredResult` arm dropped), or None for any other return type."""
    ret = typing.get_type_hints(fn).get("return")
    arms = [a for a in typing.get_args(ret) if a is not InputRequiredResult] if typing.get_args(ret) else [ret]
    model = arms[0] if len(arms) == 1 else None
    if isinstance(model, type) and issubclass(model, BaseModel) and not issubclass(model, RootModel):
        return model
    return None


def build_tool(spec: ToolSpec, llm_factory: LLMFactory) -> ResearchTool:
    """The MCP tool of `spec`, with a strict, compact input schema."""
    fn = adapt(spec, llm_factory)
    model = result_model(fn)
    tool = ResearchTool.from_function(fn, name=spec.name, title=spec.title, annotations=annotations_for(spec),
                                      structured_output=False if model is not None else None)
    meta = tool.fn_metadata
    if model is not None:
        meta = FuncMetadata(arg_model=meta.arg_model, output_schema=_UNPUBLISHED_OUTPUT, output_model=model)
    return strict_arguments(tool, meta)


def strict_arguments(tool: ResearchTool, meta: FuncMetadata) -> ResearchTool:
    """`tool` with a compact input schema that refuses unknown arguments, and argument errors worded plainly."""
    # Unknown top-level arguments are refused by `ResearchTool.run` before validation, so the SDK's argument model
    # and the schema it derived serve as they are: a stricter model copy would cost a second schema build per tool.
    schema = _compact(portable(_inline_defs(tool.parameters)))
    schema["additionalProperties"] = False
    tool.parameters = schema
    tool.fn_metadata = ArgumentsModel(arg_model=meta.arg_model, output_schema=meta.output_schema,
                                      output_model=meta.output_model, wrap_output=meta.wrap_output,
                                      tool_name=tool.name, tool_schema=schema)
    return tool


# ---------------------------------------------------------------------------------------------- calls


def adapt(spec: ToolSpec, llm_factory: LLMFactory) -> Callable[..., Any]:
    """An async function with the tool's public signature plus an MCP `Context` parameter."""
    fn = spec.fn
    hints = typing.get_type_hints(fn, include_extras=True)
    sig = inspect.signature(fn)
    wants = {name: name in sig.parameters for name in INJECTED}
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in sig.parameters.values()
        if p.name not in INJECTED
    ]
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    is_async = inspect.iscoroutinefunction(fn)
    heavy = getattr(spec, "heavy", False)

    async def call(**kwargs: Any) -> Any:
        ctx: Context = kwargs.pop("ctx")
        started = time.perf_counter()
        try:
            if wants["llm"]:
                kwargs["llm"] = llm_factory(ctx)
            cap = capacity()
            reporter = progress_target(ctx)  # the call's job while it runs as one, which passes progress on
            async with cap.slot(heavy or False, fn.__name__):
                if is_async and isinstance(kwargs.get("llm"), RoundSampling):
                    pin_current_call()  # rounds of the client's model need this request: never a job
                    result = await _call_in_rounds(fn, kwargs, ctx, wants["progress"])
                    if isinstance(result, InputRequiredResult):
                        return result
                elif is_async:
                    result = await _call_async(fn, kwargs, reporter, wants["progress"])
                else:
                    result = await _call_in_thread(fn, kwargs, reporter, wants["progress"], cap, heavy)
            _check_size(fn.__name__, result)
            logger.info("tool %s finished in %.3f s", fn.__name__, time.perf_counter() - started)
            if not spec.read_only:
                await anyio.to_thread.run_sync(maybe_sweep, limiter=cap.threads)
            return result
        except ResearchError as exc:
            raise ToolError(_error_text(exc)) from exc
        except (ToolError, anyio.get_cancelled_exc_class()):
            raise
        except Exception as exc:
            logger.exception("tool %s failed unexpectedly", fn.__name__)
            raise ToolError(
                f"[internal_error] {fn.__name__} failed unexpectedly ({type(exc).__name__}). This is a fault in "
                "the tool, not in the arguments; the server keeps serving, and its log has the details."
            ) from exc

    call.__name__ = fn.__name__
    call.__qualname__ = fn.__qualname__
    doc = inspect.getdoc(fn) or ""
    call.__doc__ = described_with_bounds(fn.__name__.split("_")[0], doc)
    returns = hints.get("return", sig.return_annotation)
    if wants["llm"] and is_async:  # the client's model may be lent in InputRequiredResult rounds
        returns = returns | InputRequiredResult
    call.__signature__ = sig.replace(parameters=params, return_annotation=returns)
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": returns}
    return call


async def _call_in_rounds(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Context,
                          wants_progress: bool) -> Any:
    """Run an LLM tool for one round of a >= 2026-07-28 sampling exchange (see `RoundSampling`)."""
    model: RoundSampling = kwargs["llm"]
    model.absorb(ctx.request_state, ctx.input_responses)
    outcome: list[Any] = []

    async def body() -> None:
        outcome.append(await _call_async(fn, kwargs, ctx, wants_progress))
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(body)
        while True:
            await anyio.sleep(0.05)
            if model.quiet():
                tg.cancel_scope.cancel()
                break
    return outcome[0] if outcome else model.input_required()


def _check_size(name: str, result: Any) -> None:
    """Refuse results too large for a client to take in one message; the tool should write a file."""
    limit = get_settings().max_result_chars
    size = len(result.model_dump_json()) if hasattr(result, "model_dump_json") else len(str(result))
    if size > limit:
        raise LimitExceeded(f"The result of {name} ({size:,} characters)", size, limit,
                            "RESEARCH_MCP_MAX_RESULT_CHARS")


def _short_number(v: float) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        for div, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
            if v >= div and v % div == 0:
                return f"{v // div}{suffix}"
        return str(v)
    return f"{v:g}"


def bounds_text(family: str, doc: str | None = None) -> str:
    """The family's caller-facing bounds (its max_/min_ settings) as one short line for a tool description.

    With `doc`, only the bounds that text names (`max_nodes`, or `RESEARCH_MCP_GRAPH__MAX_NODES`) are listed,
    so each tool states the values of the bounds its own description says apply to it.
    """
    limits = getattr(get_settings(), family, None)
    if limits is None or not hasattr(limits, "model_dump"):
        return ""
    named = doc.lower() if doc is not None else None
    items = [f"{k}={_short_number(v)}" for k, v in limits.model_dump().items()
             if k.startswith(("max_", "min_")) and isinstance(v, int | float)
             and (named is None or re.search(rf"(?:\b|__){k}\b", named))]
    if not items:
        return ""
    return f"Bounds (RESEARCH_MCP_{family.upper()}__<NAME>): {', '.join(items)}."


_BOUNDED_BY = re.compile(r"\s*Bounded by ([\w\s,/]+)\.$")


def described_with_bounds(family: str, doc: str) -> str:
    """`doc` with each paragraph on one line, and the line of the bounds it names; a closing "Bounded by max_a and
    max_b." gives way to that line, which names the same bounds with their values."""
    doc = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
    line = bounds_text(family, doc)
    if not line:
        return doc
    closing = _BOUNDED_BY.search(doc)
    if closing and all(f"{name}=" in line for name in re.findall(r"\b(?:max|min)_\w+", closing.group(1))):
        doc = doc[: closing.start()]
    return f"{doc}\n\n{line}" if doc else line


async def _call_in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Any, wants_progress: bool,
                          cap: Capacity, heavy: bool) -> Any:
    """Run `fn` in a worker thread; a cancel marks its `Progress` cancelled and waits for the thread to stop.

    Progress goes to `ctx.report_progress` (`ctx` is the request's `Context`, or the call's job)."""

    def send(done: float, total: float | None, message: str | None) -> None:
        anyio.from_thread.run(functools.partial(ctx.report_progress, done, total, message))

    progress = Progress(send if wants_progress else None)
    if wants_progress:
        kwargs["progress"] = progress
    cancelled_at: list[float] = []
    finished = False
    worker = _Worker()

    def target() -> Any:
        worker.start()
        try:
            try:
                progress.check()  # cancelled while the call waited for its thread
                with running(progress):
                    return fn(**kwargs)
            finally:
                worker.finish()
                if heavy:
                    release_memory()
        except Interrupted:
            raise Cancelled("The operation was cancelled by the caller.") from None

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            if not finished:  # the request was cancelled: ask the thread to stop at its next block
                cancelled_at.append(time.perf_counter())
                progress.cancel()
                worker.interrupt_after(INTERRUPT_AFTER_S)

    outcome: Any = None
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            with anyio.CancelScope(shield=True):
                outcome = await anyio.to_thread.run_sync(target, limiter=cap.threads)
        except Exception as exc:  # re-raised outside the task group, so it is not wrapped in an ExceptionGroup
            error = exc
        finally:
            finished = True
            tg.cancel_scope.cancel()
    if cancelled_at:
        stopped = time.perf_counter() - cancelled_at[0]
        if stopped > SLOW_STOP_S:
            logger.warning("tool %s took %.1f s to stop after a cancel", fn.__name__, stopped)
        await anyio.lowlevel.checkpoint()  # deliver the cancel now that the thread has stopped
    if error is not None:
        raise error
    return outcome


class Interrupted(BaseException):  # not an Exception, so a tool's `except Exception` cannot swallow it
    """Raised inside a worker thread that did not stop at a progress check soon after a cancel."""


class _Worker:
    """The thread running one call, so that a cancel the tool does not check for can still stop it.

    `interrupt_after` raises `Interrupted` in that thread (CPython's `PyThreadState_SetAsyncExc`, which
    takes effect at its next Python instruction) if the call is still running after the grace period.
    A thread inside one long C call (a single numpy or torch operation) stops when that call returns.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ident: int | None = None
        self._done = False

    def start(self) -> None:
        with self._lock:
            self._ident = threading.get_ident()

    def finish(self) -> None:
        with self._lock:
            self._done = True

    def interrupt_after(self, seconds: float) -> None:
        timer = threading.Timer(seconds, self.interrupt)
        timer.daemon = True
        timer.start()

    def interrupt(self) -> bool:
        """Raise `Interrupted` in the thread unless its call has ended; retried later while it imports."""
        with self._lock:  # the thread cannot leave this call (and pick up another) while we hold it
            if self._done or self._ident is None:
                return False
            frame = sys._current_frames().get(self._ident)
            if _importing(frame):
                # an exception inside a module's initialisation can leave a C extension half-registered
                self.interrupt_after(0.05)
                return False
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._ident), ctypes.py_object(Interrupted))
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"
            logger.warning("a cancelled tool call did not stop at a progress check within %.1f s; interrupting it "
                           "at %s", INTERRUPT_AFTER_S, where)
            return True


def _importing(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


async def _call_async(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Any, wants_progress: bool) -> Any:
    if not wants_progress:
        progress = Progress()
        try:
            with running(progress):
                return await fn(**kwargs)
        except anyio.get_cancelled_exc_class():
            progress.cancel()
            raise
    outcome: Any = None
    error: Exception | None = None
    async with anyio.create_task_group() as tg:

        def send(done: float, total: float | None, message: str | None) -> None:
            tg.start_soon(ctx.report_progress, done, total, message)

        progress = Progress(send)
        kwargs["progress"] = progress
        try:
            with running(progress):
                outcome = await fn(**kwargs)
        except anyio.get_cancelled_exc_class():
            progress.cancel()
            raise
        except Exception as exc:  # re-raised outside the task group, so it is not wrapped in an ExceptionGroup
            error = exc
    if error is not None:
        raise error
    return outcome
