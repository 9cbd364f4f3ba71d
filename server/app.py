"""Builds the research-mcp MCP server: every family's tools, the sample resources, the output files as resources,
the workflows as prompts, the instructions."""

from __future__ import annotations

import difflib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from server.jobtools import job_tools
from server.links import add_output_resources
from server.prompts import add_prompts
from server.registry import enabled_families
from server.resources import sample_resources
from server.sampling import chat_model_for
from server.toolcache import server_tools
from tools.paths import sweep_outputs
from tools.settings import get_settings

INSTRUCTIONS = """\
research-mcp: research methods as tools.
- graph_*: graph tasks in natural language (generate, serialize, prompt, solve exactly, check answers, benchmark).
- eo_*: spectral indices and geophysical parameters from multispectral GeoTIFF scenes (Landsat, Sentinel-2).
- nid_*: natural identifiers as canaries: detect, generate, score, DP audit, dataset inference.
- longctx_*: long-document QA by chunking with worker and manager models, and when chunking helps.
- dti_*: drug-target interaction scores, screening, explanations.
Bundled sample data is listed as resources (sample://...); pass those URIs wherever a tool takes a path.
The five workflows are prompts (eo, nid, dti, qa, graph): each lays out the tool calls in order.
Large outputs are written as files under the output folder, returned as paths with a summary and as
resource links (output://...) that resources/read returns; pictures also come inline as PNG images.
A call still running after RESEARCH_MCP_INLINE_BUDGET_S (40 s) answers with a job handle ({"job": {"id": ...}})
and goes on: call jobs_wait with that id for its result (jobs_status, jobs_cancel, jobs_list also help).
"""


def _version() -> str:
    try:
        return version("research-mcp")
    except PackageNotFoundError:
        return "0"


class ResearchServer(MCPServer):
    """The SDK's server, whose answer to an unknown tool name suggests the closest ones."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError:
            known = [t.name for t in await self.list_tools()]
            if name in known:
                raise
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            guess = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ToolError(f"[not_found] Unknown tool {name!r}.{guess} tools/list (research-mcp tools) lists all "
                            f"{len(known)}.") from None


def build_server(families: list[str] | None = None, *, log_level: str | None = None) -> ResearchServer:
    """A server with the tools of `families` (default: RESEARCH_MCP_FAMILIES, else all) and the samples.

    Building it also sweeps the output folder by the retention settings.
    """
    sweep_outputs()
    server = ResearchServer(
        name="research-mcp",
        title="research-mcp",
        instructions=INSTRUCTIONS,
        version=_version(),
        resources=sample_resources(),
        warn_on_duplicate_tools=True,
        log_level=(log_level or get_settings().log_level).upper(),
        tools=[*server_tools(families, chat_model_for), *job_tools()],
    )
    add_output_resources(server)
    add_prompts(server, enabled_families(families))
    return server
