"""Graph benchmark: generate graphs → build prompts → the model answers → check → aggregate.

Graphs come from graph_generate (seeded), prompts from graph_prompt, every reply is validated by
graph_check_answer against the graph itself (any valid path or order is accepted), and the aggregate
is the accuracy per task, next to the tasks' random baselines from graph_solve.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from agents.connection import ToolBox
from agents.workflows.steps import ask_model, call_tool

TOOLS = ("graph_generate", "graph_prompt", "graph_check_answer", "graph_solve")
SUMMARY = "Graph benchmark: generate seeded graphs, prompt the model, check every answer, aggregate accuracy."
REQUIRED = ()
EXAMPLE = {"tasks": ["connectivity", "shortest_path", "triangle"], "generator": "ERP", "n_nodes": 8, "seeds": [0, 1],
           "format": "adjacency_set", "scheme": "LTM"}
NEEDS = {"connectivity": ("source", "target"), "shortest_path": ("source", "target"), "bfsorder": ("source",),
         "reachability": ("source", "target"), "max_flow": ("source", "target"), "node_degree": ("node",),
         "edge_existence": ("source", "target"), "weighted_shortest_path": ("source", "target")}


class GraphState(TypedDict):
    tasks: NotRequired[list[str]]
    generator: NotRequired[str]
    n_nodes: NotRequired[int]
    seeds: NotRequired[list[int]]
    format: NotRequired[str]
    scheme: NotRequired[str]
    graphs: NotRequired[list[dict[str, Any]]]
    items: NotRequired[list[dict[str, Any]]]
    replies: NotRequired[list[str]]
    checks: NotRequired[list[dict[str, Any]]]
    summary: NotRequired[dict[str, Any]]
    answer: NotRequired[str]


def _params(task: str, graph: dict[str, Any]) -> dict[str, int]:
    nodes = sorted(graph.get("nodes") or {n for e in graph["edges"] for n in e[:2]})
    pick = {"source": nodes[0], "target": nodes[-1], "node": nodes[0]}
    return {k: pick[k] for k in NEEDS.get(task, ())}


def build(box: ToolBox, saver: Any, llm: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph

    box.require(*TOOLS)

    async def generate(state: GraphState) -> dict[str, Any]:
        graphs = []
        for seed in state.get("seeds", EXAMPLE["seeds"]):
            r = await call_tool(box, "graph_generate", {"generator": state.get("generator", "ERP"),
                                                        "n_nodes": state.get("n_nodes", 8), "seed": seed})
            graphs.append(r["graph"])
        return {"graphs": graphs}

    async def prompt(state: GraphState) -> dict[str, Any]:
        items = []
        for gi, graph in enumerate(state["graphs"]):
            for task in state.get("tasks", EXAMPLE["tasks"]):
                params = _params(task, graph)
                r = await call_tool(box, "graph_prompt", {"task": task, "graph": graph,
                                                          "format": state.get("format", "adjacency_set"),
                                                          "scheme": state.get("scheme", "LTM"), **params})
                items.append({"task": task, "graph_index": gi, "params": params, "prompt": r["prompt"]})
        return {"items": items}

    async def model(state: GraphState) -> dict[str, Any]:
        replies = [await ask_model(llm, "You solve graph problems. End with a line 'Answer: ...'.", it["prompt"])
                   for it in state["items"]]
        return {"replies": replies}

    async def check(state: GraphState) -> dict[str, Any]:
        checks = []
        for it, reply in zip(state["items"], state["replies"], strict=True):
            graph = state["graphs"][it["graph_index"]]
            r = await call_tool(box, "graph_check_answer", {"task": it["task"], "answer": reply, "graph": graph,
                                                            **it["params"]})
            checks.append({"task": it["task"], "correct": bool(r["correct"]), "extracted": bool(r["extracted"]),
                           "expected": r.get("expected")})
        return {"checks": checks}

    async def aggregate(state: GraphState) -> dict[str, Any]:
        by_task: dict[str, dict[str, Any]] = {}
        for c in state["checks"]:
            row = by_task.setdefault(c["task"], {"n": 0, "correct": 0, "extracted": 0})
            row["n"] += 1
            row["correct"] += c["correct"]
            row["extracted"] += c["extracted"]
        for task, row in by_task.items():
            graph = state["graphs"][0]
            solved = await call_tool(box, "graph_solve", {"task": task, "graph": graph, **_params(task, graph)})
            row["accuracy"] = row["correct"] / row["n"]
            row["random_baseline"] = solved.get("random_baseline")
        n = len(state["checks"])
        overall = sum(c["correct"] for c in state["checks"]) / n if n else 0.0
        lines = [f"{t}: {r['correct']}/{r['n']} correct (accuracy {r['accuracy']:.2f}, random baseline "
                 f"{r['random_baseline'] if r['random_baseline'] is None else round(r['random_baseline'], 3)})"
                 for t, r in by_task.items()]
        return {"summary": {"overall": overall, "by_task": by_task},
                "answer": "\n".join(lines) + f"\nAnswer: overall accuracy {overall:.3f} over {n} questions"}

    g = StateGraph(GraphState)
    for name, fn in (("generate", generate), ("prompt", prompt), ("model", model), ("check", check),
                     ("aggregate", aggregate)):
        g.add_node(name, fn)
    g.add_edge(START, "generate")
    g.add_edge("generate", "prompt")
    g.add_edge("prompt", "model")
    g.add_edge("model", "check")
    g.add_edge("check", "aggregate")
    g.add_edge("aggregate", END)
    return g.compile(checkpointer=saver, name="graph_benchmark")
