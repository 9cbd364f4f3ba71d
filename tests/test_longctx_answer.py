"""Chunked answering against a scripted endpoint that acts like the paper's workers and manager."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from evals.longctx.scripted import PaperRules, last_user, section
from tests.scripted_llm import ScriptedLLM
from tools.errors import Cancelled, InvalidInput, LimitExceeded, NotConfigured, NotFound, UpstreamError
from tools.llm import OpenAIChat
from tools.longctx import prompts
from tools.longctx.qa import longctx_answer, longctx_single_shot
from tools.longctx.scoring import normalize, substring_match
from tools.paths import sample_path
from tools.progress import Progress
from tools.settings import reload_settings

KV = [json.loads(line) for line in sample_path("longctx/kv_retrieval.jsonl").read_text().splitlines()]
BOOK = sample_path("longctx/alice.txt").read_text(encoding="utf-8")
NQ = [json.loads(line) for line in sample_path("longctx/nq_questions.jsonl").read_text().splitlines()]


def run(server: ScriptedLLM, coro_fn, **chat):
    async def main():
        model = OpenAIChat(base_url=server.base_url, api_key="x", model="scripted",
                           **({"timeout_s": 5.0, "max_retries": 2} | chat))
        try:
            return await coro_fn(model)
        finally:
            await model.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("topology", ["workers_manager", "chain", "map_reduce"])
def test_kv_retrieval_is_exact_for_every_topology(topology: str) -> None:
    with ScriptedLLM(PaperRules()) as server:
        async def all_items(model):
            return [await longctx_answer(task=it["input"].strip(), text=it["context"], task_kind="retrieval",
                                         topology=topology, chunk_tokens=900, overlap_tokens=60, llm=model)
                    for it in KV]

        results = run(server, all_items)
    assert [r.answer for r in results] == [it["answer"] for it in KV]
    for r in results:
        assert r.chunks_read == r.chunks_total >= 2 and not r.chunks_failed
        assert f"Read {r.chunks_total} of {r.chunks_total} chunks" in r.summary


def test_manager_is_warned_and_sees_only_non_na_reports() -> None:
    item = KV[-1]
    with ScriptedLLM(PaperRules()) as server:
        r = run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", chunk_tokens=600, llm=m))
        manager = [last_user(b) for b in server.requests if last_user(b).startswith("Reports from")]
    assert r.answer == item["answer"] and r.chunks_with_answer == 1 and r.chunks_na == r.chunks_total - 1
    assert len(manager) == 1
    assert "Most workers did not have the information and answered NA" in manager[0]
    assert item["answer"] in section(manager[0], "reports")
    assert "Workers that answered NA: parts" in manager[0]


def test_failed_chunk_is_reported_never_dropped() -> None:
    item = KV[0]  # the key sits in the first part, whose call fails
    with ScriptedLLM(PaperRules(), faults=[500]) as server:
        r = run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", chunk_tokens=600, concurrency=1, llm=m),
                max_retries=0)
    assert [f.part for f in r.chunks_failed] == [1]
    assert "HTTP 500" in r.chunks_failed[0].error
    assert r.chunks_read == r.chunks_total - 1
    assert "1 failed (parts 1)" in r.summary
    assert any("could not be read: parts 1" in n for n in r.notes)
    assert r.answer == "NA"


def test_retried_faults_still_read_every_chunk() -> None:
    item = KV[5]
    with ScriptedLLM(PaperRules(), faults=[429, 500, "timeout"], retry_after_s=0.01, stall_s=10) as server:
        r = run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", chunk_tokens=600, llm=m),
                timeout_s=1.0, max_retries=3)
        assert len(server.requests) == r.llm_calls + 3
    assert r.answer == item["answer"] and not r.chunks_failed


def test_all_chunks_failing_raises() -> None:
    with ScriptedLLM(PaperRules(), faults=[500] * 50) as server, pytest.raises(UpstreamError, match="All 2 chunk"):
        run(server, lambda m: longctx_answer(task="Key: \"x\"", text=KV[0]["context"], task_kind="retrieval",
                                             chunk_tokens=700, llm=m), max_retries=0)


def test_progress_per_chunk_and_cancellation() -> None:
    item = KV[4]
    seen: list[tuple[float, float | None, str | None]] = []
    with ScriptedLLM(PaperRules()) as server:
        r = run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", chunk_tokens=500,
                                                 progress=Progress(lambda *a: seen.append(a)), llm=m))
    n = r.chunks_total
    assert [s[0] for s in seen] == list(range(n + 2))
    assert all(s[1] == n + 1 for s in seen)
    assert sum(1 for s in seen if s[2] and s[2].startswith("worker ")) == n

    progress = Progress()
    updates = []

    def on_update(done, total, message):
        updates.append(done)
        if done >= 2:
            progress.cancel()

    progress._callback = on_update
    with ScriptedLLM(PaperRules(), latency_s=0.05) as server:
        with pytest.raises(Cancelled):
            run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", chunk_tokens=500, concurrency=1,
                                                 progress=progress, llm=m))
        assert len(server.requests) < n  # the remaining chunks were never sent


def test_count_is_exact_in_code_with_overlap_forced_to_zero() -> None:
    text = BOOK[:30_000]
    expected = text.count("Alice")
    task = 'Count the occurrences of "Alice".'
    with ScriptedLLM(PaperRules()) as server:
        r = run(server, lambda m: longctx_answer(task=task, text=text, task_kind="aggregation", aggregate="count",
                                                 chunk_tokens=1500, overlap_tokens=200, llm=m))
    assert r.answer == str(expected) and r.aggregator == "code" and r.overlap_tokens == 0
    assert r.chunks_total > 3


@pytest.mark.parametrize(("aggregate", "word"), [("min", "smallest"), ("max", "largest")])
def test_min_max_in_code(aggregate: str, word: str) -> None:
    values = [37, 5, 912, 44, 3, 780, 61]
    paras = BOOK[:21_000].split("\n\n")
    step = len(paras) // len(values)
    for i, v in enumerate(values):
        paras[i * step] += f"\n\nThe gauge showed reading {v} that day."
    text = "\n\n".join(paras)
    task = f'Report the {word} of the values after "reading".'
    with ScriptedLLM(PaperRules()) as server:
        r = run(server, lambda m: longctx_answer(task=task, text=text, task_kind="aggregation", aggregate=aggregate,
                                                 chunk_tokens=300, overlap_tokens=20, llm=m))
    assert r.answer == str(min(values) if aggregate == "min" else max(values))


def test_qa_passage_at_depth_in_a_book() -> None:
    rules = PaperRules()
    item = NQ[0]
    rules.register_qa(item["question"], item["passage"], item["answers"][0])
    hay = BOOK[:60_000]
    cut = hay.find("\n\n", len(hay) // 2) + 2
    text = hay[:cut] + item["title"] + "\n" + item["passage"] + "\n\n" + hay[cut:]
    with ScriptedLLM(rules) as server:
        r = run(server, lambda m: longctx_answer(task=item["question"], text=text, task_kind="qa",
                                                 chunk_tokens=2000, overlap_tokens=300, llm=m))
    assert substring_match(r.answer, item["answers"])
    assert r.chunks_with_answer >= 1 and r.evidence[0].start_char <= cut < r.evidence[0].end_char


def test_planner_instruction_reaches_workers() -> None:
    item = KV[2]
    with ScriptedLLM(PaperRules()) as server:
        r = run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", chunk_tokens=700, planner=True, llm=m))
        workers = [last_user(b) for b in server.requests if last_user(b).startswith("Part ")]
    assert r.planner_instruction and r.planner_instruction.startswith("Report exactly")
    assert all(r.planner_instruction in w for w in workers)
    assert r.answer == item["answer"] and r.llm_calls == r.chunks_total + 2


def _collapse_rule(body):
    p = last_user(body)
    if p.startswith("Part "):
        part = int(re.match(r"Part (\d+)", p).group(1))
        filler = " ".join(["detail"] * 120)
        return (f"Extracted information: {filler}\nRationale: part {part}\nAnswer: candidate-{part}\n"
                f"Confidence: {5 if part == 3 else 1}")
    best, conf = "NA", -1
    for block in section(p, "results").split("\n\n"):
        a, c = prompts.parse_structured(block)
        if a != "NA" and c > conf:
            best, conf = a, c
    if p.startswith("Final"):
        return best
    return f"Extracted information: merged\nRationale: merged\nAnswer: {best}\nConfidence: {conf}"


def test_map_reduce_collapses_and_keeps_the_most_confident_answer() -> None:
    with ScriptedLLM(_collapse_rule) as server:
        r = run(server, lambda m: longctx_answer(task="Which candidate?", text=BOOK[:12_000], topology="map_reduce",
                                                 chunk_tokens=600, overlap_tokens=0, llm=m))
    assert r.chunks_total >= 4
    assert r.collapse_rounds >= 1
    assert r.answer == "candidate-3"


def test_single_shot_reads_whole_text() -> None:
    item = KV[1]
    with ScriptedLLM(PaperRules(alpha=0.0)) as server:
        r = run(server, lambda m: longctx_single_shot(task=item["input"].strip(), text=item["context"],
                                                      task_kind="retrieval", llm=m))
        assert len(server.requests) == 1 and item["context"] in last_user(server.requests[0])
    assert r.answer == item["answer"] and r.text_tokens > 900


def test_bad_input_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedLLM(PaperRules()) as server:
        def ask(**kw):
            return run(server, lambda m: longctx_answer(llm=m, **({"task": "q"} | kw)))

        with pytest.raises(InvalidInput, match="empty"):
            ask(text="   \n ")
        with pytest.raises(InvalidInput, match="No text"):
            ask()
        with pytest.raises(InvalidInput, match="template"):
            ask(text=BOOK[:5000], chunk_tokens=100)
        with pytest.raises(InvalidInput, match="aggregate"):
            ask(text="x", task_kind="aggregation")
        with pytest.raises(NotFound, match="cl100k_base"):
            ask(text="x", encoding="cl100k")
        with pytest.raises(NotFound):
            ask(path="sample://longctx/missing.txt")
        monkeypatch.setenv("RESEARCH_MCP_LONGCTX__MAX_TEXT_CHARS", "1000")
        reload_settings()
        with pytest.raises(LimitExceeded, match="RESEARCH_MCP_LONGCTX__MAX_TEXT_CHARS"):
            ask(text=BOOK[:5000])
        monkeypatch.setenv("RESEARCH_MCP_LONGCTX__MAX_TEXT_CHARS", "4000000")
        monkeypatch.setenv("RESEARCH_MCP_LONGCTX__MAX_SINGLE_SHOT_TOKENS", "500")
        reload_settings()
        with pytest.raises(LimitExceeded, match="MAX_SINGLE_SHOT_TOKENS"):
            run(server, lambda m: longctx_single_shot(task="q", text=BOOK[:5000], llm=m))
        assert server.requests == []
    with pytest.raises(NotConfigured, match="OPENAI_BASE_URL"):
        asyncio.run(longctx_answer(task="q", text=BOOK[:5000]))


def test_templates_cover_every_kind_and_stage() -> None:
    for kind in prompts.TASK_KINDS:
        spec = prompts.TaskSpec("find it", kind, "count" if kind == "aggregation" else None)  # type: ignore[arg-type]
        for msgs in (prompts.single_shot(spec, "T"), prompts.worker(spec, "T", 1, 3),
                     prompts.manager(spec, [(1, "x")], 3, [2], [3]), prompts.chain_step(spec, "T", 1, 3, "n"),
                     prompts.chain_final(spec, "n", 3), prompts.map_step(spec, "T", 1, 3),
                     prompts.collapse_step(spec, [("a", "b")]), prompts.reduce_step(spec, [("a", "b")]),
                     prompts.planner(spec, 3)):
            assert "Task: find it" in msgs[-1].content
            assert "{" not in msgs[-1].content.replace("{a", "")
    assert prompts.is_na("NA") and prompts.is_na(" n/a.") and prompts.is_na("") and not prompts.is_na("Nairobi")
    assert prompts.parse_number("Result: 1,234") == 1234 and prompts.parse_number("12") == 12
    assert prompts.parse_number("twelve") is None
    assert prompts.compress_ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    assert normalize("The Wilhelm  Röntgen!") == "wilhelm röntgen"


def test_chain_carries_notes_past_a_failed_step_and_names_it() -> None:
    item = KV[7]  # the key sits near the end, after the failed first step
    with ScriptedLLM(PaperRules(), faults=[500]) as server:
        r = run(server, lambda m: longctx_answer(task=item["input"].strip(), text=item["context"],
                                                 task_kind="retrieval", topology="chain", chunk_tokens=900, llm=m),
                max_retries=0)
        final = [last_user(b) for b in server.requests if last_user(b).startswith("Notes gathered")]
    assert [f.part for f in r.chunks_failed] == [1]
    assert r.answer == item["answer"]
    assert "Parts 1 could not be read" in final[0]


def _summary_rule(body):
    p = last_user(body)
    if p.startswith("Part "):
        part = re.match(r"Part (\d+)", p).group(1)
        return f"Part {part} begins: {' '.join(section(p, 'text').split()[:4])}"
    reports = re.findall(r"Worker \d+ \(part \d+\): (.*)", section(p, "reports"))
    return " / ".join(reports)


def test_summarization_manager_gets_every_report_in_order() -> None:
    text = BOOK[:9_000]
    with ScriptedLLM(_summary_rule) as server:
        r = run(server, lambda m: longctx_answer(task="Summarize the opening.", text=text, task_kind="summarization",
                                                 chunk_tokens=800, overlap_tokens=0, llm=m))
    parts = r.answer.split(" / ")
    assert [p.split()[1] for p in parts] == [str(i) for i in range(1, r.chunks_total + 1)]
    assert r.chunks_with_answer == r.chunks_total and r.aggregator == "llm"


@pytest.mark.parametrize(("reply", "answer", "na"), [
    ("Evidence: The Rabbit took out a watch out of its waistcoat-pocket.\nAnswer: watch", "watch", False),
    ("Answer: NA", "NA", True),
    ('NA\nEvidence: The text states "There was nothing so very remarkable in that"', None, True),
    ("**Answer:** DRINK ME", "DRINK ME", False),
    ("a watch", "a watch", False),
    ("Evidence: none of it\nanswer:   n/a", "n/a", True),
])
def test_an_instruct_models_labelled_answer_is_read_and_na_recognised(reply: str, answer: str | None,
                                                                      na: bool) -> None:
    """The replies are those the embedded Qwen2.5-Coder 1.5B wrote to the worker prompts."""
    got = prompts.labelled_answer(reply)
    if answer is not None:
        assert got == answer
    assert prompts.is_na(got) is na


def test_workers_that_label_their_answers_reach_the_manager_and_its_label_is_dropped() -> None:
    text = " ".join(["Filler sentence about nothing in particular."] * 300) + " The code word is heron. " + \
        " ".join(["More filler about other things entirely."] * 300)

    def reply(body: dict) -> str:
        user = last_user(body)
        if user.startswith("Reports from"):
            return "Answer: heron" if "heron" in user else "Answer: NA"
        part = section(user, "text")
        if "heron" in part:
            return "Evidence: The code word is heron.\nAnswer: heron"
        return "Answer: NA"

    with ScriptedLLM(reply) as server:
        r = run(server, lambda m: longctx_answer(task="What is the code word?", text=text, task_kind="qa",
                                                 chunk_tokens=800, overlap_tokens=0, llm=m))
    assert r.answer == "heron"
    assert r.chunks_with_answer == 1 and r.chunks_na == r.chunks_total - 1 >= 2
