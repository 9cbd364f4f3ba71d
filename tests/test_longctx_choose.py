"""Choosing the chunk size on labelled documents against scripted workers whose noise grows with chunk length."""

from __future__ import annotations

import asyncio
import json

import pytest

from evals.longctx.scripted import PaperRules
from tests.scripted_llm import ScriptedLLM
from tools.errors import InvalidInput, LimitExceeded
from tools.llm import OpenAIChat
from tools.longctx.models import Document
from tools.longctx.qa import longctx_choose_chunk_size
from tools.paths import sample_path

KV = [json.loads(line) for line in sample_path("longctx/kv_retrieval.jsonl").read_text().splitlines()]
DOCS = [Document(task=it["input"].strip(), answers=[it["answer"]], text=it["context"]) for it in KV]


def choose(rules: PaperRules, **kw):
    with ScriptedLLM(rules) as server:
        async def main():
            model = OpenAIChat(base_url=server.base_url, api_key="x", model="scripted")
            try:
                return await longctx_choose_chunk_size(llm=model, task_kind="retrieval", **kw)
            finally:
                await model.aclose()

        return asyncio.run(main())


def test_perfect_workers_tie_and_the_larger_size_wins() -> None:
    r = choose(PaperRules(alpha=0.5), documents=DOCS[:4], candidates=[600, 1500], include_single_shot=True)
    assert [c.accuracy for c in r.candidates] == [1.0, 1.0]
    assert r.best_chunk_tokens == 1500
    assert r.candidates[0].llm_calls > r.candidates[1].llm_calls
    assert r.candidates[0].mean_chunks > r.candidates[1].mean_chunks
    # The scripted single-shot reader succeeds with probability exp(-0.5 (T/1000)^1.5): 0.61 at 1K, 0.24 at 2K.
    assert r.single_shot_accuracy is not None and r.single_shot_accuracy < 1.0
    assert "chunk_tokens=1500" in r.recommendation


def test_noisy_long_chunks_lose_to_short_ones() -> None:
    # Worker success probability exp(-2 (c/1000)^1.5): about 0.9 on 150-token chunks, under 0.01 on 1850.
    r = choose(PaperRules(alpha=2.0, worker_noise=True), documents=DOCS, candidates=[2000, 300])
    by = {c.chunk_tokens: c for c in r.candidates}
    assert by[300].accuracy > by[2000].accuracy
    assert r.best_chunk_tokens == 300
    assert "chunk_tokens=300" in r.recommendation


def test_choose_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput, match="at least 64"):
        choose(PaperRules(), documents=DOCS[:1], candidates=[10])
    with pytest.raises(InvalidInput, match="template"):
        choose(PaperRules(), documents=DOCS[:1], candidates=[100])
    with pytest.raises(LimitExceeded, match="MAX_CANDIDATES"):
        choose(PaperRules(), documents=DOCS[:1], candidates=list(range(100, 1100, 100)))
