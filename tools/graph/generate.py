"""Seeded graph generators: GraphOmni's 7, GraphQA's, networkx's bundled real-world graphs.

GraphOmni: ERM (Erdős–Rényi with m edges), ERP (Erdős–Rényi with edge probability p), Bipartite-ERM,
Bipartite-ERP, BAG (Barabási–Albert, general), BAF (Barabási–Albert forests: m = 1, i.e. trees), SF
(scale-free, Bollobás et al., made simple and undirected). GraphQA adds SBM, complete, star and path.
Every generator can be made directed (each edge oriented at random, or acyclically along a random node
order) and weighted (integer weights drawn uniformly from 1..max_weight). The same arguments and seed
give the same graph. Difficulties follow GraphOmni: easy 5-10 nodes, medium 10-20, hard 20-30.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tools.errors import InvalidInput, unknown_name
from tools.graph.model import check_size
from tools.lazy import LazyModule

nx = LazyModule("networkx")

DIFFICULTIES: dict[str, tuple[int, int]] = {"easy": (5, 10), "medium": (10, 20), "hard": (20, 30)}


@dataclass(frozen=True)
class Generator:
    key: str
    title: str
    source: str
    make: Callable[[int, random.Random], nx.Graph]
    fixed_size: bool = False  # a real-world graph: n is ignored


def _seed(rng: random.Random) -> int:
    return rng.randrange(2**31)


def _erm(n: int, rng: random.Random) -> nx.Graph:
    max_m = n * (n - 1) // 2
    m = rng.randint(min(n - 1, max_m), max(min(n - 1, max_m), max_m // 2))
    return nx.gnm_random_graph(n, m, seed=_seed(rng))


def _erp(n: int, rng: random.Random) -> nx.Graph:
    return nx.gnp_random_graph(n, rng.uniform(0.1, 0.6), seed=_seed(rng))


def _halves(n: int, rng: random.Random) -> tuple[int, int]:
    a = rng.randint(max(1, n // 3), max(1, n - n // 3 - (1 if n > 1 else 0)))
    return a, max(n - a, 1 if n > 1 else 0)


def _bip_erm(n: int, rng: random.Random) -> nx.Graph:
    a, b = _halves(n, rng)
    m = rng.randint(min(a * b, max(1, n - 1)), max(min(a * b, max(1, n - 1)), a * b * 2 // 3))
    return _simple(nx.bipartite.gnmk_random_graph(a, b, m, seed=_seed(rng)))


def _bip_erp(n: int, rng: random.Random) -> nx.Graph:
    a, b = _halves(n, rng)
    return _simple(nx.bipartite.random_graph(a, b, rng.uniform(0.2, 0.7), seed=_seed(rng)))


def _bag(n: int, rng: random.Random) -> nx.Graph:
    m = rng.randint(1, max(1, min(3, n - 1)))
    return nx.barabasi_albert_graph(n, m, seed=_seed(rng)) if n > m else nx.complete_graph(n)


def _baf(n: int, rng: random.Random) -> nx.Graph:
    """A Barabási–Albert forest: preferential-attachment trees (m = 1), possibly several components."""
    G = nx.Graph()
    G.add_nodes_from(range(n))
    sizes: list[int] = []
    left = n
    while left > 0:
        k = left if left <= 3 or rng.random() < 0.6 else rng.randint(2, left - 1)
        sizes.append(k)
        left -= k
    start = 0
    for k in sizes:
        if k >= 2:
            T = nx.barabasi_albert_graph(k, 1, seed=_seed(rng))
            G.add_edges_from((u + start, v + start) for u, v in T.edges())
        start += k
    return G


def _sf(n: int, rng: random.Random) -> nx.Graph:
    return _simple(nx.scale_free_graph(n, seed=_seed(rng)))


def _sbm(n: int, rng: random.Random) -> nx.Graph:
    k = min(n, rng.randint(2, 4))
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    p_in, p_out = rng.uniform(0.5, 0.9), rng.uniform(0.02, 0.15)
    probs = [[p_in if i == j else p_out for j in range(k)] for i in range(k)]
    return _simple(nx.stochastic_block_model(sizes, probs, seed=_seed(rng)))


def _simple(G: nx.Graph) -> nx.Graph:
    """An undirected simple graph on 0..n-1 from any networkx graph (multi-edges and self-loops dropped)."""
    H = nx.Graph()
    order = list(G.nodes())
    index = {u: i for i, u in enumerate(order)}
    H.add_nodes_from(range(len(order)))
    H.add_edges_from((index[u], index[v]) for u, v in G.edges() if u != v)
    return H


def _real(loader: str) -> Callable[[int, random.Random], nx.Graph]:
    def make(n: int, rng: random.Random) -> nx.Graph:
        G = getattr(nx, loader)()  # by name, so that networkx is imported at the first call, not here
        order = sorted(G.nodes(), key=str) if not all(isinstance(u, int) for u in G) else sorted(G.nodes())
        index = {u: i for i, u in enumerate(order)}
        H = nx.Graph()
        H.add_nodes_from(range(len(order)))
        H.add_edges_from((index[u], index[v]) for u, v in G.edges() if u != v)
        return H

    return make


GENERATORS: dict[str, Generator] = {
    g.key: g
    for g in [
        Generator("ERM", "Erdős–Rényi G(n, m)", "GraphOmni", _erm),
        Generator("ERP", "Erdős–Rényi G(n, p)", "GraphOmni", _erp),
        Generator("Bipartite-ERM", "random bipartite graph with m edges", "GraphOmni", _bip_erm),
        Generator("Bipartite-ERP", "random bipartite graph with edge probability p", "GraphOmni", _bip_erp),
        Generator("BAG", "Barabási–Albert (general, m = 1..3)", "GraphOmni", _bag),
        Generator("BAF", "Barabási–Albert forest (trees, m = 1)", "GraphOmni", _baf),
        Generator("SF", "scale-free (Bollobás et al.), simple undirected", "GraphOmni", _sf),
        Generator("SBM", "stochastic block model (2-4 blocks)", "GraphQA", _sbm),
        Generator("complete", "complete graph", "GraphQA", lambda n, r: nx.complete_graph(n)),
        Generator("star", "star graph (one centre)", "GraphQA", lambda n, r: nx.star_graph(max(n - 1, 0))),
        Generator("path", "path graph", "GraphQA", lambda n, r: nx.path_graph(n)),
        Generator("karate_club", "Zachary's karate club (34 nodes)", "networkx", _real("karate_club_graph"),
                  fixed_size=True),
        Generator("florentine_families", "Florentine families (15 nodes)", "networkx",
                  _real("florentine_families_graph"), fixed_size=True),
        Generator("davis_southern_women", "Davis southern women, bipartite (32 nodes)", "networkx",
                  _real("davis_southern_women_graph"), fixed_size=True),
        Generator("les_miserables", "Les Misérables co-occurrence (77 nodes)", "networkx",
                  _real("les_miserables_graph"), fixed_size=True),
        Generator("petersen", "Petersen graph (10 nodes)", "networkx", _real("petersen_graph"), fixed_size=True),
        Generator("dodecahedral", "dodecahedral graph (20 nodes)", "networkx", _real("dodecahedral_graph"),
                  fixed_size=True),
    ]
}
GRAPHOMNI_GENERATORS = [k for k, g in GENERATORS.items() if g.source == "GraphOmni"]


def generator_key(name: str) -> str:
    for k in GENERATORS:
        if k.lower() == name.strip().lower().replace("_", "-") or k.lower() == name.strip().lower():
            return k
    raise unknown_name("generator", name, GENERATORS)


def generate(generator: str, *, n_nodes: int | None = None, difficulty: str | None = None, seed: int = 0,
             directed: bool = False, acyclic: bool = False, weighted: bool = False,
             max_weight: int = 10, features: int = 0) -> nx.Graph:
    """A seeded graph from `generator`.

    Size: `n_nodes`, else drawn from the `difficulty` range (easy 5-10, medium 10-20, hard 20-30), else
    medium. `directed` orients each edge at random; with `acyclic` too, edges point forward along a
    random node order, so the graph is a DAG. `weighted` draws integer weights from 1..max_weight.
    `features` > 0 gives every node a vector of that many integers drawn from 0..1 (the gnn task).
    """
    key = generator_key(generator)
    gen = GENERATORS[key]
    rng = random.Random(f"{key}|{seed}|{n_nodes}|{difficulty}|{directed}|{acyclic}|{weighted}|{max_weight}")
    if isinstance(features, bool) or not 0 <= features <= 64:
        raise InvalidInput(f"features = {features!r} is not a vector length in 0..64.",
                           hint="Pass features=2 for 2-dimensional node vectors, or 0 for none.")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise unknown_name("difficulty", difficulty, DIFFICULTIES)
    if n_nodes is None:
        lo, hi = DIFFICULTIES[difficulty or "medium"]
        n_nodes = rng.randint(lo, hi)
    if isinstance(n_nodes, bool) or n_nodes < 1:
        raise InvalidInput(f"n_nodes = {n_nodes} is not a positive node count.", hint="Ask for at least 1 node.")
    if acyclic and not directed:
        raise InvalidInput("acyclic=true needs directed=true.", hint="Set directed=true for a DAG.")
    if max_weight < 1:
        raise InvalidInput(f"max_weight = {max_weight} is below 1.", hint="Weights are drawn from 1..max_weight.")
    check_size(n_nodes, 0)
    try:
        base = gen.make(n_nodes, rng)
    except (nx.NetworkXError, ValueError) as exc:
        raise InvalidInput(f"Generator {key} cannot make a graph with {n_nodes} nodes: {exc}",
                           hint="Try more nodes or another generator.") from None
    base = _simple(base) if not isinstance(base, nx.Graph) or base.is_directed() else base
    check_size(base.number_of_nodes(), base.number_of_edges())
    G: nx.Graph
    if directed:
        G = nx.DiGraph()
        G.add_nodes_from(sorted(base))
        order = list(base.nodes())
        rng.shuffle(order)
        rank = {u: i for i, u in enumerate(order)}
        for u, v in sorted(base.edges()):
            if acyclic:
                a, b = (u, v) if rank[u] < rank[v] else (v, u)
            else:
                a, b = (u, v) if rng.random() < 0.5 else (v, u)
            G.add_edge(a, b)
    else:
        G = nx.Graph()
        G.add_nodes_from(sorted(base))
        G.add_edges_from(sorted((min(u, v), max(u, v)) for u, v in base.edges()))
    if weighted:
        for u, v in sorted(G.edges()):
            G[u][v]["weight"] = float(rng.randint(1, max_weight))
    G.graph["weighted"] = weighted
    G.graph["generator"] = key
    if features:
        frng = random.Random(f"features|{key}|{seed}|{n_nodes}|{features}")
        for u in sorted(G):
            G.nodes[u]["features"] = tuple(float(frng.randint(0, 1)) for _ in range(features))
        G.graph["features"] = features
    return G
