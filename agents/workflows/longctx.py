"""Chunked QA: chunk the document (longctx_chunk) → Send one worker per chunk → the manager decides.

The cut points come from the server's tool, so the workflow reads the text exactly as longctx_answer
would; each worker model answers from its chunk or says NA, in parallel (LangGraph `Send`), and the
manager model combines the non-NA answers. A `sample://` document is read through MCP as a resource.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

from agents.connection import ToolBox
from agents.workflows.steps import ask_model, call_tool

TOOLS = ("longctx_chunk",)
SUMMARY = "Chunked QA: split a long text with longctx_chunk, fan out one worker per chunk, a manager answers."
REQUIRED = ("task",)
EXAMPLE = {"task": "What was written on the little bottle Alice found?", "path": "sample://longctx/alice.txt",
           "chunk_tokens": 8000, "encoding": "approx"}
WORKER = ("You are a worker reading one chunk of a long document. Answer the task from this chunk only, briefly. "
          "If the chunk does not hold the answer, reply exactly NA.")
MANAGER = ("You are the manager. Workers each read one chunk of a document and answered or said NA. Combine their "
           "answers into the final answer; end with a line `Answer: ...`.")


class QAState(TypedDict):
    task: str
    path: NotRequired[str]
    text: NotRequired[str]
    chunk_tokens: NotRequired[int]
    overlap_tokens: NotRequired[int]
    encoding: NotRequired[str]
    chunking: NotRequired[dict[str, Any]]
    chunks: NotRequired[list[str]]
    notes: Annotated[list[dict[str, Any]], operator.add]
    answer: NotRequired[str]


class WorkerInput(TypedDict):
    task: str
    index: int
    text: str


def build(box: ToolBox, saver: Any, llm: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    box.require(*TOOLS)

    async def chunk(state: QAState) -> dict[str, Any]:
        args: dict[str, Any] = {k: state[k] for k in ("text", "path", "chunk_tokens", "overlap_tokens", "encoding")
                                if state.get(k) is not None}
        result = await call_tool(box, "longctx_chunk", args)
        if state.get("text") is not None:
            doc = state["text"]
        elif str(state.get("path", "")).startswith("sample://"):
            doc = await box.read_text(state["path"])
        else:
            doc = Path(state["path"]).expanduser().read_text(encoding="utf-8")
        pieces = [doc[c["start_char"]:c["end_char"]] for c in result["chunks"]]
        summary = {k: v for k, v in result.items() if k != "chunks"} | {"spans": [[c["start_char"], c["end_char"]]
                                                                          for c in result["chunks"]]}
        return {"chunking": summary, "chunks": pieces}

    def fan_out(state: QAState) -> list[Any]:
        return [Send("worker", WorkerInput(task=state["task"], index=i, text=t)) for i, t in enumerate(state["chunks"])]

    async def worker(item: WorkerInput) -> dict[str, Any]:
        reply = await ask_model(llm, WORKER, f"Task: {item['task']}\n\nChunk {item['index'] + 1}:\n{item['text']}")
        na = reply.strip().strip(".").upper() in ("NA", "N/A", "")
        return {"notes": [{"index": item["index"], "reply": reply, "na": na}]}

    async def manager(state: QAState) -> dict[str, Any]:
        found = sorted((n for n in state.get("notes", []) if not n["na"]), key=lambda n: n["index"])
        if not found:
            return {"answer": "No chunk held the answer.\nAnswer: NA"}
        listing = "\n".join(f"Chunk {n['index'] + 1}: {n['reply']}" for n in found)
        return {"answer": await ask_model(llm, MANAGER, f"Task: {state['task']}\n\nWorker answers:\n{listing}")}

    g = StateGraph(QAState)
    g.add_node("chunk", chunk)
    g.add_node("worker", worker)
    g.add_node("manager", manager)
    g.add_edge(START, "chunk")
    g.add_conditional_edges("chunk", fan_out, ["worker"])
    g.add_edge("worker", "manager")
    g.add_edge("manager", END)
    return g.compile(checkpointer=saver, name="chunked_qa")
