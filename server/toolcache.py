"""The tools' published form kept on disk, so that a server starts without importing the tool modules.

Deriving the argument models and input schemas of every tool, and importing the modules that define them,
takes most of a cold start. The published form of each tool (name, title, docstring, compact input schema,
hints) is written once to `<RESEARCH_MCP_LLM_MODEL_CACHE>/schemas/tools-<key>.json`; later starts list the
tools from it, and each tool is built for real (`build_tool`) at its first call. The key hashes every source
file under `tools/` and `server/` and the Python, mcp and pydantic versions, so changed code reads a new
file. Descriptions are worded from the current settings at every start (their bounds lines name settings).
RESEARCH_MCP_SCHEMA_CACHE=false turns the cache off.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import sys
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.types import ToolAnnotations
from pydantic import PrivateAttr

from server.registry import LLMFactory, ResearchTool, build_tool, described_with_bounds, enabled_families, load_specs
from tools.atomic import write_text
from tools.settings import get_settings

logger = logging.getLogger("research_mcp")

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
_SOURCES = ("tools", "server")
_FORMAT = 1
_BUILD = threading.Lock()


def _dist_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def source_key() -> str:
    """A hash of the code and library versions the published form of the tools depends on."""
    h = hashlib.sha256(f"{_FORMAT} {sys.version} {_dist_version('mcp')} {_dist_version('pydantic')}".encode())
    for root in _SOURCES:
        for path in sorted((_PACKAGE_ROOT / root).rglob("*.py")):
            h.update(path.relative_to(_PACKAGE_ROOT).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:24]


def cache_file(key: str) -> Path:
    return get_settings().llm.model_cache.expanduser() / "schemas" / f"tools-{key}.json"


class LazyTool(ResearchTool):
    """A tool listed from the cache: its function, argument model and checks are built at its first call."""

    _family: str = PrivateAttr("")
    _factory: Any = PrivateAttr(None)
    _real: ResearchTool | None = PrivateAttr(None)

    @classmethod
    def listed(cls, entry: dict[str, Any], family: str, llm_factory: LLMFactory) -> LazyTool:
        tool = cls.model_construct(
            fn=_unbuilt, name=entry["name"], title=entry["title"],
            description=described_with_bounds(family, entry["doc"]), parameters=entry["parameters"],
            fn_metadata=None, is_async=True, context_kwarg="ctx", resolved_params={}, resolver_plans={},
            annotations=ToolAnnotations.model_validate(entry["annotations"]), icons=None, meta=None,
        )
        tool._family, tool._factory = family, llm_factory
        return tool

    def built(self) -> ResearchTool:
        """The real tool (built once; a thread-safe, blocking import of the family's catalogue)."""
        with _BUILD:
            if self._real is None:
                spec = next(s for s in load_specs([self._family]) if s.name == self.name)
                real = build_tool(spec, self._factory)
                if real.parameters != self.parameters:
                    logger.warning("tool %s: its schema differs from the cached one; serving the built one",
                                   self.name)
                self._real = real
        return self._real

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        real = self._real or await anyio.to_thread.run_sync(self.built)
        return await real.run(arguments, context, convert_result=convert_result)


def _unbuilt(**_: Any) -> Any:
    raise RuntimeError("a cached tool is run through LazyTool.run, which builds it first")


def _entry(tool: ResearchTool, spec: Any) -> dict[str, Any]:
    return {"name": tool.name, "title": tool.title, "doc": inspect.getdoc(spec.fn) or "",
            "parameters": tool.parameters,
            "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}}


def _read(path: Path) -> dict[str, list[dict[str, Any]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        families = data["families"]
        if not isinstance(families, dict):
            raise TypeError("families is not an object")
        return families
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring the unreadable tool cache %s (%s); it is rebuilt", path, exc)
        return {}


def _write(path: Path, families: dict[str, list[dict[str, Any]]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps({"format": _FORMAT, "families": families}))
        for old in path.parent.glob("tools-*.json"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("could not write the tool cache %s (%s); the next start builds every tool again", path, exc)


def server_tools(families: list[str] | None, llm_factory: LLMFactory) -> list[ResearchTool]:
    """The tools of `families` (default: those enabled), in catalogue order: from the cache where it holds
    them, else built now (and the cache written)."""
    chosen = enabled_families(families)
    if not get_settings().schema_cache:
        return [build_tool(spec, llm_factory) for spec in load_specs(chosen)]
    path = cache_file(source_key())
    cached = _read(path)
    out: list[ResearchTool] = []
    changed = False
    for fam in chosen:
        if fam in cached:
            out.extend(LazyTool.listed(e, fam, llm_factory) for e in cached[fam])
            continue
        specs = load_specs([fam])
        built = [build_tool(spec, llm_factory) for spec in specs]
        cached[fam] = [_entry(t, s) for t, s in zip(built, specs, strict=True)]
        out.extend(built)
        changed = True
    if changed:
        _write(path, cached)
    return out
