"""A graph drawn with the evidence for an answer highlighted: the path, the cycle, the matching, the cut...

`highlight` reads a solver's witness into what to emphasise: edges (a path's or cycle's consecutive pairs, a
matching, spanning-tree edges, the edges of the triangles found, the edges a cut crosses, a node's edges), nodes
(a clique, an independent set, a cover, what a source reaches) and colour classes (a colouring, components, BFS
levels, the two sides of a cut). `draw` renders it as a PNG, for graphs of at most `MAX_NODES` nodes and
`MAX_EDGES` edges (beyond that a drawing is no longer readable).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.graph.model import is_weighted, sorted_nodes

if TYPE_CHECKING:
    import networkx as nx

MAX_NODES = 60
MAX_EDGES = 300
EDGE = "#c8c8c8"
MARK = "#d62728"
NODE = "#dbe9f6"
GROUP_COLOURS = ["#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3",
                 "#bc80bd", "#ccebc5"]


@dataclass
class Highlight:
    """What a drawing emphasises."""

    edges: list[tuple[Any, Any]] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=list)
    groups: dict[Any, int] = field(default_factory=dict)
    what: str = ""  # e.g. "the path", "the cut (3 edges)"


def readable(G: nx.Graph) -> bool:
    """Whether `G` is small enough to draw legibly."""
    return G.number_of_nodes() <= MAX_NODES and G.number_of_edges() <= MAX_EDGES


def _pairs(walk: list[Any]) -> list[tuple[Any, Any]]:
    return list(itertools.pairwise(walk))


def _cut_edges(G: nx.Graph, side: set[Any]) -> list[tuple[Any, Any]]:
    """The edges with one end in `side` and the other outside (for a directed graph, leaving `side`)."""
    if G.is_directed():
        return [(u, v) for u, v in G.edges() if u in side and v not in side]
    return [(u, v) for u, v in G.edges() if (u in side) != (v in side)]


def highlight(task: str, G: nx.Graph, answer: Any, witness: dict[str, Any] | None,
              params: dict[str, Any] | None = None) -> Highlight:
    """What to emphasise for `task`'s `answer` and `witness` on `G` (`params`: source, target, node)."""
    w = witness or {}
    p = params or {}
    by_text = {str(u): u for u in G}
    ends = [p[k] for k in ("source", "target", "node") if p.get(k) is not None]
    if "cycle" in w:
        cyc = list(w["cycle"])
        if cyc and cyc[0] != cyc[-1]:
            cyc.append(cyc[0])
        return Highlight(edges=_pairs(cyc), nodes=cyc[:-1], what=f"the cycle ({len(cyc) - 1} edges)")
    if "path" in w or (task in ("shortest_path", "weighted_shortest_path") and isinstance(answer, list) and answer):
        path = list(w.get("path") or answer)
        return Highlight(edges=_pairs(path), nodes=path, what=f"the path ({len(path) - 1} edges)")
    if "matching" in w:
        pairs = [tuple(e) for e in w["matching"]]
        return Highlight(edges=pairs, nodes=[u for e in pairs for u in e], what=f"the matching ({len(pairs)} edges)")
    if "source_side_of_min_cut" in w:
        side = set(w["source_side_of_min_cut"])
        cut = _cut_edges(G, side)
        return Highlight(edges=cut, nodes=ends, groups={u: 0 if u in side else 1 for u in G},
                         what=f"the minimum cut ({len(cut)} edges)")
    if "side" in w:
        side = set(w["side"])
        cut = _cut_edges(G, side)
        return Highlight(edges=cut, groups={u: 0 if u in side else 1 for u in G}, what=f"the cut ({len(cut)} edges)")
    if "edges" in w:
        edges = [tuple(e[:2]) for e in w.get("edges", [])]
        return Highlight(edges=edges, what=f"the spanning tree ({len(edges)} edges)")
    if "triangles" in w:
        tris = [list(t) for t in w["triangles"]]
        edges = list(dict.fromkeys((t[i], t[j]) for t in tris for i, j in ((0, 1), (1, 2), (0, 2))))
        return Highlight(edges=edges, nodes=sorted_nodes({u for t in tris for u in t}),
                         what=f"the triangles ({len(tris)} shown)")
    if "clique" in w:
        members = list(w["clique"])
        edges = [(a, b) for i, a in enumerate(members) for b in members[i + 1:] if G.has_edge(a, b)]
        return Highlight(edges=edges, nodes=members, what=f"the clique ({len(members)} nodes)")
    for key, name in (("independent_set", "the independent set"), ("cover", "the vertex cover"),
                      ("reachable_from_source", "what the source reaches")):
        if key in w:
            return Highlight(nodes=list(w[key]), what=f"{name} ({len(w[key])} nodes)")
    if "neighbours" in w and p.get("node") is not None:
        u = p["node"]
        return Highlight(edges=[(u, v) for v in w["neighbours"]], nodes=[u], what=f"the edges of {u}")
    if "colouring" in w:
        groups = {by_text[k]: int(c) for k, c in w["colouring"].items() if k in by_text}
        return Highlight(groups=groups, what=f"a colouring ({len(set(groups.values()))} colours)")
    if "components" in w:
        groups = {u: i for i, comp in enumerate(w["components"]) for u in comp}
        return Highlight(groups=groups, what=f"the components ({len(w['components'])})")
    if "levels" in w:
        groups = {u: i for i, level in enumerate(w["levels"]) for u in level}
        return Highlight(nodes=ends, groups=groups, what=f"the BFS levels ({len(w['levels'])})")
    if task == "edge_existence" and answer is True and len(ends) == 2:
        return Highlight(edges=[(ends[0], ends[1])], nodes=ends, what="the edge")
    return Highlight(nodes=ends, what="")


def _layout(G: nx.Graph, task: str) -> dict[Any, Any]:
    import networkx as nx

    if task == "bipartite_matching" and nx.is_bipartite(G) and nx.is_connected(G) and G.number_of_nodes() > 1:
        top = [u for u, c in nx.bipartite.color(G).items() if c == 0]
        return nx.bipartite_layout(G, top)
    return nx.spring_layout(G, seed=7)


def draw(G: nx.Graph, hl: Highlight, title: str, out: Path, task: str = "") -> Path:
    """A PNG of `G` (about 700 x 600 pixels) with `hl` emphasised and `title` above it."""
    import networkx as nx

    from tools.figures import figure, save_png

    pos = _layout(G, task)
    fig = figure(7, 6)
    ax = fig.add_subplot(1, 1, 1)
    arrows = G.is_directed()
    marked = {(u, v) for u, v in hl.edges if G.has_edge(u, v)}
    if not arrows:
        marked |= {(v, u) for u, v in hl.edges if G.has_edge(v, u)}
    rest = [e for e in G.edges() if (e[0], e[1]) not in marked]
    shown = [(u, v) for u, v in hl.edges if G.has_edge(u, v) or (not arrows and G.has_edge(v, u))]
    heads = {"arrowsize": 16} if arrows else {}
    nx.draw_networkx_edges(G, pos, edgelist=rest, ax=ax, edge_color=EDGE, width=1.2, arrows=arrows,
                           node_size=420, **heads)
    nx.draw_networkx_edges(G, pos, edgelist=shown, ax=ax, edge_color=MARK, width=3.6, arrows=arrows,
                           node_size=420, **heads)
    colours = [GROUP_COLOURS[hl.groups[u] % len(GROUP_COLOURS)] if u in hl.groups else NODE for u in G]
    emphasised = set(hl.nodes)
    borders = [MARK if u in emphasised else "#555555" for u in G]
    widths = [2.6 if u in emphasised else 0.8 for u in G]
    nx.draw_networkx_nodes(G, pos, ax=ax, node_color=colours, edgecolors=borders, linewidths=widths, node_size=420)
    nx.draw_networkx_labels(G, pos, ax=ax, font_size=9 if G.number_of_nodes() <= 30 else 7)
    if is_weighted(G) and G.number_of_edges() <= 40:
        labels = {(u, v): f"{d.get('weight', 1):g}" for u, v, d in G.edges(data=True)}
        nx.draw_networkx_edge_labels(G, pos, edge_labels=labels, ax=ax, font_size=7, rotate=False)
    ax.set_title(title + (f"\nhighlighted: {hl.what}" if hl.what else ""), fontsize=10)
    ax.set_axis_off()
    return save_png(fig, out, palette=False)
