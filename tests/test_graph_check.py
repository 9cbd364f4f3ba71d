"""Answer checking: the checker accepts exactly the valid answers, read from free text."""

import itertools

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.graph.answers import parse_bool, parse_node_list, parse_number
from tools.graph.model import build_graph
from tools.graph.tasks import check, get_task, solve


@st.composite
def small_graphs(draw, directed=None, max_nodes=7):
    n = draw(st.integers(2, max_nodes))
    d = draw(st.booleans()) if directed is None else directed
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v and (d or u < v)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, min_size=1, max_size=len(pairs)))
    return build_graph(list(range(n)), [list(e) for e in edges], directed=d)


def all_bfs_orders(G, s):
    """Every BFS order from s, by simulating every choice of the order in which new neighbours are queued."""
    out = set()
    succ = G.successors if G.is_directed() else G.neighbors

    def run(queue, seen, order):
        if not queue:
            out.add(tuple(order))
            return
        u, rest = queue[0], queue[1:]
        new = [v for v in succ(u) if v not in seen]
        for perm in itertools.permutations(new):
            run(rest + list(perm), seen | set(new), order + list(perm))

    run([s], {s}, [s])
    return out


def text(seq):
    return "Answer: [" + ", ".join(map(str, seq)) + "]"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(G=small_graphs(), data=st.data())
def test_bfs_checker_accepts_exactly_the_bfs_orders(G, data):
    task = get_task("bfsorder")
    s = data.draw(st.sampled_from(sorted(G)))
    p = {"source": s}
    sol = solve(task, G, p)
    valid = all_bfs_orders(G, s)
    assert tuple(sol.answer) in valid
    reach = sorted(next(iter(valid)))
    rest = [u for u in reach if u != s]
    for perm in itertools.permutations(rest):
        order = [s, *perm]
        assert check(task, G, p, text(order), sol).correct == (tuple(order) in valid), order
    # corruptions: a dropped node, a repeated node, a node from outside the reachable set
    some = sorted(valid)[0]
    assert not check(task, G, p, text(some[:-1]), sol).correct or len(some) == 1
    assert not check(task, G, p, text([*some, some[-1]]), sol).correct
    outside = [u for u in G if u not in some]
    if outside:
        assert not check(task, G, p, text([*some, outside[0]]), sol).correct


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(G=small_graphs(), data=st.data())
def test_shortest_path_checker_accepts_exactly_the_shortest_paths(G, data):
    task = get_task("shortest_path")
    s, t = data.draw(st.lists(st.sampled_from(sorted(G)), min_size=2, max_size=2, unique=True))
    if not nx.has_path(G, s, t):
        sol = solve(task, G, {"source": s, "target": t})
        assert check(task, G, {"source": s, "target": t}, "There is no path.", sol).correct
        assert not check(task, G, {"source": s, "target": t}, f"[{s}, {t}]", sol).correct
        return
    p = {"source": s, "target": t}
    sol = solve(task, G, p)
    best = nx.shortest_path_length(G, s, t)
    for path in nx.all_simple_paths(G, s, t):
        assert check(task, G, p, text(path), sol).correct == (len(path) - 1 == best), path
    shortest = next(nx.all_shortest_paths(G, s, t))
    if len(shortest) > 2:  # corrupt: skip an inner node (not an edge: adjacent would be shorter)
        assert not check(task, G, p, text([shortest[0], *shortest[2:]]), sol).correct
    assert not check(task, G, p, text(list(reversed(shortest))), sol).correct  # wrong direction of travel


@settings(max_examples=40, deadline=None)
@given(G=small_graphs(directed=False), data=st.data())
def test_weighted_path_checker(G, data):
    task = get_task("weighted_shortest_path")
    rnd = data.draw(st.lists(st.integers(1, 9), min_size=G.number_of_edges(), max_size=G.number_of_edges()))
    H = build_graph(sorted(G), [[u, v, w] for (u, v), w in zip(sorted(G.edges()), rnd, strict=True)])
    s, t = data.draw(st.lists(st.sampled_from(sorted(H)), min_size=2, max_size=2, unique=True))
    if not nx.has_path(H, s, t):
        return
    p = {"source": s, "target": t}
    sol = solve(task, H, p)
    best = nx.dijkstra_path_length(H, s, t)
    for path in nx.all_simple_paths(H, s, t):
        cost = nx.path_weight(H, path, "weight")
        assert check(task, H, p, text(path), sol).correct == (cost == best)


def test_bare_no_means_no():
    task = get_task("connectivity")
    G = build_graph([0, 1, 2], [[0, 1]])
    p = {"source": 0, "target": 2}
    for reply in ["no", "No", "No.", "no\n", "NO"]:
        c = check(task, G, p, reply)
        assert c.extracted and c.correct and c.parsed is False
    for reply in ["yes", "Yes, they are connected."]:
        assert not check(task, G, p, reply).correct
    assert parse_bool("There is no path between node 0 and node 2.") is False
    assert parse_bool("Node 0 and node 2 are not connected.") is False
    assert parse_bool("Let me think. Answer: No") is False
    assert parse_bool("I am not sure; the answer is yes") is True
    assert parse_bool("") is None


def test_final_number_not_any_number():
    assert parse_number("Node 3 has neighbours 4, 7 and 9, so its degree is 3.") == 3
    assert parse_number("Counting edges (0,1), (1,2): there are 2 edges in total") == 2
    assert parse_number("The answer is 5 (I checked nodes 1 to 12).") == 5
    assert parse_number("\\boxed{17}") == 17
    assert parse_number("The diameter is four.") == 4
    assert parse_number("no idea") is None
    task = get_task("node_degree")
    G = build_graph(None, [[0, 1], [0, 2], [0, 3]])
    assert check(task, G, {"node": 0}, "Node 0 touches 1, 2 and 3. Answer: 3").correct
    assert not check(task, G, {"node": 0}, "The degree is 3? No wait, node 0 links to 1 and 2: 2").correct


def test_node_list_forms():
    assert parse_node_list("Answer: (2,3,5,7)") == ["2", "3", "5", "7"]
    assert parse_node_list("Path: 0 -> 4 -> 2") == ["0", "4", "2"]
    assert parse_node_list("First [1, 2], then finally [1, 3, 2].") == ["1", "3", "2"]
    assert parse_node_list("Answer: node 0, node 5, node 2") == ["0", "5", "2"]
    assert parse_node_list("James -> Mary -> John", naming="names") == ["James", "Mary", "John"]
    assert parse_node_list("A path: Answer: [A, D, C]", naming="letters") == ["A", "D", "C"]
    assert parse_node_list("nothing here") is None


def test_named_answer_is_checked_through_names():
    task = get_task("shortest_path")
    G = build_graph(None, [[0, 1], [1, 2], [0, 3]])
    p = {"source": 0, "target": 2}
    assert check(task, G, p, "Answer: [James, Robert, John]", naming="names").correct
    assert not check(task, G, p, "Answer: [James, Michael, John]", naming="names").correct
    assert check(task, G, p, "So: A -> B -> C", naming="letters").correct
    assert not check(task, G, p, "So: A -> D -> C", naming="letters").correct


@pytest.mark.parametrize("task_name", ["topological_sort"])
def test_topological_checker_matches_definition(task_name):
    task = get_task(task_name)
    G = build_graph(list(range(5)), [[0, 1], [0, 2], [1, 3], [2, 3], [3, 4]], directed=True)
    sol = solve(task, G, {})
    for perm in itertools.permutations(range(5)):
        ok = all(perm.index(u) < perm.index(v) for u, v in G.edges())
        assert check(task, G, {}, text(perm), sol).correct == ok
