"""Graph serializations (GraphOmni's 7 and GraphQA's text encoders), each with the parser that reads it back.

GraphOmni's formats are printed the way its prompts show them: the Adjacency Set is Python's own print
of a dict of sets (`{0: {1, 2}, 1: {0}}`), the Adjacency List a dict of lists, the Edge Set and Edge
List Python sets/lists of tuples, the Adjacency Matrix numpy's print of a 0/1 matrix, GML and GraphML
as networkx writes them. GraphQA's encoders ("Talk like a graph", Fatemi et al. 2024) are sentences:
`adjacency`, `incident`, `friendship`, `coauthorship`, `social_network`, `expert`, with their wording;
the three social ones name nodes with first names (node k is `NAMES[k % 50]`, with `k // 50` appended
past 50), the expert one with letters (A..Z, AA, ...). Directed and weighted graphs, which GraphQA's
social encoders do not cover, get a directed phrasing ("James follows Robert") and "(weight w)".

Round trip: `parse(serialize(G, f), f, directed=G.is_directed())` is the same graph for every format.
Two additions keep that true where GraphOmni's prints lose information: isolated nodes are written
(`5: set()` in the Adjacency Set, an `Isolated nodes: [...]` line after an edge set/list), and an
Adjacency Matrix whose labels are not 0..n-1 starts with a `Node order: ...` line. The Python-literal
formats do not say whether the graph is directed, so their parser takes `directed`; GML, GraphML and
the GraphQA encoders say it themselves.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tools.errors import InvalidInput, LimitExceeded, unknown_name
from tools.graph.model import build_graph, canonical_edges, fmt_weight, has_named_nodes, is_weighted, sorted_nodes
from tools.lazy import LazyModule
from tools.settings import get_settings

nx = LazyModule("networkx")

NAMES = [
    "James", "Robert", "John", "Michael", "David", "Mary", "Patricia", "Jennifer", "Linda", "Elizabeth",
    "William", "Richard", "Joseph", "Thomas", "Christopher", "Barbara", "Susan", "Jessica", "Sarah", "Karen",
    "Charles", "Daniel", "Matthew", "Anthony", "Mark", "Lisa", "Nancy", "Betty", "Sandra", "Margaret",
    "Donald", "Steven", "Andrew", "Paul", "Joshua", "Ashley", "Kimberly", "Emily", "Donna", "Michelle",
    "Kenneth", "Kevin", "Brian", "George", "Timothy", "Carol", "Amanda", "Melissa", "Deborah", "Stephanie",
]
_NAME_INDEX = {n: i for i, n in enumerate(NAMES)}


def name_of(k: int) -> str:
    """The first name that stands for node `k` in the social encoders."""
    base = NAMES[k % len(NAMES)]
    return base if k < len(NAMES) else f"{base}{k // len(NAMES)}"


def letters_of(k: int) -> str:
    """The letter label of node `k` in the expert encoder: A..Z, then AA, AB, ... (bijective base 26)."""
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        out = chr(ord("A") + r) + out
    return out


def node_of_letters(label: str) -> int:
    """The node a letter label stands for (the inverse of `letters_of`)."""
    text = label.strip()
    if not re.fullmatch(r"[A-Z]+", text):
        raise InvalidInput(f"{label!r} is not a letter label of the expert encoder.",
                           hint="Labels are A, B, ..., Z, AA, AB, ...")
    k = 0
    for ch in text:
        k = k * 26 + (ord(ch) - ord("A") + 1)
    return k - 1


def label_of(k: int | str, naming: str | None) -> str:
    """How node `k` is written under a naming: None (its number), "names" or "letters"; a named node
    (a str label) is written as itself under every naming."""
    if isinstance(k, str):
        return k
    if naming == "names":
        return name_of(k)
    if naming == "letters":
        return letters_of(k)
    return str(k)


def node_of_label(tok: str, naming: str | None, named: frozenset[str] = frozenset()) -> int | str:
    """The node a label stands for under a naming (the inverse of `label_of`); a token in `named` (the
    graph's str labels) stands for itself."""
    if tok in named:
        return tok
    if naming == "names":
        return node_of_name(tok)
    if naming == "letters":
        return node_of_letters(tok)
    return int(tok)


def node_of_name(name: str) -> int:
    """The node a first name stands for (the inverse of `name_of`)."""
    m = re.fullmatch(r"([A-Z][a-z]+)(\d*)", name.strip())
    if not m or m.group(1) not in _NAME_INDEX:
        raise InvalidInput(f"{name!r} is not one of the node names of the social encoders.",
                           hint=f"Names are {', '.join(NAMES[:5])}, ... (node k is the k-th name).")
    suffix = int(m.group(2)) if m.group(2) else 0
    if m.group(2) and suffix == 0:
        raise InvalidInput(f"{name!r} is not a node name (a suffix starts at 1).", hint="Use e.g. James or James1.")
    return _NAME_INDEX[m.group(1)] + len(NAMES) * suffix


# ----------------------------------------------------------------------------------------------- writers


def _w(G: nx.Graph, u, v) -> str:
    return fmt_weight(G[u][v]["weight"])


def _isolated(G: nx.Graph) -> list:
    return sorted_nodes(n for n in G.nodes() if G.degree(n) == 0)


def _lit(u) -> str:
    """A node as a Python literal: 3, or 'a0' for a named node."""
    return repr(u)


def _adjacency_set(G: nx.Graph) -> str:
    if is_weighted(G):
        parts = [f"{_lit(u)}: {{{', '.join(f'{_lit(v)}: {_w(G, u, v)}' for v in sorted_nodes(G.adj[u]))}}}"
                 for u in sorted_nodes(G)]
        return "{" + ", ".join(parts) + "}"
    if not has_named_nodes(G):
        return repr({u: set(G.adj[u]) for u in sorted(G)})
    parts = [f"{_lit(u)}: " + ("{" + ", ".join(map(_lit, sorted_nodes(G.adj[u]))) + "}" if G.adj[u] else "set()")
             for u in sorted_nodes(G)]
    return "{" + ", ".join(parts) + "}"


def _adjacency_list(G: nx.Graph) -> str:
    if is_weighted(G):
        parts = [f"{_lit(u)}: [{', '.join(f'({_lit(v)}, {_w(G, u, v)})' for v in sorted_nodes(G.adj[u]))}]"
                 for u in sorted_nodes(G)]
        return "{" + ", ".join(parts) + "}"
    return repr({u: sorted_nodes(G.adj[u]) for u in sorted_nodes(G)})


def _edge_tuples(G: nx.Graph) -> list[str]:
    if is_weighted(G):
        return [f"({_lit(u)}, {_lit(v)}, {_w(G, u, v)})" for u, v in canonical_edges(G)]
    return [f"({_lit(u)}, {_lit(v)})" for u, v in canonical_edges(G)]


def _with_isolated(text: str, G: nx.Graph) -> str:
    iso = _isolated(G)
    return f"{text}\nIsolated nodes: {iso}" if iso else text


def _edge_set(G: nx.Graph) -> str:
    items = _edge_tuples(G)
    return _with_isolated("{" + ", ".join(items) + "}" if items else "set()", G)


def _edge_list(G: nx.Graph) -> str:
    return _with_isolated("[" + ", ".join(_edge_tuples(G)) + "]", G)


def _adjacency_matrix(G: nx.Graph) -> str:
    order = sorted_nodes(G)
    index = {u: i for i, u in enumerate(order)}
    n = len(order)
    cells = [["0"] * n for _ in range(n)]
    all_ones = is_weighted(G) and all(d["weight"] == 1 for _, _, d in G.edges(data=True))
    for u, v in G.edges():
        # A weighted graph whose weights are all 1 writes "1.0", so that it reads back as weighted.
        val = ("1.0" if all_ones else _w(G, u, v)) if is_weighted(G) else "1"
        cells[index[u]][index[v]] = val
        if not G.is_directed():
            cells[index[v]][index[u]] = val
    width = max(len(c) for row in cells for c in row)
    rows = [" ".join(c.rjust(width) for c in row) for row in cells]
    body = "[" + "\n ".join(f"[{r}]" for r in rows) + "]"
    if order != list(range(n)):
        body = f"Node order: {', '.join(map(str, order))}\n{body}"
    return body


def _plain(G: nx.Graph) -> nx.Graph:
    """A copy without graph attributes (networkx writes those into GML and GraphML)."""
    H = nx.DiGraph() if G.is_directed() else nx.Graph()
    H.add_nodes_from(sorted_nodes(G))
    if is_weighted(G):
        H.add_weighted_edges_from((u, v, float(G[u][v]["weight"])) for u, v in canonical_edges(G))
    else:
        H.add_edges_from(canonical_edges(G))
    return H


def _gml(G: nx.Graph) -> str:
    return "\n".join(nx.generate_gml(_plain(G)))


def _graphml(G: nx.Graph) -> str:
    return "<?xml version='1.0' encoding='utf-8'?>\n" + "\n".join(nx.generate_graphml(_plain(G)))


def _among(nodes: list[str]) -> str:
    """GraphQA's node list: '0, 1, and 2'."""
    return nodes[0] if len(nodes) == 1 else ", ".join(nodes[:-1]) + ", and " + nodes[-1]


def _graphqa_adjacency(G: nx.Graph) -> str:
    kind = "a directed" if G.is_directed() else "an undirected"
    if G.is_directed():
        meaning = "(i,j) means that there is an edge from node i to node j"
    else:
        meaning = "(i,j) means that node i and node j are connected with an undirected edge"
    if is_weighted(G):
        meaning = meaning.replace("(i,j)", "(i,j,w)") + " of weight w"
    head = f"In {kind} graph, {meaning}. G describes a graph among nodes {_among([str(u) for u in sorted_nodes(G)])}."
    if G.number_of_edges() == 0:
        return head
    if is_weighted(G):
        tuples = [f"({u}, {v}, {_w(G, u, v)})" for u, v in canonical_edges(G)]
    else:
        tuples = [f"({u}, {v})" for u, v in canonical_edges(G)]
    return f"{head}\nThe edges in G are: {' '.join(tuples)}."


def _graphqa_incident(G: nx.Graph) -> str:
    kind = "a directed graph" if G.is_directed() else "a graph"
    lines = [f"G describes {kind} among nodes {_among([str(u) for u in sorted_nodes(G)])}.", "In this graph:"]
    verb = "has directed edges to" if G.is_directed() else "is connected to"
    for u in sorted_nodes(G):
        nbrs = sorted_nodes(G.adj[u])
        if not nbrs:
            continue
        items = [f"{v} (weight {_w(G, u, v)})" if is_weighted(G) else str(v) for v in nbrs]
        lines.append(f"Node {u} {verb} {'nodes' if len(items) > 1 else 'node'} {', '.join(items)}.")
    return "\n".join(lines)


@dataclass(frozen=True)
class _Social:
    noun: str  # friendship graph
    intro: str  # "We have the following edges in G:"
    undirected: str  # "{a} and {b} are friends"
    directed: str  # "{a} considers {b} a friend"


_SOCIAL = {
    "friendship": _Social("friendship graph", "We have the following edges in G:",
                          "{a} and {b} are friends", "{a} considers {b} a friend"),
    "coauthorship": _Social("coauthorship graph", "In this coauthorship graph:",
                            "{a} and {b} wrote a paper together", "{a} cites {b}"),
    "social_network": _Social("social network graph", "We have the following edges in G:",
                              "{a} and {b} are connected", "{a} follows {b}"),
}


def _social_writer(key: str) -> Callable[[nx.Graph], str]:
    s = _SOCIAL[key]

    def write(G: nx.Graph) -> str:
        _no_collision(G, "names", key)
        kind = f"a directed {s.noun}" if G.is_directed() else f"a {s.noun}"
        lines = [f"G describes {kind} among nodes {_among([label_of(u, 'names') for u in sorted_nodes(G)])}.",
                 s.intro]
        tmpl = s.directed if G.is_directed() else s.undirected
        for u, v in canonical_edges(G):
            line = tmpl.format(a=label_of(u, "names"), b=label_of(v, "names"))
            if is_weighted(G):
                line += f" (weight {_w(G, u, v)})"
            lines.append(line + ".")
        return "\n".join(lines)

    return write


def _no_collision(G: nx.Graph, naming: str, fmt: str) -> None:
    """Refuse a named node whose label this encoder would read back as one of its own numbered names."""
    for u in G:
        if isinstance(u, str):
            try:
                node_of_label(u, naming)
            except InvalidInput:
                continue
            raise InvalidInput(f"Node {u!r} looks like a node name the {fmt} encoder gives to numbered nodes.",
                               hint="Rename the node (e.g. add a prefix) or use another format.")


def _expert(G: nx.Graph) -> str:
    _no_collision(G, "letters", "expert")
    kind = "directed" if G.is_directed() else "undirected"
    among = _among([label_of(u, "letters") for u in sorted_nodes(G)])
    lines = [f"You are a graph analyst and you have been given a graph G among nodes {among}.",
             f"G has the following {kind} edges:"]
    for u, v in canonical_edges(G):
        lines.append(f"{label_of(u, 'letters')} -> {label_of(v, 'letters')}"
                     + (f" (weight {_w(G, u, v)})" if is_weighted(G) else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- parsers


# CPython 3.11's parser can fail with "AST constructor recursion depth mismatch" when threads parse at once
_PARSE_LOCK = threading.Lock()


def _literal(text: str, what: str):
    try:
        with _PARSE_LOCK:
            return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise InvalidInput(f"The {what} text is not a valid Python literal ({type(exc).__name__}).",
                           hint=f"Write it as serialize(..., '{what}') does, e.g. {_EXAMPLES[what]}.") from None


def _split_isolated(text: str) -> tuple[str, list[int]]:
    m = re.search(r"\n\s*Isolated nodes:\s*(\[[^\]]*\])\s*$", text)
    if not m:
        return text, []
    nodes = _literal(m.group(1), "edge_list")
    return text[: m.start()], list(nodes)


def _from_mapping(obj, what: str, directed: bool) -> nx.Graph:
    if obj == set():
        obj = {}
    if not isinstance(obj, dict):
        raise InvalidInput(f"The {what} text is not a dict of neighbours.", hint=f"Example: {_EXAMPLES[what]}.")
    nodes = list(obj.keys())
    edges: list[list] = []
    seen: set[tuple] = set()
    for u, nbrs in obj.items():
        if isinstance(nbrs, dict):
            pairs = [(v, w) for v, w in nbrs.items()]
        elif isinstance(nbrs, set | list | tuple):
            pairs = [(x[0], x[1]) if isinstance(x, tuple) else (x, None) for x in nbrs]
        else:
            raise InvalidInput(f"The neighbours of {u!r} in the {what} text are {nbrs!r}, not a collection.",
                               hint=f"Example: {_EXAMPLES[what]}.")
        for v, w in pairs:
            key = (u, v) if directed else tuple(sorted((u, v), key=repr))
            if key in seen:
                continue
            seen.add(key)
            edges.append([u, v] if w is None else [u, v, w])
            if v not in obj:
                nodes.append(v)
    return build_graph(list(dict.fromkeys(nodes)), edges, directed=directed)


def _parse_adjacency_set(text: str, directed: bool) -> nx.Graph:
    return _from_mapping(_literal(text, "adjacency_set"), "adjacency_set", directed)


def _parse_adjacency_list(text: str, directed: bool) -> nx.Graph:
    return _from_mapping(_literal(text, "adjacency_list"), "adjacency_list", directed)


def _parse_edges(text: str, directed: bool, what: str) -> nx.Graph:
    body, iso = _split_isolated(text)
    obj = _literal(body, what)
    if not isinstance(obj, set | list | tuple):
        raise InvalidInput(f"The {what} text is not a collection of edge tuples.", hint=f"Example: {_EXAMPLES[what]}.")
    edges = [list(e) if isinstance(e, tuple | list) else e for e in obj]
    if isinstance(obj, set):
        edges.sort(key=repr)
    nodes: list = []
    for e in edges:
        if isinstance(e, list):
            nodes.extend(e[:2])
    return build_graph(list(dict.fromkeys([*nodes, *iso])), edges, directed=directed)


def _parse_adjacency_matrix(text: str, directed: bool) -> nx.Graph:
    text = text.strip()
    order = None
    m = re.match(r"Node order:\s*([^\n]*)\n", text)
    if m:
        order = [tok.strip() for tok in m.group(1).split(",") if tok.strip()]
        text = text[m.end():]
    rows = re.findall(r"\[([^\[\]]*)\]", text)
    if not rows:
        raise InvalidInput("The adjacency_matrix text has no rows.", hint=f"Example: {_EXAMPLES['adjacency_matrix']}.")
    n = len(rows)
    check = get_settings().graph
    if n > check.max_nodes:
        raise LimitExceeded("The number of nodes", n, check.max_nodes, "RESEARCH_MCP_GRAPH__MAX_NODES")
    matrix = []
    weighted = False
    for i, r in enumerate(rows):
        cells = r.replace(",", " ").split()
        weighted = weighted or any(c not in ("0", "1") for c in cells)
        if len(cells) != n:
            raise InvalidInput(f"Row {i} of the adjacency matrix has {len(cells)} entries, not {n}.",
                               hint="An adjacency matrix is square: one row and one column per node.")
        try:
            matrix.append([float(c) for c in cells])
        except ValueError:
            raise InvalidInput(f"Row {i} of the adjacency matrix has a non-numeric entry.",
                               hint="Entries are 0 (no edge), 1 (edge) or a positive weight.") from None
    labels = order if order is not None else list(range(n))
    if len(labels) != n:
        raise InvalidInput(f"`Node order` names {len(labels)} nodes but the matrix has {n} rows.",
                           hint="List one label per row.")
    edges = []
    for i in range(n):
        for j in range(n):
            x = matrix[i][j]
            if x == 0 or (not directed and j < i):
                continue
            if not directed and matrix[j][i] != x:
                raise InvalidInput(f"The matrix is not symmetric at ({i}, {j}) but the graph is undirected.",
                                   hint="Pass directed=true for a directed graph, or fix the matrix.")
            edges.append([labels[i], labels[j], x] if weighted else [labels[i], labels[j]])
    return build_graph(labels, edges, directed=directed)


def _parse_gml(text: str, directed: bool) -> nx.Graph:
    try:
        H = nx.parse_gml(text, label="label")
    except Exception as exc:  # networkx raises NetworkXError, ValueError, KeyError... on malformed GML
        raise InvalidInput(f"The GML text could not be parsed: {type(exc).__name__}: {exc}",
                           hint="Give GML as networkx writes it: graph [ node [ id 0 label \"0\" ] edge [ ... ] ].") \
            from None
    return _from_nx(H, "gml")


def _parse_graphml(text: str, directed: bool) -> nx.Graph:
    try:
        H = nx.parse_graphml(text.strip())
    except Exception as exc:  # ElementTree.ParseError, NetworkXError, ValueError, ...
        raise InvalidInput(f"The GraphML text could not be parsed: {type(exc).__name__}: {exc}",
                           hint="Give GraphML as networkx writes it (<graphml><graph edgedefault=...>...).") from None
    return _from_nx(H, "graphml")


def _from_nx(H: nx.Graph, what: str) -> nx.Graph:
    if H.is_multigraph():
        raise InvalidInput(f"The {what} graph has parallel edges.", hint="Give a simple graph (one edge per pair).")
    weighted = any("weight" in d for _, _, d in H.edges(data=True))
    edges = [[u, v, d.get("weight")] if weighted else [u, v] for u, v, d in H.edges(data=True)]
    return build_graph(list(H.nodes()), edges, directed=H.is_directed())


def _header_nodes(text: str, pattern: str, what: str, to_node: Callable[[str], int]) -> tuple[list[int], re.Match]:
    m = re.search(pattern, text)
    if not m:
        raise InvalidInput(f"The {what} text lacks its header naming the nodes.",
                           hint=f"It starts like: {_EXAMPLES[what]}")
    nodes = [to_node(re.sub(r"^and\s+", "", tok.strip())) for tok in m.group("nodes").split(",") if tok.strip()]
    return nodes, m


def _parse_graphqa_adjacency(text: str, directed: bool) -> nx.Graph:
    header = r"In (?P<kind>a directed|an undirected) graph,.*?among nodes (?P<nodes>[^\n]*?)\.[ \t]*(?:\n|$)"
    nodes, m = _header_nodes(text, header, "adjacency", lambda t: t.strip())
    is_directed = m.group("kind") == "a directed"
    em = re.search(r"The edges in G are:(.*)", text[m.end():], re.S)  # absent when there is no edge
    found = re.findall(r"\(\s*(\w+)\s*,\s*(\w+)\s*(?:,\s*([0-9.eE+-]+)\s*)?\)", em.group(1)) if em else []
    edges = [[a, b] if not c else [a, b, float(c)] for a, b, c in found]
    return build_graph(nodes, edges, directed=is_directed)


def _parse_incident(text: str, directed: bool) -> nx.Graph:
    header = r"G describes (?P<kind>a directed graph|a graph) among nodes (?P<nodes>[^\n]*?)\.\s*\n"
    nodes, m = _header_nodes(text, header, "incident", lambda t: t.strip())
    is_directed = m.group("kind") == "a directed graph"
    edges: list[list] = []
    seen: set[tuple[str, str]] = set()
    for u, rest in re.findall(r"Node (\w+) (?:is connected to|has directed edges to) nodes? ([^\n]*)\.", text):
        for item in rest.split(","):
            im = re.fullmatch(r"\s*(\w+)(?:\s*\(weight ([0-9.eE+-]+)\))?\s*", item)
            if not im:
                raise InvalidInput(f"Cannot read neighbour {item.strip()!r} of node {u} in the incident text.",
                                   hint="Neighbours are listed as '1, 2' or '1 (weight 2), 2 (weight 5)'.")
            v, w = im.group(1), im.group(2)
            key = (u, v) if is_directed else tuple(sorted((u, v)))
            if key in seen:
                continue
            seen.add(key)
            edges.append([u, v] if w is None else [u, v, float(w)])
    return build_graph(nodes, edges, directed=is_directed)


def _reader(naming: str) -> Callable[[str], int | str]:
    """Token -> node for the encoders that name nodes: an encoder name is its numbered node, any other
    label (a named node of the graph, such as a0) stands for itself."""

    def read(tok: str) -> int | str:
        try:
            return node_of_label(tok, naming)
        except InvalidInput:
            return tok

    return read


def _social_parser(key: str) -> Callable[[str, bool], nx.Graph]:
    s = _SOCIAL[key]
    name = r"(\w+)"
    read = _reader("names")

    def parse(text: str, directed: bool) -> nx.Graph:
        nodes, m = _header_nodes(
            text, rf"G describes (?P<kind>a directed |a ){re.escape(s.noun)} among nodes (?P<nodes>[^\n]*?)\.\s*\n",
            key, read)
        is_directed = m.group("kind").strip() == "a directed"
        tmpl = s.directed if is_directed else s.undirected
        pat = re.escape(tmpl).replace(r"\{a\}", name).replace(r"\{b\}", name) + r"(?: \(weight ([0-9.eE+-]+)\))?\."
        edges = [[read(a), read(b)] if not w else [read(a), read(b), float(w)]
                 for a, b, w in re.findall(pat, text[m.end():])]
        return build_graph(nodes, edges, directed=is_directed)

    return parse


def _parse_expert(text: str, directed: bool) -> nx.Graph:
    read = _reader("letters")
    nodes, _ = _header_nodes(text, r"given a graph G among nodes (?P<nodes>[^\n]*?)\.\s*\n", "expert", read)
    km = re.search(r"G has the following (directed|undirected) edges:", text)
    if not km:
        raise InvalidInput("The expert text lacks 'G has the following ... edges:'.", hint=_EXAMPLES["expert"])
    edges = [[read(a), read(b)] if not w else [read(a), read(b), float(w)]
             for a, b, w in re.findall(r"^(\w+) -> (\w+)(?: \(weight ([0-9.eE+-]+)\))?\s*$", text[km.end():], re.M)]
    return build_graph(nodes, edges, directed=km.group(1) == "directed")


# ----------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Format:
    key: str
    title: str
    source: str  # "GraphOmni" or "GraphQA"
    write: Callable[[nx.Graph], str]
    read: Callable[[str, bool], nx.Graph]
    naming: str | None = None  # None: numbers; "names": first names; "letters": A, B, ...

    def node(self, k: int) -> str:
        """How a question refers to node `k` in this format."""
        return f"node {k}" if self.naming is None else label_of(k, self.naming)


FORMATS: dict[str, Format] = {
    f.key: f
    for f in [
        Format("adjacency_set", "Adjacency Set", "GraphOmni", _adjacency_set, _parse_adjacency_set),
        Format("adjacency_list", "Adjacency List", "GraphOmni", _adjacency_list, _parse_adjacency_list),
        Format("adjacency_matrix", "Adjacency Matrix", "GraphOmni", _adjacency_matrix, _parse_adjacency_matrix),
        Format("edge_set", "Edge Set", "GraphOmni", _edge_set, lambda t, d: _parse_edges(t, d, "edge_set")),
        Format("edge_list", "Edge List", "GraphOmni", _edge_list, lambda t, d: _parse_edges(t, d, "edge_list")),
        Format("gml", "Graph Modelling Language", "GraphOmni", _gml, _parse_gml),
        Format("graphml", "GraphML", "GraphOmni", _graphml, _parse_graphml),
        Format("adjacency", "adjacency (GraphQA)", "GraphQA", _graphqa_adjacency, _parse_graphqa_adjacency),
        Format("incident", "incident (GraphQA)", "GraphQA", _graphqa_incident, _parse_incident),
        Format("friendship", "friendship (GraphQA)", "GraphQA", _social_writer("friendship"),
               _social_parser("friendship"), naming="names"),
        Format("coauthorship", "co-authorship (GraphQA)", "GraphQA", _social_writer("coauthorship"),
               _social_parser("coauthorship"), naming="names"),
        Format("social_network", "social network (GraphQA)", "GraphQA", _social_writer("social_network"),
               _social_parser("social_network"), naming="names"),
        Format("expert", "expert (GraphQA)", "GraphQA", _expert, _parse_expert, naming="letters"),
    ]
}

GRAPHOMNI_FORMATS = [k for k, f in FORMATS.items() if f.source == "GraphOmni"]

_EXAMPLES = {
    "adjacency_set": "{0: {1, 2}, 1: {0}, 2: {0}}",
    "adjacency_list": "{0: [1, 2], 1: [0], 2: [0]}",
    "adjacency_matrix": "[[0 1]\n [1 0]]",
    "edge_set": "{(0, 1), (1, 2)}",
    "edge_list": "[(0, 1), (1, 2)]",
    "adjacency": "In an undirected graph, ... G describes a graph among nodes 0, 1, and 2.\n"
    "The edges in G are: (0, 1) (1, 2).",
    "incident": "G describes a graph among nodes 0, 1, and 2.\nIn this graph:\nNode 0 is connected to node 1.",
    "friendship": "G describes a friendship graph among nodes James, and Robert.\n"
    "We have the following edges in G:\n...",
    "coauthorship": "G describes a coauthorship graph among nodes James, and Robert.\n"
    "In this coauthorship graph:\n...",
    "social_network": "G describes a social network graph among nodes James, and Robert.\n"
    "We have the following edges in G:\n...",
    "expert": "You are a graph analyst and you have been given a graph G among nodes A, and B.\n"
    "G has the following undirected edges:\nA -> B",
}


def format_key(name: str) -> str:
    """The registry key of a format name; accepts titles and spellings like 'Adjacency Set' or 'edge-list'."""
    key = re.sub(r"[\s\-]+", "_", name.strip().lower())
    aliases = {"graph_modelling_language": "gml", "graph_modeling_language": "gml", "social": "social_network",
               "co_authorship": "coauthorship", "adjacency_sets": "adjacency_set"}
    key = aliases.get(key, key)
    if key not in FORMATS:
        raise unknown_name("serialization format", name, FORMATS)
    return key


def serialize(G: nx.Graph, fmt: str) -> str:
    """The text of `G` in format `fmt`."""
    return FORMATS[format_key(fmt)].write(G)


def parse(text: str, fmt: str, *, directed: bool = False) -> nx.Graph:
    """The graph written in `text` in format `fmt` (validated like any graph input)."""
    key = format_key(fmt)
    limit = get_settings().graph.max_text_chars
    if len(text) > limit:
        raise LimitExceeded("The graph text length (characters)", len(text), limit,
                            "RESEARCH_MCP_GRAPH__MAX_TEXT_CHARS")
    if not text.strip():
        raise InvalidInput(f"The {key} text is empty.", hint="Pass the serialized graph, or the graph as JSON.")
    return FORMATS[key].read(text, directed)
