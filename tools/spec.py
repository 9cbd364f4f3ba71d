"""How a family declares its tools, with no MCP import.

Each family has `tools/<family>/catalog.py` with `TOOLS: list[ToolSpec]`. The server registers every
spec it finds; the MCP tool name is the function's name (`<family>_<verb>`), the description is its
docstring, and the input and output schemas come from its type hints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the function and the hints an MCP client shows or relies on."""

    fn: Callable[..., Any]
    title: str
    read_only: bool = True
    open_world: bool = False
    destructive: bool = False
    idempotent: bool = True
    heavy: bool = False  # CPU-bound for over about a second: runs in the bounded heavy pool
    # Given the result as JSON, why it holds nothing usable (every row rejected), else None: `research-mcp call`
    # then says so and exits non-zero. MCP clients get the result as it is.
    unusable: Callable[[dict[str, Any]], str | None] | None = None

    @property
    def name(self) -> str:
        return self.fn.__name__
