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


def answers_beyond_question(answers: list[str], question: str) -> list[str]:
    """The gold answers that the question does not itself contain (normalised as in `substring_match`)."""
    asked = normalize(question)
    return [a for a in answers if normalize(a) not in asked]


def substring_match_beyond_question(prediction: str, answers: list[str], question: str) -> bool:
    """Whether a gold answer that the question does not itself contain occurs in the prediction.

    A reply that only repeats the question ("what is the main mineral in lithium batteries" -> "lithium
    batteries ...") earns nothing; a question all of whose answers it contains can never score.
    """
    return substring_match(prediction, answers_beyond_question(answers, question))
