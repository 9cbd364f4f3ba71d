"""GraphOmni's published records: reading them, their graphs and question parameters, and auditing their answers.

A record's graph is `num_nodes` nodes 0..n-1 with `edges` (GraphOmni's `graph_info`, the graph it scores
against); the node parameters are read from the question text. `audit` checks every gt answer against
its graph with the family's own checker and solver and counts what agrees.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.errors import InvalidInput
from tools.graph.model import build_graph, canonical_edges
from tools.graph.serialize import parse
from tools.graph.tasks import Params, check, get_task, solve, task_params
from tools.lazy import LazyModule

nx = LazyModule("networkx")

SAMPLE_NAME = "graph/graphomni_ltm_adjset_queries.jsonl.gz"
_TASKS = {"bfsorder": "bfsorder", "connectivity": "connectivity", "cycle": "cycle", "diameter": "diameter",
          "shortest_path": "shortest_path", "triangle": "triangle"}


def read_records(path: str | Path) -> Iterator[dict]:
    """The records of a GraphOmni JSONL file (plain or gzip)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"Line {i + 1} of {p.name} is not JSON: {exc}",
                                       hint="Give GraphOmni records one JSON object per line.") from None


def record_graph(rec: dict) -> nx.Graph:
    """The graph GraphOmni scores a record against (`graph_info`): nodes 0..num_nodes-1 and `edges`."""
    return build_graph(list(range(int(rec["num_nodes"]))), rec["edges"])


def record_params(rec: dict) -> Params:
    """The node parameters named in the record's question."""
    q = rec["query"].split("Q:")[-1]
    task = _TASKS[rec["task"]]
    if task == "bfsorder":
        m = re.search(r"starting from node (\d+)", q)
        return {"source": int(m.group(1))} if m else {}
    if task == "connectivity":
        m = re.search(r"between node (\d+) and node (\d+)", q)
        return {"source": int(m.group(1)), "target": int(m.group(2))} if m else {}
    if task == "shortest_path":
        m = re.search(r"from node (\d+) to node (\d+)", q)
        return {"source": int(m.group(1)), "target": int(m.group(2))} if m else {}
    return {}


def query_edges(rec: dict) -> list[tuple[int, int]]:
    """The edges the model was shown: the Adjacency-Set text of the question, read by our parser.

    GraphOmni prints an edgeless graph as `{}`, which has no nodes to build a graph from: no edges then.
    """
    m = re.search(r"Adjacency Set is\s*\n(\{.*?\})\s*\n", rec["query"], re.S)
    if not m:
        raise InvalidInput(f"Record {rec.get('id')} has no Adjacency Set text.",
                           hint="Give an LTM x Adjacency Set record.")
    if m.group(1).strip() == "{}":
        return []
    return canonical_edges(parse(m.group(1), "adjacency_set"))


@dataclass
class Audit:
    """Counts over a set of records (per task in `by_task`)."""

    records: int = 0
    gt_valid: int = 0  # gt answer accepted by graph_check_answer against graph_info
    solve_agrees: int = 0  # ...and graph_solve gives the same answer (same value; for paths same length)
    gt_invalid: int = 0
    node_not_in_graph: int = 0  # the question names a node graph_info lacks
    query_graph_differs: int = 0  # the Adjacency-Set text shown differs from graph_info (edges)
    invalid_ids: list[str] = field(default_factory=list)
    by_task: dict[str, Counter] = field(default_factory=dict)


def audit(records: list[dict]) -> Audit:
    """Check every gt answer against its graph: how many validate, and whether the solver agrees on them."""
    a = Audit()
    for rec in records:
        task = get_task(_TASKS[rec["task"]])
        G = record_graph(rec)
        tally = a.by_task.setdefault(task.key, Counter())
        a.records += 1
        tally["records"] += 1
        if query_edges(rec) != canonical_edges(G):
            a.query_graph_differs += 1
            tally["query_graph_differs"] += 1
        try:
            p = task_params(task, G, **record_params(rec))
        except InvalidInput:  # the question names a node that graph_info does not have
            a.node_not_in_graph += 1
            tally["node_not_in_graph"] += 1
            a.gt_invalid += 1
            tally["gt_invalid"] += 1
            a.invalid_ids.append(rec["id"])
            continue
        sol = solve(task, G, p)
        c = check(task, G, p, str(rec["gt_answer"]), sol)
        if not c.correct:
            a.gt_invalid += 1
            tally["gt_invalid"] += 1
            a.invalid_ids.append(rec["id"])
            continue
        a.gt_valid += 1
        tally["gt_valid"] += 1
        if _agrees(task.kind, task.key, check(task, G, p, str(sol.answer), sol), c):
            a.solve_agrees += 1
            tally["solve_agrees"] += 1
    return a


def _agrees(kind: str, key: str, mine, theirs) -> bool:
    """Our answer is accepted and says the same as the gt: equal values; for a path the same length; for a
    BFS order the same node set (several orders can be valid)."""
    if not mine.correct:
        return False
    if kind != "node_list":
        return mine.parsed == theirs.parsed
    if key == "bfsorder":
        return sorted(mine.parsed) == sorted(theirs.parsed)
    return len(mine.parsed) == len(theirs.parsed)
