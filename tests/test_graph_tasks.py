"""Exact solvers against networkx, scipy and brute force; refusals with the bound in the message."""

import itertools
import random

import networkx as nx
import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, maximum_flow, minimum_spanning_tree
from scipy.sparse.csgraph import shortest_path as sp_shortest_path

from tools.errors import InvalidInput, LimitExceeded
from tools.graph.generate import GENERATORS, generate
from tools.graph.model import build_graph
from tools.graph.tasks import TASKS, check, get_task, random_baseline, sample_params, solve, task_params

SEEDS = range(12)


def rand_graph(seed, n=None, directed=False, weighted=False, p=None):
    rng = random.Random(seed)
    n = n or rng.randint(3, 9)
    p = p or rng.uniform(0.2, 0.7)
    edges = []
    for u in range(n):
        for v in range(n):
            if u != v and (directed or u < v) and rng.random() < p:
                edges.append([u, v, rng.randint(1, 9)] if weighted else [u, v])
    return build_graph(list(range(n)), edges, directed=directed)


def matrix(G, weighted=True):
    n = G.number_of_nodes()
    M = np.zeros((n, n))
    for u, v, d in G.edges(data=True):
        M[u, v] = d.get("weight", 1) if weighted else 1
        if not G.is_directed():
            M[v, u] = M[u, v]
    return M


def brute_best(G, pred, maximize=True):
    nodes = list(G)
    best = None
    for r in range(len(nodes) + 1):
        for sub in itertools.combinations(nodes, r):
            if pred(set(sub)):
                best = r if best is None else (max(best, r) if maximize else min(best, r))
    return best


@pytest.mark.parametrize("seed", SEEDS)
def test_np_hard_solvers_match_brute_force(seed):
    G = rand_graph(seed)
    n = G.number_of_nodes()
    clique = brute_best(G, lambda s: all(G.has_edge(a, b) for a, b in itertools.combinations(s, 2)))
    indep = brute_best(G, lambda s: not any(G.has_edge(a, b) for a, b in itertools.combinations(s, 2)))
    cover = brute_best(G, lambda s: all(u in s or v in s for u, v in G.edges()), maximize=False)
    assert solve(get_task("max_clique"), G, {}).answer == clique
    assert solve(get_task("max_independent_set"), G, {}).answer == indep
    assert solve(get_task("min_vertex_cover"), G, {}).answer == cover
    chrom = next(k for k in range(1, n + 1) if any(
        all(c[u] != c[v] for u, v in G.edges()) for c in itertools.product(range(k), repeat=n)))
    sol = solve(get_task("chromatic_number"), G, {})
    assert sol.answer == chrom
    col = {int(k): v for k, v in sol.witness["colouring"].items()}
    assert all(col[u] != col[v] for u, v in G.edges()) and len(set(col.values())) == chrom
    cut = max(sum(1 for u, v in G.edges() if (u in s) != (v in s))
              for r in range(n + 1) for s in map(set, itertools.combinations(range(n), r)))
    sol = solve(get_task("max_cut"), G, {})
    assert sol.answer == cut
    side = set(sol.witness["side"])
    assert sum(1 for u, v in G.edges() if (u in side) != (v in side)) == cut
    perms = list(itertools.permutations(range(n)))
    ham_path = any(all(G.has_edge(a, b) for a, b in itertools.pairwise(p)) for p in perms)
    ham_cycle = n >= 3 and any(all(G.has_edge(a, b) for a, b in itertools.pairwise((*p, p[0]))) for p in perms)
    assert solve(get_task("hamiltonian_path"), G, {}).answer == ham_path
    assert solve(get_task("hamiltonian_cycle"), G, {}).answer == ham_cycle


@pytest.mark.parametrize("seed", SEEDS)
def test_directed_hamiltonian_matches_brute_force(seed):
    G = rand_graph(100 + seed, n=6, directed=True, p=0.35)
    perms = list(itertools.permutations(range(6)))
    assert solve(get_task("hamiltonian_path"), G, {}).answer == any(
        all(G.has_edge(a, b) for a, b in itertools.pairwise(p)) for p in perms)
    assert solve(get_task("hamiltonian_cycle"), G, {}).answer == any(
        all(G.has_edge(a, b) for a, b in itertools.pairwise((*p, p[0]))) for p in perms)


@pytest.mark.parametrize("seed", SEEDS)
def test_polynomial_solvers_match_scipy_and_networkx(seed):
    G = rand_graph(200 + seed, n=10, weighted=True)
    D = rand_graph(300 + seed, n=10, directed=True, weighted=True)
    rng = random.Random(seed)
    s, t = rng.sample(range(10), 2)
    # max flow: scipy's integer max flow
    flow = maximum_flow(csr_matrix(matrix(D).astype(np.int32)), s, t).flow_value
    assert solve(get_task("max_flow"), D, {"source": s, "target": t}).answer == flow
    # MST weight: scipy's minimum spanning tree (a forest on disconnected graphs)
    assert solve(get_task("mst_weight"), G, {}).answer == pytest.approx(minimum_spanning_tree(matrix(G)).sum())
    # weighted shortest path: scipy's Dijkstra
    dist = sp_shortest_path(matrix(G), method="D", directed=False)[s, t]
    sol = solve(get_task("weighted_shortest_path"), G, {"source": s, "target": t})
    if np.isinf(dist):
        assert sol.answer == []
    else:
        assert sol.witness["weight"] == pytest.approx(dist)
        assert nx.path_weight(G, sol.answer, "weight") == pytest.approx(dist)
    # components, diameter, triangles, BFS reach, cycle, degree, counts
    assert solve(get_task("component_count"), G, {}).answer == connected_components(matrix(G), directed=False)[0]
    U = rand_graph(400 + seed, n=9)
    hops = sp_shortest_path(matrix(U, weighted=False), method="D", unweighted=True, directed=False)
    assert solve(get_task("diameter"), U, {}).answer == int(hops[np.isfinite(hops)].max())
    assert solve(get_task("triangle"), U, {}).answer == sum(nx.triangles(U).values()) // 3
    assert solve(get_task("cycle"), U, {}).answer == (len(nx.cycle_basis(U)) > 0)
    assert solve(get_task("cycle"), D, {}).answer == (not nx.is_directed_acyclic_graph(D))
    assert solve(get_task("node_degree"), U, {"node": 0}).answer == U.degree(0)
    assert solve(get_task("edge_count"), D, {}).answer == D.number_of_edges()
    assert solve(get_task("node_count"), D, {}).answer == 10
    assert solve(get_task("reachability"), D, {"source": s, "target": t}).answer == bool(
        np.isfinite(sp_shortest_path(matrix(D), method="D", directed=True)[s, t]))
    assert solve(get_task("connectivity"), U, {"source": s % 9, "target": t % 9}).answer == bool(
        np.isfinite(hops[s % 9, t % 9]))
    assert solve(get_task("edge_existence"), U, {"source": 0, "target": 1}).answer == U.has_edge(0, 1)


@pytest.mark.parametrize("seed", range(8))
def test_bipartite_matching_matches_hopcroft_karp(seed):
    G = generate("Bipartite-ERP", difficulty="medium", seed=seed)
    top = {u for u, c in nx.bipartite.color(G).items() if c == 0}
    expected = len(nx.bipartite.hopcroft_karp_matching(G, top)) // 2
    sol = solve(get_task("bipartite_matching"), G, {})
    assert sol.answer == expected
    used = [u for e in sol.witness["matching"] for u in e]
    assert len(used) == len(set(used)) and all(G.has_edge(*e) for e in sol.witness["matching"])


def test_topological_sort_and_its_baseline():
    G = generate("ERP", n_nodes=7, seed=3, directed=True, acyclic=True)
    task = get_task("topological_sort")
    sol = solve(task, G, {})
    assert check(task, G, {}, str(sol.answer), sol).correct
    exts = sum(all(p.index(u) < p.index(v) for u, v in G.edges()) for p in itertools.permutations(sorted(G)))
    assert random_baseline(task, G, {}, sol) == pytest.approx(exts / 5040)


def test_walk_baseline_on_a_square():
    # 0-1-3 and 0-2-3: a random walk from 0 steps to 1 or 2 (both on a shortest path), then 1/2 to reach 3.
    G = build_graph(None, [[0, 1], [0, 2], [1, 3], [2, 3]])
    task = get_task("shortest_path")
    assert random_baseline(task, G, {"source": 0, "target": 3}) == pytest.approx(0.5)
    assert random_baseline(get_task("connectivity"), G, {"source": 0, "target": 3}) == 0.5
    assert random_baseline(get_task("diameter"), G, {}) == pytest.approx(1 / 3)


def test_np_hard_refused_past_bound_with_the_bound():
    G = generate("ERP", n_nodes=45, seed=1)
    for name in ["max_clique", "chromatic_number", "hamiltonian_path", "min_vertex_cover"]:
        with pytest.raises(LimitExceeded, match=r"45.*40.*RESEARCH_MCP_GRAPH__MAX_NODES_NP_HARD"):
            solve(get_task(name), G, {})
    with pytest.raises(LimitExceeded, match=r"over the limit of 20.*MAX_NODES_MAX_CUT"):
        solve(get_task("max_cut"), generate("ERP", n_nodes=21, seed=1), {})


def test_inapplicable_tasks_and_unknown_nodes_are_refused():
    G = generate("ERP", n_nodes=8, seed=1)
    with pytest.raises(InvalidInput, match="directed acyclic"):
        solve(get_task("topological_sort"), G, {})
    with pytest.raises(InvalidInput, match="weighted"):
        solve(get_task("weighted_shortest_path"), G, {"source": 0, "target": 1})
    with pytest.raises(InvalidInput, match="not in the graph"):
        task_params(get_task("bfsorder"), G, source=99)
    with pytest.raises(InvalidInput, match="needs a source"):
        task_params(get_task("bfsorder"), G)


def test_every_task_solves_and_checks_its_own_answer_on_generated_graphs():
    from tools.graph.benchmark import graph_flags
    from tools.graph.prompts import answer_text

    rng = random.Random(0)
    for task in TASKS.values():
        gens = ["Bipartite-ERP"] if "bipartite" in task.needs else ["ERP", "BAG", "SF"]
        for i, gen in enumerate(gens):
            G = generate(gen, difficulty="easy", seed=i, **graph_flags(task))
            p = sample_params(task, G, rng)
            sol = solve(task, G, p)
            assert check(task, G, p, "Reasoning. Answer: " + answer_text(task, sol, "adjacency_set"), sol).correct
            assert 0.0 <= random_baseline(task, G, p, sol) <= 1.0


def test_generators_are_seeded_and_sized():
    for key, g in GENERATORS.items():
        a = generate(key, difficulty="hard", seed=5)
        b = generate(key, difficulty="hard", seed=5)
        assert sorted(a.edges()) == sorted(b.edges()) and sorted(a) == sorted(b)
        if not g.fixed_size:
            assert 20 <= a.number_of_nodes() <= 30
    assert nx.is_forest(generate("BAF", n_nodes=25, seed=2))
    assert nx.is_bipartite(generate("Bipartite-ERM", n_nodes=25, seed=2))
    assert nx.is_directed_acyclic_graph(generate("SBM", n_nodes=25, seed=2, directed=True, acyclic=True))
    assert generate("karate_club").number_of_edges() == 78


def test_a_million_edges_is_refused_before_anything_is_built():
    from tools.graph.catalog import graph_solve

    with pytest.raises(LimitExceeded, match=r"edges is 1e\+06, over the limit of 20000.*RESEARCH_MCP_GRAPH__MAX_EDGES"):
        graph_solve("edge_count", graph={"edges": [[i, i + 1] for i in range(10**6)]})


def test_exact_search_honours_cancellation_and_its_step_bound(monkeypatch):
    from tools.errors import Cancelled
    from tools.graph.catalog import graph_solve
    from tools.graph.model import to_spec
    from tools.progress import Progress
    from tools.settings import reload_settings

    hard = to_spec(generate("BAG", n_nodes=40, seed=3)).model_dump()  # no quick refutation applies
    cancelled = Progress()
    cancelled.cancel()
    with pytest.raises(Cancelled):
        graph_solve("hamiltonian_path", graph=hard, progress=cancelled)
    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS", "1000")
    reload_settings()
    with pytest.raises(LimitExceeded, match=r"over the limit of 1000.*RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS"):
        graph_solve("hamiltonian_cycle", graph=hard)


def test_an_empty_weight_list_means_no_weights_and_a_short_one_is_refused() -> None:
    import networkx as nx

    from tools.errors import InvalidInput
    from tools.graph.model import build_graph

    G = build_graph([0, 1, 2], [[0, 1], [1, 2]], weights=[])
    assert sorted(G.edges) == [(0, 1), (1, 2)] and not nx.get_edge_attributes(G, "weight")
    assert G.graph["weighted"] is False
    with pytest.raises(InvalidInput, match="has 1 entries but there are 2 edges"):
        build_graph([0, 1, 2], [[0, 1], [1, 2]], weights=[2.0])
