"""Token-aware chunking with overlap that covers the whole text.

Chunks are character spans `[start, end)` of the original text. The first starts at 0, the last ends
at `len(text)`, and each starts at or before the previous one's end, so every character is in at
least one chunk (no tail is dropped). Each chunk holds at most `chunk_tokens` tokens, counted by
re-encoding the chunk's own text (a single character that alone encodes to more tokens than the budget
is the one exception: it becomes a chunk of its own). Cuts fall on a paragraph break where one lies in the last 40% of
the budget, else a line break (last 30%), a sentence end (last 20%) or a space (last 10%), else
on a token boundary. Consecutive chunks share at most `overlap_tokens` tokens, started at the
strongest break in the overlap window, so a passage shorter than the overlap always lies whole
inside one chunk.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from tools.errors import InvalidInput, LimitExceeded
from tools.longctx.tokens import Tokenizer, default_tokenizer, tokens_before
from tools.settings import get_settings

# Break levels: the position is where the next piece starts.
_BREAKS: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"\s+(?=\S)"), 0.9),  # 0: whitespace
    (re.compile(r"""[.!?…;]["'’”)\]]*\s+(?=\S)|",\s*(?=")"""), 0.8),  # 1: sentence end, JSON item
    (re.compile(r"\n(?=[^\n])"), 0.7),  # 2: line break
    (re.compile(r"\n[ \t]*\n\s*(?=\S)"), 0.6),  # 3: paragraph break
)
MAX_OVERLAP_FRACTION = 0.5


@dataclass(frozen=True)
class Chunk:
    """One chunk: its index, its span in the original text and its token count."""

    index: int
    start: int
    end: int
    tokens: int
    text: str


class _Breaks:
    def __init__(self, text: str) -> None:
        self.levels = [sorted({m.end() for m in pat.finditer(text)}) for pat, _ in _BREAKS]
        self.fills = [fill for _, fill in _BREAKS]

    def last_in(self, lo: int, hi: int, budget_lo: list[int]) -> int | None:
        """The latest position of the strongest level in [lo_level, hi], lo_level from `budget_lo`."""
        for level in range(len(self.levels) - 1, -1, -1):
            pos = self.levels[level]
            i = bisect_right(pos, hi) - 1
            if i >= 0 and pos[i] >= max(lo, budget_lo[level]):
                return pos[i]
        return None

    def first_in(self, lo: int, hi: int) -> int | None:
        """The earliest position of the strongest level in [lo, hi)."""
        for level in range(len(self.levels) - 1, -1, -1):
            pos = self.levels[level]
            i = bisect_left(pos, lo)
            if i < len(pos) and pos[i] < hi:
                return pos[i]
        return None


def validate_sizes(chunk_tokens: int, overlap_tokens: int) -> None:
    """`InvalidInput` unless 1 <= chunk_tokens and 0 <= overlap_tokens <= chunk_tokens / 2."""
    if chunk_tokens < 1:
        raise InvalidInput(f"chunk_tokens must be at least 1, got {chunk_tokens}.", hint="Pass e.g. 2000.")
    if overlap_tokens < 0 or overlap_tokens > chunk_tokens * MAX_OVERLAP_FRACTION:
        raise InvalidInput(
            f"overlap_tokens must lie in [0, chunk_tokens/2 = {chunk_tokens // 2}], got {overlap_tokens}.",
            hint="Use an overlap of about 5-10% of the chunk size.",
        )


def estimate_chunks(total_tokens: int, chunk_tokens: int, overlap_tokens: int) -> int:
    """A lower bound on the number of chunks a text of `total_tokens` splits into."""
    if total_tokens <= chunk_tokens:
        return 1
    return 1 + math.ceil((total_tokens - chunk_tokens) / max(1, chunk_tokens - overlap_tokens))


def chunk_text(
    text: str,
    chunk_tokens: int,
    overlap_tokens: int = 0,
    tokenizer: Tokenizer | None = None,
    *,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """Split `text` into chunks of at most `chunk_tokens` tokens that together cover all of it.

    >>> from tools.longctx.tokens import get_tokenizer
    >>> [c.text for c in chunk_text("One. Two. Three.", 5, tokenizer=get_tokenizer("cl100k_base"))]
    ['One. Two. ', 'Three.']
    >>> [c.text for c in chunk_text("One. Two. Three. Four.", 4, 2, tokenizer=get_tokenizer("cl100k_base"))]
    ['One. Two.', 'Two. Three.', 'Three. Four.']
    """
    validate_sizes(chunk_tokens, overlap_tokens)
    tok = tokenizer or default_tokenizer()
    if max_chunks is None:
        max_chunks = get_settings().longctx.max_chunks
    if not text:
        return []
    offs = tok.offsets(text)
    n_tok = len(offs)
    expected = estimate_chunks(n_tok, chunk_tokens, overlap_tokens)
    if expected > max_chunks:
        raise LimitExceeded(
            f"Splitting {n_tok} tokens into chunks of {chunk_tokens} tokens (overlap {overlap_tokens}) "
            "gives a chunk count that",
            expected,
            max_chunks,
            "RESEARCH_MCP_LONGCTX__MAX_CHUNKS",
        )
    breaks = _Breaks(text)
    chunks: list[Chunk] = []
    start = 0
    while True:
        t0 = tokens_before(offs, start)
        if n_tok - t0 <= chunk_tokens:
            end = len(text)
            count = tok.count(text[start:end])
            if count <= chunk_tokens:
                chunks.append(Chunk(len(chunks), start, end, count, text[start:end]))
                break
        # Candidate end: the start of token t0 + budget; then the strongest break in the fill window.
        t_hard = min(t0 + chunk_tokens, n_tok)
        hard_end = max(offs[t_hard] if t_hard < n_tok else len(text), start + 1)
        budget_lo = [offs[min(t0 + max(1, math.floor(chunk_tokens * f)), n_tok - 1)] for f in breaks.fills]
        end = breaks.last_in(start + 1, hard_end, budget_lo) or hard_end
        count = tok.count(text[start:end])
        while count > chunk_tokens and end - start > 1:  # re-encoding can differ from the offsets at edges
            t_end = tokens_before(offs, end)
            shorter = offs[t_end - 1] if t_end - 1 > t0 else start
            end = shorter if shorter > start else start + max(1, (end - start) // 2)
            count = tok.count(text[start:end])
        chunks.append(Chunk(len(chunks), start, end, count, text[start:end]))
        if end >= len(text):
            break
        if len(chunks) >= max_chunks:
            raise LimitExceeded("The chunk count", len(chunks) + 1, max_chunks, "RESEARCH_MCP_LONGCTX__MAX_CHUNKS")
        if overlap_tokens == 0:
            nxt = end
        else:
            t_end = tokens_before(offs, end)
            tt = max(t_end - overlap_tokens, t0 + 1)
            target = offs[tt] if tt < t_end else end
            if tokens_before(offs, target) < tt:  # token tt starts inside a character split over several tokens
                target += 1
            nxt = breaks.first_in(target, end) if target < end else None
            nxt = nxt if nxt is not None else min(target, end)
        start = max(nxt, start + 1)
    return chunks
