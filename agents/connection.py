"""Where the research-mcp server is and one long-lived MCP session to it, as LangChain tools.

A `ServerTarget` names the server: a stdio subprocess (`python -m server serve`, the default) or a
streamable-HTTP URL with an optional bearer token. `open_tools(target)` connects once, lists the tools
and yields them as LangChain tools together with what the agents need to know about each (its
annotations and input schema); every tool call of the run goes through that one session.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.errors import NotFound


@dataclass(frozen=True)
class ServerTarget:
    """An MCP server: `url` for streamable HTTP, else a stdio subprocess running `command`."""

    url: str | None = None
    token: str | None = None
    command: tuple[str, ...] = (sys.executable, "-m", "server", "serve")
    cwd: str | None = None
    env: dict[str, str] | None = None
    log_file: Path | None = None

    @property
    def label(self) -> str:
        return self.url if self.url else "stdio: " + " ".join(Path(self.command[0]).name if i == 0 else c
                                                              for i, c in enumerate(self.command))

    def transport(self) -> Any:
        from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

        if self.url:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
            return StreamableHttpTransport(self.url, headers=headers)
        env = dict(os.environ if self.env is None else self.env)
        repo = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
        return StdioTransport(self.command[0], list(self.command[1:]), env=env, cwd=self.cwd or os.getcwd(),
                              keep_alive=True, log_file=self.log_file)


@dataclass
class ToolInfo:
    """What the agents read about one MCP tool besides calling it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)

    @property
    def read_only(self) -> bool:
        return bool(self.annotations.get("read_only_hint", False))


@dataclass
class ToolBox:
    """The tools of one session: LangChain tools by name, and their MCP descriptions."""

    tools: dict[str, Any]
    info: dict[str, ToolInfo]
    server: str
    resources: list[str] = field(default_factory=list)
    client: Any = None

    async def read_text(self, uri: str) -> str:
        """The text of a resource the server lists (a bundled `sample://` file)."""
        result = await self.client.read_resource(uri)
        contents = getattr(result, "contents", result)
        return "".join(getattr(c, "text", "") or "" for c in contents)

    def get(self, name: str) -> Any:
        if name not in self.tools:
            from tools.errors import unknown_name

            raise unknown_name("tool", name, self.tools)
        return self.tools[name]

    def names(self) -> list[str]:
        return sorted(self.tools)

    def require(self, *names: str) -> None:
        """Raise `NotFound` naming every tool the server does not expose."""
        missing = [n for n in names if n not in self.tools]
        if missing:
            raise NotFound(
                f"The server at {self.server} does not expose {', '.join(missing)}.",
                hint="Check `research-mcp tools`; the family providing them may be missing from this install.",
            )


def text_blocks(content: list[Any]) -> list[Any]:
    """A tool result's content blocks as the model behind an agent reads them: the text only. Inline pictures and
    resource links are left out (a text-only model refuses them, and the structured result in the text already names
    every file by the path the tools accept)."""
    return [b for b in content if isinstance(b, dict) and b.get("type") == "text"]


def text_only(tool: Any) -> Any:
    """`tool` (a LangChain MCP tool) answering in text only, so a text-only model behind an agent can read it."""
    call = tool.coroutine

    async def run(**arguments: Any) -> tuple[list[Any], Any]:
        content, artifact = await call(**arguments)
        return text_blocks(content), artifact

    tool.coroutine = run
    return tool


def _quiet_adapter_import() -> Any:
    from langchain_core._api import LangChainBetaWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)
        from langchain.mcp import MCPAdapter
    return MCPAdapter


@contextlib.asynccontextmanager
async def open_tools(target: ServerTarget, book: Any = None) -> AsyncIterator[ToolBox]:
    """Connect to `target` once, yield its tools, and close the session (and subprocess) at the end.

    A call that answers with a job handle is waited for to its result (`agents.jobs`); with a `JobBook`,
    a resumed run collects the job a killed run was waiting for."""
    from agents.jobs import follow_jobs

    adapter_cls = _quiet_adapter_import()
    transport = target.transport()
    adapter = adapter_cls(transport)
    try:
        async with adapter:
            remote = await adapter.client.list_tools()
            followed = follow_jobs({t.name: t for t in await adapter.list_tools()}, book)
            tools = {name: text_only(t) for name, t in followed.items()}
            info = {
                t.name: ToolInfo(
                    name=t.name,
                    description=t.description or "",
                    input_schema=dict(t.input_schema or {}),
                    annotations=t.annotations.model_dump(exclude_none=True) if t.annotations else {},
                )
                for t in remote
            }
            try:
                resources = [str(r.uri) for r in await adapter.client.list_resources()]
            except Exception:  # a server without resources is still usable
                resources = []
            yield ToolBox(tools=tools, info=info, server=target.label, resources=resources, client=adapter.client)
    finally:
        close = getattr(transport, "close", None)
        if close is not None:
            await close()
