"""NID audit: detect identifiers → generate stand-ins (GIDs) → get a model → score → DP audit or
dataset inference → report.

Without a `model`, a small byte-level LM is trained on the chosen bundled data set (nid_train_model),
so the whole audit runs on a model whose training set is known.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from agents.connection import ToolBox
from agents.workflows.steps import ask_model, call_tool

TOOLS = ("nid_detect", "nid_generate", "nid_train_model", "nid_score", "nid_dp_audit", "nid_dataset_inference")
SUMMARY = "NID audit: detect identifiers, generate GIDs, score a model, then a DP audit or dataset inference."
REQUIRED = ()
EXAMPLE = {"path": "sample://nid/jsonlite_MD5.txt", "dataset": "jsonlite_md5", "mode": "audit",
           "train": {"per_dataset": 40, "epochs": 5}, "n_gids": 7, "max_nids": 20}


class NIDState(TypedDict):
    path: NotRequired[str]
    dataset: NotRequired[str]
    mode: NotRequired[str]
    model: NotRequired[str | None]
    split: NotRequired[str | None]
    train: NotRequired[dict[str, Any]]
    n_gids: NotRequired[int]
    max_nids: NotRequired[int]
    question: NotRequired[str | None]
    detected: NotRequired[dict[str, Any]]
    generated: NotRequired[dict[str, Any]]
    trained: NotRequired[dict[str, Any]]
    scores: NotRequired[dict[str, Any]]
    result: NotRequired[dict[str, Any]]
    answer: NotRequired[str]


def report(state: NIDState) -> str:
    d, g, r = state.get("detected", {}), state.get("generated", {}), state.get("result", {})
    lines = [f"Detected {d.get('unique')} distinct identifiers ({d.get('by_type')}) in "
             f"{state.get('path') or EXAMPLE['path']}."]
    if g:
        lines.append(f"GIDs for {g.get('identifier')} ({g.get('type')}): {', '.join(g.get('gids', [])[:3])} ...")
    s = state.get("scores", {})
    lines.append(f"Scored {s.get('n_nids')} NIDs x {s.get('candidates_per_nid')} candidates with {s.get('scorer')}.")
    if state.get("mode", "audit") == "audit":
        lines.append(f"DP audit: eps lower bound {r.get('eps_lower_bound')} at alpha {r.get('alpha')} "
                     f"({r.get('correct')}/{r.get('guesses')} NIDs ranked first).\nAnswer: {r.get('eps_lower_bound')}")
    else:
        lines.append(f"Dataset inference: KS p-value {r.get('p_value_ks')}, reject={r.get('reject')}.\n"
                     f"Answer: {'member' if r.get('reject') else 'not shown to be a member'}")
    return "\n".join(lines)


def build(box: ToolBox, saver: Any, llm: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph

    box.require(*TOOLS)

    async def detect(state: NIDState) -> dict[str, Any]:
        return {"detected": await call_tool(box, "nid_detect", {"path": state.get("path", EXAMPLE["path"]),
                                                                "max_results": 20})}

    async def generate(state: NIDState) -> dict[str, Any]:
        ids = state["detected"].get("identifiers") or []
        if not ids:
            return {"generated": {}}
        first = ids[0]
        return {"generated": await call_tool(box, "nid_generate", {"identifier": first["value"], "type": first["type"],
                                                                   "n": state.get("n_gids", 7)})}

    async def train(state: NIDState) -> dict[str, Any]:
        args = {"datasets": [state.get("dataset", EXAMPLE["dataset"])], **state.get("train", EXAMPLE["train"])}
        return {"trained": await call_tool(box, "nid_train_model", args)}

    async def score(state: NIDState) -> dict[str, Any]:
        model = state.get("model") or state["trained"]["checkpoint"]
        split = state.get("split") or (state.get("trained") or {}).get("split_path")
        args: dict[str, Any] = {"model": model, "n_gids": state.get("n_gids", 7),
                                "max_nids": state.get("max_nids", 20), "recall": False}
        args |= {"split": split} if split else {"dataset": state.get("dataset", EXAMPLE["dataset"])}
        return {"scores": await call_tool(box, "nid_score", args)}

    async def audit(state: NIDState) -> dict[str, Any]:
        return {"result": await call_tool(box, "nid_dp_audit", {"scores_path": state["scores"]["scores_path"]})}

    async def inference(state: NIDState) -> dict[str, Any]:
        return {"result": await call_tool(box, "nid_dataset_inference", {"scores_path": state["scores"]["scores_path"],
                                                                         "plot": False})}

    async def answer(state: NIDState) -> dict[str, Any]:
        text = report(state)
        if llm is not None and state.get("question"):
            text = await ask_model(llm, "You explain privacy audits of language models with natural identifiers as "
                                   "canaries. End with a line `Answer: ...`.",
                                   f"Question: {state['question']}\nReport:\n{text}", fallback=text)
        return {"answer": text}

    g = StateGraph(NIDState)
    for name, fn in (("detect", detect), ("generate", generate), ("train", train), ("score", score),
                     ("audit", audit), ("inference", inference), ("answer", answer)):
        g.add_node(name, fn)
    g.add_edge(START, "detect")
    g.add_edge("detect", "generate")
    g.add_conditional_edges("generate", lambda s: "score" if s.get("model") else "train", ["score", "train"])
    g.add_edge("train", "score")
    g.add_conditional_edges("score", lambda s: "inference" if s.get("mode") == "inference" else "audit",
                            ["audit", "inference"])
    g.add_edge("audit", "answer")
    g.add_edge("inference", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=saver, name="nid_audit")
