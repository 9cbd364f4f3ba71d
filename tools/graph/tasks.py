"""Graph tasks: exact solvers with witnesses, answer checking against the graph, random baselines.

GraphOmni's 6 tasks (connectivity, cycle, bfsorder, diameter, shortest_path, triangle) and the NLGraph /
GraphQA / classic ones. Each task knows which node parameters it takes (`source`, `target`, `node`),
what graphs it is defined on, how to ask it, how to solve it exactly (networkx, or exact search under
`max_nodes_np_hard` for the NP-hard ones), how to read and validate a free-text answer, and the chance
that a uniform random guess is right.

Multi-answer tasks are checked by algorithm, never against a stored string: a BFS order is accepted
when it is *a* BFS order of the graph from the source (any tie-breaking), a path when it is a path of
the graph of minimum length (or weight), a topological order when every edge points forward.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tools.errors import InvalidInput, LimitExceeded, unknown_name
from tools.graph import claims
from tools.graph.answers import parse_bool, parse_node_list, parse_number, says_no_path
from tools.graph.model import Node, feature_dim, is_weighted, node_key, require_node, sorted_nodes
from tools.lazy import LazyModule
from tools.progress import Progress, checkpoint, running
from tools.settings import get_settings

nx = LazyModule("networkx")

Params = dict[str, Node]


@dataclass
class Solution:
    """An exact answer, the evidence for it, and a short reasoning trace (used for CoT exemplars)."""

    answer: Any
    witness: Any = None
    explanation: str = ""


@dataclass
class Check:
    """The verdict on one free-text answer."""

    extracted: bool
    correct: bool
    parsed: Any
    reason: str


@dataclass(frozen=True)
class Task:
    key: str
    title: str
    source: str
    kind: str  # "bool", "int", "number", "node_list", "vectors"
    intro: str
    question: str
    solve: Callable[[nx.Graph, Params], Solution]
    algorithm: str
    params: tuple[str, ...] = ()
    needs: frozenset[str] = field(default_factory=frozenset)  # directed, undirected, dag, weighted, bipartite, features
    np_hard: bool = False
    verify: Callable[[nx.Graph, Params, list[int], Solution], tuple[bool, str]] | None = None
    answer_range: Callable[[nx.Graph, Params], tuple[float, float]] | None = None
    list_baseline: Callable[[nx.Graph, Params, Solution], tuple[float, str]] | None = None

    @property
    def answer_format(self) -> str:
        return {
            "bool": "yes or no",
            "int": "a single integer",
            "number": "a single number",
            "node_list": "the list of nodes in order, like [0, 3, 2]",
            "vectors": "every node's vector, like node 0: [1, 2], node 1: [0, 3]",
        }[self.kind]


# ------------------------------------------------------------------------------------------- shared bits


def _steps_limit() -> int:
    return get_settings().graph.max_search_steps


def _np_hard_guard(task: Task, G: nx.Graph) -> None:
    bound, setting = np_hard_bound(task)
    n = G.number_of_nodes()
    if n > bound:
        raise LimitExceeded(f"The graph's node count for the NP-hard task {task.key!r} (exact search)", n, bound,
                            setting)


def np_hard_bound(task: Task) -> tuple[int, str]:
    """The largest graph (nodes) the exact search of an NP-hard task accepts, and the variable that sets it."""
    s = get_settings().graph
    if task.key == "max_cut":
        return s.max_nodes_max_cut, "RESEARCH_MCP_GRAPH__MAX_NODES_MAX_CUT"
    return s.max_nodes_np_hard, "RESEARCH_MCP_GRAPH__MAX_NODES_NP_HARD"


def _undirected(G: nx.Graph) -> nx.Graph:
    return G.to_undirected(as_view=True) if G.is_directed() else G


def _weight(G: nx.Graph) -> str | None:
    return "weight" if is_weighted(G) else None


def _w(G: nx.Graph, u: int, v: int) -> float:
    return float(G[u][v].get("weight", 1.0)) if is_weighted(G) else 1.0


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def _path_text(path: list) -> str:
    return "[" + ", ".join(map(str, path)) + "]"


# ------------------------------------------------------------------------------------------- solvers


def _connectivity(G: nx.Graph, p: Params) -> Solution:
    s, t = p["source"], p["target"]
    if nx.has_path(G, s, t):
        path = nx.shortest_path(G, s, t)
        return Solution(True, {"path": path}, f"Searching from {s}, we reach {t} along {_path_text(path)}. So yes.")
    comp = sorted_nodes(nx.node_connected_component(_undirected(G), s)) if not G.is_directed() else sorted_nodes(
        nx.descendants(G, s) | {s})
    return Solution(False, {"reachable_from_source": comp},
                    f"Searching from {s} reaches only {_path_text(comp)}, which does not include {t}. So no.")


def _cycle(G: nx.Graph, p: Params) -> Solution:
    try:
        edges = nx.find_cycle(G)
    except nx.NetworkXNoCycle:
        what = "a forest" if not G.is_directed() else "acyclic (a DAG)"
        return Solution(False, None, f"Every component is a tree, so the graph is {what}. So no.")
    cycle = [u for u, _v, *_ in edges] + [edges[0][0]]
    return Solution(True, {"cycle": cycle}, f"The edges {_path_text(cycle)} close a cycle. So yes.")


def _bfs(G: nx.Graph, p: Params) -> Solution:
    s = p["source"]
    order = [s]
    seen = {s}
    levels = [[s]]
    frontier = [s]
    while frontier:
        nxt = []
        for u in frontier:
            for v in sorted_nodes(G.adj[u]):
                if v not in seen:
                    seen.add(v)
                    order.append(v)
                    nxt.append(v)
        if nxt:
            levels.append(nxt)
        frontier = nxt
    trace = "; ".join(f"level {i}: {_path_text(lv)}" for i, lv in enumerate(levels))
    return Solution(order, {"levels": levels}, f"Visiting neighbours in increasing order: {trace}. "
                    f"The BFS order is {_path_text(order)}.")


def _diameter(G: nx.Graph, p: Params) -> Solution:
    best, pair = 0, None
    for u in sorted_nodes(G):
        checkpoint()
        dist = nx.single_source_shortest_path_length(G, u)
        for v, d in dist.items():
            if d > best:
                best, pair = d, (u, v)
    if pair is None:
        return Solution(0, None, "No two distinct nodes are joined by a path, so the diameter is 0.")
    path = nx.shortest_path(G, *pair)
    return Solution(best, {"pair": list(pair), "path": path},
                    f"BFS from every node gives all shortest distances; the longest is {best}, "
                    f"from {pair[0]} to {pair[1]} along {_path_text(path)}. So the diameter is {best}.")


def _shortest(G: nx.Graph, p: Params) -> Solution:
    if is_weighted(G):  # a weighted graph asks the weighted question: least total weight
        return _weighted_shortest(G, p)
    s, t = p["source"], p["target"]
    try:
        path = nx.shortest_path(G, s, t)
    except nx.NetworkXNoPath:
        return Solution([], None, f"No path leads from {s} to {t}.")
    return Solution(path, {"length": len(path) - 1, "weight": len(path) - 1},
                    f"BFS from {s} reaches {t} at distance {len(path) - 1}; following parents back gives "
                    f"{_path_text(path)}.")


def _weighted_shortest(G: nx.Graph, p: Params) -> Solution:
    s, t = p["source"], p["target"]
    try:
        dist, path = nx.single_source_dijkstra(G, s, t, weight=_weight(G) or (lambda u, v, d: 1))
    except nx.NetworkXNoPath:
        return Solution([], None, f"No path leads from {s} to {t}.")
    return Solution(path, {"weight": _num(dist)},
                    f"Dijkstra from {s} settles {t} at total weight {_num(dist)} along {_path_text(path)}.")


def _triangle(G: nx.Graph, p: Params) -> Solution:
    """Each triangle once: orient every edge from the lower-ranked end (by degree, then label) and intersect
    the out-neighbour sets of the two ends of every edge."""
    budget = _Budget("triangle")
    rank = {u: i for i, u in enumerate(sorted(G, key=lambda u: (G.degree(u), node_key(u))))}
    out = {u: {v for v in G.adj[u] if rank[v] > rank[u]} for u in G}
    count = 0
    found: list[list[Node]] = []
    for u in sorted_nodes(G):
        for v in out[u]:
            budget.step()
            common = out[u] & out[v]
            count += len(common)
            if len(found) < 200:
                found.extend(sorted_nodes((u, v, w)) for w in common)
    found = sorted(found[:200], key=lambda t: tuple(map(node_key, t)))
    shown = ", ".join(f"({a}, {b}, {c})" for a, b, c in found[:10]) + (" ..." if count > 10 else "")
    return Solution(count, {"triangles": found},
                    f"Checking every pair of neighbours of every node: the triangles are {shown or 'none'}. "
                    f"So there are {count}.")


def _gnn(G: nx.Graph, p: Params) -> Solution:
    """Two layers of neighbour-sum aggregation: each layer sets h_v to the sum of h_u over the neighbours u of
    v (a node without neighbours gets the zero vector)."""
    dim = feature_dim(G)
    h = {u: tuple(G.nodes[u]["features"]) for u in G}
    layers = []
    for _ in range(2):
        checkpoint()
        h = {v: tuple(sum(h[u][i] for u in G.adj[v]) for i in range(dim)) for v in G}
        layers.append(h)
    out = {str(u): [_num(x) for x in h[u]] for u in sorted_nodes(G)}
    first = ", ".join(f"node {u}: {[_num(x) for x in layers[0][u]]}" for u in sorted_nodes(G)[:6])
    return Solution(out, {"layer1": {str(u): [_num(x) for x in layers[0][u]] for u in sorted_nodes(G)}},
                    f"Layer 1 sums each node's neighbours' vectors: {first}{' ...' if len(G) > 6 else ''}. "
                    f"Layer 2 sums the layer-1 vectors the same way.")


def features_text(G: nx.Graph, node_ref: Callable[[Node], str]) -> str:
    """The node vectors as a question shows them: 'Embeddings: node 0: [1, 0], node 1: [0, 1].'"""
    items = [f"{node_ref(u)}: [{', '.join(str(_num(x)) for x in G.nodes[u]['features'])}]" for u in sorted_nodes(G)]
    return "Embeddings: " + ", ".join(items) + "."


def _topo(G: nx.Graph, p: Params) -> Solution:
    order = list(nx.lexicographical_topological_sort(G))
    return Solution(order, None, "Repeatedly removing the smallest node with no incoming edge gives "
                    f"{_path_text(order)}.")


def _max_flow(G: nx.Graph, p: Params) -> Solution:
    s, t = p["source"], p["target"]
    H = nx.DiGraph()
    H.add_nodes_from(G)
    for u, v in G.edges():
        c = _w(G, u, v)
        H.add_edge(u, v, capacity=H[u][v]["capacity"] + c if H.has_edge(u, v) else c)
        if not G.is_directed():
            H.add_edge(v, u, capacity=H[v][u]["capacity"] + c if H.has_edge(v, u) else c)
    value, flow = nx.maximum_flow(H, s, t)
    _, (side, _) = nx.minimum_cut(H, s, t)
    used = [[u, v, _num(f)] for u, d in flow.items() for v, f in d.items() if f > 0]
    return Solution(_num(value), {"flow": used[:500], "source_side_of_min_cut": sorted_nodes(side)},
                    f"Augmenting paths from {s} to {t} push a total of {_num(value)}; the cut around "
                    f"{_path_text(sorted_nodes(side))} has that capacity, so it is maximum.")


def _matching(G: nx.Graph, p: Params) -> Solution:
    if not nx.is_bipartite(G):
        raise InvalidInput("bipartite_matching needs a bipartite graph; this one has an odd cycle.",
                           hint="Generate one with Bipartite-ERM or Bipartite-ERP, or use another task.")
    top = {u for u, c in nx.bipartite.color(G).items() if c == 0}
    mate = nx.bipartite.hopcroft_karp_matching(G, top_nodes=top)
    M = {(u, v) for u, v in mate.items() if u in top}
    pairs = sorted((sorted_nodes(e) for e in M), key=lambda e: (node_key(e[0]), node_key(e[1])))
    return Solution(len(pairs), {"matching": pairs},
                    f"Hopcroft-Karp's shortest augmenting paths give the matching {pairs}, which no augmenting path "
                    "improves: "
                    f"size {len(pairs)}.")


class _Budget:
    """Counts the steps of a search; refuses past max_search_steps and honours cancellation (the current
    call's `Progress`) every 1024 steps."""

    def __init__(self, task: str) -> None:
        self.limit = _steps_limit()
        self.left = self.limit
        self.task = task
        checkpoint()

    def step(self) -> None:
        self.left -= 1
        if self.left % 1024 == 0:
            checkpoint()
        if self.left < 0:
            raise LimitExceeded(f"The exact search for {self.task!r} (steps)", self.limit + 1, self.limit,
                                "RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS")


def _hamiltonian(G: nx.Graph, cycle: bool, task: str) -> list[int] | None:
    n = G.number_of_nodes()
    nodes = sorted_nodes(G)
    if n == 1:
        return None if cycle else nodes
    if cycle and n < 3:
        return None
    U = _undirected(G)
    if not nx.is_connected(U):
        return None
    if not G.is_directed():  # cheap necessary conditions before the exponential search
        if cycle and (min(d for _, d in G.degree()) < 2 or not nx.is_biconnected(G)):
            return None
        if not cycle and sum(1 for _, d in G.degree() if d == 1) > 2:
            return None
    out = {u: sorted_nodes(G.adj[u]) if not G.is_directed() else sorted_nodes(G.successors(u)) for u in nodes}
    budget = _Budget(task)
    starts = [nodes[0]] if cycle else sorted(nodes, key=lambda u: len(out[u]))
    path: list[int] = []
    on: set[int] = set()

    def dfs(u: int) -> bool:
        budget.step()
        path.append(u)
        on.add(u)
        if len(path) == n:
            if not cycle or path[0] in out[u]:
                return True
        else:
            for v in sorted(out[u], key=lambda x: sum(1 for y in out[x] if y not in on)):
                if v not in on and dfs(v):
                    return True
        path.pop()
        on.discard(u)
        return False

    for s in starts:
        if dfs(s):
            return path + ([path[0]] if cycle else [])
    return None


def _ham_path(G: nx.Graph, p: Params) -> Solution:
    path = _hamiltonian(G, False, "hamiltonian_path")
    if path is None:
        return Solution(False, None, "An exhaustive search finds no path that visits every node once. So no.")
    return Solution(True, {"path": path}, f"The path {_path_text(path)} visits every node exactly once. So yes.")


def _ham_cycle(G: nx.Graph, p: Params) -> Solution:
    cyc = _hamiltonian(G, True, "hamiltonian_cycle")
    if cyc is None:
        return Solution(False, None, "An exhaustive search finds no cycle through every node. So no.")
    return Solution(True, {"cycle": cyc}, f"The cycle {_path_text(cyc)} visits every node once. So yes.")


def _degree(G: nx.Graph, p: Params) -> Solution:
    u = p["node"]
    nbrs = sorted_nodes(G.successors(u)) if G.is_directed() else sorted_nodes(G.adj[u])
    return Solution(len(nbrs), {"neighbours": nbrs}, f"Node {u} has edges to {_path_text(nbrs)}: {len(nbrs)}.")


def _node_count(G: nx.Graph, p: Params) -> Solution:
    return Solution(G.number_of_nodes(), None, f"The graph lists {G.number_of_nodes()} nodes.")


def _edge_count(G: nx.Graph, p: Params) -> Solution:
    return Solution(G.number_of_edges(), None, f"Counting each edge once gives {G.number_of_edges()}.")


def _edge_exists(G: nx.Graph, p: Params) -> Solution:
    u, v = p["source"], p["target"]
    yes = G.has_edge(u, v)
    word = "yes" if yes else "no"
    return Solution(yes, None, f"The edge ({u}, {v}) is {'listed' if yes else 'not listed'}. So {word}.")


def _reach(G: nx.Graph, p: Params) -> Solution:
    return _connectivity(G, p)


def _components(G: nx.Graph, p: Params) -> Solution:
    comps = [sorted_nodes(c) for c in nx.connected_components(_undirected(G))]
    comps.sort(key=lambda c: node_key(c[0]))
    return Solution(len(comps), {"components": comps[:200]},
                    f"Searching from each unvisited node finds {len(comps)} components.")


def max_clique_search(G: nx.Graph, task: str) -> list[Node]:
    """A maximum clique by branch and bound (Tomita-Seki MCQ: greedy colouring bounds the clique a candidate
    set can still give), on bitsets; each branch is a step of the task's search budget."""
    nodes = sorted(G, key=lambda u: (-G.degree(u), node_key(u)))
    idx = {u: i for i, u in enumerate(nodes)}
    nbr = [0] * len(nodes)
    for u, v in G.edges():
        nbr[idx[u]] |= 1 << idx[v]
        nbr[idx[v]] |= 1 << idx[u]
    budget = _Budget(task)
    best: list[int] = []

    def colour_order(cand: int) -> list[tuple[int, int]]:
        order: list[tuple[int, int]] = []
        colour = 0
        left = cand
        while left:
            colour += 1
            avail = left
            while avail:
                low = avail & -avail
                i = low.bit_length() - 1
                avail &= ~nbr[i] & ~low
                left &= ~low
                order.append((i, colour))
        return order

    def expand(clique: list[int], cand: int) -> None:
        nonlocal best
        for i, colour in reversed(colour_order(cand)):
            budget.step()
            if len(clique) + colour <= len(best):
                return
            new = [*clique, i]
            sub = cand & nbr[i]
            if sub:
                expand(new, sub)
            elif len(new) > len(best):
                best = new
            cand &= ~(1 << i)

    if nodes:
        expand([], (1 << len(nodes)) - 1)
    return [nodes[i] for i in best]


def _max_clique(G: nx.Graph, p: Params) -> Solution:
    clique = max_clique_search(G, "max_clique")
    size = len(clique)
    clique = sorted_nodes(clique)
    return Solution(size, {"clique": clique}, f"{_path_text(clique)} are pairwise adjacent and branch and bound "
                    f"finds no larger clique: {size}.")


def _mis(G: nx.Graph, p: Params) -> Solution:
    clique = max_clique_search(nx.complement(G), "max_independent_set")
    size = len(clique)
    s = sorted_nodes(clique)
    return Solution(size, {"independent_set": s}, f"{_path_text(s)} are pairwise non-adjacent and no larger "
                    f"set is: {size}.")


def _mvc(G: nx.Graph, p: Params) -> Solution:
    clique = max_clique_search(nx.complement(G), "min_vertex_cover")
    cover = sorted_nodes(set(G) - set(clique))
    return Solution(len(cover), {"cover": cover}, f"The complement of a maximum independent set, {_path_text(cover)}, "
                    f"touches every edge: {len(cover)}.")


def _chromatic(G: nx.Graph, p: Params) -> Solution:
    nodes = sorted(G, key=lambda u: -G.degree(u))
    nbrs = {u: set(G.adj[u]) for u in G}
    budget = _Budget("chromatic_number")

    def colour(k: int) -> dict[int, int] | None:
        col: dict[int, int] = {}

        def rec(i: int) -> bool:
            budget.step()
            if i == len(nodes):
                return True
            u = nodes[i]
            used = {col[v] for v in nbrs[u] if v in col}
            top = max(col.values(), default=-1)
            for c in range(min(k, top + 2)):
                if c not in used:
                    col[u] = c
                    if rec(i + 1):
                        return True
                    del col[u]
            return False

        return dict(col) if rec(0) else None

    lower = 1 if G.number_of_edges() == 0 else 2
    for k in range(lower, G.number_of_nodes() + 1):
        c = colour(k)
        if c is not None:
            return Solution(k, {"colouring": {str(u): c[u] for u in sorted_nodes(c)}},
                            f"A proper colouring with {k} colours exists and none with {k - 1}: {k}.")
    return Solution(G.number_of_nodes(), None, "")


def _max_cut(G: nx.Graph, p: Params) -> Solution:
    import numpy as np

    nodes = sorted_nodes(G)
    n = len(nodes)
    idx = {u: i for i, u in enumerate(nodes)}
    eu = np.array([idx[u] for u, v in G.edges()], dtype=np.int64)
    ev = np.array([idx[v] for u, v in G.edges()], dtype=np.int64)
    ew = np.array([_w(G, u, v) for u, v in G.edges()], dtype=float)
    if n <= 1 or len(ew) == 0:
        return Solution(0, {"side": nodes}, "There is no edge to cut: 0.")
    best, best_mask = -1.0, 0
    total = 1 << (n - 1)  # node 0 stays on side 0
    chunk = 1 << 15
    bits = np.arange(n - 1, dtype=np.int64)
    for start in range(0, total, chunk):
        checkpoint()
        masks = np.arange(start, min(total, start + chunk), dtype=np.int64)
        side = np.zeros((len(masks), n), dtype=bool)
        side[:, 1:] = (masks[:, None] >> bits[None, :]) & 1
        vals = ((side[:, eu] != side[:, ev]) * ew).sum(axis=1)
        i = int(vals.argmax())
        if vals[i] > best:
            best, best_mask = float(vals[i]), int(masks[i])
    side_a = [nodes[0]] + [nodes[j + 1] for j in range(n - 1) if not best_mask >> j & 1]
    return Solution(_num(best), {"side": side_a}, f"Trying every split, putting {_path_text(side_a)} on one side "
                    f"cuts the most: {_num(best)}.")


def _mst(G: nx.Graph, p: Params) -> Solution:
    T = nx.minimum_spanning_tree(_undirected(G), weight="weight" if is_weighted(G) else None)
    w = sum(_w(G, u, v) if G.has_edge(u, v) else _w(G, v, u) for u, v in T.edges())
    edges = sorted((sorted_nodes(e) for e in T.edges()), key=lambda e: (node_key(e[0]), node_key(e[1])))
    return Solution(_num(w), {"edges": edges[:500]}, f"Kruskal's algorithm keeps {len(edges)} edges of total "
                    f"weight {_num(w)}.")


# ------------------------------------------------------------------------------------------- verifiers


def verify_bfs(G: nx.Graph, p: Params, order: list[int], sol: Solution) -> tuple[bool, str]:
    """Is `order` a BFS order of G from the source, for some tie-breaking among neighbours?"""
    s = p["source"]
    reach = {s} | (nx.descendants(G, s) if G.is_directed() else nx.node_connected_component(G, s))
    if not order or order[0] != s:
        return False, f"A BFS order from {s} starts with {s}."
    if len(set(order)) != len(order):
        return False, "A node appears twice."
    if set(order) != reach:
        missing, extra = sorted_nodes(reach - set(order)), sorted_nodes(set(order) - reach)
        return False, f"The order must visit exactly the {len(reach)} nodes reachable from {s}" + (
            f"; missing {missing}" if missing else "") + (f"; not reachable or unknown {extra}" if extra else "") + "."
    pos = {u: i for i, u in enumerate(order)}
    pred = G.predecessors if G.is_directed() else G.neighbors
    last_parent = 0
    for i, v in enumerate(order[1:], start=1):
        parent = min(pos[u] for u in pred(v) if u in pos)
        if parent >= i:
            return False, f"Node {v} comes before any of its neighbours was visited."
        if parent < last_parent:
            return False, (f"Node {v} (found from {order[parent]}) comes after a node found from the later "
                           f"node {order[last_parent]}: not first-in first-out.")
        last_parent = parent
    return True, "A valid BFS order."


def _verify_path(G: nx.Graph, p: Params, path: list[int], sol: Solution, weighted: bool) -> tuple[bool, str]:
    s, t = p["source"], p["target"]
    if not sol.answer:
        return False, f"There is no path from {s} to {t}."
    if not path or path[0] != s or path[-1] != t:
        return False, f"A path from {s} to {t} starts at {s} and ends at {t}."
    for a, b in itertools.pairwise(path):
        if not G.has_edge(a, b):
            return False, f"({a}, {b}) is not an edge of the graph."
    if weighted:
        cost = sum(_w(G, a, b) for a, b in itertools.pairwise(path))
        best = sol.witness["weight"]
        if not math.isclose(cost, best, rel_tol=1e-9, abs_tol=1e-9):
            return False, f"The path weighs {_num(cost)}; the shortest weighs {best}."
        return True, f"A path of minimum weight {best}."
    best = len(sol.answer) - 1
    if len(path) - 1 != best:
        return False, f"The path has {len(path) - 1} edges; the shortest has {best}."
    return True, f"A shortest path ({best} edges)."


def verify_shortest_path(G, p, path, sol):
    return _verify_path(G, p, path, sol, weighted=is_weighted(G))  # a weighted graph asks the least total weight


def verify_weighted_path(G, p, path, sol):
    return _verify_path(G, p, path, sol, weighted=True)


def verify_topo(G: nx.Graph, p: Params, order: list[int], sol: Solution) -> tuple[bool, str]:
    if set(order) != set(G) or len(order) != G.number_of_nodes():
        return False, "A topological order lists every node exactly once."
    pos = {u: i for i, u in enumerate(order)}
    for u, v in G.edges():
        if pos[u] > pos[v]:
            return False, f"The edge {u} -> {v} points backwards."
    return True, "Every edge points forward."


# ------------------------------------------------------------------------------------------- baselines


BASELINE_SAMPLES = 2000
EXACT = "exact"


def _bfs_baseline(G: nx.Graph, p: Params, sol: Solution) -> tuple[float, str]:
    """P(a uniform random order of the reachable nodes, source first, is a valid BFS order): exact over all
    orders up to 7 other nodes, else estimated from random orders."""
    rest = sol.answer[1:]
    k = len(rest)
    if k <= 1:
        return 1.0, EXACT
    if k <= 7:
        ok = 0
        for i, perm in enumerate(itertools.permutations(rest)):
            if i % 512 == 0:
                checkpoint()
            ok += verify_bfs(G, p, [p["source"], *perm], sol)[0]
        return ok / math.factorial(k), EXACT
    rng = random.Random(0)
    hits = 0
    for i in range(BASELINE_SAMPLES):
        if i % 256 == 0:
            checkpoint()
        perm = rest[:]
        rng.shuffle(perm)
        hits += verify_bfs(G, p, [p["source"], *perm], sol)[0]
    return hits / BASELINE_SAMPLES, f"estimated from {BASELINE_SAMPLES} random orders"


def _walk_baseline(G: nx.Graph, p: Params, sol: Solution) -> tuple[float, str]:
    return _walk_probability(G, p, sol), EXACT


def _walk_probability(G: nx.Graph, p: Params, sol: Solution) -> float:
    """P(a uniform random walk from the source follows a shortest path to the target)."""
    s, t = p["source"], p["target"]
    if not sol.answer:
        return 0.0
    wt = _weight(G) or (lambda u, v, d: 1)
    dist_t = nx.single_source_dijkstra_path_length(G.reverse(copy=False) if G.is_directed() else G, t, weight=wt)
    best = dist_t[s]

    def w(u, v):
        return _w(G, u, v) if is_weighted(G) else 1.0

    memo: dict[int, float] = {}

    def prob(u: int) -> float:
        if u == t:
            return 1.0
        if u in memo:
            return memo[u]
        nbrs = list(G.successors(u)) if G.is_directed() else list(G.adj[u])
        good = [v for v in nbrs if v in dist_t and math.isclose(w(u, v) + dist_t[v], dist_t[u], abs_tol=1e-9)]
        memo[u] = sum(prob(v) for v in good) / len(nbrs) if nbrs else 0.0
        return memo[u]

    return prob(s) if best is not None else 0.0


TOPO_EXACT_MAX_NODES = 12


def _topo_baseline(G: nx.Graph, p: Params, sol: Solution) -> tuple[float, str]:
    """(number of linear extensions) / n!: exact by subset DP up to TOPO_EXACT_MAX_NODES nodes, above that
    estimated by sequential importance sampling (build an order by picking uniformly among the nodes whose
    predecessors are placed; the product over steps of available / remaining is an unbiased estimate)."""
    nodes = sorted_nodes(G)
    n = len(nodes)
    idx = {u: i for i, u in enumerate(nodes)}
    preds = [0] * n
    for u, v in G.edges():
        preds[idx[v]] |= 1 << idx[u]
    if n <= TOPO_EXACT_MAX_NODES:
        count = [0] * (1 << n)
        count[0] = 1
        for mask in range(1 << n):
            if mask % 1024 == 0:
                checkpoint()
            c = count[mask]
            if not c:
                continue
            for i in range(n):
                if not mask >> i & 1 and preds[i] & mask == preds[i]:
                    count[mask | 1 << i] += c
        return count[-1] / math.factorial(n), EXACT
    rng = random.Random(0)
    total = 0.0
    for k in range(BASELINE_SAMPLES):
        if k % 128 == 0:
            checkpoint()
        placed = 0
        weight = 1.0
        for step in range(n):
            avail = [i for i in range(n) if not placed >> i & 1 and preds[i] & placed == preds[i]]
            weight *= len(avail) / (n - step)
            placed |= 1 << rng.choice(avail)
        total += weight
    return total / BASELINE_SAMPLES, f"estimated by sequential importance sampling ({BASELINE_SAMPLES} orders)"


def _gnn_baseline(G: nx.Graph) -> tuple[float, str]:
    """Guessing every component uniformly among the integers between 0 and the largest possible two-layer sum
    (max |feature| * (n - 1)^2): one over that count, to the power of the number of components."""
    top = max((abs(x) for u in G for x in G.nodes[u]["features"]), default=0.0)
    span = math.floor(top * max(G.number_of_nodes() - 1, 1) ** 2) + 1
    return math.exp(-G.number_of_nodes() * feature_dim(G) * math.log(span)), EXACT


def _total_weight(G: nx.Graph) -> float:
    return sum(_w(G, u, v) for u, v in G.edges())


def _n(G: nx.Graph) -> int:
    return G.number_of_nodes()


# ------------------------------------------------------------------------------------------- registry

_ALGO = {
    "connectivity": "Run BFS (or DFS) from the first node; the nodes are connected exactly when the second node "
                    "is visited.",
    "cycle": "Run DFS; an undirected graph has a cycle when DFS meets an already visited node that is not the "
             "parent (a directed graph when it meets a node still on the stack).",
    "bfsorder": "Use a queue: start with the source; repeatedly take the front node and append its unvisited "
                "neighbours to the queue, marking them visited. The order of removal is the BFS order.",
    "diameter": "Run BFS from every node to get all shortest-path distances; the diameter is the largest of them.",
    "shortest_path": "Run BFS from the source, recording each node's parent; when the target is reached, "
                     "follow parents back to the source.",
    "triangle": "For every edge (u, v), count the common neighbours w of u and v; each triangle is counted three "
                "times, so divide by 3.",
    "topological_sort": "Kahn's algorithm: repeatedly output a node with no incoming edge from the remaining "
                        "nodes and delete it.",
    "max_flow": "Ford-Fulkerson: while the residual graph has a path from source to target, push its bottleneck "
                "capacity along it; the total pushed is the maximum flow.",
    "bipartite_matching": "Hopcroft-Karp: in rounds, find a maximal set of shortest vertex-disjoint augmenting "
                          "paths (alternating paths between unmatched nodes) and flip them, until none remains.",
    "gnn": "Layer by layer: each node's new vector is the sum of its neighbours' vectors from the previous layer; "
           "apply this twice.",
    "hamiltonian_path": "Backtracking: extend a path one unvisited neighbour at a time, undoing choices that get "
                        "stuck, until every node is on the path or all choices fail.",
    "hamiltonian_cycle": "Backtracking: extend a path from a start node through unvisited neighbours; succeed when "
                         "all nodes are on it and the last is adjacent to the start.",
    "weighted_shortest_path": "Dijkstra: repeatedly settle the unsettled node with the smallest tentative "
                              "distance and relax its edges; follow parents back from the target.",
    "node_degree": "Count the edges at the node (for a directed graph, the edges leaving it).",
    "node_count": "Count the distinct nodes listed.",
    "edge_count": "Count the edges, each once.",
    "edge_existence": "Look the pair up among the edges.",
    "reachability": "Run BFS along edge directions from the source; the target is reachable when it is visited.",
    "component_count": "Start a BFS from every node not yet visited; count the searches started.",
    "max_clique": "Branch and bound: grow cliques from candidate sets, pruning when the candidates cannot beat "
                  "the best clique found.",
    "max_independent_set": "An independent set is a clique of the complement graph: find a maximum clique there.",
    "min_vertex_cover": "The minimum vertex cover is the complement of a maximum independent set.",
    "chromatic_number": "Try k = 1, 2, ... colours with backtracking; the first k that colours every node with "
                        "adjacent nodes different is the answer.",
    "max_cut": "Try every way to split the nodes into two sides and count the edges between the sides.",
    "mst_weight": "Kruskal: sort edges by weight and add each edge that joins two different components; sum the "
                  "weights of the kept edges.",
}


def _t(key, title, source, kind, intro, question, solve, params=(), needs=(), np_hard=False, verify=None,
       answer_range=None, list_baseline=None) -> Task:
    return Task(key=key, title=title, source=source, kind=kind, intro=intro, question=question, solve=solve,
                algorithm=_ALGO[key], params=tuple(params), needs=frozenset(needs), np_hard=np_hard, verify=verify,
                answer_range=answer_range, list_baseline=list_baseline)


TASKS: dict[str, Task] = {
    t.key: t
    for t in [
        _t("connectivity", "connectivity", "GraphOmni", "bool",
           "Determine if there is a path between two nodes in the graph.",
           "Is there a path between {source} and {target}?", _connectivity, ("source", "target")),
        _t("cycle", "cycle detection", "GraphOmni", "bool",
           "Given a graph representation, your task is determining whether the graph has a cycle.",
           "Is there a cycle in this graph?", _cycle),
        _t("bfsorder", "BFS order", "GraphOmni", "node_list",
           "Given a graph, your task is to determine the bfs traversal order of this graph starting at {source}.",
           "Give the bfs traversal order starting from {source}.", _bfs, ("source",), verify=verify_bfs,
           list_baseline=_bfs_baseline),
        _t("diameter", "diameter", "GraphOmni", "int",
           "Given a graph, your task is to determine the diameter of this graph (the longest shortest-path "
           "distance between two nodes joined by a path).",
           "What is the diameter of this graph?", _diameter, answer_range=lambda G, p: (1, max(1, _n(G) - 1))),
        _t("shortest_path", "shortest path", "GraphOmni", "node_list",
           "Given a graph representation, your task is to compute shortest path between the specified two nodes.",
           "Give the shortest path from {source} to {target}.", _shortest, ("source", "target"),
           verify=verify_shortest_path, list_baseline=_walk_baseline),
        _t("triangle", "triangle count", "GraphOmni", "int",
           "Given a graph, your task is to determine how many triangles in this graph.",
           "How many triangles are in this graph?", _triangle, needs=("undirected",),
           answer_range=lambda G, p: (0, math.comb(_n(G), 3))),
        _t("topological_sort", "topological sort", "NLGraph", "node_list",
           "In a directed acyclic graph, a topological order lists every node so that every edge points from an "
           "earlier node to a later one.", "Give a topological order of this graph.", _topo, needs=("dag",),
           verify=verify_topo, list_baseline=_topo_baseline),
        _t("max_flow", "maximum flow", "NLGraph", "number",
           "Each edge's weight is its capacity (1 when the graph is unweighted).",
           "What is the maximum flow from {source} to {target}?", _max_flow, ("source", "target"),
           answer_range=lambda G, p: (0, _total_weight(G))),
        _t("bipartite_matching", "bipartite matching", "NLGraph", "int",
           "The graph is bipartite; a matching is a set of edges without common nodes.",
           "How many edges does a maximum matching of this graph have?", _matching,
           needs=("undirected", "bipartite"), answer_range=lambda G, p: (0, _n(G) // 2)),
        _t("hamiltonian_path", "Hamiltonian path", "NLGraph", "bool",
           "A Hamiltonian path visits every node exactly once.", "Does this graph have a Hamiltonian path?",
           _ham_path, np_hard=True),
        _t("hamiltonian_cycle", "Hamiltonian cycle", "classic", "bool",
           "A Hamiltonian cycle visits every node exactly once and returns to its start.",
           "Does this graph have a Hamiltonian cycle?", _ham_cycle, np_hard=True),
        _t("weighted_shortest_path", "weighted shortest path", "NLGraph", "node_list",
           "Each edge's weight is its length; a shortest path has the least total weight.",
           "Give the shortest path from {source} to {target}.", _weighted_shortest, ("source", "target"),
           needs=("weighted",), verify=verify_weighted_path, list_baseline=_walk_baseline),
        _t("node_degree", "node degree", "GraphQA", "int",
           "The degree of a node is the number of edges at it (for a directed graph, the edges leaving it).",
           "What is the degree of {node}?", _degree, ("node",), answer_range=lambda G, p: (0, _n(G) - 1)),
        _t("node_count", "node count", "GraphQA", "int", "Count the nodes of the graph.",
           "How many nodes are in this graph?", _node_count, answer_range=lambda G, p: (1, 2 * _n(G))),
        _t("edge_count", "edge count", "GraphQA", "int", "Count the edges of the graph.",
           "How many edges are in this graph?", _edge_count,
           answer_range=lambda G, p: (0, _n(G) * (_n(G) - 1) // (1 if G.is_directed() else 2))),
        _t("edge_existence", "edge existence", "GraphQA", "bool", "Determine whether two nodes share an edge.",
           "Is there an edge from {source} to {target}?", _edge_exists, ("source", "target")),
        _t("reachability", "reachability", "GraphQA", "bool",
           "In a directed graph, a node is reachable from another when a path follows the edge directions.",
           "Is {target} reachable from {source}?", _reach, ("source", "target"), needs=("directed",)),
        _t("component_count", "connected components", "classic", "int",
           "A connected component is a maximal set of nodes joined by paths (ignoring edge directions).",
           "How many connected components does this graph have?", _components,
           answer_range=lambda G, p: (1, _n(G))),
        _t("max_clique", "maximum clique", "classic", "int", "A clique is a set of pairwise adjacent nodes.",
           "How many nodes does a largest clique of this graph have?", _max_clique, needs=("undirected",),
           np_hard=True, answer_range=lambda G, p: (1, _n(G))),
        _t("max_independent_set", "maximum independent set", "classic", "int",
           "An independent set is a set of nodes no two of which are adjacent.",
           "How many nodes does a largest independent set of this graph have?", _mis, needs=("undirected",),
           np_hard=True, answer_range=lambda G, p: (1, _n(G))),
        _t("min_vertex_cover", "minimum vertex cover", "classic", "int",
           "A vertex cover is a set of nodes that touches every edge.",
           "How many nodes does a smallest vertex cover of this graph have?", _mvc, needs=("undirected",),
           np_hard=True, answer_range=lambda G, p: (0, _n(G) - 1)),
        _t("chromatic_number", "chromatic number", "classic", "int",
           "A proper colouring gives adjacent nodes different colours.",
           "What is the least number of colours in a proper colouring of this graph?", _chromatic,
           needs=("undirected",), np_hard=True, answer_range=lambda G, p: (1, _n(G))),
        _t("max_cut", "maximum cut", "classic", "number",
           "A cut splits the nodes into two sides; its value is the number (total weight) of edges between them.",
           "What is the value of a maximum cut of this graph?", _max_cut, needs=("undirected",), np_hard=True,
           answer_range=lambda G, p: (0, _total_weight(G))),
        _t("gnn", "GNN (two layers of neighbour sums)", "NLGraph", "vectors",
           "Every node has an embedding, a vector of numbers. In a simple graph convolution layer, each node's "
           "embedding is updated to the sum of its neighbours' embeddings.",
           "What is the embedding of each node after two layers of simple graph convolution?", _gnn,
           needs=("undirected", "features"), list_baseline=lambda G, p, sol: _gnn_baseline(G)),
        _t("mst_weight", "minimum spanning tree weight", "classic", "number",
           "A minimum spanning tree (a forest when the graph is disconnected) joins the nodes of each component "
           "with the least total edge weight (each edge weighs 1 when the graph is unweighted).",
           "What is the total weight of a minimum spanning tree of this graph?", _mst, needs=("undirected",),
           answer_range=lambda G, p: (0, _total_weight(G))),
    ]
}
GRAPHOMNI_TASKS = [k for k, t in TASKS.items() if t.source == "GraphOmni"]


def task_key(name: str) -> str:
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    aliases = {"bfs": "bfsorder", "bfs_order": "bfsorder", "triangles": "triangle", "triangle_count": "triangle",
               "shortest": "shortest_path", "topological": "topological_sort", "topology": "topological_sort",
               "hamilton": "hamiltonian_path", "flow": "max_flow", "gnn": "gnn",
               "matching": "bipartite_matching", "mst": "mst_weight", "degree": "node_degree",
               "components": "component_count", "connected_components": "component_count"}
    key = aliases.get(key, key)
    if key not in TASKS:
        raise unknown_name("task", name, TASKS)
    return key


def get_task(name: str) -> Task:
    return TASKS[task_key(name)]


# ------------------------------------------------------------------------------------------- API


def applicable(task: Task, G: nx.Graph) -> str | None:
    """Why `task` is not defined on `G`, or None when it is."""
    if "directed" in task.needs and not G.is_directed():
        return f"{task.key} needs a directed graph."
    if "undirected" in task.needs and G.is_directed():
        return f"{task.key} is defined on undirected graphs."
    if "dag" in task.needs and not (G.is_directed() and nx.is_directed_acyclic_graph(G)):
        return f"{task.key} needs a directed acyclic graph."
    if "weighted" in task.needs and not is_weighted(G):
        return f"{task.key} needs a weighted graph."
    if "bipartite" in task.needs and not nx.is_bipartite(G):
        return f"{task.key} needs a bipartite graph."
    if "features" in task.needs and not feature_dim(G):
        return f"{task.key} needs node feature vectors."
    return None


def task_params(task: Task, G: nx.Graph, *, source: int | None = None, target: int | None = None,
                node: int | None = None) -> Params:
    """The task's node parameters, checked against the graph."""
    given = {"source": source, "target": target, "node": node}
    p = {name: require_node(G, given[name], name) for name in task.params}
    extra = [k for k, v in given.items() if v is not None and k not in task.params]
    if extra:
        raise InvalidInput(f"Task {task.key!r} takes {list(task.params) or 'no node parameters'}, not {extra}.",
                           hint="Leave the other node parameters out.")
    return p


def solve(task: Task, G: nx.Graph, p: Params, progress: Progress | None = None) -> Solution:
    """The exact answer of `task` on `G`; refuses graphs the task is not defined on or too big for exact search.

    Exact searches check `progress` for cancellation every few thousand steps.
    """
    why = applicable(task, G)
    if why:
        hints = {"directed": "Generate with directed=true.", "dag": "Generate with directed=true and acyclic=true.",
                 "weighted": "Generate with weighted=true or give edge weights.",
                 "undirected": "Pass an undirected graph.", "bipartite": "Use a Bipartite-ERM/ERP graph.",
                 "features": 'Give the graph JSON a "features" map (or generate with features=2).'}
        raise InvalidInput(why, hint=" ".join(hints[n] for n in sorted(task.needs)))
    if task.np_hard:
        _np_hard_guard(task, G)
    with _running(progress):
        return task.solve(G, p)


@contextlib.contextmanager
def _running(progress: Progress | None) -> Iterator[None]:
    """Make `progress` the current one (what `checkpoint()` checks) when one is given."""
    if progress is None:
        yield
    else:
        with running(progress):
            yield


def check(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution | None = None, *,
          naming: str | None = None, progress: Progress | None = None) -> Check:
    """Read `text` as an answer to `task` and validate it against `G` (never against a stored answer string).

    Every claim the answer makes is validated, not only its headline value (see `tools.graph.claims`): a
    Hamiltonian path or cycle it offers, the total weight it states for a shortest path, the assignment of a
    matching, the colouring of a chromatic number, the sides of a cut, the node set of a clique,
    independent set or vertex cover. One false claim makes the answer wrong. `naming` says how the question
    named nodes: None (numbers), "names" or "letters" (see serialize); a graph's str labels read as themselves.
    """
    with _running(progress):
        sol = sol or solve(task, G, p)
        reader = claims.Reader.of(G, naming)
        judge = _JUDGES.get(task.key)
        if judge is not None:
            return judge(task, G, p, text, sol, reader)
        return _judge_plain(task, G, p, text, sol, reader)


def _judge_plain(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    if task.kind == "bool":
        got = parse_bool(text)
        if got is None:
            return Check(False, False, None, "No yes/no answer found.")
        return Check(True, got == sol.answer, got, "Correct." if got == sol.answer else
                     f"The answer is {'yes' if sol.answer else 'no'}.")
    if task.kind in ("int", "number"):
        return _judge_number(text, sol)
    tokens = parse_node_list(text, naming=reader.naming, named=reader.named)
    if tokens is None:
        return Check(False, False, None, "No node sequence found.")
    try:
        nodes = reader.nodes(tokens)
    except InvalidInput as exc:
        return Check(True, False, tokens, exc.message)
    assert task.verify is not None
    unknown = claims.bad_nodes(G, nodes)
    if unknown:
        return Check(True, False, nodes, f"Nodes {unknown} are not in the graph.")
    ok, reason = task.verify(G, p, nodes, sol)
    return Check(True, ok, nodes, reason)


def _judge_number(text: str, sol: Solution) -> Check:
    got = parse_number(text)
    if got is None:
        return Check(False, False, None, "No number found.")
    ok = claims.same_value(got, float(sol.answer))
    return Check(True, ok, _num(got), "Correct." if ok else f"The answer is {sol.answer}.")


def _judge_hamiltonian(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    cycle = task.key == "hamiltonian_cycle"
    said = parse_bool(text)
    toks = claimed_seq = claims.claimed_sequence(text, reader) if said is not False else None
    if said is None and toks is None:
        return Check(False, False, None, "No yes/no answer and no path found.")
    claim = True if said is None else said
    if claim and claimed_seq is not None:
        try:
            seq = reader.nodes(claimed_seq)
        except InvalidInput as exc:
            return Check(True, False, claimed_seq, exc.message)
        why = claims.hamiltonian_problem(G, seq, cycle)
        if why is not None:
            return Check(True, False, seq, f"The {'cycle' if cycle else 'path'} given is not Hamiltonian: {why}")
        return Check(True, True, seq, f"A valid Hamiltonian {'cycle' if cycle else 'path'}.")
    ok = claim == sol.answer
    return Check(True, ok, claim, "Correct." if ok else f"The answer is {'yes' if sol.answer else 'no'}.")


def _judge_path(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    s, t = p["source"], p["target"]
    total = claims.stated_total(text)
    tokens = parse_node_list(text, naming=reader.naming, named=reader.named)
    if not sol.answer:
        no = says_no_path(text)
        return Check(no or tokens is not None or total is not None, no, "no path" if no else tokens,
                     "Correct: there is no path." if no else "There is no path between these nodes.")
    best = float(sol.witness["weight"])
    if tokens is not None and len(tokens) == 1 and s != t:  # one number is a total, not a path
        if total is None:
            total = parse_number(text)
        tokens = None
    if tokens is None:
        if total is None:
            return Check(False, False, None, "No node sequence or total weight found.")
        ok = claims.same_value(total, best)
        return Check(True, ok, _num(total), f"A total of {_num(best)}, stated without a path." if ok else
                     f"The stated total {_num(total)} is not the least total, {_num(best)}.")
    try:
        nodes = reader.nodes(tokens)
    except InvalidInput as exc:
        return Check(True, False, tokens, exc.message)
    unknown = claims.bad_nodes(G, nodes)
    if unknown:
        return Check(True, False, nodes, f"Nodes {unknown} are not in the graph.")
    assert task.verify is not None
    ok, reason = task.verify(G, p, nodes, sol)
    if ok and total is not None and not claims.same_value(total, best):
        return Check(True, False, nodes, f"The path is a shortest path, but its total is {_num(best)}, not the "
                                         f"stated {_num(total)}.")
    return Check(True, ok, nodes, reason)


def _judge_matching(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    part, found = claims.find(text, claims.pairs, reader)
    if not found:
        return _judge_number(text, sol)
    try:
        edges = [(reader.node(a), reader.node(b)) for _, _, a, b in found]
    except InvalidInput as exc:
        return Check(True, False, None, exc.message)
    why = claims.matching_problem(G, edges)
    if why is not None:
        return Check(True, False, len(edges), f"The assignment given is not a matching: {why}")
    size = len({frozenset(e) for e in edges})
    said = parse_number(claims.blank(text, part, [(a, b) for a, b, _, _ in found]))
    if said is not None and not claims.same_value(said, size):
        return Check(True, False, _num(said), f"The answer says {_num(said)} but its assignment has {size} pairs.")
    ok = size == sol.answer
    return Check(True, ok, size, "Correct, with a valid maximum matching." if ok else
                 f"The assignment is a matching of {size}; a maximum matching has {sol.answer}.")


def _judge_colouring(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    part, found = claims.find(text, claims.colour_map, reader)
    if not found:
        return _judge_number(text, sol)
    try:
        col = {reader.node(tok): c for _, _, tok, c in found}
    except InvalidInput as exc:
        return Check(True, False, None, exc.message)
    why = claims.colouring_problem(G, col)
    if why is not None:
        return Check(True, False, None, f"The colouring given is not proper: {why}")
    k = len(set(col.values()))
    said = parse_number(claims.blank(text, part, [(a, b) for a, b, _, _ in found]))
    if said is not None and not claims.same_value(said, k):
        return Check(True, False, _num(said), f"The answer says {_num(said)} colours but its colouring uses {k}.")
    ok = k == sol.answer
    return Check(True, ok, k, "Correct, with a proper colouring." if ok else
                 f"The colouring uses {k} colours; the least is {sol.answer}.")


def _cut_value(G: nx.Graph, side: set) -> float:
    return sum(_w(G, u, v) for u, v in G.edges() if (u in side) != (v in side))


def _judge_cut(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    part, sets = claims.find(text, claims.node_sets, reader)
    if not sets:
        return _judge_number(text, sol)
    try:
        groups = [reader.nodes(toks) for _, _, toks in sets[-2:]]
    except InvalidInput as exc:
        return Check(True, False, None, exc.message)
    if len(groups) == 2 and set(groups[0]) & set(groups[1]):
        groups = groups[-1:]
    for g in groups:
        unknown = claims.bad_nodes(G, g)
        if unknown:
            return Check(True, False, None, f"Nodes {unknown} are not in the graph.")
    side = set(groups[0])
    if len(groups) == 2 and side | set(groups[1]) != set(G):
        return Check(True, False, None, "The two sides given do not cover every node.")
    value = _cut_value(G, side)
    said = parse_number(claims.blank(text, part, [(a, b) for a, b, _ in sets]))
    if said is not None and not claims.same_value(said, value):
        return Check(True, False, _num(said), f"The answer says {_num(said)} but the cut it gives has value "
                                              f"{_num(value)}.")
    ok = claims.same_value(value, float(sol.answer))
    return Check(True, ok, _num(value), "Correct, with a maximum cut." if ok else
                 f"The cut given has value {_num(value)}; a maximum cut has {sol.answer}.")


def _set_problem(key: str, G: nx.Graph, nodes: set) -> str | None:
    if key == "max_clique":
        bad = next(((a, b) for a, b in itertools.combinations(nodes, 2) if not G.has_edge(a, b)), None)
        return None if bad is None else f"{bad[0]} and {bad[1]} are not adjacent, so it is not a clique."
    if key == "max_independent_set":
        bad = next(((a, b) for a, b in itertools.combinations(nodes, 2) if G.has_edge(a, b)), None)
        return None if bad is None else f"{bad[0]} and {bad[1]} are adjacent, so it is not independent."
    bad = next(((a, b) for a, b in G.edges() if a not in nodes and b not in nodes), None)
    return None if bad is None else f"The edge ({bad[0]}, {bad[1]}) is not covered."


def _judge_node_set(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    part, sets = claims.find(text, claims.node_sets, reader)
    if not sets:
        return _judge_number(text, sol)
    try:
        nodes = reader.nodes(sets[-1][2])
    except InvalidInput as exc:
        return Check(True, False, None, exc.message)
    unknown = claims.bad_nodes(G, nodes)
    if unknown:
        return Check(True, False, None, f"Nodes {unknown} are not in the graph.")
    why = _set_problem(task.key, G, set(nodes))
    if why is not None:
        return Check(True, False, len(set(nodes)), f"The set given fails: {why}")
    size = len(set(nodes))
    said = parse_number(claims.blank(text, part, [(a, b) for a, b, _ in sets]))
    if said is not None and not claims.same_value(said, size):
        return Check(True, False, _num(said), f"The answer says {_num(said)} but its set has {size} nodes.")
    ok = size == sol.answer
    return Check(True, ok, size, "Correct, with a valid set." if ok else
                 f"The set given has {size} nodes; the optimum is {sol.answer}.")


def _judge_gnn(task: Task, G: nx.Graph, p: Params, text: str, sol: Solution, reader: claims.Reader) -> Check:
    _, found = claims.find(text, claims.vectors, reader)
    if not found:
        return Check(False, False, None, "No 'node: [x, y]' vectors found.")
    try:
        got = {reader.node(tok): vec for tok, vec in found.items()}
    except InvalidInput as exc:
        return Check(True, False, None, exc.message)
    parsed = {str(u): [_num(x) for x in v] for u, v in got.items()}
    unknown = claims.bad_nodes(G, list(got))
    if unknown:
        return Check(True, False, parsed, f"Nodes {unknown} are not in the graph.")
    missing = [u for u in sorted_nodes(G) if u not in got]
    if missing:
        return Check(True, False, parsed, f"No vector is given for nodes {missing[:10]}.")
    for u in sorted_nodes(G):
        want = sol.answer[str(u)]
        if len(got[u]) != len(want) or not all(claims.same_value(a, b) for a, b in zip(got[u], want, strict=True)):
            return Check(True, False, parsed, f"Node {u} should be {want}, not {[_num(x) for x in got[u]]}.")
    return Check(True, True, parsed, "Every node's vector is right.")


_JUDGES: dict[str, Callable[[Task, nx.Graph, Params, str, Solution, claims.Reader], Check]] = {
    "hamiltonian_path": _judge_hamiltonian,
    "hamiltonian_cycle": _judge_hamiltonian,
    "shortest_path": _judge_path,
    "weighted_shortest_path": _judge_path,
    "bipartite_matching": _judge_matching,
    "chromatic_number": _judge_colouring,
    "max_cut": _judge_cut,
    "max_clique": _judge_node_set,
    "max_independent_set": _judge_node_set,
    "min_vertex_cover": _judge_node_set,
    "gnn": _judge_gnn,
}


def random_baseline(task: Task, G: nx.Graph, p: Params, sol: Solution | None = None) -> float:
    """The chance that a uniform random guess is right on this instance.

    Yes/no: 1/2. Counts and values: one over the number of integers in the task's a-priori range given n
    (e.g. diameter 1..n-1, triangles 0..C(n,3), flow 0..total capacity). BFS order: the fraction of
    orders of the reachable nodes (source first) that are BFS orders. Paths: the chance that a uniform
    random walk from the source follows a shortest path. Topological sort: linear extensions / n!.
    """
    return random_baseline_info(task, G, p, sol)[0]


def random_baseline_info(task: Task, G: nx.Graph, p: Params, sol: Solution | None = None,
                         progress: Progress | None = None) -> tuple[float, str]:
    """`random_baseline` and how it was obtained: "exact", or how it was estimated (for BFS orders past 7
    nodes and topological orders past TOPO_EXACT_MAX_NODES nodes)."""
    with _running(progress):
        sol = sol or solve(task, G, p)
        if task.kind == "bool":
            return 0.5, EXACT
        if task.kind in ("int", "number"):
            assert task.answer_range is not None
            lo, hi = task.answer_range(G, p)
            return (1.0 / (math.floor(hi) - math.ceil(lo) + 1) if hi >= lo else 0.0), EXACT
        assert task.list_baseline is not None
        return task.list_baseline(G, p, sol)


def sample_params(task: Task, G: nx.Graph, rng: random.Random) -> Params:
    """Node parameters for a generated question: a source with somewhere to go, distinct endpoints, and for
    connectivity/reachability/edge existence a yes or a no with equal odds where both exist."""
    nodes = sorted_nodes(G)
    p: Params = {}
    if "node" in task.params:
        p["node"] = rng.choice(nodes)
    if task.params[:1] == ("source",) and "target" not in task.params:
        with_nbrs = [u for u in nodes if (G.out_degree(u) if G.is_directed() else G.degree(u)) > 0]
        p["source"] = rng.choice(with_nbrs or nodes)
    if "target" in task.params and len(nodes) >= 2:
        pairs_yes, pairs_no = [], []
        for _ in range(60):
            s, t = rng.sample(nodes, 2)
            yes = G.has_edge(s, t) if task.key == "edge_existence" else nx.has_path(G, s, t)
            (pairs_yes if yes else pairs_no).append((s, t))
        must_path = task.key in ("shortest_path", "weighted_shortest_path", "max_flow")
        if must_path and not pairs_yes:  # sparse graph: look at every pair for one joined by a path
            pairs_yes = [(s, t) for s in nodes for t in nodes if s != t and nx.has_path(G, s, t)]
        want_yes = must_path or not pairs_no or (bool(pairs_yes) and rng.random() < 0.5)
        pool = (pairs_yes or pairs_no) if want_yes else pairs_no
        p["source"], p["target"] = rng.choice(pool)
    elif "target" in task.params:
        raise InvalidInput(f"{task.key} needs two distinct nodes; the graph has one.", hint="Use a bigger graph.")
    return p


def render_question(task: Task, p: Params, node_ref: Callable[[Node], str], G: nx.Graph | None = None
                    ) -> tuple[str, str]:
    """(intro, question) with node parameters written the way the format names nodes. Given the graph, a
    weighted shortest_path question says that weights count, and a gnn question lists the embeddings."""
    refs = {k: node_ref(v) for k, v in p.items()}
    intro, question = task.intro.format(**refs), task.question.format(**refs)
    if G is not None and task.key == "shortest_path" and is_weighted(G):
        intro += " Each edge's weight is its length; the shortest path has the least total weight."
    if G is not None and task.key == "gnn" and feature_dim(G):
        question = f"{features_text(G, node_ref)} {question}"
    return intro, question
