"""Tokenizer and chunker: exact OpenAI BPE ids, full coverage, budgets, overlap, needles near the end."""

from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.errors import InvalidInput, LimitExceeded, NotFound
from tools.longctx.chunking import chunk_text
from tools.longctx.tokens import get_tokenizer, tokens_before
from tools.paths import sample_path

CL100K = get_tokenizer("cl100k_base")
APPROX = get_tokenizer("approx")
BOOK = sample_path("longctx/alice.txt").read_text(encoding="utf-8")


def test_cl100k_ids_match_published_values() -> None:
    # Token ids published in OpenAI's tiktoken README and cookbook ("hello world", "tiktoken is great!").
    assert CL100K.encoding.encode("hello world") == [15339, 1917]
    assert CL100K.encoding.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert get_tokenizer("o200k_base").encoding.encode("hello world") == [24912, 2375]


def test_vocabulary_hash_is_the_one_tiktoken_pins() -> None:
    import gzip
    import importlib.util
    from pathlib import Path

    folder = Path(next(iter(importlib.util.find_spec("bpe_openai").submodule_search_locations)))
    raw = gzip.decompress((folder / "data" / "cl100k_base.tiktoken.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def test_offsets_start_each_token_and_handle_multibyte() -> None:
    text = "héllo wörld, 日本語 text"
    offs = CL100K.offsets(text)
    assert len(offs) == CL100K.count(text)
    assert offs[0] == 0 and offs == sorted(offs) and offs[-1] < len(text)
    # Decoding the token ids between consecutive offsets (where they fall on whole characters) gives the text.
    assert text[offs[1]:] .endswith("text")


def test_unknown_encoding_suggests_names() -> None:
    with pytest.raises(NotFound, match="cl100k_base"):
        get_tokenizer("cl100k")


def test_falls_back_to_approx_without_the_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.errors import NotConfigured
    from tools.longctx import tokens

    monkeypatch.setattr(tokens, "_vocabulary_file", lambda name: None)
    tokens.get_tokenizer.cache_clear()
    try:
        with pytest.raises(NotConfigured, match="bpe-openai"):
            tokens.get_tokenizer("o200k_base")
        assert tokens.default_tokenizer().name == "approx"
    finally:
        tokens.get_tokenizer.cache_clear()


def test_approx_error_bound_on_prose() -> None:
    # Documented bound: within 25% of cl100k on English prose.
    ratio = APPROX.count(BOOK) / CL100K.count(BOOK)
    assert 0.75 <= ratio <= 1.25


def _check_cover(text: str, chunks, budget: int, overlap: int, tok) -> None:
    assert chunks[0].start == 0
    assert chunks[-1].end == len(text)
    for a, b in itertools.pairwise(chunks):
        assert a.start < b.start <= a.end  # progress and no gap
    for c in chunks:
        assert c.text == text[c.start:c.end]
        assert c.tokens == tok.count(c.text)
        assert c.tokens <= budget or len(c.text) == 1
    covered = [False] * len(text)
    for c in chunks:
        covered[c.start:c.end] = [True] * (c.end - c.start)
    assert all(covered)
    if overlap == 0:
        assert all(a.end == b.start for a, b in itertools.pairwise(chunks))
    offs = tok.offsets(text)
    for a, b in itertools.pairwise(chunks):
        shared = tokens_before(offs, a.end) - tokens_before(offs, b.start)
        assert shared <= overlap


words = st.sampled_from(["alpha", "beta", "Gamma", "δέλτα", "日本", "x", "42", "well-known", "\"quoted\"", "(paren)"])
sentence = st.lists(words, min_size=1, max_size=12).map(lambda ws: " ".join(ws)) .flatmap(
    lambda s: st.sampled_from([".", "!", "?", ",", ";", ""]).map(lambda p: s + p))
paragraph = st.lists(sentence, min_size=1, max_size=8).map(" ".join)
texts = st.lists(paragraph, min_size=1, max_size=12).flatmap(
    lambda ps: st.sampled_from(["\n\n", "\n", " ", "\n \n\n"]).map(lambda sep: sep.join(ps)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, budget=st.integers(3, 120), overlap_frac=st.floats(0, 0.5), exact=st.booleans())
def test_chunks_cover_text_within_budget(text: str, budget: int, overlap_frac: float, exact: bool) -> None:
    tok = CL100K if exact else APPROX
    overlap = int(budget * overlap_frac)
    chunks = chunk_text(text, budget, overlap, tok, max_chunks=100_000)
    _check_cover(text, chunks, budget, overlap, tok)


@settings(max_examples=40, deadline=None)
@given(text=st.text(min_size=1, max_size=400), budget=st.integers(1, 40), overlap=st.integers(0, 20))
def test_arbitrary_unicode_is_covered(text: str, budget: int, overlap: int) -> None:
    overlap = min(overlap, budget // 2)
    chunks = chunk_text(text, budget, overlap, CL100K, max_chunks=100_000)
    _check_cover(text, chunks, budget, overlap, CL100K)


LONG = (BOOK + "\n\n") * 4  # about 140K cl100k tokens
LONG_OFFS = CL100K.offsets(LONG)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depth=st.floats(0.99, 1.0), budget=st.sampled_from([2000, 4000, 8000, 16000]),
       overlap_frac=st.sampled_from([0.05, 0.1]))
def test_needle_in_last_percent_of_128k_tokens_lands_in_a_chunk(depth: float, budget: int, overlap_frac: float) -> None:
    text = LONG[: LONG_OFFS[128_000]]
    pos = int(len(text) * depth)
    pos = text.rfind(" ", 0, pos) + 1 if pos < len(text) else pos
    needle = "The secret passphrase is sapphire-lantern-7319."
    hay = text[:pos] + needle + " " + text[pos:]
    chunks = chunk_text(hay, budget, int(budget * overlap_frac), CL100K)
    assert chunks[-1].end == len(hay)
    assert any(needle in c.text for c in chunks)
    assert sum(1 for c in chunks if needle in c.text) >= 1


def test_released_splitter_drop_is_not_reproduced() -> None:
    # The released character splitter steps by (size - overlap) for n pieces of `size`, losing
    # (n-1)*overlap characters at the tail; here the last chunk always ends at the text's end.
    text = BOOK[:60_000]
    size, overlap = 8000, 800
    n = len(text) // size
    released_end = n * size - (n - 1) * overlap
    assert released_end < len(text)
    chunks = chunk_text(text, 2000, 200, CL100K)
    assert chunks[-1].end == len(text)
    tail = range(released_end, len(text))
    assert all(any(c.start <= i < c.end for c in chunks[-4:]) for i in tail)


def test_cuts_prefer_paragraphs_then_sentences() -> None:
    chunks = chunk_text(BOOK[:40_000], 1000, 0, CL100K)
    ends = [c.text for c in chunks[:-1]]
    at_break = sum(1 for t in ends if re.search(r"(\n\s*\n\s*|[.!?”’\"')\]]\s+)$", t))
    assert at_break == len(ends)


def test_errors() -> None:
    with pytest.raises(InvalidInput, match="overlap_tokens"):
        chunk_text("abc", 10, 6, CL100K)
    with pytest.raises(InvalidInput, match="chunk_tokens"):
        chunk_text("abc", 0, 0, CL100K)
    with pytest.raises(LimitExceeded, match="RESEARCH_MCP_LONGCTX__MAX_CHUNKS"):
        chunk_text(BOOK, 100, 0, CL100K, max_chunks=10)
    assert chunk_text("", 10, 0, CL100K) == []


def test_docstring_examples_hold() -> None:
    import doctest

    from tools.longctx import chunking

    result = doctest.testmod(chunking)
    assert result.attempted >= 3 and result.failed == 0
