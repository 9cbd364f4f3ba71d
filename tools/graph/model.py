"""The graph a tool receives: its JSON form, validation against the bounds, and conversion to networkx.

A graph travels as JSON, `{"nodes": [0, 1, 2], "edges": [[0, 1], [1, 2, 3.5]], "directed": false}`:
node labels are non-negative integers, an edge is `[u, v]` or `[u, v, weight]` (or weights come in a
parallel `weights` list), and `nodes` may be left out when every node has an edge. Inside the family a
graph is a `networkx.Graph` / `networkx.DiGraph` with integer nodes; a weighted one carries a `weight`
on every edge and `G.graph["weighted"] = True`.
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
from pydantic import BaseModel, Field

from tools.errors import InvalidInput, LimitExceeded
from tools.settings import get_settings


class GraphSpec(BaseModel):
    """A graph as JSON: integer node labels, edges as [u, v] or [u, v, weight]."""

    nodes: list[Any] | None = Field(
        None, description="Node labels (non-negative integers). Optional when every node has an edge."
    )
    edges: list[list[Any]] = Field(
        default_factory=list, description="Edges as [u, v] or [u, v, weight]; for a directed graph u -> v."
    )
    directed: bool = Field(False, description="True for a directed graph.")
    weights: list[float] | None = Field(
        None, description="Optional edge weights, one per edge in order (instead of a third edge entry)."
    )


def _limits():
    return get_settings().graph


def check_size(n_nodes: int, n_edges: int) -> None:
    """Raise `LimitExceeded` when a graph is past the family's node or edge bound."""
    lim = _limits()
    if n_edges > lim.max_edges:
        raise LimitExceeded("The number of edges", n_edges, lim.max_edges, "RESEARCH_MCP_GRAPH__MAX_EDGES")
    if n_nodes > lim.max_nodes:
        raise LimitExceeded("The number of nodes", n_nodes, lim.max_nodes, "RESEARCH_MCP_GRAPH__MAX_NODES")


def node_label(value: Any, where: str) -> int:
    """A node label as an int; `InvalidInput` naming `where` for anything that is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidInput(
            f"Node label {value!r} in {where} is not an integer.",
            hint="Label nodes with non-negative integers (0, 1, 2, ...); relabel named nodes first.",
        )
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidInput(f"Node label {value!r} in {where} is not an integer.",
                               hint="Label nodes with non-negative integers (0, 1, 2, ...).")
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            raise InvalidInput(
                f"Node label {value!r} in {where} is not an integer.",
                hint="Label nodes with non-negative integers (0, 1, 2, ...); relabel named nodes first.",
            )
        value = int(text)
    if value < 0:
        raise InvalidInput(f"Node label {value} in {where} is negative.",
                           hint="Label nodes with non-negative integers (0, 1, 2, ...).")
    return value


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
                               hint="Write each edge as [u, v] or [u, v, weight] with integer u and v.")
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
    return build_graph(spec.nodes, spec.edges, directed=spec.directed, weights=spec.weights)


def is_weighted(G: nx.Graph) -> bool:
    return bool(G.graph.get("weighted"))


def fmt_weight(w: float) -> str:
    """A weight as text: `3` for integral values, else the shortest float repr."""
    return str(int(w)) if float(w).is_integer() and abs(w) < 1e15 else repr(float(w))


def to_spec(G: nx.Graph) -> GraphSpec:
    """The JSON form of a graph (nodes sorted, edges in a canonical order)."""
    nodes = sorted(G.nodes())
    edges: list[list[Any]] = []
    weighted = is_weighted(G)
    for u, v in canonical_edges(G):
        if weighted:
            w = G[u][v]["weight"]
            edges.append([u, v, int(w) if float(w).is_integer() else w])
        else:
            edges.append([u, v])
    return GraphSpec(nodes=nodes, edges=edges, directed=G.is_directed())


def canonical_edges(G: nx.Graph) -> list[tuple[int, int]]:
    """Edges sorted; undirected edges written with the smaller label first."""
    if G.is_directed():
        return sorted(G.edges())
    return sorted((min(u, v), max(u, v)) for u, v in G.edges())


def same_graph(a: nx.Graph, b: nx.Graph) -> bool:
    """True when two graphs have the same nodes, edges, direction and weights."""
    if a.is_directed() != b.is_directed() or set(a.nodes()) != set(b.nodes()):
        return False
    if canonical_edges(a) != canonical_edges(b) or is_weighted(a) != is_weighted(b):
        return False
    if is_weighted(a):
        return all(math.isclose(a[u][v]["weight"], b[u][v]["weight"], rel_tol=1e-12) for u, v in a.edges())
    return True


def require_node(G: nx.Graph, node: int | None, role: str) -> int:
    """`node` when it is in `G`; `InvalidInput` naming the role and the valid labels otherwise."""
    if node is None:
        raise InvalidInput(f"This task needs a {role} node.", hint=f"Pass `{role}` as a node label of the graph.")
    if isinstance(node, bool) or not isinstance(node, int):
        raise InvalidInput(f"The {role} node {node!r} is not an integer label.", hint="Pass an integer node label.")
    if node not in G:
        labels = sorted(G.nodes())
        shown = f"{labels[0]}..{labels[-1]}" if len(labels) > 12 else ", ".join(map(str, labels))
        raise InvalidInput(f"The {role} node {node} is not in the graph (its nodes: {shown}).",
                           hint=f"Pick a {role} among the graph's nodes.")
    return node
