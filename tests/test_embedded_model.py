"""The embedded model: prompt rendering and tool-call parsing, and the real Gemma 3 270M over its HTTP API.

The real-model tests share one server for the session (started by the launcher, the path a tool takes
when nothing is configured) and keep to a few short calls.
"""

from __future__ import annotations

import json
import math

import httpx
import pytest

from tools.embedded.chat import parse_tool_calls, render_prompt

# --- pure parts -------------------------------------------------------------------------------------


def test_render_prompt_is_a_transcript_ending_with_an_open_answer_turn() -> None:
    prompt = render_prompt([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Capital of France?"},
    ])
    assert prompt == "Be brief.\n\nQuestion: Hi\nAnswer: Hello.\nQuestion: Capital of France?\nAnswer:"


def test_render_prompt_lists_tools_and_replays_calls_and_results() -> None:
    tools = [{"type": "function", "function": {"name": "graph_solve", "description": "Solve a task.\nMore.",
                                               "parameters": {"properties": {"task": {"type": "string"}},
                                                              "required": ["task"]}}}]
    prompt = render_prompt([
        {"role": "user", "content": "Diameter?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "graph_solve", "arguments": '{"task": "diameter"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
    ], tools)
    assert "- graph_solve(task: string): Solve a task." in prompt
    assert 'Answer: <tool_call>{"name": "graph_solve", "arguments": {"task": "diameter"}}</tool_call>' in prompt
    assert prompt.endswith("Question: Tool result: 2\nAnswer:")


def test_parse_tool_calls_reads_tagged_and_bare_calls() -> None:
    text, calls = parse_tool_calls('Let me check. <tool_call>{"name": "eo_area", "arguments": {"x": 1}}</tool_call>')
    assert text == "Let me check."
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("eo_area", {"x": 1})]
    _, calls = parse_tool_calls('{"name": "graph_solve", "arguments": {"task": "cycle"}}', known={"graph_solve"})
    assert calls[0].name == "graph_solve"


def test_parse_tool_calls_leaves_prose_and_unknown_bare_names_alone() -> None:
    assert parse_tool_calls("The answer is 4.") == ("The answer is 4.", [])
    assert parse_tool_calls('{"name": "x", "arguments": {}}', known={"graph_solve"})[1] == []
    # a tagged call to an unknown tool is still a call: the agent reports the unknown name
    calls = parse_tool_calls('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', known={"a"})[1]
    assert calls[0].name == "nope"
    assert parse_tool_calls("<tool_call>{not json}</tool_call>")[1] == []


# --- the real model ---------------------------------------------------------------------------------


def _post(url: str, path: str, payload: dict) -> dict:
    resp = httpx.post(f"{url}{path}", json=payload, timeout=600)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_models_lists_the_embedded_model(embedded_llm: str) -> None:
    data = httpx.get(f"{embedded_llm}/models", timeout=30).json()
    assert [m["id"] for m in data["data"]] == ["gemma-3-270m"]


def test_greedy_answer_knows_a_fact(embedded_llm: str) -> None:
    data = _post(embedded_llm, "/completions", {"prompt": "Question: What is the capital of France?\nAnswer:",
                                                "max_tokens": 6, "stop": ["\n"], "temperature": 0})
    assert "Paris" in data["choices"][0]["text"]
    assert data["model"] == "gemma-3-270m"
    assert 0 < data["usage"]["completion_tokens"] <= 6


def test_echo_logprobs_cover_the_prompt_and_agree_with_an_unpadded_forward_pass(embedded_llm: str) -> None:
    import torch

    from tools.embedded.runtime import load_local_lm

    prompts = ["commit 3f2a9c01d4e7b6a5f8e9d0c1b2a3f4e5d6c7b8a9", "Hello world"]
    data = _post(embedded_llm, "/completions", {"prompt": prompts, "max_tokens": 0, "echo": True, "logprobs": 3})
    lm = load_local_lm()
    for prompt, choice in zip(prompts, sorted(data["choices"], key=lambda c: c["index"]), strict=True):
        lp = choice["logprobs"]
        assert "".join(lp["tokens"]) == prompt
        assert lp["text_offset"] == sorted(lp["text_offset"]) and lp["text_offset"][0] == 0
        assert lp["token_logprobs"][0] is None
        # the reference: one unbatched, unpadded forward pass in this process
        ids = torch.tensor([lm.encode(prompt)])
        with torch.inference_mode():
            ref = torch.log_softmax(lm.model(input_ids=ids).logits[0].float(), dim=-1)
        for t, value in enumerate(lp["token_logprobs"][1:], start=1):
            expected = float(ref[t, ids[0, t + 1]])  # ids[0, 0] is BOS, so prompt token t is ids[t + 1]
            assert math.isclose(value, expected, abs_tol=2e-3)
            assert value <= max(lp["top_logprobs"][t].values()) + 1e-6


def test_chat_answers_a_question_and_says_which_model(embedded_llm: str) -> None:
    data = _post(embedded_llm, "/chat/completions", {
        "messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 8})
    choice = data["choices"][0]
    assert choice["message"]["role"] == "assistant" and "Paris" in choice["message"]["content"]
    assert choice["finish_reason"] in ("stop", "length")
    assert data["model"] == "gemma-3-270m"


def test_prompts_decoded_together_get_the_texts_they_get_alone(embedded_llm: str) -> None:
    """One completions request with several prompts decodes them as one batch (the long one crosses the
    model's 512-token sliding window); each text equals that of the prompt sent alone."""
    notes = " ".join(f"item {i} is {i * 7 % 100}." for i in range(120))
    long = f"Notes: {notes}\nQuestion: What is item 3?\nAnswer:"
    prompts = ["Question: What is the capital of France?\nAnswer:", long, "The first three primes are"]
    opts = {"max_tokens": 8, "temperature": 0}
    together = _post(embedded_llm, "/completions", {"prompt": prompts, **opts})
    assert together["usage"]["prompt_tokens"] > 512
    for prompt, choice in zip(prompts, together["choices"], strict=True):
        alone = _post(embedded_llm, "/completions", {"prompt": prompt, **opts})["choices"][0]
        assert choice["text"] == alone["text"] and choice["finish_reason"] == alone["finish_reason"]


def test_bad_requests_are_clear_400s(embedded_llm: str) -> None:
    resp = httpx.post(f"{embedded_llm}/chat/completions", json={"messages": "hi"}, timeout=30)
    assert resp.status_code == 400 and "messages must be" in resp.json()["error"]["message"]
    resp = httpx.post(f"{embedded_llm}/completions", json={"prompt": "x", "max_tokens": 10**6}, timeout=30)
    assert resp.status_code == 400 and "max_tokens" in resp.json()["error"]["message"]
    resp = httpx.post(f"{embedded_llm}/completions", json={"prompt": "x", "stream": True}, timeout=30)
    assert resp.status_code == 400 and "stream" in resp.json()["error"]["message"]


@pytest.mark.anyio
async def test_resolve_llm_falls_back_to_the_embedded_model(embedded_llm: str) -> None:
    from tools.llm import Message, resolve_llm

    llm = resolve_llm(None)
    reply = await llm.complete([Message("user", "Question: What is 2 + 2?\nAnswer:")], max_tokens=4)
    assert reply.model == "gemma-3-270m (embedded)"
    assert reply.completion_tokens > 0


@pytest.mark.anyio
async def test_a_tool_over_mcp_uses_the_embedded_model_and_says_so(embedded_llm: str) -> None:
    from mcp import Client

    from server.app import build_server

    text = "The key for apple is 4821. The key for pear is 9930. The key for plum is 1177."
    async with Client(build_server(["longctx"])) as client:
        result = await client.call_tool("longctx_single_shot", {"text": text, "task": "What is the key for pear?"})
    assert not result.is_error, result.content
    assert "embedded" in json.dumps(result.structured_content)


def test_runtime_benchmark_quick_variant_runs_and_is_consistent(embedded_llm: str, tmp_path) -> None:
    from evals.llm.run import main

    assert main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "runtimes.json").read_text())
    rows = report["rows"]
    assert rows[0]["runtime"].startswith("transformers") and rows[0]["prompt_tokens"] > 50
    assert all(r["prefill_tok_s"] > 0 and r["decode_tok_s"] > 0 for r in rows)
    if len(rows) > 1:  # llama.cpp installed: the same weights must give nearly the same log-probs
        assert report["logprob_abs_diff"]["median"] < 0.25


def test_batch_benchmark_quick_variant_writes_the_same_texts_both_ways(embedded_llm: str, tmp_path) -> None:
    from evals.llm.batch_bench import main

    out = tmp_path / "batch.json"
    assert main(["--requests", "3", "--prompt-tokens", "40", "--max-tokens", "4", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["same_texts"] == 3
    assert data["batched"]["steps"] < data["one_at_a_time"]["steps"] == data["one_at_a_time"]["completion_tokens"] - 3
