"""Bounds of the NID family, set through `RESEARCH_MCP_NID__<NAME>`."""

from pydantic import BaseModel, Field


class NIDLimits(BaseModel):
    max_text_chars: int = Field(5_000_000, description="Longest text nid_detect scans.")
    max_candidates: int = Field(1024, description="Most candidates (the NID and its GIDs) per identifier.")
