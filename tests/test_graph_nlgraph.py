"""NLGraph task names and its GNN task, named nodes, bounded exact searches, cancellation, atomic outputs."""

import csv
import itertools
import math

import networkx as nx
import numpy as np
import pytest

from tools.errors import Cancelled, LimitExceeded
from tools.graph.catalog import graph_check_answer, graph_prompt, graph_solve
from tools.graph.generate import generate
from tools.graph.model import build_graph, from_spec, same_graph, to_spec
from tools.graph.prompts import answer_text, build_prompt
from tools.graph.serialize import FORMATS, parse, serialize
from tools.graph.tasks import check, get_task, solve
from tools.progress import Progress
from tools.settings import reload_settings


@pytest.mark.parametrize(("name", "key"), [
    ("topology", "topological_sort"), ("hamilton", "hamiltonian_path"), ("flow", "max_flow"),
    ("matching", "bipartite_matching"), ("shortest_path", "shortest_path"), ("GNN", "gnn")])
def test_nlgraph_task_names_are_accepted(name, key):
    assert get_task(name).key == key


GNN_SPEC = {"edges": [[0, 1], [1, 2]], "features": {"0": [1, 0], "1": [0, 1], "2": [1, 1]}}


def test_gnn_two_layers_of_neighbour_sums():
    # by hand: layer 1 gives 0: [0, 1], 1: [2, 1], 2: [0, 1]; layer 2 gives 0: [2, 1], 1: [0, 2], 2: [2, 1]
    r = graph_solve("GNN", graph=GNN_SPEC)
    assert r.answer == {"0": [2, 1], "1": [0, 2], "2": [2, 1]}
    G = generate("ERP", n_nodes=9, seed=4, features=2)
    A = nx.to_numpy_array(G, nodelist=sorted(G))
    X = np.array([G.nodes[u]["features"] for u in sorted(G)])
    sol = solve(get_task("gnn"), G, {})
    assert np.array_equal(np.array([sol.answer[str(u)] for u in sorted(G)]), A @ A @ X)
    right = "Answer: node 0: [2, 1], node 1: [0, 2], node 2: [2, 1]"
    assert graph_check_answer("gnn", right, graph=GNN_SPEC).correct
    assert not graph_check_answer("gnn", "Answer: node 0: [2, 1], node 1: [0, 1], node 2: [2, 1]",
                                  graph=GNN_SPEC).correct
    assert not graph_check_answer("gnn", "Answer: node 0: [2, 1], node 1: [0, 2]", graph=GNN_SPEC).correct
    p = graph_prompt("gnn", graph=GNN_SPEC, scheme="CoT", k=1)
    assert "Embeddings: node 0: [1, 0], node 1: [0, 1], node 2: [1, 1]." in p.prompt
    assert p.prompt.count("Embeddings:") == 2  # the exemplar shows its own
    with pytest.raises(Exception, match="feature"):
        graph_solve("gnn", graph={"edges": [[0, 1]]})


def test_gnn_answer_text_checks_in_every_format():
    G = generate("ERP", n_nodes=6, seed=1, features=2)
    task = get_task("gnn")
    sol = solve(task, G, {})
    for fmt, f in FORMATS.items():
        assert check(task, G, {}, "Answer: " + answer_text(task, sol, fmt), sol, naming=f.naming).correct, fmt
    assert same_graph(from_spec(to_spec(G).model_dump()), G)
    assert from_spec(to_spec(G).model_dump()).nodes[3]["features"] == G.nodes[3]["features"]


NAMED = {"edges": [["a0", "j1"], ["a0", "j2"], ["a1", "j1"], ["a2", "j10"], ["a1", "j10"]]}


def test_named_nodes_through_input_solving_serializing_and_checking():
    G = from_spec(NAMED)
    H = nx.Graph([tuple(e) for e in NAMED["edges"]])
    for fmt in FORMATS:
        assert same_graph(parse(serialize(G, fmt), fmt), G), fmt
    r = graph_solve("shortest_path", graph=NAMED, source="a0", target="a2")
    assert len(r.answer) - 1 == nx.shortest_path_length(H, "a0", "a2") == 4
    ok = graph_check_answer("shortest_path", "Answer: a0 -> j1 -> a1 -> j10 -> a2", graph=NAMED, source="a0",
                            target="a2")
    assert ok.correct and ok.parsed == ["a0", "j1", "a1", "j10", "a2"]
    assert not graph_check_answer("shortest_path", "Answer: a0 -> j2 -> a1 -> j10 -> a2", graph=NAMED,
                                  source="a0", target="a2").correct
    assert graph_solve("bfsorder", graph=NAMED, source="a0").answer[:3] == ["a0", "j1", "j2"]
    named_fmt = graph_check_answer("bfsorder", "Answer: [a0, j1, j2, a1, j10, a2]", graph=NAMED, source="a0",
                                   prompt_format="friendship")
    assert named_fmt.correct
    with pytest.raises(Exception, match="looks like a node name"):
        serialize(build_graph(None, [["James", "x1"]]), "friendship")


def test_triangles_are_counted_without_enumerating_cliques(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("enumerate_all_cliques called")

    monkeypatch.setattr(nx, "enumerate_all_cliques", refuse)
    K = build_graph(None, [list(e) for e in nx.complete_graph(26).edges()])
    assert solve(get_task("triangle"), K, {}).answer == math.comb(26, 3)
    G = generate("ERP", n_nodes=30, seed=2)
    assert solve(get_task("triangle"), G, {}).answer == sum(nx.triangles(G).values()) // 3


@pytest.mark.parametrize("name", ["max_clique", "max_independent_set", "min_vertex_cover"])
def test_clique_searches_have_the_step_budget_and_cancel(name, monkeypatch):
    G = build_graph(list(range(40)), [list(e) for e in nx.gnp_random_graph(40, 0.5, seed=7).edges()])
    cancelled = Progress()
    cancelled.cancel()
    with pytest.raises(Cancelled):
        solve(get_task(name), G, {}, cancelled)
    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS", "20")
    reload_settings()
    try:
        with pytest.raises(LimitExceeded, match="MAX_SEARCH_STEPS"):
            solve(get_task(name), G, {})
    finally:
        monkeypatch.delenv("RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS")
        reload_settings()


@pytest.mark.parametrize("seed", range(6))
def test_own_clique_search_matches_networkx(seed):
    G = generate("ERP", n_nodes=16, seed=seed)
    assert solve(get_task("max_clique"), G, {}).answer == nx.max_weight_clique(G, weight=None)[1]
    assert solve(get_task("max_independent_set"), G, {}).answer == nx.max_weight_clique(
        nx.complement(G), weight=None)[1]


@pytest.mark.parametrize("name", ["diameter", "triangle"])
def test_polynomial_loops_stop_at_a_cancel(name):
    G = generate("ERP", n_nodes=200, seed=1)
    cancelled = Progress()
    cancelled.cancel()
    with pytest.raises(Cancelled):
        solve(get_task(name), G, {}, cancelled)


def _linear_extensions(G):
    nodes = sorted(G)
    return sum(all(p.index(u) < p.index(v) for u, v in G.edges()) for p in itertools.permutations(nodes))


def test_topological_baseline_is_exact_when_small_and_estimated_when_large():
    from tools.graph.tasks import random_baseline_info

    small = generate("ERP", n_nodes=8, seed=3, directed=True, acyclic=True)
    value, how = random_baseline_info(get_task("topological_sort"), small, {})
    assert how == "exact" and value == pytest.approx(_linear_extensions(small) / math.factorial(8))
    # a chain of 9 nodes beside 9 free nodes: C(18, 9) * 9! linear extensions of 18!, i.e. 1 / 9!
    chain = build_graph(list(range(18)), [[i, i + 1] for i in range(8)], directed=True)
    value, how = random_baseline_info(get_task("topological_sort"), chain, {})
    assert how.startswith("estimated")
    assert value == pytest.approx(1 / math.factorial(9), rel=0.3)
    assert graph_solve("topology", graph=to_spec(chain).model_dump()).random_baseline_method.startswith("estimated")


def test_matching_runs_hopcroft_karp(monkeypatch):
    monkeypatch.setattr(nx, "max_weight_matching", lambda *a, **k: pytest.fail("blossom used on a bipartite graph"))
    G = generate("Bipartite-ERP", n_nodes=16, seed=2)
    assert "Hopcroft-Karp" in get_task("matching").algorithm
    top = {u for u, c in nx.bipartite.color(G).items() if c == 0}
    assert solve(get_task("matching"), G, {}).answer == len(nx.bipartite.hopcroft_karp_matching(G, top)) // 2


def test_benchmark_outputs_never_appear_half_written(tmp_path):
    from tools.graph.benchmark import Row, write_rows

    row = Row(id="x", task="cycle", generator="ERP", format="edge_list", scheme="LTM", difficulty="easy", n_nodes=5,
              n_edges=4, extracted=True, correct=True, random_baseline=0.5, prompt_tokens=1, completion_tokens=1,
              votes=1, reply="yes")
    path = tmp_path / "rows.csv"
    with pytest.raises(TypeError):
        write_rows([row, object()], path)  # fails after the header and the first row
    assert not path.exists() and not list(tmp_path.iterdir())
    write_rows([row], path)
    assert next(csv.DictReader(path.open()))["id"] == "x"


def test_weighted_shortest_path_question_says_weights_count():
    G = generate("ERP", n_nodes=6, seed=1, weighted=True)
    text = build_prompt(get_task("shortest_path"), G, {"source": 0, "target": 1}, "edge_list", "none")
    assert "least total weight" in text
