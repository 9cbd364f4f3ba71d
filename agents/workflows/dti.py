"""DTI screening: validate the library → check the model → score and rank it against the target →
explain the top hit → report.
"""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict

from agents.connection import ToolBox
from agents.workflows.steps import ToolFailed, ask_model, call_tool

TOOLS = ("dti_validate", "dti_model_card", "dti_screen", "dti_explain")
SUMMARY = "DTI screening: validate a molecule library, score and rank it against a target, explain the top hit."
REQUIRED = ("target",)
EXAMPLE = {"target": "<protein sequence, e.g. a row of sample://dti/targets.csv>",
           "library": "sample://dti/screening_library.smi", "top_k": 10, "model": "default"}


class DTIState(TypedDict):
    target: str
    library: NotRequired[str]
    top_k: NotRequired[int]
    model: NotRequired[str]
    question: NotRequired[str | None]
    validation: NotRequired[dict[str, Any]]
    card: NotRequired[dict[str, Any]]
    screen: NotRequired[dict[str, Any]]
    explanation: NotRequired[dict[str, Any]]
    answer: NotRequired[str]


def _smiles(hit: dict[str, Any]) -> str:
    for key in ("smiles", "canonical", "input"):
        if hit.get(key):
            return str(hit[key])
    raise KeyError("a hit without SMILES")


def report(state: DTIState) -> str:
    v, s = state.get("validation", {}), state.get("screen", {})
    lines = [f"Library {state.get('library', EXAMPLE['library'])}: {v.get('molecules_valid')} of "
             f"{v.get('molecules_checked')} molecules valid."]
    if "error" in state.get("card", {}):
        lines.append(f"No screen: the model is not available ({state['card']['error']}).")
    if s:
        lines.append(f"{s.get('scored')} scored, {s.get('rejected')} rejected; top {len(s.get('top', []))}:")
    for rank, hit in enumerate(s.get("top", [])[:10], 1):
        lines.append(f"{rank}. {hit.get('id') or hit.get('name') or ''} {_smiles(hit)} "
                     f"score {float(hit.get('score', float('nan'))):.4f}")
    e = state.get("explanation", {})
    if e.get("bits"):
        lines.append(f"Top hit's strongest fingerprint bits: {json.dumps(e['bits'][:3], default=str)}")
    if s.get("hits_csv"):
        lines.append(f"Hits: {s['hits_csv']}")
    return "\n".join(lines)


def build(box: ToolBox, saver: Any, llm: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph

    box.require(*TOOLS)

    async def validate(state: DTIState) -> dict[str, Any]:
        return {"validation": await call_tool(box, "dti_validate", {"path": state.get("library", EXAMPLE["library"]),
                                                                    "proteins": [state["target"]]})}

    async def card(state: DTIState) -> dict[str, Any]:
        try:
            return {"card": await call_tool(box, "dti_model_card", {"model": state.get("model", "default")})}
        except ToolFailed as exc:  # no such model: the report says so instead of screening
            return {"card": {"error": str(exc)}}

    async def screen(state: DTIState) -> dict[str, Any]:
        return {"screen": await call_tool(box, "dti_screen", {
            "target": state["target"], "library": state.get("library", EXAMPLE["library"]),
            "top_k": state.get("top_k", 10), "model": state.get("model", "default"), "write_sdf": False})}

    async def explain(state: DTIState) -> dict[str, Any]:
        top = state["screen"]["top"][0]
        return {"explanation": await call_tool(box, "dti_explain", {
            "smiles": _smiles(top), "protein": state["target"], "model": state.get("model", "default"),
            "draw": False})}

    async def answer(state: DTIState) -> dict[str, Any]:
        text = report(state)
        if llm is not None and state.get("question"):
            top = (state.get("screen") or {}).get("top") or [{}]
            hit = top[0].get("id") or top[0].get("name")
            text = await ask_model(llm, "You summarise a virtual screen for a chemist. Say how far the model can be "
                                   "trusted (its card), then end with a line that starts `Answer:` and gives the top "
                                   "hit's id.",
                                   f"Question: {state['question']}\nModel card: "
                                   f"{json.dumps(state.get('card', {}), default=str)[:2000]}\nScreen:\n{text}",
                                   fallback=text + (f"\nAnswer: {hit}" if hit else ""))
        return {"answer": text}

    g = StateGraph(DTIState)
    for name, fn in (("validate", validate), ("card", card), ("screen", screen), ("explain", explain),
                     ("answer", answer)):
        g.add_node(name, fn)
    g.add_edge(START, "validate")
    g.add_conditional_edges("validate", lambda s: "card" if (s["validation"].get("proteins_valid") or 0) >= 1
                            else "answer", ["card", "answer"])
    g.add_conditional_edges("card", lambda s: "answer" if "error" in s["card"] else "screen", ["screen", "answer"])
    g.add_conditional_edges("screen", lambda s: "explain" if s["screen"].get("top") else "answer",
                            ["explain", "answer"])
    g.add_edge("explain", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=saver, name="dti_screening")
