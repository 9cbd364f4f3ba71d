"""The longctx tools through MCP in memory: listing, chunking a sample, chunked answering with progress, errors."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from evals.longctx.scripted import PaperRules
from server.app import build_server
from tests.scripted_llm import ScriptedLLM
from tools.paths import sample_path
from tools.settings import reload_settings

pytestmark = pytest.mark.anyio

NAMES = {"longctx_chunk", "longctx_answer", "longctx_single_shot", "longctx_choose_chunk_size", "longctx_fit_noise"}
KV = [json.loads(line) for line in sample_path("longctx/kv_retrieval.jsonl").read_text().splitlines()]


async def test_tools_listed_with_annotations_and_hidden_injections():
    async with Client(build_server(["longctx"])) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert {n for n in tools if not n.startswith("jobs_")} == NAMES  # the job tools come with every family
    answer = tools["longctx_answer"]
    assert answer.annotations.open_world_hint is True
    assert "llm" not in answer.input_schema["properties"] and "progress" not in answer.input_schema["properties"]
    assert tools["longctx_fit_noise"].annotations.read_only_hint is True
    assert tools["longctx_fit_noise"].annotations.open_world_hint is False


async def test_chunk_a_bundled_sample():
    async with Client(build_server(["longctx"])) as c:
        r = await c.call_tool("longctx_chunk", {"path": "sample://longctx/alice.txt", "chunk_tokens": 4000,
                                                "overlap_tokens": 200})
    out = r.structured_content
    assert not r.is_error and out["covers_text"] is True
    assert out["chunks"][0]["start_char"] == 0
    assert out["chunks"][-1]["end_char"] == out["text_chars"] == len(sample_path("longctx/alice.txt").read_text())
    assert all(ch["tokens"] <= 4000 for ch in out["chunks"])
    assert out["n_chunks"] >= out["text_tokens"] // 4000


async def test_answer_through_mcp_with_progress(monkeypatch):
    item = KV[3]
    seen = []

    async def on_progress(done, total, message):
        seen.append((done, total))

    with ScriptedLLM(PaperRules()) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        reload_settings()
        async with Client(build_server(["longctx"])) as c:
            r = await c.call_tool("longctx_answer", {"task": item["input"].strip(), "text": item["context"],
                                                     "task_kind": "retrieval", "chunk_tokens": 700},
                                  progress_callback=on_progress)
            single = await c.call_tool("longctx_single_shot", {"task": item["input"].strip(),
                                                               "text": item["context"], "task_kind": "retrieval"})
    out = r.structured_content
    assert not r.is_error, r.content
    assert out["answer"] == item["answer"]
    assert out["chunks_read"] == out["chunks_total"] >= 2
    assert len(seen) >= out["chunks_total"]
    assert single.structured_content["answer"] == item["answer"]


async def test_error_results_name_the_fix():
    async with Client(build_server(["longctx"])) as c:
        no_llm = await c.call_tool("longctx_answer", {"task": "q", "text": "some text"})
        empty = await c.call_tool("longctx_chunk", {"text": ""})
        small = await c.call_tool("longctx_chunk", {"text": "a b c", "chunk_tokens": 4, "overlap_tokens": 3})
        fit = await c.call_tool("longctx_fit_noise", {"single_shot": [{"tokens": 1000, "accuracy": 0.9},
                                                                      {"tokens": 4000, "accuracy": 0.5}]})
    assert no_llm.is_error and "not_configured" in no_llm.content[0].text
    assert "OPENAI_BASE_URL" in no_llm.content[0].text
    assert empty.is_error and "empty" in empty.content[0].text
    assert small.is_error and "overlap_tokens" in small.content[0].text
    assert not fit.is_error and fit.structured_content["regime"] == "brain_fog"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_answer_through_the_clients_own_model_by_sampling(mode):
    """Handshake-era connections sample mid-call; 2026-07-28 ones in InputRequiredResult rounds."""
    from mcp.types import CreateMessageResult, TextContent

    rules = PaperRules()
    item = KV[6]
    asked = []

    async def sampling(context, params) -> CreateMessageResult:
        prompt = params.messages[-1].content.text
        asked.append(prompt)
        reply = rules({"messages": [{"role": "user", "content": prompt}]})
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=reply), model="client")

    async with Client(build_server(["longctx"]), sampling_callback=sampling, mode=mode) as c:
        r = await c.call_tool("longctx_answer", {"task": item["input"].strip(), "text": item["context"],
                                                 "task_kind": "retrieval", "chunk_tokens": 700})
    out = r.structured_content
    assert not r.is_error, r.content
    assert out["answer"] == item["answer"] and out["model"] == "mcp-sampling"
    # every model call was asked exactly once, though in rounds the tool re-runs each round
    assert len(asked) == len(set(asked)) == out["llm_calls"] == out["chunks_total"] + 1

