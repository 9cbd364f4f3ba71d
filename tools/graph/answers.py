"""Reading a model's free-text answer: yes/no, the final number, a node sequence.

The part after the last answer marker ("Answer:", "the answer is", "final answer", `\\boxed{}`) is read
when there is one, else the whole reply. A yes/no answer is the first yes/no word (or negated phrase)
of the last sentence that has one, so a bare "no" is no. A number is the first number after the last
marker, or without a marker the last number of the reply, not any number mentioned on the way. A node
sequence is the last bracketed list, arrow chain or comma list.
"""

from __future__ import annotations

import re

from tools.graph.serialize import NAMES

_NAME = "(?:" + "|".join(NAMES) + r")\d*"

_MARKER = re.compile(
    r"(?:final answer|the answer is|answer\s*:|answer is|\\boxed\{|\*\*answer\*\*\s*:?)", re.IGNORECASE
)

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}


def answer_part(text: str) -> str:
    """The text after the last answer marker, or all of it when there is none."""
    last = None
    for m in _MARKER.finditer(text):
        last = m
    if last is None:
        return text
    tail = text[last.end():]
    return tail if tail.strip() else text


_NEG = re.compile(
    r"\b(?:no|false|not|cannot|can't|isn't|doesn't|don't|aren't|never|none|unreachable|disconnected|acyclic)\b",
    re.IGNORECASE,
)
_YESNO = re.compile(r"\b(yes|no|true|false)\b", re.IGNORECASE)
_POS_PHRASE = re.compile(
    r"\b(?:there (?:is|exists) (?:a|an|at least one)|(?:is|are) connected|(?:is|are) reachable|contains? (?:a|an)|"
    r"has (?:a|an)|exists)\b",
    re.IGNORECASE,
)


def parse_bool(text: str) -> bool | None:
    """Yes/no from free text; None when the reply commits to neither."""
    part = answer_part(text)
    sentences = [s for s in re.split(r"(?<=[.!?\n])\s+", part) if s.strip()]
    for sentence in reversed(sentences):
        m = _YESNO.search(sentence)
        if m:
            return m.group(1).lower() in ("yes", "true")
        if _NEG.search(sentence):
            return False
        if _POS_PHRASE.search(sentence):
            return True
    return None


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])|\b(?:" + "|".join(_WORD_NUMBERS) + r")\b",
                     re.IGNORECASE)


def parse_number(text: str) -> float | None:
    """The answer's number: the first after the last answer marker, else the last number of the reply.

    Digits or zero..twenty in words; None when the reply has no number.
    """
    part = answer_part(text)
    found = list(_NUMBER.finditer(part))
    if found and part is not text:
        tok = found[0].group(0)
    else:
        found = found or list(_NUMBER.finditer(text))
        if not found:
            return None
        tok = found[-1].group(0)
    if tok.lower() in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[tok.lower()])
    try:
        return float(tok)
    except ValueError:
        return None


_NO_PATH = re.compile(r"\b(?:no path|not reachable|unreachable|not connected|no such path|does not exist|"
                      r"doesn't exist|cannot be reached|can't be reached|impossible)\b", re.IGNORECASE)


def says_no_path(text: str) -> bool:
    return bool(_NO_PATH.search(answer_part(text)))


def _labels(named: frozenset[str] | set[str] | tuple[str, ...]) -> str:
    """A regex alternation of a graph's str labels, longest first, as whole words."""
    alts = "|".join(re.escape(x) for x in sorted(named, key=lambda x: (-len(x), x)))
    return rf"(?<!\w)(?:{alts})(?!\w)" if alts else ""


def _bare(naming: str | None) -> str:
    if naming == "names":
        return rf"{_NAME}\b"
    if naming == "letters":
        return r"\b[A-Z]{1,3}\b"
    return r"(?<![\w.])\d+(?![\w.]\d)"


def token_pattern(naming: str | None = None, named: frozenset[str] | set[str] | tuple[str, ...] = ()) -> str:
    """The regex of one node reference: a number (or name, or letters under a naming) or one of the graph's
    str labels (`named`), optionally preceded by the word "node"."""
    alts = [x for x in (_labels(named), _bare(naming)) if x]
    return r"(?:(?i:node)\s*)?(?:" + "|".join(alts) + ")"


def _token(naming: str | None, named=()) -> str:
    return token_pattern(naming, named)


def find_node_sequences(text: str, *, naming: str | None = None, named=()) -> list[tuple[int, int, list[str]]]:
    """Every maximal node sequence in `text` (bracketed list, arrow chain, comma list) as (start, end, tokens),
    in order of their end; overlapping shorter candidates are dropped."""
    tok = _token(naming, named)
    sep = r"\s*(?:,|->|→|=>|—|–|-|\s)\s*"
    flags = re.IGNORECASE if naming is None and not named else 0
    patterns = [
        re.compile(rf"[\[\(\{{]\s*{tok}(?:{sep}{tok})*\s*[\]\)\}}]", flags),
        re.compile(rf"{tok}(?:\s*(?:->|→|=>|—|–|-)\s*{tok})+", flags),
        re.compile(rf"{tok}(?:\s*,\s*(?:and\s+)?{tok})+", flags),
    ]
    cands = []
    for pat in patterns:
        for m in pat.finditer(text):
            cands.append((m.start(), m.end(), m.group(0)))
    cands.sort(key=lambda c: (c[1], c[1] - c[0]))
    out: list[tuple[int, int, list[str]]] = []
    for start, end, chunk in cands:
        while out and out[-1][0] >= start:  # a longer candidate covering the previous one replaces it
            out.pop()
        if out and start < out[-1][1]:
            continue
        out.append((start, end, _tokens(chunk, naming, named)))
    return out


def parse_node_list(text: str, *, naming: str | None = None, named=()) -> list[str] | None:
    """The last node sequence in the answer part, as tokens: digits, or labels under a naming ("names" for
    the first names of the social encoders, "letters" for the expert encoder's A, B, ...), or the graph's
    str labels given in `named`."""
    tok = _token(naming, named)
    flags = re.IGNORECASE if naming is None and not named else 0

    def best(part: str) -> list[str] | None:
        seqs = find_node_sequences(part, naming=naming, named=named)
        if not seqs:
            m = re.fullmatch(rf"\s*({tok})\s*\.?\s*", part, flags)
            return _tokens(m.group(1), naming, named) if m else None
        return seqs[-1][2]

    part = answer_part(text)
    got = best(part)
    if got is None and part is not text:
        got = best(text)
    return got


def _tokens(chunk: str, naming: str | None, named=()) -> list[str]:
    chunk = re.sub(r"(?i)\bnode\b", " ", chunk)
    alts = [x for x in (_labels(named), _bare(naming)) if x]
    return re.findall("|".join(alts), chunk)
