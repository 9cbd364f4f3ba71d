"""The longctx tools as the server registers them."""

from tools.longctx.noise import longctx_fit_noise
from tools.longctx.qa import longctx_answer, longctx_choose_chunk_size, longctx_single_shot
from tools.longctx.splitting import longctx_chunk
from tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    # Read-only: its optional JSONL goes to a fresh name in the server's own output folder (under the
    # retention sweep), never to a path the caller names, so no file of the caller's is changed.
    ToolSpec(longctx_chunk, title="Split a text into chunks", heavy=True),
    ToolSpec(longctx_answer, title="Answer over a long text by chunks", open_world=True,
             idempotent=False),
    ToolSpec(longctx_single_shot, title="Answer over a whole text in one model call", open_world=True,
             idempotent=False),
    ToolSpec(longctx_choose_chunk_size, title="Choose the chunk size on labelled documents", open_world=True,
             idempotent=False),
    ToolSpec(longctx_fit_noise, title="Fit the chunking noise model", heavy=True),
]
