"""Answers are right only when every claim in them holds on the graph: witnesses, totals, assignments."""

import itertools

import networkx as nx
import numpy as np
import pytest

from tools.graph.catalog import graph_check_answer
from tools.graph.model import build_graph
from tools.graph.tasks import check, get_task, solve

# 0-1-2-3 is the only Hamiltonian path family here (plus its reverse); 0-2 is a chord, 1-3 is not an edge.
HAM = build_graph(None, [[0, 1], [1, 2], [2, 3], [0, 2]])


def _is_ham_path(G, seq):
    return len(seq) == len(G) == len(set(seq)) and nx.is_path(G, seq)


@pytest.mark.parametrize(("reply", "ok"), [
    ("Yes. The path can be: 0,1,2,3", True),
    ("Yes. The path can be: 3,2,1,0", True),
    ("Yes. The path can be: 0,2,1,3", False),  # (1, 3) is not an edge
    ("Yes. The path can be: 0,1,2", False),  # node 3 missing
    ("Yes. The path can be: 0,1,2,1,3", False),  # node 1 twice
    ("0,1,2,3", True),  # a bare path is read as "yes, this one"
    ("0 -> 2 -> 1 -> 3", False),
    ("Yes.", True),
])
def test_hamiltonian_path_claims_are_validated(reply, ok):
    task = get_task("hamiltonian_path")
    c = check(task, HAM, {}, reply)
    assert c.extracted and c.correct is ok, (reply, c.reason)
    if isinstance(c.parsed, list):
        assert _is_ham_path(HAM, c.parsed) is ok


def test_every_permutation_checked_as_networkx_says():
    task = get_task("hamiltonian_path")
    for perm in itertools.permutations(range(4)):
        reply = "Yes. The path can be: " + ",".join(map(str, perm))
        assert check(task, HAM, {}, reply).correct == _is_ham_path(HAM, list(perm)), perm


def test_hamiltonian_cycle_with_a_non_edge_is_wrong():
    C = build_graph(None, [[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
    task = get_task("hamiltonian_cycle")
    assert check(task, C, {}, "Yes, the cycle 0 -> 1 -> 2 -> 3 -> 0").correct
    assert not check(task, C, {}, "Yes, the cycle 0 -> 2 -> 1 -> 3 -> 0").correct  # (1, 3) is not an edge


def test_matching_assignment_is_validated():
    APPLY = build_graph(None, [["a0", "j1"], ["a0", "j2"], ["a1", "j1"], ["a2", "j1"]])
    task = get_task("matching")
    top = {"a0", "a1", "a2"}
    assert solve(task, APPLY, {}).answer == len(nx.bipartite.hopcroft_karp_matching(APPLY, top)) // 2 == 2
    good = "2 applicants can find the job they are interested in. a0: j2, a1: j1"
    assert check(task, APPLY, {}, good).correct
    double = "2 applicants can find the job they are interested in. a0: j1, a1: j1"  # j1 given twice
    c = check(task, APPLY, {}, double)
    assert c.extracted and not c.correct and "twice" in c.reason
    assert not check(task, APPLY, {}, "2. a0: j2, a1: j2").correct  # (a1, j2) is not an edge
    assert not check(task, APPLY, {}, "Answer: 3. a0: j2, a1: j1").correct  # the count disagrees with the pairs
    assert check(task, APPLY, {}, "Answer: 2").correct  # a count alone is still read


def test_matching_on_integer_nodes():
    G = build_graph(None, [[0, 3], [0, 4], [1, 3], [2, 3]])
    task = get_task("bipartite_matching")
    assert check(task, G, {}, "applicant 0: job 4, applicant 1: job 3. Answer: 2").correct
    assert not check(task, G, {}, "applicant 0: job 3, applicant 1: job 3. Answer: 2").correct


W = build_graph(None, [[0, 1, 1], [1, 3, 1], [0, 3, 5], [0, 2, 1], [2, 3, 4]])


@pytest.mark.parametrize("name", ["shortest_path", "weighted_shortest_path"])
def test_shortest_path_total_weight_is_validated(name):
    task = get_task(name)
    p = {"source": 0, "target": 3}
    assert nx.dijkstra_path_length(W, 0, 3) == 2
    assert check(task, W, p, "The shortest path from node 0 to node 3 is 0,1,3 with a total weight of 2.").correct
    c = check(task, W, p, "The shortest path from node 0 to node 3 is 0,1,3 with a total weight of 3.")
    assert c.extracted and not c.correct
    c = check(task, W, p, "The total weight of the shortest path is 2.")  # weight only: read
    assert c.extracted and c.correct
    c = check(task, W, p, "Answer: 5")
    assert c.extracted and not c.correct


def test_shortest_path_on_a_weighted_graph_answers_the_weighted_question():
    task = get_task("shortest_path")
    p = {"source": 0, "target": 3}
    sol = solve(task, W, p)
    assert nx.path_weight(W, sol.answer, "weight") == nx.dijkstra_path_length(W, 0, 3)
    assert check(task, W, p, "Answer: [0, 1, 3]", sol).correct
    assert not check(task, W, p, "Answer: [0, 3]", sol).correct  # one hop, but weight 5


def test_colouring_cut_and_node_sets_are_validated():
    G = build_graph(None, [[0, 1], [1, 2], [2, 0], [2, 3]])  # a triangle with a pendant
    chrom = get_task("chromatic_number")
    assert check(chrom, G, {}, "Answer: 3. 0: red, 1: blue, 2: green, 3: red").correct
    assert not check(chrom, G, {}, "Answer: 3. 0: red, 1: blue, 2: green, 3: green").correct  # 2-3 share
    assert not check(chrom, G, {}, "Answer: 3. 0: red, 1: blue, 2: green").correct  # 3 uncoloured
    cut = get_task("max_cut")
    best = max(nx.cut_size(G, set(s)) for r in range(5) for s in itertools.combinations(range(4), r))
    assert best == 3
    assert check(cut, G, {}, "Answer: 3, with sides {0, 3} and {1, 2}").correct
    assert not check(cut, G, {}, "Answer: 3, with sides {0, 1} and {2, 3}").correct  # that cut is 2
    clique = get_task("max_clique")
    assert check(clique, G, {}, "Answer: {0, 1, 2}, size 3").correct
    assert not check(clique, G, {}, "Answer: {1, 2, 3}, size 3").correct  # 1-3 not adjacent
    mis = get_task("max_independent_set")
    assert check(mis, G, {}, "Answer: [0, 3] so 2").correct
    assert not check(mis, G, {}, "Answer: [2, 3] so 2").correct
    cover = get_task("min_vertex_cover")
    assert check(cover, G, {}, "Answer: {0, 2} (2 nodes)").correct
    assert check(cover, G, {}, "Answer: {1, 2} (2 nodes)").correct
    assert not check(cover, G, {}, "Answer: {0, 1} (2 nodes)").correct  # (2, 3) is not covered


def test_check_answer_tool_rejects_the_false_path():
    spec = {"edges": [[0, 1], [1, 2], [2, 3], [0, 2]]}
    r = graph_check_answer("hamilton", "Yes. The path can be: 0,2,1,3", graph=spec)
    assert r.task == "hamiltonian_path" and r.extracted and not r.correct
    r = graph_check_answer("hamilton", "0,1,2,3", graph=spec)
    assert r.extracted and r.correct and r.parsed == [0, 1, 2, 3]


def _max_matchings(G: nx.Graph) -> tuple[int, list[list[tuple]], list[list[tuple]]]:
    """(maximum size, every maximum matching, every smaller non-empty matching) by brute force over edge sets."""
    edges = list(G.edges())
    found = [list(c) for r in range(1, len(edges) + 1) for c in itertools.combinations(edges, r)
             if nx.is_matching(G, set(c))]
    best = max(len(m) for m in found)
    return best, [m for m in found if len(m) == best], [m for m in found if len(m) < best]


def _nlgraph_assignment(matching: list[tuple]) -> str:
    """A matching in NLGraph's own answer phrasing: one `applicant N: job M` line per pair, then the count."""
    lines = []
    for u, v in matching:
        a, j = (u, v) if str(u).startswith("a") else (v, u)
        lines.append(f"applicant {a[1:]}: job {j[1:]}")
    return "\n".join([*lines, f"{len(matching)} applicants can find the job they are interested in."])


@pytest.mark.parametrize("seed", range(4))
def test_nlgraph_matching_answers_name_applicants_and_jobs_by_number(seed):
    rng = np.random.default_rng(seed)
    edges = [[f"a{i}", f"j{k}"] for i in range(4) for k in range(3) if rng.random() < 0.45]
    G = build_graph(None, edges)
    task = get_task("matching")
    best, maximum, smaller = _max_matchings(G)
    assert solve(task, G, {}).answer == best
    for m in maximum:  # every maximum matching, as NLGraph writes it, is right
        reply = _nlgraph_assignment(m)
        c = check(task, G, {}, reply)
        assert c.correct, (reply, c.reason)
    for m in smaller:  # a true matching that is not maximum is wrong
        assert not check(task, G, {}, _nlgraph_assignment(m)).correct
    a, j = next((a, j) for a in sorted({u for u in G if u[0] == "a"}) for j in sorted({u for u in G if u[0] == "j"})
                if not G.has_edge(a, j))
    false_edge = f"applicant {a[1:]}: job {j[1:]}\n1 applicants can find the job they are interested in."
    assert not check(task, G, {}, false_edge).correct  # not an edge of the graph
    for job in (u for u in G if u[0] == "j" and G.degree(u) >= 2):  # one job given to two applicants
        a0, a1 = sorted(G[job])[:2]
        twice = f"applicant {a0[1:]}: job {job[1:]}\napplicant {a1[1:]}: job {job[1:]}\n2 applicants"
        assert nx.is_matching(G, {(a0, job), (a1, job)}) is False
        assert not check(task, G, {}, twice).correct


@pytest.mark.parametrize("seed", range(40))
def test_every_weighted_shortest_path_in_nlgraph_phrasing_is_right_and_only_those(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 11))
    base = nx.compose(nx.gnp_random_graph(n, 0.4, seed=seed), nx.path_graph(n))  # connected
    edges = [[u, v, int(rng.integers(1, 5))] for u, v in base.edges()]
    G = build_graph(list(range(n)), edges)
    s, t = (int(x) for x in rng.choice(n, 2, replace=False))
    task, p = get_task("shortest_path"), {"source": s, "target": t}
    best = nx.dijkstra_path_length(G, s, t)

    def reply(path, total):
        nodes = ",".join(map(str, path))
        return f"The shortest path from node {s} to node {t} is {nodes} with a total weight of {total}."

    for path in nx.all_shortest_paths(G, s, t, weight="weight"):
        c = check(task, G, p, reply(path, best))
        assert c.correct, (reply(path, best), c.reason)
        assert not check(task, G, p, reply(path, best + 1)).correct  # a false total
    for path in itertools.islice(nx.all_simple_paths(G, s, t), 200):
        weight = nx.path_weight(G, path, "weight")
        assert check(task, G, p, f"Answer: {','.join(map(str, path))}").correct == (weight == best), path
