"""Bounds of the chunked long-context family, set through `RESEARCH_MCP_LONGCTX__<NAME>`."""

from pydantic import BaseModel, Field

from tools.limits import register_limits


@register_limits("longctx")
class LongctxLimits(BaseModel):
    max_text_chars: int = Field(4_000_000, description="Longest text (characters) a longctx tool accepts.")
    max_chunks: int = Field(512, description="Most chunks one call may create.")
    max_single_shot_tokens: int = Field(
        200_000, description="Longest text (tokens) longctx_single_shot sends in one call; chunk anything longer."
    )
    max_documents: int = Field(10, description="Most documents longctx_choose_chunk_size evaluates.")
    max_candidates: int = Field(8, description="Most candidate chunk sizes longctx_choose_chunk_size tries.")
    max_measurements: int = Field(10_000, description="Most measurements longctx_fit_noise accepts per series.")
