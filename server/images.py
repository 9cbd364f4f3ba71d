"""A result's PNG pictures as MCP image content, small enough that a host shows them at once.

A PNG is inlined when it is at most `MAX_SIDE` pixels on its longer side and `MAX_BYTES` long, and while the
result's pictures stay within `MAX_TOTAL_BYTES` (base64 makes them a third larger; the whole result then stays
under the 1 MiB that MCP clients accept in one streamed message). Larger pictures are linked, not inlined.
RESEARCH_MCP_INLINE_IMAGES=false inlines none; the files are written either way.
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path

from mcp.types import ImageContent

MAX_SIDE = 1568  # the longest side vision models take without downscaling
MAX_BYTES = 512 * 1024
MAX_TOTAL_BYTES = 640 * 1024
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) from the first 24 bytes of a PNG (its IHDR chunk), or None if it is not one."""
    if len(head) < 24 or not head.startswith(PNG_SIGNATURE) or head[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def image_blocks(paths: list[Path]) -> list[ImageContent]:
    """Image content for the PNGs among `paths` that fit the bounds, in order, within the total."""
    out: list[ImageContent] = []
    total = 0
    for path in paths:
        if path.suffix.lower() != ".png":
            continue
        size = path.stat().st_size
        if size > MAX_BYTES or total + size > MAX_TOTAL_BYTES:
            continue
        data = path.read_bytes()
        dims = png_size(data[:24])
        if dims is None or max(dims) > MAX_SIDE:
            continue
        total += size
        out.append(ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type="image/png"))
    return out
