"""Reading the claims an answer makes beyond its headline value, and validating each against the graph.

An answer is right only when every claim it makes is true: "Yes. The path can be: 0,3,1,2" is right for
a Hamiltonian path only when [0, 3, 1, 2] is one; "3 applicants: a0: j1, a1: j1, a2: j3" is wrong even
though 3 is the right count, because j1 is given twice; "0 -> 1 -> 3 with total weight 9" is wrong when
that path weighs 7. Claims are read from the answer part (after the last "Answer:"-style marker, else
the whole reply): node sequences, node sets (`{0, 2, 5}`, `[0, 2, 5]`), node pairs (`a0: j1`, `0 -> 4`,
`(0, 4)`), node-to-colour maps (`0: red`, `node 1 = 2`), per-node vectors (`node 0: [3, 5]`) and a stated
total (`total weight 7`, `length of the path is 2`).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from tools.errors import InvalidInput
from tools.graph.answers import answer_part, find_node_sequences, token_pattern
from tools.graph.model import Node
from tools.graph.serialize import node_of_label
from tools.lazy import LazyModule

nx = LazyModule("networkx")


@dataclass(frozen=True)
class Reader:
    """How the answer names nodes: the question's naming and the graph's str labels."""

    naming: str | None
    named: frozenset[str]

    @classmethod
    def of(cls, G: nx.Graph, naming: str | None) -> Reader:
        return cls(naming, frozenset(u for u in G if isinstance(u, str)))

    @property
    def token(self) -> str:
        return token_pattern(self.naming, self.named)

    @property
    def flags(self) -> int:
        return re.IGNORECASE if self.naming is None and not self.named else 0

    def node(self, tok: str) -> Node:
        """The node a token stands for; `InvalidInput` when it names none."""
        tok = re.sub(r"(?i)^node\s*", "", tok.strip())
        try:
            return node_of_label(tok, self.naming, self.named)
        except ValueError as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(f"{tok!r} does not name a node.", hint="Name nodes as the question does.") from None

    def nodes(self, toks: list[str]) -> list[Node]:
        return [self.node(t) for t in toks]


_NUM = r"(-?\d+(?:\.\d+)?)"
_TOTAL = re.compile(
    r"(?:\btotal\s+(?:weight|length|distance|cost)|\b(?:weight|length|distance|cost)\s+of\s+(?:the\s+|this\s+|that\s+)?"
    r"(?:shortest\s+)?path|\bpath\s+(?:weight|length|cost)|\bshortest\s+distance|\bpath\s+(?:has|with|of)\s+(?:a\s+)?"
    r"(?:total\s+)?(?:weight|length|cost|distance))\b[^0-9\n]{0,24}?" + _NUM, re.IGNORECASE)


def stated_total(text: str) -> float | None:
    """The total weight/length an answer states for its path ("total weight 7", "the length of the path is
    2"), the last such statement of the answer part; None when there is none."""
    for part in (answer_part(text), text):
        found = list(_TOTAL.finditer(part))
        if found:
            return float(found[-1].group(1))
    return None


def region(text: str) -> str:
    """Where claims are read first: the answer part."""
    return answer_part(text)


def find(text: str, finder, reader: Reader) -> tuple[str, list]:
    """(part, claims): what `finder` reads in the answer part, or, when it reads nothing there, in the whole
    reply (a witness written before the final "Answer: ..." line)."""
    part = answer_part(text)
    found = finder(part, reader)
    if not found and part is not text:
        found = finder(text, reader)
        if found:
            return text, found
    return part, found


def is_bare_sequence(text: str, reader: Reader) -> bool:
    """True when the reply (or its answer part) is nothing but a node sequence."""
    part = region(text)
    rest = re.sub(reader.token, " ", part, flags=reader.flags)
    rest = re.sub(r"(?i)\b(?:path|cycle|nodes?|and)\b", " ", rest)
    return not re.search(r"[A-Za-z0-9]", rest)


_CUE = re.compile(r"(?i)\b(?:path|cycle|route|order|tour|visits?|sequence)\b|:")


def claimed_sequence(text: str, reader: Reader) -> list[str] | None:
    """The node sequence the answer offers as its witness: the last one in the answer part that is written
    with arrows or brackets, or follows a cue (path, cycle, order, a colon) in its sentence, or is the
    whole answer."""
    part = region(text)
    seqs = find_node_sequences(part, naming=reader.naming, named=reader.named)
    if is_bare_sequence(text, reader):
        return seqs[-1][2] if seqs else _single(part, reader)
    got = _cued(part, seqs)
    if got is None and part is not text:
        got = _cued(text, find_node_sequences(text, naming=reader.naming, named=reader.named))
    return got


def _cued(part: str, seqs: list[tuple[int, int, list[str]]]) -> list[str] | None:
    for start, end, toks in reversed(seqs):
        chunk = part[start:end]
        sentence = part[max(part.rfind(".", 0, start), part.rfind("\n", 0, start)) + 1:start]
        if re.search(r"->|→|=>|[\[\(\{]", chunk) or _CUE.search(sentence):
            return toks
    return None


def _single(part: str, reader: Reader) -> list[str] | None:
    m = re.fullmatch(rf"\s*({reader.token})\s*\.?\s*", part, reader.flags)
    return [m.group(1)] if m else None


def node_sets(part: str, reader: Reader) -> list[tuple[int, int, list[str]]]:
    """The bracketed node sets/lists of `part`, as (start, end, tokens)."""
    tok = reader.token
    pat = re.compile(rf"[\[\{{\(]\s*(?:{tok}(?:\s*,\s*{tok})*)?\s*[\]\}}\)]", reader.flags)
    out = []
    for m in pat.finditer(part):
        toks = re.findall(tok, m.group(0), reader.flags)
        out.append((m.start(), m.end(), toks))
    return out


def pairs(part: str, reader: Reader) -> list[tuple[int, int, str, str]]:
    """Node pairs of `part`: `a0: j1`, `applicant 0: job 2`, `0 -> 4`, `0 - 4`, `(0, 4)`, `0 matched to 4`;
    as (start, end, token, token). NLGraph's `applicant N: job M` names the nodes `aN` and `jM` where the
    graph names its two sides so."""
    tok = reader.token
    sep = r"\s*(?::|->|→|=>|—|–|-|\bgets\b|\btakes\b|\bmatched\s+(?:to|with)\b|\bwith\b|\bto\b)\s*"
    pat = re.compile(rf"(?:(?P<applicant>(?i:applicant))\s+)?(?P<a>{tok}){sep}(?:(?P<job>(?i:job))\s+)?(?P<b>{tok})"
                     rf"(?!\s*(?:->|→|=>|-))|\(\s*(?P<c>{tok})\s*,\s*(?P<d>{tok})\s*\)", reader.flags)
    out = []
    for m in pat.finditer(part):
        if m.group("a"):
            a = _side(m.group("a"), "a", m.group("applicant"), reader)
            b = _side(m.group("b"), "j", m.group("job"), reader)
        else:
            a, b = m.group("c"), m.group("d")
        out.append((m.start(), m.end(), a, b))
    return out


def _side(tok: str, prefix: str, word: str | None, reader: Reader) -> str:
    """`aN` (or `jN`) for the number N of "applicant N" ("job N") when the graph has that node, else `tok`."""
    return f"{prefix}{tok}" if word and tok.isdigit() and f"{prefix}{tok}" in reader.named else tok


def colour_map(part: str, reader: Reader) -> list[tuple[int, int, str, str]]:
    """`node: colour` statements of `part` (`0: red`, `node 1 = 2`, `2 -> colour 1`, `3 gets colour blue`),
    as (start, end, node token, colour); fewer than two statements are no colouring."""
    pat = re.compile(rf"({reader.token})\s*(?::|=|->|→|\bgets\s+colou?r\b|\bis\s+colou?r(?:ed)?\b)\s*"
                     r"(?:(?i:colou?r)\s*)?(\d+|[A-Za-z]+)\b", reader.flags)
    found = [(m.start(), m.end(), m.group(1), m.group(2).lower()) for m in pat.finditer(part)]
    return found if len(found) >= 2 else []


def vectors(part: str, reader: Reader) -> dict[str, tuple[float, ...]]:
    """`node 0: [3, 5]` statements of `part`, as token -> vector (a later statement wins)."""
    num = r"-?\d+(?:\.\d+)?"
    pat = re.compile(rf"({reader.token})\s*(?::|=|->|→|\bis\b)\s*[\[\(]\s*({num}(?:\s*,\s*{num})*)\s*[\]\)]",
                     reader.flags)
    out: dict[str, tuple[float, ...]] = {}
    for m in pat.finditer(part):
        out[m.group(1)] = tuple(float(x) for x in re.findall(num, m.group(2)))
    return out


def blank(text: str, part: str, spans: list[tuple[int, int]]) -> str:
    """`part` (the answer part or the whole reply) with `spans` replaced by spaces, so that the numbers of a
    witness are not read as the answer's count."""
    chars = list(part)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "Answer: " + "".join(chars) if part is not text else "".join(chars)


# ------------------------------------------------------------------------------------------- validators


def bad_nodes(G: nx.Graph, nodes: list[Node]) -> list[Node]:
    return [u for u in nodes if u not in G]


def hamiltonian_problem(G: nx.Graph, seq: list[Node], cycle: bool) -> str | None:
    """Why `seq` is not a Hamiltonian path (cycle) of G; None when it is one. A cycle may repeat its start
    at the end or leave the closing edge implicit."""
    if cycle and len(seq) == G.number_of_nodes() + 1 and seq and seq[0] == seq[-1]:
        seq = seq[:-1]
    unknown = bad_nodes(G, seq)
    if unknown:
        return f"Nodes {unknown} are not in the graph."
    repeated = sorted({u for u in seq if seq.count(u) > 1}, key=str)
    if repeated:
        return f"The {'cycle' if cycle else 'path'} visits {repeated} more than once."
    missing = [u for u in G if u not in set(seq)]
    if missing:
        return f"The {'cycle' if cycle else 'path'} misses nodes {missing[:10]}."
    steps = list(itertools.pairwise(seq)) + ([(seq[-1], seq[0])] if cycle and len(seq) > 1 else [])
    for a, b in steps:
        if not G.has_edge(a, b):
            return f"({a}, {b}) is not an edge of the graph."
    return None


def matching_problem(G: nx.Graph, edges: list[tuple[Node, Node]]) -> str | None:
    """Why `edges` is not a matching of G; None when it is one."""
    used: dict[Node, tuple[Node, Node]] = {}
    for a, b in edges:
        if a not in G or b not in G:
            return f"Nodes {[u for u in (a, b) if u not in G]} are not in the graph."
        if not G.has_edge(a, b):
            return f"({a}, {b}) is not an edge of the graph."
        for u in (a, b):
            if u in used and set(used[u]) != {a, b}:
                return f"Node {u} is matched twice: in {used[u]} and in ({a}, {b})."
            used[u] = (a, b)
    return None


def colouring_problem(G: nx.Graph, col: dict[Node, str]) -> str | None:
    missing = [u for u in G if u not in col]
    if missing:
        return f"The colouring leaves nodes {missing[:10]} without a colour."
    for u, v in G.edges():
        if col[u] == col[v]:
            return f"Adjacent nodes {u} and {v} share colour {col[u]}."
    return None


def same_value(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
