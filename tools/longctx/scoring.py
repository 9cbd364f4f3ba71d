"""Answer scoring: substring match of normalised gold answers, as in lost-in-the-middle's `best_subspan_em`."""

from __future__ import annotations

import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "—", "–"}


def normalize(text: str) -> str:
    """Lower case, NFD-folded accents kept, punctuation and articles removed, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def substring_match(prediction: str, answers: list[str]) -> bool:
    """Whether any normalised gold answer occurs in the normalised prediction."""
    pred = normalize(prediction)
    return any(normalize(a) and normalize(a) in pred for a in answers)
