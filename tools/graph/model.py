"""The graph a tool receives: its JSON form, validation against the bounds, and conversion to networkx.

A graph travels as JSON, `{"nodes": [0, 1, 2], "edges": [[0, 1], [1, 2, 3.5]], "directed": false}`:
a node label is a non-negative integer or a name (letters, digits and underscores, not all digits:
`a0`, `j1`, `Alice`; a string of digits such as `"3"` is the integer 3), an edge is `[u, v]` or
`[u, v, weight]` (or weights come in a parallel `weights` list), and `nodes` may be left out when every
node has an edge. Optional `features` give every node a vector (the `gnn` task). Inside the family a
graph is a `networkx.Graph` / `networkx.DiGraph` with int and/or str nodes, ordered by `node_key`
(integers first, then names in natural order: a2 before a10); a weighted one carries a `weight` on
every edge and `G.graph["weighted"] = True`, one with features a tuple `features` on every node and
`G.graph["features"]` = its dimension.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from tools.errors import InvalidInput, LimitExceeded
from tools.lazy import LazyModule
from tools.settings import get_settings

nx = LazyModule("networkx")

Node = int | str


class GraphSpec(BaseModel):
    """A graph as JSON: node labels (integers or names), edges as [u, v] or [u, v, weight]."""

    nodes: list[Any] | None = Field(None, description="Isolated ones.")
    edges: list[list[Any]] = Field(default_factory=list)
    directed: bool = False
    weights: list[float] | None = Field(None, description="One per edge.")
    features: dict[str, list[float]] | None = Field(None, description="gnn task.")


def _limits():
    return get_settings().graph


def check_size(n_nodes: int, n_edges: int) -> None:
    """Raise `LimitExceeded` when a graph is past the family's node or edge bound."""
    lim = _limits()
    if n_edges > lim.max_edges:
        raise LimitExceeded("The number of edges", n_edges, lim.max_edges, "RESEARCH_MCP_GRAPH__MAX_EDGES")
    if n_nodes > lim.max_nodes:
        raise LimitExceeded("The number of nodes", n_nodes, lim.max_nodes, "RESEARCH_MCP_GRAPH__MAX_NODES")


_NAME_LABEL = re.compile(r"\w+")


def node_label(value: Any, where: str) -> Node:
    """A node label as an int or a name; `InvalidInput` naming `where` for anything else.

    Integers (and strings of digits, and integral floats) give int labels; other strings of letters,
    digits and underscores give str labels.
    """
    hint = ("Label nodes with non-negative integers (0, 1, 2, ...) or names of letters, digits and underscores "
            "(a0, j1, Alice).")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidInput(f"Node label {value!r} in {where} is neither an integer nor a name.", hint=hint)
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidInput(f"Node label {value!r} in {where} is not an integer.", hint=hint)
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit() and text.isascii():
            value = int(text)
        elif _NAME_LABEL.fullmatch(text):
            return text
        else:
            raise InvalidInput(f"Node label {value!r} in {where} is not an integer or a name of letters, digits and "
                               "underscores.", hint=hint + " Replace spaces and punctuation by underscores.")
    if value < 0:
        raise InvalidInput(f"Node label {value} in {where} is negative.", hint=hint)
    return value


def node_key(u: Node) -> tuple:
    """The sort key of a node label: integers by value first, then names in natural order (a2 before a10)."""
    if isinstance(u, int):
        return (0, u, ())
    parts = tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.findall(r"\d+|\D+", u))
    return (1, 0, parts)


def sorted_nodes(nodes: Iterable[Node]) -> list[Node]:
    """Node labels in the family's order (`node_key`)."""
    return sorted(nodes, key=node_key)


def has_named_nodes(G: nx.Graph) -> bool:
    """True when some node label is a name (a str)."""
    return any(isinstance(u, str) for u in G)


def edge_weight(value: Any, where: str) -> float:
    """A positive finite weight, else `InvalidInput`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"Weight {value!r} of {where} is not a number.",
                               hint="Give weights as positive numbers, e.g. [0, 1, 2.5].") from None
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise InvalidInput(f"Weight {value!r} of {where} is not a positive finite number.",
                           hint="Use weights > 0 (capacities, lengths, costs).")
    return value


def build_graph(nodes: list[Any] | None, edges: list[Any], *, directed: bool = False,
                weights: list[Any] | None = None) -> nx.Graph:
    """Validate a graph given as node and edge lists and return it as a networkx graph.

    Refuses, with the fix in the message: no nodes at all, non-integer or negative labels, self-loops,
    repeated edges, edges that are not pairs/triples, a mix of weighted and unweighted edges, and
    graphs over the node or edge bound (checked before anything is built).
    """
    if not isinstance(edges, list | tuple):
        raise InvalidInput("`edges` must be a list of [u, v] or [u, v, weight] lists.",
                           hint='Example: {"edges": [[0, 1], [1, 2]]}.')
    n_declared = len(nodes) if nodes is not None else 0
    check_size(n_declared, len(edges))
    if weights is not None and len(weights) == 0 and edges:
        weights = None      # an empty list, as a model fills in an optional argument, means none
    if weights is not None and len(weights) != len(edges):
        raise InvalidInput(f"`weights` has {len(weights)} entries but there are {len(edges)} edges.",
                           hint="Give exactly one weight per edge, in the same order, or none.")
    G: nx.Graph = nx.DiGraph() if directed else nx.Graph()
    if nodes is not None:
        for i, v in enumerate(nodes):
            u = node_label(v, f"nodes[{i}]")
            if u in G:
                raise InvalidInput(f"Node {u} is listed twice in `nodes`.", hint="List each node once.")
            G.add_node(u)
    weighted: bool | None = True if weights is not None else None
    for i, e in enumerate(edges):
        where = f"edges[{i}]"
        if not isinstance(e, list | tuple) or len(e) not in (2, 3):
            raise InvalidInput(f"{where} = {e!r} is not an edge.",
                               hint="Write each edge as [u, v] or [u, v, weight] with node labels u and v.")
        u, v = node_label(e[0], where), node_label(e[1], where)
        if u == v:
            raise InvalidInput(f"{where} = {list(e)!r} is a self-loop.",
                               hint="Remove self-loops; the tasks here are defined on simple graphs.")
        has_w = len(e) == 3 or weights is not None
        if weighted is None:
            weighted = has_w
        elif weighted != has_w:
            raise InvalidInput(f"{where} = {list(e)!r}: some edges have a weight and some do not.",
                               hint="Give every edge a weight, or none.")
        if G.has_edge(u, v):
            raise InvalidInput(f"Edge ({u}, {v}) appears twice (at {where}).",
                               hint="List each edge once (an undirected edge once, in either direction).")
        if has_w:
            w = edge_weight(weights[i] if weights is not None else e[2], where)
            G.add_edge(u, v, weight=w)
        else:
            G.add_edge(u, v)
    if G.number_of_nodes() == 0:
        raise InvalidInput("The graph is empty (no nodes).",
                           hint="Give at least one node in `nodes` or one edge in `edges`.")
    check_size(G.number_of_nodes(), G.number_of_edges())
    G.graph["weighted"] = bool(weighted)
    return G


def from_spec(spec: GraphSpec | dict) -> nx.Graph:
    """The networkx graph of a `GraphSpec` (or its dict), validated."""
    if isinstance(spec, dict):
        nodes, edges = spec.get("nodes"), spec.get("edges")
        check_size(len(nodes) if isinstance(nodes, list) else 0, len(edges) if isinstance(edges, list) else 0)
        try:
            spec = GraphSpec.model_validate(spec)
        except Exception as exc:  # pydantic's ValidationError, worded for the caller
            raise InvalidInput(f"The graph JSON is malformed: {exc}",
                               hint='Example: {"nodes": [0, 1, 2], "edges": [[0, 1], [1, 2]], "directed": false}.'
                               ) from None
    G = build_graph(spec.nodes, spec.edges, directed=spec.directed, weights=spec.weights)
    if spec.features is not None:
        set_features(G, spec.features)
    return G


def set_features(G: nx.Graph, features: dict[Any, Any]) -> None:
    """Attach node feature vectors (one per node, all of one length, finite numbers) to `G`, validated."""
    hint = 'Give every node a vector of the same length, e.g. {"0": [1, 0], "1": [0, 1]}.'
    if not isinstance(features, dict) or not features:
        raise InvalidInput("`features` must map node labels to vectors.", hint=hint)
    vecs: dict[Node, tuple[float, ...]] = {}
    dim = None
    for key, vec in features.items():
        u = node_label(key, "features")
        if u not in G:
            raise InvalidInput(f"`features` names node {u!r}, which is not in the graph.", hint=hint)
        if not isinstance(vec, list | tuple) or not vec:
            raise InvalidInput(f"The features of node {u!r} are {vec!r}, not a list of numbers.", hint=hint)
        if any(isinstance(x, bool) or not isinstance(x, int | float) for x in vec):
            raise InvalidInput(f"The features of node {u!r} are not all numbers.", hint=hint)
        xs = tuple(float(x) for x in vec)
        if not all(math.isfinite(x) for x in xs):
            raise InvalidInput(f"The features of node {u!r} are not all finite numbers.", hint=hint)
        if dim is not None and len(xs) != dim:
            raise InvalidInput(f"Node {u!r} has a {len(xs)}-dimensional vector, others {dim}-dimensional.", hint=hint)
        dim = len(xs)
        vecs[u] = xs
    missing = [u for u in G if u not in vecs]
    if missing:
        raise InvalidInput(f"`features` lacks nodes {sorted_nodes(missing)[:10]}.", hint=hint)
    for u, xs in vecs.items():
        G.nodes[u]["features"] = xs
    G.graph["features"] = dim


def feature_dim(G: nx.Graph) -> int:
    """The dimension of the node features of `G`; 0 when it has none."""
    return int(G.graph.get("features") or 0)


def is_weighted(G: nx.Graph) -> bool:
    return bool(G.graph.get("weighted"))


def fmt_weight(w: float) -> str:
    """A weight as text: `3` for integral values, else the shortest float repr."""
    return str(int(w)) if float(w).is_integer() and abs(w) < 1e15 else repr(float(w))


def to_spec(G: nx.Graph) -> GraphSpec:
    """The JSON form of a graph (nodes sorted, edges in a canonical order)."""
    nodes = sorted_nodes(G.nodes())
    edges: list[list[Any]] = []
    weighted = is_weighted(G)
    for u, v in canonical_edges(G):
        if weighted:
            w = G[u][v]["weight"]
            edges.append([u, v, int(w) if float(w).is_integer() else w])
        else:
            edges.append([u, v])
    features = None
    if feature_dim(G):
        features = {str(u): [_as_num(x) for x in G.nodes[u]["features"]] for u in nodes}
    return GraphSpec(nodes=nodes, edges=edges, directed=G.is_directed(), features=features)


def _as_num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def canonical_edges(G: nx.Graph) -> list[tuple[Node, Node]]:
    """Edges sorted (by `node_key`); undirected edges written with the smaller label first."""
    def key(e: tuple[Node, Node]) -> tuple:
        return node_key(e[0]), node_key(e[1])

    if G.is_directed():
        return sorted(G.edges(), key=key)
    return sorted((tuple(sorted_nodes((u, v))) for u, v in G.edges()), key=key)


def same_graph(a: nx.Graph, b: nx.Graph) -> bool:
    """True when two graphs have the same nodes, edges, direction and weights."""
    if a.is_directed() != b.is_directed() or set(a.nodes()) != set(b.nodes()):
        return False
    if canonical_edges(a) != canonical_edges(b) or is_weighted(a) != is_weighted(b):
        return False
    if is_weighted(a):
        return all(math.isclose(a[u][v]["weight"], b[u][v]["weight"], rel_tol=1e-12) for u, v in a.edges())
    return True


def require_node(G: nx.Graph, node: Node | None, role: str) -> Node:
    """`node` when it is in `G`; `InvalidInput` naming the role and the valid labels otherwise."""
    if node is None:
        raise InvalidInput(f"This task needs a {role} node.", hint=f"Pass `{role}` as a node label of the graph.")
    node = node_label(node, f"`{role}`")
    if node not in G:
        labels = sorted_nodes(G.nodes())
        shown = f"{labels[0]}..{labels[-1]}" if len(labels) > 12 else ", ".join(map(str, labels))
        raise InvalidInput(f"The {role} node {node} is not in the graph (its nodes: {shown}).",
                           hint=f"Pick a {role} among the graph's nodes.")
    return node
