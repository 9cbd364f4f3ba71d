"""A scripted chat model that really solves graph questions, for running the graph eval without weights.

`solver_rule` reads the question's graph out of the prompt with the family's parsers, works out the
task from the question, answers with networkx's own algorithms (not the family's solvers), and is
wrong on purpose in a known pattern: on the formats in `wrong_formats` it gives a wrong answer, and
under the schemes in `mute_schemes` it answers with no extractable answer. So the expected accuracy
of every cell is known exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import networkx as nx

from tools.graph.serialize import FORMATS, label_of, node_of_letters, node_of_name, parse
from tools.graph.tasks import TASKS

_NODE = r"(node \d+|[A-Z][a-z]+\d*|[A-Z]{1,3})"


def _ref(tok: str) -> int:
    if tok.startswith("node "):
        return int(tok.split()[1])
    return node_of_letters(tok) if tok.isupper() else node_of_name(tok)


def _template(t: str) -> re.Pattern:
    pat = re.escape(t)
    for name in ("source", "target", "node"):
        pat = pat.replace(re.escape("{" + name + "}"), f"(?P<{name}>{_NODE})")
    return re.compile(pat)


_PATTERNS = [(key, _template(t.intro), _template(t.question)) for key, t in TASKS.items()]
_TITLES = {f.title: key for key, f in FORMATS.items()}


def read_question(prompt: str) -> tuple[str, str, nx.Graph, dict[str, int]]:
    """(task, format, graph, params) of the last question in a prompt."""
    block = prompt[prompt.rfind("\n\n") + 2:] if "\n\n" in prompt else prompt
    m = re.search(r"Graph: (?P<title>.+?) is \n(?P<text>.*)\nQ: (?P<q>[^\n]*)", block, re.S)
    if not m:
        return _read_graphomni(prompt)
    fmt = _TITLES[m.group("title")]
    intro = block[: m.start()].strip().splitlines()[-1] if block[: m.start()].strip() else ""
    for key, intro_pat, q_pat in _PATTERNS:
        qm = q_pat.fullmatch(m.group("q"))
        im = intro_pat.fullmatch(intro)
        if qm and im:
            params = {k: _ref(v) for k, v in {**im.groupdict(), **qm.groupdict()}.items() if v}
            directed = "directed" in TASKS[key].needs or "dag" in TASKS[key].needs or key == "max_flow"
            G = parse(m.group("text"), fmt, directed=directed) if m.group("text").strip() != "{}" else nx.Graph()
            G.add_nodes_from(params.values())  # GraphOmni's own prompts leave isolated nodes out
            return key, fmt, G, params
    raise ValueError("unknown question")


def _read_graphomni(prompt: str) -> tuple[str, str, nx.Graph, dict[str, int]]:
    """A question as GraphOmni's published prompts lay it out (Adjacency Set text, then `Q: ...`)."""
    m = re.search(r"Adjacency Set is \s*\n(?P<text>\{.*?\})\s*\n+Q: (?P<q>[^\n]*)", prompt, re.S)
    if not m:
        raise ValueError("no graph question found")
    for key, _, q_pat in _PATTERNS:
        qm = q_pat.fullmatch(m.group("q").strip())
        if qm:
            params = {k: _ref(v) for k, v in qm.groupdict().items() if v}
            text = m.group("text")
            G = parse(text, "adjacency_set") if text.strip() != "{}" else nx.Graph()
            G.add_nodes_from(params.values())  # GraphOmni's text leaves isolated nodes out
            return key, "adjacency_set", G, params
    raise ValueError("unknown question")


def networkx_answer(task: str, G: nx.Graph, p: dict[str, int]) -> Any:
    """The answer by networkx's own algorithms."""
    s, t = p.get("source"), p.get("target")
    w = "weight" if G.graph.get("weighted") else None
    answers: dict[str, Callable[[], Any]] = {
        "connectivity": lambda: nx.has_path(G, s, t),
        "reachability": lambda: nx.has_path(G, s, t),
        "cycle": lambda: not nx.is_forest(G) if not G.is_directed() else not nx.is_directed_acyclic_graph(G),
        "bfsorder": lambda: [s] + [v for _, v in nx.bfs_edges(G, s)],
        "diameter": lambda: max(max(d.values()) for _, d in nx.all_pairs_shortest_path_length(G)),
        "shortest_path": lambda: nx.shortest_path(G, s, t),
        "weighted_shortest_path": lambda: nx.dijkstra_path(G, s, t, weight=w or "weight"),
        "triangle": lambda: sum(nx.triangles(G).values()) // 3,
        "node_count": G.number_of_nodes,
        "edge_count": G.number_of_edges,
        "node_degree": lambda: G.out_degree(p["node"]) if G.is_directed() else G.degree(p["node"]),
        "edge_existence": lambda: G.has_edge(s, t),
        "component_count": lambda: nx.number_connected_components(G.to_undirected()),
        "topological_sort": lambda: list(nx.topological_sort(G)),
        "mst_weight": lambda: nx.minimum_spanning_tree(G, weight=w or "weight").size(weight=w),
    }
    if task not in answers:
        raise ValueError(f"no networkx rule for {task}")
    return answers[task]()


def _write(task: str, ans: Any, fmt: str) -> str:
    naming = FORMATS[fmt].naming
    if isinstance(ans, bool):
        return "yes" if ans else "no"
    if isinstance(ans, list):
        return "[" + ", ".join(label_of(u, naming) for u in ans) + "]"
    return str(int(ans) if float(ans).is_integer() else ans)


def _wrong(task: str, ans: Any, G: nx.Graph, fmt: str) -> str:
    if isinstance(ans, bool):
        return "no" if ans else "yes"
    if isinstance(ans, list):
        return _write(task, list(reversed(ans)) if len(ans) > 1 else [*ans, *ans], fmt)
    return str(int(ans) + 1 if float(ans).is_integer() else ans + 1)


def solver_rule(wrong_formats: tuple[str, ...] = ("edge_list",), mute_schemes: tuple[str, ...] = ("none",)):
    """A ScriptedLLM rule (request body -> reply text) that answers graph questions as described above."""

    def rule(body: dict) -> str:
        prompt = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        task, fmt, G, p = read_question(prompt)
        if scheme_of(prompt) in mute_schemes:
            return "I would need to think about this graph more carefully."
        try:
            ans = networkx_answer(task, G, p)
        except nx.NetworkXNoPath:
            return "Working through the graph, the target cannot be reached.\nAnswer: there is no path."
        text = _wrong(task, ans, G, fmt) if fmt in wrong_formats else _write(task, ans, fmt)
        return f"Working through the graph step by step, node by node.\nAnswer: {text}"

    return rule


_CUES = {"A:": "none", "A: Let's think step by step.": "0-CoT", "A: Let's break down this problem:": "LTM",
         "A: Let's construct a graph with the nodes and edges first.": "0-Instruct"}


def scheme_of(prompt: str) -> str:
    """Which of the 9 prompt schemes built `prompt` (read from its layout)."""
    few_shot = prompt.count("\nQ: ") > 1
    algorithm = prompt.startswith("Algorithm:")
    if few_shot:
        if algorithm:
            return "Algorithm"
        if "\nA: Let's construct a graph" in prompt:
            return "Instruct"
        return "k-shot" if "\nA: The answer is" in prompt else "CoT"
    if algorithm:
        return "0-Algorithm"
    return _CUES.get(prompt.rstrip().splitlines()[-1], "none")


class ScriptedSolver:
    """The same rule as an in-process `ChatModel` (no HTTP): for running the eval with no endpoint at all."""

    def __init__(self, wrong_formats: tuple[str, ...] = ("edge_list",), mute_schemes: tuple[str, ...] = ("none",)):
        self.name = "scripted-networkx-solver"
        self._rule = solver_rule(wrong_formats, mute_schemes)

    async def complete(self, messages, *, max_tokens=None, temperature=None, stop=None):
        from tools.llm import Completion

        body = {"messages": [m.as_dict() for m in messages]}
        text = self._rule(body)
        prompt_chars = sum(len(m.content) for m in messages)
        return Completion(text=text, prompt_tokens=prompt_chars // 4, completion_tokens=len(text) // 4,
                          model=self.name, finish_reason="stop")
