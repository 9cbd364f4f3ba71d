"""Every serialization parses back to the same graph; GraphOmni's formats print as GraphOmni/networkx do."""

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.errors import InvalidInput, LimitExceeded, NotFound
from tools.graph.model import build_graph, canonical_edges, same_graph
from tools.graph.serialize import FORMATS, name_of, node_of_name, parse, serialize


@st.composite
def graphs(draw, max_nodes: int = 14):
    n = draw(st.integers(1, max_nodes))
    labels = draw(st.lists(st.integers(0, 130), min_size=n, max_size=n, unique=True))
    directed = draw(st.booleans())
    weighted = draw(st.booleans())
    pairs = [(u, v) for u in labels for v in labels if u != v and (directed or u < v)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=30)) if pairs else []
    weights = st.one_of(st.integers(1, 99).map(float), st.floats(0.01, 1e4, allow_nan=False, allow_infinity=False))
    edges = [[u, v, draw(weights)] if weighted else [u, v] for u, v in chosen]
    if not weighted and not edges:
        return build_graph(labels, [], directed=directed)
    return build_graph(labels, edges, directed=directed)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(G=graphs())
def test_round_trip(fmt, G):
    text = serialize(G, fmt)
    back = parse(text, fmt, directed=G.is_directed())
    assert same_graph(G, back), text


def test_adjacency_set_is_python_print_of_a_dict_of_sets():
    G = nx.Graph([(0, 4), (0, 6), (2, 3), (2, 5), (2, 7)])
    G.graph["weighted"] = False
    text = serialize(G, "adjacency_set")
    assert text == repr({u: set(G.adj[u]) for u in sorted(G)})
    assert text.startswith("{0: {4, 6}, 2: {3, 5, 7}")


def test_graphomni_adjacency_set_text_parses():
    # Copied from a GraphOmni query (bfsorder-easy-LTM-Adjacency Set-0): keys in GraphOmni's order.
    text = "{3: {2}, 2: {3, 5, 7}, 4: {0}, 0: {4, 6}, 5: {2}, 6: {0}, 7: {2}}"
    G = parse(text, "Adjacency Set")
    assert canonical_edges(G) == [(0, 4), (0, 6), (2, 3), (2, 5), (2, 7)]


@pytest.mark.parametrize("directed", [False, True])
def test_gml_and_graphml_are_networkx_writes(directed):
    G = build_graph([0, 1, 2, 3], [[0, 1], [1, 2], [2, 0]], directed=directed)
    H = (nx.DiGraph if directed else nx.Graph)()
    H.add_nodes_from([0, 1, 2, 3])
    H.add_edges_from([(0, 1), (0, 2), (1, 2)] if not directed else [(0, 1), (1, 2), (2, 0)])
    assert serialize(G, "gml") == "\n".join(nx.generate_gml(H))
    assert serialize(G, "graphml").endswith("\n".join(nx.generate_graphml(H)))
    back = nx.parse_graphml(serialize(G, "graphml"), node_type=int)
    assert set(back.nodes()) == set(H.nodes())
    assert set(back.edges()) == set(H.edges())


def test_adjacency_matrix_matches_numpy_print():
    import numpy as np

    G = nx.path_graph(4)
    G.graph["weighted"] = False
    assert serialize(G, "adjacency_matrix") == str(nx.to_numpy_array(G, nodelist=range(4), dtype=int))
    assert str(np.array([[0, 1], [1, 0]])) == serialize(build_graph(None, [[0, 1]]), "adjacency_matrix")


def test_names_invert():
    for k in [0, 1, 49, 50, 51, 99, 100, 1234]:
        assert node_of_name(name_of(k)) == k
    with pytest.raises(InvalidInput):
        node_of_name("Zorro")


@pytest.mark.parametrize(
    ("text", "fmt", "error"),
    [
        ("{0: {1}", "adjacency_set", InvalidInput),
        ("[[0 1]\n [1]]", "adjacency_matrix", InvalidInput),
        ("[[0 1]\n [0 0]]", "adjacency_matrix", InvalidInput),  # asymmetric but undirected
        ("graph [ node [ id 0 ", "gml", InvalidInput),
        ("<graphml><graph>", "graphml", InvalidInput),
        ("{(0, 0)}", "edge_set", InvalidInput),  # self-loop
        ("[(0, 1), (1, 0)]", "edge_list", InvalidInput),  # repeated undirected edge
        ("[('a b', 1)]", "edge_list", InvalidInput),
        ("{0: {1}}", "no_such_format", NotFound),
        ("   ", "edge_list", InvalidInput),
        ("G describes a graph among 0, 1.\nIn this graph:\nNode 0 is connected to nodes x.", "incident",
         InvalidInput),
    ],
)
def test_malformed_text_is_refused_clearly(text, fmt, error):
    with pytest.raises(error) as info:
        parse(text, fmt)
    assert len(str(info.value)) > 20


def test_text_length_bound(monkeypatch):
    from tools.settings import reload_settings

    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_TEXT_CHARS", "100")
    reload_settings()
    with pytest.raises(LimitExceeded, match="RESEARCH_MCP_GRAPH__MAX_TEXT_CHARS"):
        parse("[" + ", ".join(f"({i}, {i + 1})" for i in range(50)) + "]", "edge_list")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@settings(max_examples=30, deadline=None)
@given(junk=st.text(max_size=60) | st.sampled_from(["{0: {1}, 1: 2}", "[(0,)]", "{(0, 1, 2, 3)}", "[[1]]",
                                                     "graph [ node [ id 0 label \"x\" ] ]", "<graphml/>",
                                                     "{0: {1: -2}}", "[(0, 1, 'w')]", "((((((((((((0))))))))))))"]))
def test_random_text_gives_only_clear_errors(fmt, junk):
    from tools.errors import ResearchError

    try:
        G = parse(junk, fmt)
    except ResearchError as exc:
        assert str(exc)
    else:
        assert G.number_of_nodes() >= 1
