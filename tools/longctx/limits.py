"""Bounds of the chunked long-context family, set through `RESEARCH_MCP_LONGCTX__<NAME>`."""

from pydantic import BaseModel, Field


class LongctxLimits(BaseModel):
    max_text_chars: int = Field(4_000_000, description="Longest text (characters) a longctx tool accepts.")
    max_chunks: int = Field(512, description="Most chunks one call may create.")
