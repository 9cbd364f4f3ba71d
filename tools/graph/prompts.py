"""GraphOmni's 9 prompt schemes, exemplars made from solved instances, and self-consistency voting.

A prompt follows GraphOmni's layout: the task's intro, `Graph: <format> is` and the serialized graph,
`Q: <question>`, then `A:` with the scheme's cue. Zero-shot schemes: `none` (bare `A:`), `0-CoT`
("Let's think step by step."), `0-Instruct` ("Let's construct a graph with the nodes and edges
first.", NLGraph's build-a-graph prompt), `0-Algorithm` (the task's algorithm stated first), `LTM`
("Let's break down this problem:", least-to-most). Few-shot schemes put k solved exemplars first:
`k-shot` (answers only), `CoT` (a reasoning trace from the exact solver, then the answer), `Instruct`
(the build-a-graph cue, then the trace) and `Algorithm` (the algorithm, then traces). Exemplars are
fresh graphs from the same generator, direction and weighting, solved exactly, in the same format.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from tools.errors import InvalidInput, unknown_name
from tools.graph.answers import parse_bool, parse_node_list, parse_number
from tools.graph.generate import generate
from tools.graph.model import feature_dim, is_weighted
from tools.graph.serialize import FORMATS, format_key, label_of
from tools.graph.tasks import Params, Solution, Task, applicable, render_question, sample_params, solve
from tools.lazy import LazyModule

nx = LazyModule("networkx")

SCHEMES: dict[str, str] = {
    "none": "zero-shot, bare answer cue",
    "0-CoT": "zero-shot chain of thought (\"Let's think step by step.\")",
    "0-Instruct": "zero-shot build-a-graph instruction",
    "0-Algorithm": "zero-shot with the task's algorithm stated",
    "LTM": "least-to-most (\"Let's break down this problem:\")",
    "CoT": "k exemplars with reasoning traces",
    "k-shot": "k exemplars with answers only",
    "Instruct": "k exemplars with the build-a-graph instruction and traces",
    "Algorithm": "the algorithm, then k exemplars with traces",
}
FEW_SHOT = {"CoT", "k-shot", "Instruct", "Algorithm"}
_CUE = {
    "none": "",
    "0-CoT": "Let's think step by step.",
    "0-Instruct": "Let's construct a graph with the nodes and edges first.",
    "0-Algorithm": "",
    "LTM": "Let's break down this problem:",
    "CoT": "",
    "k-shot": "",
    "Instruct": "Let's construct a graph with the nodes and edges first.",
    "Algorithm": "",
}


def scheme_key(name: str) -> str:
    for k in SCHEMES:
        if k.lower() == name.strip().lower():
            return k
    aliases = {"0-shot": "none", "zero-shot": "none", "zero_shot": "none", "kshot": "k-shot", "few-shot": "k-shot",
               "ltm": "LTM", "cot": "CoT"}
    if name.strip().lower() in aliases:
        return aliases[name.strip().lower()]
    raise unknown_name("prompt scheme", name, SCHEMES)


def answer_text(task: Task, sol: Solution, fmt: str) -> str:
    """The exact answer written as a model should write it."""
    naming = FORMATS[fmt].naming
    if task.kind == "bool":
        return "Yes" if sol.answer else "No"
    if task.kind in ("int", "number"):
        return str(sol.answer)
    if task.kind == "vectors":
        return ", ".join(f"{FORMATS[fmt].node(_as_node(k))}: [{', '.join(map(str, v))}]"
                         for k, v in sol.answer.items())
    if not sol.answer:
        return "There is no path."
    return "[" + ", ".join(label_of(u, naming) for u in sol.answer) + "]"


def _as_node(label: str) -> int | str:
    return int(label) if label.isdigit() else label


def _block(task: Task, G: nx.Graph, p: Params, fmt: str) -> str:
    f = FORMATS[fmt]
    intro, question = render_question(task, p, f.node, G)
    return f"{intro}\nGraph: {f.title} is \n{f.write(G)}\nQ: {question}"


def _instruction(task: Task, fmt: str) -> str:
    what = task.answer_format
    if FORMATS[fmt].naming == "names" and task.kind == "node_list":
        what = "the list of names in order, like [James, Robert]"
    if FORMATS[fmt].naming == "letters" and task.kind == "node_list":
        what = "the list of node letters in order, like [A, D, C]"
    return f"End your reply with a last line 'Answer: ...' giving {what}."


@dataclass
class Exemplar:
    graph: nx.Graph
    params: Params
    solution: Solution


def make_exemplars(task: Task, G: nx.Graph, k: int, seed: int) -> list[Exemplar]:
    """k solved instances resembling `G` (same generator, direction, weighting; easy size)."""
    gen = G.graph.get("generator", "ERP")
    directed = G.is_directed()
    acyclic = directed and nx.is_directed_acyclic_graph(G)
    out: list[Exemplar] = []
    rng = random.Random(f"exemplars|{task.key}|{seed}")
    tries = 0
    while len(out) < k and tries < 40 * max(k, 1):
        tries += 1
        H = generate(gen, difficulty="easy", seed=rng.randrange(10**9), directed=directed, acyclic=acyclic,
                     weighted=is_weighted(G), features=feature_dim(G))
        if applicable(task, H) is not None or ("target" in task.params and H.number_of_nodes() < 2):
            continue
        try:
            p = sample_params(task, H, rng)
            sol = solve(task, H, p)
        except InvalidInput:
            continue
        out.append(Exemplar(H, p, sol))
    return out


def build_prompt(task: Task, G: nx.Graph, p: Params, fmt: str, scheme: str, *, k: int = 3, seed: int = 0,
                 answer_instruction: bool = True) -> str:
    """The full prompt for one question under one serialization and one prompt scheme."""
    fmt = format_key(fmt)
    scheme = scheme_key(scheme)
    parts: list[str] = []
    if scheme in ("0-Algorithm", "Algorithm"):
        parts.append(f"Algorithm: {task.algorithm}")
    if scheme in FEW_SHOT:
        for ex in make_exemplars(task, G, k, seed):
            ans = answer_text(task, ex.solution, fmt)
            if scheme == "k-shot":
                reply = f"The answer is {ans}."
            else:
                cue = _CUE[scheme] + " " if _CUE[scheme] else ""
                reply = f"{cue}{ex.solution.explanation} The answer is {ans}."
            parts.append(f"{_block(task, ex.graph, ex.params, fmt)}\nA: {reply}")
    question = _block(task, G, p, fmt)
    if answer_instruction:
        question += f"\n{_instruction(task, fmt)}"
    cue = _CUE[scheme]
    parts.append(f"{question}\nA:{' ' + cue if cue else ''}")
    return "\n\n".join(parts)


def canonical(task: Task, text: str, naming: str | None = None):
    """A hashable reading of an answer, for voting; None when nothing could be read."""
    if task.kind == "bool":
        return parse_bool(text)
    if task.kind in ("int", "number"):
        x = parse_number(text)
        return None if x is None else round(x, 6)
    if task.kind == "vectors":
        from tools.graph.claims import Reader, find, vectors

        _, found = find(text, vectors, Reader(naming, frozenset()))
        return tuple(sorted(found.items())) if found else None
    toks = parse_node_list(text, naming=naming)
    return None if toks is None else tuple(toks)


def majority_vote(task: Task, replies: list[str], *, naming: str | None = None) -> tuple[str, int]:
    """Self-consistency: the reply whose reading is most common (ties: earliest); and that reading's votes."""
    if not replies:
        raise InvalidInput("No replies to vote over.", hint="Sample at least one reply.")
    readings = [canonical(task, r, naming) for r in replies]
    counts = Counter(x for x in readings if x is not None)
    if not counts:
        return replies[0], 0
    top = max(counts.values())
    for r, x in zip(replies, readings, strict=True):
        if x is not None and counts[x] == top:
            return r, top
    return replies[0], 0
