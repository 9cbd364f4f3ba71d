"""The longctx_chunk tool: show how a text splits into token-bounded, overlapping chunks."""

from __future__ import annotations

import itertools
import json
from typing import Annotated

from pydantic import Field

from tools.atomic import atomic_output
from tools.errors import unknown_name
from tools.longctx.chunking import chunk_text
from tools.longctx.inputs import load_text
from tools.longctx.models import ChunkInfo, ChunkResult
from tools.longctx.tokens import DEFAULT_ENCODING, ENCODING_NAMES, get_tokenizer
from tools.paths import output_path


def longctx_chunk(
    text: Annotated[str | None, Field(description="The text inline, or give `path`.")] = None,
    path: Annotated[str | None, Field(description="A UTF-8 file, e.g. sample://longctx/alice.txt.")] = None,
    chunk_tokens: Annotated[int, Field(ge=1, le=1_000_000)] = 4000,
    overlap_tokens: Annotated[int, Field(ge=0, description="Tokens neighbours share (<= half a chunk).")] = 200,
    encoding: Annotated[str, Field(description="cl100k_base, o200k_base or approx.")] = DEFAULT_ENCODING,
    write_file: Annotated[bool, Field(description="Also write every chunk's text to a new JSONL file.")] = False,
) -> ChunkResult:
    """Split a long text into chunks of at most `chunk_tokens` tokens that cover all of it.

    Spans, token counts, previews (texts in a JSONL file with write_file). Bounded by
    max_text_chars and max_chunks.
    """
    body = load_text(text, path)
    if encoding not in ENCODING_NAMES:
        raise unknown_name("token encoding", encoding, ENCODING_NAMES)
    tok = get_tokenizer(encoding)
    chunks = chunk_text(body, chunk_tokens, overlap_tokens, tok)
    covers = chunks[0].start == 0 and chunks[-1].end == len(body) and all(
        b.start <= a.end for a, b in itertools.pairwise(chunks))
    file = None
    if write_file:
        out = output_path("longctx-chunks", ".jsonl")
        with atomic_output(out) as tmp, tmp.open("w", encoding="utf-8") as f:
            for c in chunks:
                f.write(json.dumps({"index": c.index, "start_char": c.start, "end_char": c.end, "tokens": c.tokens,
                                    "text": c.text}, ensure_ascii=False) + "\n")
        file = str(out)
    return ChunkResult(
        encoding=tok.name, text_chars=len(body), text_tokens=tok.count(body), chunk_tokens=chunk_tokens,
        overlap_tokens=overlap_tokens, n_chunks=len(chunks), covers_text=covers,
        chunks=[ChunkInfo(index=c.index, start_char=c.start, end_char=c.end, tokens=c.tokens,
                          preview=c.text[:60]) for c in chunks],
        file=file,
    )
