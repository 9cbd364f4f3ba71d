"""Every file a tool writes is also an MCP resource, `output://<file>`, linked from the tool's result.

A result's structured content names its files by server path (tools chain on those). Beside it, the result gets a
`resource_link` (URI, name, MIME type, size) for each file under the output folder that it names, and its PNG
pictures as image content (`server.images`), so a host on another machine can show or fetch them. The URI is the
file's path relative to the output folder, so any worker of `serve --http --workers N` resolves it: they share
the folder. `resources/read` on such a URI returns the file (text or base64 blob) up to
RESEARCH_MCP_MAX_RESOURCE_MB, and refuses, with the reason, anything outside the folder (see
`tools.paths.output_file`).
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.mcpserver.resources import Resource, ResourceTemplate
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.types import CallToolResult, ResourceLink

from tools.errors import NotFound, ResearchError
from tools.paths import OUTPUT_SCHEME, check_path_text, output_dir, output_file, output_uri
from tools.settings import get_settings

TEMPLATE = OUTPUT_SCHEME + "{+path}"
MAX_LINKS = 50  # per result; a folder of outputs (a LoRA adapter) is linked file by file up to this many
MIME_TYPES = {
    ".tif": "image/tiff", ".tiff": "image/tiff", ".png": "image/png", ".svg": "image/svg+xml",
    ".csv": "text/csv", ".tsv": "text/tab-separated-values", ".json": "application/json",
    ".jsonl": "application/jsonl", ".txt": "text/plain", ".md": "text/markdown", ".smi": "text/plain",
    ".sdf": "chemical/x-mdl-sdfile", ".parquet": "application/vnd.apache.parquet",
    ".npz": "application/octet-stream", ".pt": "application/octet-stream",
    ".safetensors": "application/octet-stream", ".graphml": "application/xml", ".gml": "text/plain",
}
TEXT_TYPES = {"application/json", "application/jsonl", "application/xml", "image/svg+xml", "chemical/x-mdl-sdfile"}


def mime_type(path: Path) -> str:
    """The MIME type of an output file, from its suffix."""
    return MIME_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def is_text(mime: str) -> bool:
    return mime.startswith("text/") or mime in TEXT_TYPES


def max_resource_bytes() -> int:
    return int(get_settings().max_resource_mb * 1024 * 1024)


# ---------------------------------------------------------------------------------------------- results


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def output_files(structured: Any) -> list[Path]:
    """The files under the output folder that a result names (a folder stands for the files in it), in order."""
    root = output_dir()
    prefix = str(root) + os.sep
    found: list[Path] = []
    for text in _strings(structured):
        if not text.startswith(prefix) or len(text) > 4096 or "\n" in text:
            continue
        p = Path(text)
        try:
            check_path_text(text)
            p = p.resolve()
        except (ResearchError, OSError, RuntimeError):
            continue
        if not p.is_relative_to(root):
            continue
        if p.is_dir():
            inside = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
            found.extend(inside)
        elif p.is_file() and not p.name.startswith("."):
            found.append(p)
    unique = list(dict.fromkeys(found))
    return unique[:MAX_LINKS]


def resource_link(path: Path) -> ResourceLink:
    """The `resource_link` of an output file: URI, name, MIME type and size."""
    size = path.stat().st_size
    return ResourceLink(uri=output_uri(path), name=path.name, mime_type=mime_type(path), size=size,
                        description=f"Output file ({size:,} bytes); resources/read returns it.")


def attach_outputs(result: CallToolResult) -> CallToolResult:
    """`result` with a resource link for each output file it names, and its PNG pictures as image content."""
    from server.images import image_blocks

    if result.is_error or result.structured_content is None:
        return result
    files = output_files(result.structured_content)
    if not files:
        return result
    extra: list[Any] = image_blocks(files) if get_settings().inline_images else []
    extra += [resource_link(p) for p in files]
    return result.model_copy(update={"content": [*result.content, *extra]})


# ---------------------------------------------------------------------------------------------- resources


def read_output(relative: str) -> tuple[str | bytes, str]:
    """The content (text, else bytes) and MIME type of output file `relative`, refused past the size bound."""
    try:
        path = output_file(relative)
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from None
    except ResearchError as exc:
        raise ResourceError(str(exc)) from None
    size = path.stat().st_size
    limit = max_resource_bytes()
    if size > limit:
        raise ResourceError(
            f"{OUTPUT_SCHEME}{relative} is {size:,} bytes, over the bound of {limit:,} bytes "
            f"({get_settings().max_resource_mb:g} MB) that resources/read returns. Raise it with "
            f"RESEARCH_MCP_MAX_RESOURCE_MB, or read the file on the server at {path}.")
    mime = mime_type(path)
    data = path.read_bytes()
    if is_text(mime):
        try:
            return data.decode("utf-8"), mime
        except UnicodeDecodeError:
            pass
    return data, mime


class OutputFile(Resource):
    """One file of the output folder, read at `resources/read` time."""

    path: str

    async def read(self) -> str | bytes:
        import anyio.to_thread

        content, _ = await anyio.to_thread.run_sync(read_output, self.path)
        return content


class OutputFiles(ResourceTemplate):
    """The template `output://{+path}`: each file a tool wrote, with its own MIME type."""

    async def create_resource(self, uri: str, params: dict[str, Any], context: Any) -> Resource:
        relative = str(params.get("path", ""))
        import anyio.to_thread

        try:
            path = await anyio.to_thread.run_sync(output_file, relative)
        except NotFound as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except ResearchError as exc:
            raise ResourceError(str(exc)) from None
        return OutputFile(uri=uri, name=path.name, mime_type=mime_type(path), path=relative)


def _unused(path: str) -> str:  # the template's function: `OutputFiles.create_resource` reads instead
    raise RuntimeError(f"output://{path} is read through OutputFiles.create_resource")


def add_output_resources(server: MCPServer) -> None:
    """Register the `output://{+path}` template on `server` (paths are checked by `tools.paths.output_file`)."""
    template = OutputFiles.from_function(
        _unused, uri_template=TEMPLATE, name="output", title="Files the tools wrote",
        description="A file a tool wrote under the output folder, as its result's resource_link names it "
        f"(read up to RESEARCH_MCP_MAX_RESOURCE_MB, {get_settings().max_resource_mb:g} MB now).",
        mime_type="application/octet-stream", security=ResourceSecurity(exempt_params={"path"}),
    )
    server._resource_manager._templates[template.uri_template] = template  # no public add for a template class
