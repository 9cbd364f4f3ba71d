"""Turns each family's `ToolSpec`s into MCP tools.

The tool functions in `tools/` know nothing of MCP. Here each one is wrapped so that:
its schema comes from its own type hints (minus the injected `progress` and `llm` parameters);
CPU-bound work runs in a worker thread and stops at the next block when the client cancels;
progress goes to the client as MCP progress notifications; a `ResearchError` becomes an error
result carrying its message and fix; any other exception becomes a generic error result.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import pkgutil
import time
import typing
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

import tools
from tools.errors import LimitExceeded, ResearchError
from tools.llm import ChatModel
from tools.progress import Progress
from tools.settings import get_settings
from tools.spec import ToolSpec

logger = logging.getLogger("research_mcp")

INJECTED = ("progress", "llm")
LLMFactory = Callable[[Context], ChatModel | None]


def family_names() -> list[str]:
    """Every `tools/<family>/` package that declares a `catalog` module, sorted."""
    names = []
    for info in pkgutil.iter_modules(tools.__path__):
        if info.ispkg and importlib.util.find_spec(f"tools.{info.name}.catalog") is not None:
            names.append(info.name)
    return sorted(names)


def load_specs(families: list[str] | None = None) -> list[ToolSpec]:
    """The `ToolSpec`s of the given families (all by default), in catalogue order."""
    specs: list[ToolSpec] = []
    for fam in families or family_names():
        module = importlib.import_module(f"tools.{fam}.catalog")
        specs.extend(module.TOOLS)
    return specs


def annotations_for(spec: ToolSpec) -> ToolAnnotations:
    return ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent,
        open_world_hint=spec.open_world,
    )


def _error_text(exc: ResearchError) -> str:
    return f"[{exc.kind}] {exc}"


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

    async def call(**kwargs: Any) -> Any:
        ctx: Context = kwargs.pop("ctx")
        started = time.perf_counter()
        try:
            if wants["llm"]:
                kwargs["llm"] = llm_factory(ctx)
            if is_async:
                result = await _call_async(fn, kwargs, ctx, wants["progress"])
            else:
                result = await _call_in_thread(fn, kwargs, ctx, wants["progress"])
            _check_size(fn.__name__, result)
            logger.info("tool %s finished in %.3f s", fn.__name__, time.perf_counter() - started)
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
    call.__doc__ = "\n\n".join(filter(None, [inspect.getdoc(fn), bounds_text(fn.__name__.split("_")[0])]))
    call.__signature__ = sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": hints.get("return")}
    return call


def _check_size(name: str, result: Any) -> None:
    """Refuse results too large for a client to take in one message; the tool should write a file."""
    limit = get_settings().max_result_chars
    size = len(result.model_dump_json()) if hasattr(result, "model_dump_json") else len(str(result))
    if size > limit:
        raise LimitExceeded(f"The result of {name} ({size:,} characters)", size, limit,
                            "RESEARCH_MCP_MAX_RESULT_CHARS")


def bounds_text(family: str) -> str:
    """The family's bounds as a line for tool descriptions."""
    limits = getattr(get_settings(), family, None)
    if limits is None or not hasattr(limits, "model_dump"):
        return ""
    prefix = f"RESEARCH_MCP_{family.upper()}__"
    items = ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in limits.model_dump().items())
    return f"Bounds: {items} (set with {prefix}<NAME>)."


async def _call_in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Context, wants_progress: bool) -> Any:
    progress = None
    if wants_progress:

        def send(done: float, total: float | None, message: str | None) -> None:
            anyio.from_thread.run(functools.partial(ctx.report_progress, done, total, message))

        progress = Progress(send)
        kwargs["progress"] = progress
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, **kwargs), abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if progress is not None:
            progress.cancel()
        raise


async def _call_async(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Context, wants_progress: bool) -> Any:
    if not wants_progress:
        return await fn(**kwargs)
    async with anyio.create_task_group() as tg:

        def send(done: float, total: float | None, message: str | None) -> None:
            tg.start_soon(ctx.report_progress, done, total, message)

        kwargs["progress"] = Progress(send)
        try:
            return await fn(**kwargs)
        except ResearchError as exc:  # raised outside the task group, so it is not wrapped in an ExceptionGroup
            error = exc
    raise error
