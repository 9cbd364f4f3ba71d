"""Contexts: a window of the document around one identifier occurrence, with that identifier swapped.

Only the identifier's characters change; the identifier itself is never cut, only the prefix and
suffix are bounded.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Context:
    """A text and the character span [start, end) of the identifier inside it."""

    text: str
    start: int
    end: int

    @property
    def identifier(self) -> str:
        return self.text[self.start : self.end]


def make_context(doc: str, start: int, end: int, replacement: str | None = None, *,
                 prefix_chars: int = 96, suffix_chars: int = 32) -> Context:
    """The context of `doc[start:end]`, with the identifier replaced by `replacement` when given.

    At most `prefix_chars` characters before and `suffix_chars` after the identifier are kept.
    """
    if not 0 <= start < end <= len(doc):
        raise ValueError(f"span [{start}, {end}) is not inside a text of {len(doc)} characters")
    ident = doc[start:end] if replacement is None else replacement
    prefix = doc[max(0, start - max(0, prefix_chars)) : start]
    suffix = doc[end : end + max(0, suffix_chars)]
    return Context(prefix + ident + suffix, len(prefix), len(prefix) + len(ident))


def candidate_contexts(doc: str, start: int, end: int, gids: list[str], *, prefix_chars: int = 96,
                       suffix_chars: int = 32) -> list[Context]:
    """The NID's own context first, then one context per GID, all with the same prefix and suffix."""
    own = make_context(doc, start, end, prefix_chars=prefix_chars, suffix_chars=suffix_chars)
    return [own] + [make_context(doc, start, end, g, prefix_chars=prefix_chars, suffix_chars=suffix_chars)
                    for g in gids]
