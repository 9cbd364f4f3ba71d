"""EO analysis: scene → (mask) → index or geophysical parameter → statistics → (area) → answer.

Each step is one eo_ tool call through the MCP session; the answer is written by the model from the
numbers when a question and an endpoint are given, else as a plain report of them.
"""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict

from agents.connection import ToolBox
from agents.workflows.steps import ask_model, call_tool

TOOLS = ("eo_describe_scene", "eo_cloud_mask", "eo_spectral_index", "eo_land_surface_temperature",
         "eo_vegetation_parameters", "eo_statistics", "eo_area")
PARAMETERS = {"fvc": "FVC", "lai": "LAI", "albedo": "albedo"}
SUMMARY = "EO analysis: describe a scene, mask it, compute an index or parameter, its statistics and areas."
REQUIRED = ("scene", "product")
EXAMPLE = {"scene": "sample://eo/landsat8_c1_l1t", "product": "NDVI", "area_rules": [{"op": ">", "value": 0.3}],
           "question": "What is the mean NDVI, and what share of the scene has NDVI above 0.3?"}


class EOState(TypedDict):
    scene: str
    product: str
    mask: NotRequired[list[str] | None]
    area_rules: NotRequired[list[dict[str, Any]] | None]
    question: NotRequired[str | None]
    scene_info: NotRequired[dict[str, Any]]
    mask_result: NotRequired[dict[str, Any]]
    product_result: NotRequired[dict[str, Any]]
    statistics: NotRequired[dict[str, Any]]
    area: NotRequired[dict[str, Any]]
    answer: NotRequired[str]


def report(state: EOState) -> str:
    """A plain report of the workflow's numbers."""
    s = state.get("statistics", {}).get("stats", {})
    lines = [f"{state['product']} of {state['scene']}: mean {s.get('mean'):.4f}, std {s.get('std'):.4f}, "
             f"min {s.get('min'):.4f}, max {s.get('max'):.4f} over {s.get('valid_pixels')} pixels."
             if s else f"{state['product']} of {state['scene']}: no statistics."]
    for row in state.get("area", {}).get("rows", []):
        lines.append(f"{row.get('rule')}: {row.get('area_km2', 0):.4f} km2, "
                     f"{row.get('percent_of_valid', 0):.2f}% of valid area.")
    if state.get("product_result", {}).get("output"):
        lines.append(f"Raster: {state['product_result']['output']}")
    return "\n".join(lines)


def build(box: ToolBox, saver: Any, llm: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph

    box.require(*TOOLS)

    async def describe(state: EOState) -> dict[str, Any]:
        return {"scene_info": await call_tool(box, "eo_describe_scene", {"scene": state["scene"]})}

    async def mask(state: EOState) -> dict[str, Any]:
        return {"mask_result": await call_tool(box, "eo_cloud_mask", {"scene": state["scene"],
                                                                      "classes": state["mask"]})}

    async def product(state: EOState) -> dict[str, Any]:
        name = state["product"]
        extra = {"mask": state["mask"]} if state.get("mask") else {}
        if name.lower() == "lst":
            result = await call_tool(box, "eo_land_surface_temperature", {"scene": state["scene"], **extra})
        elif name.lower() in PARAMETERS:
            result = await call_tool(box, "eo_vegetation_parameters",
                                     {"scene": state["scene"], "parameter": PARAMETERS[name.lower()], **extra})
        else:
            result = await call_tool(box, "eo_spectral_index", {"scene": state["scene"], "index": name, **extra})
        return {"product_result": result}

    async def statistics(state: EOState) -> dict[str, Any]:
        return {"statistics": await call_tool(box, "eo_statistics", {"raster": state["product_result"]["output"]})}

    async def area(state: EOState) -> dict[str, Any]:
        return {"area": await call_tool(box, "eo_area", {"raster": state["product_result"]["output"],
                                                         "rules": state["area_rules"]})}

    async def answer(state: EOState) -> dict[str, Any]:
        text = report(state)
        if llm is not None and state.get("question"):
            facts = {"statistics": state.get("statistics", {}).get("stats"), "area": state.get("area", {}).get("rows"),
                     "method": state.get("product_result", {}).get("method")}
            text = await ask_model(llm, "You answer earth-observation questions from tool results. Check the numbers "
                                   "are plausible, then end with a line that starts `Answer:` and gives the value.",
                                   f"Question: {state['question']}\nResults: {json.dumps(facts, default=str)}\n"
                                   f"Report:\n{text}", fallback=text)
        return {"answer": text}

    g = StateGraph(EOState)
    for name, fn in (("describe", describe), ("mask", mask), ("product", product), ("statistics", statistics),
                     ("area", area), ("answer", answer)):
        g.add_node(name, fn)
    g.add_edge(START, "describe")
    g.add_conditional_edges("describe", lambda s: "mask" if s.get("mask") else "product", ["mask", "product"])
    g.add_edge("mask", "product")
    g.add_edge("product", "statistics")
    g.add_conditional_edges("statistics", lambda s: "area" if s.get("area_rules") else "answer", ["area", "answer"])
    g.add_edge("area", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=saver, name="eo_analysis")
