"""Suite tasks of the graph, DTI and NID families, with answers from networkx, RDKit and regular expressions;
`all_tasks`, the whole suite (the EO tasks of `suite` first)."""

from __future__ import annotations

import functools
import gzip
import json
import re
from collections.abc import Callable
from typing import Any

from evals.agents import reference as ref
from evals.agents.metrics import Expected
from evals.agents.suite import Step, Task, eo_tasks

GRAPHOMNI = ref.SAMPLES / "graph" / "graphomni_ltm_adjset_queries.jsonl.gz"


@functools.cache
def graphomni() -> dict[str, dict[str, Any]]:
    with gzip.open(GRAPHOMNI, "rt", encoding="utf-8") as fh:
        return {r["id"]: r for r in map(json.loads, fh)}


def _graph(record_id: str) -> tuple[dict[str, Any], Any]:
    """The record's graph (its graph_info edges, isolated nodes kept) as tool JSON and as networkx."""
    import networkx as nx

    r = graphomni()[record_id]
    n = int(r["num_nodes"])
    edges = [list(e) for e in (r["edges"] if isinstance(r["edges"], list) else json.loads(r["edges"]))]
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(map(tuple, edges))
    return {"nodes": list(range(n)), "edges": edges}, g


def _nodes(record_id: str) -> tuple[int, int]:
    m = re.search(r"node (\d+) (?:to|and) node (\d+)", graphomni()[record_id]["query"])
    assert m, record_id
    return int(m.group(1)), int(m.group(2))


def _far_pair(difficulty: str, hops: int) -> str:
    """The first shortest-path record of `difficulty` whose two nodes are at least `hops` apart."""
    import networkx as nx

    for rid, r in graphomni().items():
        if r["task"] == "shortest_path" and r["difficulty"] == difficulty:
            _, g = _graph(rid)
            s, t = _nodes(rid)
            if nx.has_path(g, s, t) and nx.shortest_path_length(g, s, t) >= hops:
                return rid
    raise LookupError(f"no {difficulty} shortest-path record with {hops} hops")


def _diameter(g: Any) -> int:
    import networkx as nx

    return max(max(d.values()) for _, d in nx.all_pairs_shortest_path_length(g))


def graph_tasks() -> list[Task]:
    import networkx as nx

    tasks: list[Task] = []
    for rid, label in ((_far_pair("easy", 2), "easy"), (_far_pair("medium", 3), "medium")):
        spec, g = _graph(rid)
        s, t = _nodes(rid)
        tasks.append(Task(
            id=f"graph-shortest-path-{label}", family="graph",
            goal=f"In the undirected graph with nodes {spec['nodes']} and edges {spec['edges']}, how many edges "
                 f"does a shortest path from node {s} to node {t} have?",
            steps=[Step("graph_solve", {"task": "shortest_path", "graph": spec, "source": s, "target": t},
                        "Solve the shortest_path task on that graph with graph_solve.")],
            truth=lambda g=g, s=s, t=t: Expected("number", nx.shortest_path_length(g, s, t), abs_tol=0),
            read=lambda r: str(len(r[-1]["answer"]) - 1),
        ))
    for rid, label in (("connectivity-easy-LTM-Adjacency Set-0", "easy"),
                       ("connectivity-medium-LTM-Adjacency Set-0", "medium")):
        spec, g = _graph(rid)
        s, t = _nodes(rid)
        tasks.append(Task(
            id=f"graph-connectivity-{label}", family="graph",
            goal=f"In the undirected graph with nodes {spec['nodes']} and edges {spec['edges']}, is there a path "
                 f"between node {s} and node {t}?",
            options={"A": "yes", "B": "no"},
            steps=[Step("graph_solve", {"task": "connectivity", "graph": spec, "source": s, "target": t},
                        "Solve the connectivity task on that graph with graph_solve.")],
            truth=lambda g=g, s=s, t=t: Expected("choice", "A" if nx.has_path(g, s, t) else "B",
                                                 options={"A": "yes", "B": "no"}),
            read=lambda r: "A" if r[-1]["answer"] else "B",
        ))
    spec, g = _graph("triangle-easy-LTM-Adjacency Set-0")
    tasks.append(Task(
        id="graph-triangles", family="graph",
        goal=f"How many triangles does the undirected graph with nodes {spec['nodes']} and edges {spec['edges']} "
             "contain?",
        steps=[Step("graph_solve", {"task": "triangle", "graph": spec},
                    "Solve the triangle task on that graph with graph_solve.")],
        truth=lambda g=g: Expected("number", sum(nx.triangles(g).values()) // 3, abs_tol=0),
        read=lambda r: str(r[-1]["answer"]),
    ))
    spec, g = _graph("diameter-easy-LTM-Adjacency Set-0")
    tasks.append(Task(
        id="graph-diameter", family="graph",
        goal=f"What is the diameter of the undirected graph with nodes {spec['nodes']} and edges {spec['edges']}?",
        steps=[Step("graph_solve", {"task": "diameter", "graph": spec},
                    "Solve the diameter task on that graph with graph_solve.")],
        truth=lambda g=g: Expected("number", _diameter(g), abs_tol=0),
        read=lambda r: str(r[-1]["answer"]),
    ))
    spec, g = _graph("bfsorder-easy-LTM-Adjacency Set-0")
    tasks.append(Task(
        id="graph-components", family="graph",
        goal=f"How many connected components does the undirected graph with nodes {spec['nodes']} and edges "
             f"{spec['edges']} have (isolated nodes count)?",
        steps=[Step("graph_solve", {"task": "component_count", "graph": spec},
                    "Solve the component_count task on that graph with graph_solve.")],
        truth=lambda g=g: Expected("number", nx.number_connected_components(g), abs_tol=0),
        read=lambda r: str(r[-1]["answer"]),
    ))
    return tasks


# DTI ---------------------------------------------------------------------------------------------------------

LIBRARY = "sample://dti/screening_library.smi"


def _rdkit_canonical(smiles: str) -> str:
    from rdkit import Chem

    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


def _largest_fragment_heavy_atoms(smiles: str) -> int:
    from rdkit import Chem
    from rdkit.Chem.MolStandardize import rdMolStandardize

    mol = rdMolStandardize.LargestFragmentChooser().choose(Chem.MolFromSmiles(smiles))
    return mol.GetNumHeavyAtoms()


def _heavy_atoms(smiles: str) -> int:
    from rdkit import Chem

    return Chem.MolFromSmiles(smiles).GetNumHeavyAtoms()


def _first_invalid(smiles: list[str]) -> str:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    return "ABCD"[next(i for i, s in enumerate(smiles) if Chem.MolFromSmiles(s) is None)]


def dti_tasks() -> list[Task]:
    aspirin = "CC(=O)Oc1ccccc1C(O)=O"
    candidates = ["c1ccccc1", "C1CC", "CCO", "CC(=O)O"]
    salt = "CC(=O)[O-].[Na+]"
    lib_lines = [ln for ln in (ref.SAMPLES / "dti" / "screening_library.smi").read_text().splitlines()
                 if ln.strip() and not ln.startswith("#")]
    return [
        Task(id="dti-canonical-aspirin", family="dti",
             goal=f"What canonical SMILES does the toolkit give for aspirin written as {aspirin}?",
             steps=[Step("dti_validate", {"smiles": [aspirin]}, "Validate that SMILES with dti_validate.")],
             truth=lambda: Expected("text", _rdkit_canonical(aspirin)),
             read=lambda r: r[-1]["molecules"][0]["canonical"]),
        Task(id="dti-invalid-smiles", family="dti",
             goal="Which of these SMILES cannot be parsed as a molecule?",
             options=dict(zip("ABCD", candidates, strict=True)),
             steps=[Step("dti_validate", {"smiles": candidates}, "Validate the four SMILES with dti_validate.")],
             truth=lambda: Expected("choice", _first_invalid(candidates), options=dict(zip("ABCD", candidates,
                                                                                             strict=True))),
             read=lambda r: "ABCD"[next(i for i, m in enumerate(r[-1]["molecules"]) if not m["ok"])]),
        Task(id="dti-salt-stripped", family="dti",
             goal=f"After salts are stripped from sodium acetate ({salt}), how many heavy atoms does the molecule "
                  "that is kept have?",
             steps=[Step("dti_validate", {"smiles": [salt]}, "Validate that SMILES with dti_validate.")],
             truth=lambda: Expected("number", _largest_fragment_heavy_atoms(salt), abs_tol=0),
             read=lambda r: str(_heavy_atoms(r[-1]["molecules"][0]["canonical"]))),
        Task(id="dti-library-size", family="dti",
             goal=f"How many molecules does the bundled screening library ({LIBRARY}) hold?",
             steps=[Step("dti_validate", {"path": LIBRARY}, "Validate the library file with dti_validate.")],
             truth=lambda: Expected("number", len(lib_lines), abs_tol=0),
             read=lambda r: str(r[-1]["molecules_checked"])),
    ]


# NID ---------------------------------------------------------------------------------------------------------

MD5_FILE = "sample://nid/jsonlite_MD5.txt"
SVUID_FILE = "sample://nid/commons_lang_serialversionuid.jsonl"
_HEX32 = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{32}(?![0-9a-fA-F])")
_PATTERNS = {"md5": _HEX32, "git_commit": re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{40}(?![0-9a-fA-F])"),
             "eth_address": re.compile(r"0x[0-9a-fA-F]{40}"),
             "serial_version_uid": re.compile(r"serialVersionUID\s*=\s*-?\d+L")}
TYPE_OPTIONS = {"A": "md5", "B": "serial_version_uid", "C": "git_commit", "D": "eth_address"}


def _text(uri: str) -> str:
    return (ref.SAMPLES / uri.removeprefix("sample://")).read_text(encoding="utf-8")


def _dominant_type(uri: str) -> str:
    counts = {t: len(p.findall(_text(uri))) for t, p in _PATTERNS.items()}
    best = max(counts, key=counts.get)
    return next(k for k, v in TYPE_OPTIONS.items() if v == best)


def _type_letter(by_type: dict[str, int]) -> str:
    best = max(by_type, key=by_type.get)
    for k, v in TYPE_OPTIONS.items():
        if v in best or best in v:
            return k
    return "?"


def nid_tasks() -> list[Task]:
    first_md5 = _HEX32.search(_text(MD5_FILE)).group(0)
    return [
        Task(id="nid-md5-distinct", family="nid",
             goal=f"How many distinct MD5 digests does {MD5_FILE} contain?",
             steps=[Step("nid_detect", {"path": MD5_FILE}, "Detect the natural identifiers in it with nid_detect.")],
             truth=lambda: Expected("number", len(set(_HEX32.findall(_text(MD5_FILE)))), abs_tol=0),
             read=lambda r: str(r[-1]["by_type"].get("md5", r[-1]["unique"]))),
        Task(id="nid-gid-length", family="nid",
             goal=f"Draw 5 generated identifiers (GIDs) standing in for the MD5 digest {first_md5}. How many "
                  "characters long is each?",
             steps=[Step("nid_generate", {"identifier": first_md5, "n": 5}, "Generate 5 GIDs with nid_generate.")],
             truth=lambda: Expected("number", len(first_md5), abs_tol=0),
             read=lambda r: str(len(r[-1]["gids"][0])) if len({len(g) for g in r[-1]["gids"]}) == 1 else "mixed"),
        Task(id="nid-dominant-type", family="nid",
             goal=f"Which kind of natural identifier is most frequent in {SVUID_FILE}?",
             options=TYPE_OPTIONS,
             steps=[Step("nid_detect", {"path": SVUID_FILE}, "Detect the natural identifiers in it with nid_detect.")],
             truth=lambda: Expected("choice", _dominant_type(SVUID_FILE), options=TYPE_OPTIONS),
             read=lambda r: _type_letter(r[-1]["by_type"])),
    ]


TASK_SETS: list[Callable[[], list[Task]]] = [graph_tasks, dti_tasks, nid_tasks]


@functools.cache
def all_tasks() -> tuple[Task, ...]:
    """Every task of the suite, in a stable order."""
    tasks = eo_tasks()
    for extra in TASK_SETS:
        tasks.extend(extra())
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)), "task ids must be unique"
    return tuple(tasks)
