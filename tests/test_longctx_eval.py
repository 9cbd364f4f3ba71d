"""The longctx eval against the scripted endpoint: chunked KV retrieval is exact at every length."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evals.longctx.run import main


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as f:
        return list(csv.DictReader(f))


def test_quick_eval_runs_and_chunked_is_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--out", str(tmp_path)]) == 0
    rows = _rows(tmp_path)
    chunked = [r for r in rows if r["mode"] == "chunked"]
    assert {r["suite"] for r in chunked} == {"kv", "qa"}
    assert all(float(r["accuracy"]) == 1.0 for r in chunked)
    assert all(int(r["failed_chunks"]) == 0 for r in chunked)
    assert any(r["mode"] == "single_shot" for r in rows)
    result = json.loads((tmp_path / "noise.json").read_text())
    assert result["bench"]["max_in_flight"] == 8  # the 8 workers were in flight together
    printed = capsys.readouterr().out
    assert "ratio" in printed and "regime" in printed


@pytest.mark.shared_data("longctx/divideconquer_kv/kv_15000.jsonl")
def test_kv_sets_1k_to_16k_are_exact_when_chunked(tmp_path: Path) -> None:
    assert main(["--kv-items", "3", "--qa-lengths", "4000", "--qa-items", "1", "--no-single-shot", "--no-bench",
                 "--out", str(tmp_path)]) == 0
    kv = [r for r in _rows(tmp_path) if r["suite"] == "kv"]
    assert sorted(int(r["length"]) for r in kv) == [1000, 2000, 4000, 8000, 15000]
    assert all(float(r["accuracy"]) == 1.0 for r in kv)


def test_two_topologies_keep_per_item_rows_that_summarize_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["--kv-lengths", "1000", "2000", "--kv-items", "2", "--qa-items", "0", "--kv-chunk-tokens", "1000",
                 "--topology", "workers_manager", "chain", "--no-bench", "--out", str(out)]) == 0
    items = list(csv.DictReader((out / "rows.csv").open()))
    # 2 lengths x 2 items, each read by both topologies and single-shot
    assert len(items) == 12 and {r["topology"] for r in items} == {"workers_manager", "chain", ""}
    chunked = [r for r in items if r["mode"] == "chunked"]
    assert all(r["correct"] == "1" and int(r["calls"]) >= int(r["chunks"]) >= 2 for r in chunked)
    assert all(float(r["wall_s"]) >= 0 and int(r["prompt_tokens"]) > 0 for r in items)
    again = tmp_path / "again"
    assert main(["--from-rows", str(out / "rows.csv"), "--out", str(again)]) == 0
    assert _rows(again) == _rows(out)
    assert (again / "accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (again / "results.md").read_text().splitlines()[2:]
    assert len(table) == len(_rows(out))
    for line, r in zip(table, _rows(out), strict=True):
        n = int(r["items"])
        assert f"| {n} | {round(float(r['accuracy']) * n)}/{n} | {round(float(r['strict_accuracy']) * n)}/{n} |" in line
    fits = json.loads((again / "noise.json").read_text())["fits"]
    assert {"kv", "kv/chain", "kv/workers_manager"} <= set(fits)
    # rows split over two files (one per length) summarize as the whole; a cue probe's line only joins the plot
    parts = [tmp_path / "part1.csv", tmp_path / "part2.csv"]
    for part, length in zip(parts, ("1000", "2000"), strict=True):
        with part.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(items[0]))
            w.writeheader()
            w.writerows(r for r in items if r["length"] == length)
    cue = tmp_path / "cue_results.csv"
    cue.write_text("suite,length,mode,topology,items,tokens,accuracy\nkv-cue,1000,single_shot,,3,992,0.5\n")
    split = tmp_path / "split"
    assert main(["--from-rows", *map(str, parts), "--cue", str(cue), "--out", str(split)]) == 0
    assert _rows(split) == _rows(out)
    assert (split / "accuracy.png").read_bytes() != (again / "accuracy.png").read_bytes()


def test_several_questions_per_haystack_ask_keys_spread_over_it(tmp_path: Path) -> None:
    """Each question's gold answer is its key's value in the haystack's own JSON; the keys are spread over its
    positions; the scripted workers find every one of them."""
    from evals.longctx.run import haystack_pairs, kv_items, spread_positions

    assert spread_positions(10, 5) == [1, 3, 5, 7, 9] and spread_positions(3, 5) == [0, 1, 2]
    items = kv_items([1000, 2000], 2, 5)
    assert len(items) == 20 and len({it.text for it in items}) == 4
    for it in items:
        pairs = dict(haystack_pairs(it.text))
        key = it.task.split('"')[1]
        assert it.answers == [pairs[key]] and it.task.startswith(f'Key: "{key}"')
    first = [it for it in items if it.text == items[0].text]
    order = [k for k, _ in haystack_pairs(first[0].text)]
    picked = [order.index(it.task.split('"')[1]) for it in first]
    assert picked == sorted(picked) and picked[0] < len(order) / 4 and picked[-1] > 3 * len(order) / 4
    assert kv_items([1000], 2, 1)[0].task == kv_items([1000], 2)[0].task  # one question: the set's own key
    out = tmp_path / "run"
    assert main(["--kv-lengths", "1000", "--kv-items", "1", "--kv-questions", "4", "--qa-items", "0",
                 "--no-single-shot", "--no-bench", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "rows.csv").open()))
    assert len(rows) == 4 and all(r["correct"] == "1" for r in rows)


def test_strict_kv_score_credits_only_a_reply_whose_first_value_is_the_asked_one() -> None:
    from evals.longctx.run import strict_kv_match

    k1, v1 = "e3fd2257-8856-47eb-afde-469cada35873", "a5b422b9-be56-42b4-a1ee-b359630e0cde"
    k2, v2 = "1f02f19c-1fdc-446b-b2c5-1cf30ee61370", "b5255e92-ac99-4cb2-ac9e-02d6ccc64cad"
    task = f'Key: "{k2}"\nThe value associated with the specified key is:'
    copied_run = f'{{"{k1}": "{v1}", "{k2}": "{v2}"'  # a copy of the haystack's start: substring would credit it
    assert v2 in copied_run and not strict_kv_match(copied_run, task, v2)
    assert strict_kv_match(v2, task, v2)
    assert strict_kv_match(f'"{k2}": "{v2.upper()}"', task, v2)  # the asked key repeated first, any case
    assert not strict_kv_match(f"{v2[:-4]}", task, v2)  # a value cut by the token cap
    assert not strict_kv_match("NA", task, v2) and not strict_kv_match(f"{v1} or {v2}", task, v2)


def test_interleave_takes_haystacks_in_turn_across_lengths_and_keeps_each_haystacks_questions_together() -> None:
    from evals.longctx.run import interleave, kv_items

    items = kv_items([1000, 2000], 2, 3)
    order = interleave(items)
    assert sorted(map(id, order)) == sorted(map(id, items))
    texts = [it.text for it in order]
    runs = [t for i, t in enumerate(texts) if i == 0 or texts[i - 1] != t]
    assert len(runs) == 4 and len(set(runs)) == 4  # each haystack's 3 questions come together
    assert [next(it.length for it in order if it.text == t) for t in runs] == [1000, 2000, 1000, 2000]


def test_parallel_items_are_in_flight_together_and_score_as_one_at_a_time() -> None:
    import asyncio

    from evals.longctx.run import evaluate, kv_items
    from evals.longctx.scripted import PaperRules
    from tests.scripted_llm import ScriptedLLM
    from tools.llm import OpenAIChat

    items = kv_items([1000, 2000], 2, 2)

    def run(parallel: int) -> tuple[list[dict[str, object]], int]:
        with ScriptedLLM(PaperRules(alpha=0.5), latency_s=0.1) as server:
            model = OpenAIChat(base_url=server.base_url, api_key="x", model="scripted", concurrency=8)

            async def go() -> list[dict[str, object]]:
                try:
                    return await evaluate(model, items, {"kv": 1000}, [], True, parallel=parallel)
                finally:
                    await model.aclose()

            return asyncio.run(go()), server.max_active

    alone, alone_max = run(1)
    together, together_max = run(4)
    assert alone_max == 1 and together_max == 4
    key = lambda r: r["item"]  # noqa: E731
    pick = ("item", "length", "correct", "strict", "answer", "prompt_tokens")
    assert [{k: r[k] for k in pick} for r in sorted(together, key=key)] == [{k: r[k] for k in pick} for r in alone]


def test_cue_probe_fit_is_the_least_squares_power_law_of_the_losses() -> None:
    import math

    import numpy as np

    from evals.longctx.cue_probe import fit

    summary = [{"tokens": t, "accuracy": a, "items": 30} for t, a in ((1000, 0.9), (2000, 0.6), (4000, 0.3))]
    got = fit(summary)
    slope, intercept = np.polyfit(np.log([1000, 2000, 4000]), np.log([-math.log(a) for a in (0.9, 0.6, 0.3)]), 1)
    assert got["beta"] == pytest.approx(slope, rel=1e-9)
    assert got["alpha"] == pytest.approx(math.exp(intercept), rel=1e-9)
    assert got["superlinear"] is bool(slope > 1)
    assert "error" in fit([{"tokens": 1000, "accuracy": 0.5, "items": 30}])  # one length: nothing to fit


def test_quick_grid_on_the_small_embedded_model_reads_every_chunk_and_scores_the_gold_value(
        embedded_small_llm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two KV questions at 2K tokens to Qwen2.5-Coder 0.5B, single-shot and workers + manager over 1K chunks."""
    from evals.longctx.run import kv_items
    from tools.settings import reload_settings

    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_MAX_TOKENS", "64")
    reload_settings()
    assert main(["--endpoint", "settings", "--kv-lengths", "2000", "--kv-items", "1", "--kv-questions", "2",
                 "--qa-items", "0", "--topology", "workers_manager", "--no-bench", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "rows.csv").open()))
    items = kv_items([2000], 1, 2)
    assert len(rows) == 4 and {r["mode"] for r in rows} == {"single_shot", "chunked"}
    for r in rows:
        gold = items[int(r["item"])].answers[0]
        if len(r["answer"]) < 80:             # the row keeps a reply's first 80 characters
            assert r["correct"] == str(int(gold in r["answer"])), r
        assert 0 < int(r["completion_tokens"]) <= 64 * int(r["calls"])
        if r["mode"] == "chunked":             # every chunk read by a worker, then one manager call
            assert int(r["chunks"]) >= 2 and int(r["calls"]) == int(r["chunks"]) + 1
            assert int(r["prompt_tokens"]) > int(r["tokens"])
        else:
            assert int(r["calls"]) == 1 and int(r["prompt_tokens"]) > int(r["tokens"]) * 0.9
    assert json.loads((tmp_path / "noise.json").read_text())["model"] == "qwen2.5-coder-0.5b-instruct (embedded)"


def test_cue_probe_on_the_embedded_model_scores_exact_values_and_names_the_pair_that_came_back(
        embedded_small_llm: str, tmp_path: Path) -> None:
    from evals.longctx.cue_probe import main as probe_main
    from evals.longctx.run import haystack_pairs, kv_items

    assert probe_main(["--url", embedded_small_llm, "--lengths", "1000", "--haystacks", "1", "--questions", "2",
                       "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "cue_rows.csv").open()))
    haystack = kv_items([1000], 1, 2)[0].text
    pairs = haystack_pairs(haystack)
    keys = [k for k, _ in pairs]
    assert len(rows) == 2
    for r in rows:
        asked = keys.index(r["key"])
        assert r["correct"] == str(int(r["answer"] == pairs[asked][1]))
        if r["offset"]:
            assert pairs[asked + int(r["offset"])][1] == r["answer"]
        assert (r["offset"] == "0") == (r["correct"] == "1")
        assert int(r["prompt_tokens"]) > 1000 and 0 < int(r["completion_tokens"]) <= 48
    summary = list(csv.DictReader((tmp_path / "cue_results.csv").open()))
    assert float(summary[0]["accuracy"]) == sum(int(r["correct"]) for r in rows) / 2


def test_resume_asks_only_the_rows_a_stopped_run_lacks_and_refuses_other_settings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--kv-lengths", "1000", "2000", "--kv-items", "1", "--kv-questions", "2", "--qa-items", "0",
            "--topology", "workers_manager", "--interleave", "--no-bench", "--out", str(tmp_path)]
    assert main(args) == 0
    full = _rows(tmp_path)
    with (tmp_path / "rows.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8  # 4 questions x (workers_manager, single-shot)
    kept = rows[:5]
    kept[0]["answer"] = "kept, not asked again"
    with (tmp_path / "rows.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(kept)
    assert main([*args, "--resume"]) == 0
    with (tmp_path / "rows.csv").open() as f:
        resumed = list(csv.DictReader(f))
    assert len(resumed) == 8 and resumed[0]["answer"] == "kept, not asked again"
    assert sorted((r["item"], r["mode"], r["topology"]) for r in resumed) == sorted(
        (r["item"], r["mode"], r["topology"]) for r in rows)
    def timeless(summary: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{k: v for k, v in r.items() if k != "mean_wall_s"} for r in summary]

    assert timeless(_rows(tmp_path)) == timeless(full)
    capsys.readouterr()
    assert main([*args[:-2], "--kv-questions", "3", "--out", str(tmp_path), "--resume"]) == 2
    assert "kv_questions" in capsys.readouterr().out


def test_closed_book_control_asks_each_question_with_no_text_and_scores_it() -> None:
    import asyncio

    from evals.longctx.closed_book import closed_book
    from evals.longctx.run import nq_questions
    from tests.scripted_llm import ScriptedLLM, last_user_text
    from tools.llm import OpenAIChat

    questions = nq_questions(3)
    known = questions[0]["answers"][0]

    def rule(body: dict) -> str:
        return f"It was {known}." if questions[0]["question"] in last_user_text(body) else "I do not know."

    with ScriptedLLM(rule) as server:
        model = OpenAIChat(base_url=server.base_url, api_key="x", model="scripted")

        async def go() -> list[dict]:
            try:
                return await closed_book(model, questions)
            finally:
                await model.aclose()

        rows = asyncio.run(go())
        prompts = [last_user_text(b) for b in server.requests]
    assert [r["correct"] for r in rows] == [1, 0, 0]
    assert all("<text>\n\n</text>" in p for p in prompts)  # the single-shot prompt, its text left empty
    assert [sum(q["question"] in p for p in prompts) for q in questions] == [1, 1, 1]
    for q in questions:
        assert q["passage"][:40] not in "".join(prompts)


@pytest.mark.parametrize(("k", "n"), [(0, 30), (4, 30), (30, 30), (7, 12), (1, 1)])
def test_wilson_interval_matches_scipy(k: int, n: int) -> None:
    from scipy.stats import binomtest

    from evals.longctx.run import wilson_interval

    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_strict_qa_score_gives_no_credit_for_answers_the_question_contains() -> None:
    from evals.longctx.run import Item, _score, rescore_qa_rows
    from tools.errors import InvalidInput
    from tools.longctx.scoring import substring_match_beyond_question as beyond

    lithium = Item("qa", 1000, "what is the main mineral in lithium batteries", "t", ["Lithium", "lithium"], "qa")
    nobel = Item("qa", 1000, "who got the first nobel prize in physics", "t", ["Wilhelm Conrad Röntgen"], "qa")
    mixed = Item("qa", 1000, "what is the capital of new south wales", "t", ["Sydney", "New South Wales"], "qa")
    assert _score(lithium, "Lithium batteries are made of lithium.") == (1, 0)
    assert _score(nobel, "It was Wilhelm Conrad Röntgen, in 1901.") == (1, 1)
    assert _score(nobel, "Albert Einstein") == (0, 0)
    assert _score(mixed, "the capital of New South Wales") == (1, 0)
    assert _score(mixed, "Sydney, in New South Wales") == (1, 1)
    assert not beyond("oak island", ["Oak Island"], "where is the tv show the curse of oak island filmed")

    replies = ["lithium batteries", "Wilhelm Conrad Röntgen", "the capital of New South Wales", "Sydney"]
    items = [lithium, nobel, mixed, mixed]
    rows = [{"suite": "qa", "item": i, "length": 1000, "correct": 1, "strict": 1, "answer": a}
            for i, a in enumerate(replies)]
    rows.append({"suite": "kv", "item": 9, "length": 1000, "correct": 1, "strict": 1, "answer": "x"})
    rescore_qa_rows(rows, items + [mixed] * 6)
    assert [r["strict"] for r in rows] == [_score(it, a)[1] for it, a in zip(items, replies, strict=True)] + [1]
    assert [r["strict"] for r in rows] == [0, 1, 0, 1, 1]
    with pytest.raises(InvalidInput, match=r"run\.json"):
        rescore_qa_rows([{"suite": "qa", "item": 0, "length": 2000, "correct": 1, "answer": "x"}], items)


def test_from_rows_with_run_json_rescores_qa_rows_against_the_questions_that_run_asked(tmp_path: Path) -> None:
    from evals.longctx.run import build_items
    from evals.rows import write_rows_csv

    out = tmp_path / "run"
    assert main(["--kv-items", "0", "--qa-lengths", "1000", "2000", "--qa-items", "2", "--qa-chunk-tokens", "600",
                 "--interleave", "--no-bench", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "rows.csv").open()))
    items = build_items(json.loads((out / "run.json").read_text()))
    # interleaved as the run asked them: each question at 1K, then at 2K
    assert [it.length for it in items] == [1000, 2000, 1000, 2000]
    assert items[0].task == items[1].task != items[2].task == items[3].task
    assert all(int(r["strict"]) == int(r["correct"]) for r in rows)  # no answer of these questions is in them
    for r in rows:
        r["strict"] = "0"  # as a run whose strict score were wrong would have written them
    write_rows_csv(tmp_path / "wrong.csv", rows)
    again = tmp_path / "again"
    assert main(["--from-rows", str(tmp_path / "wrong.csv"), "--run-json", str(out / "run.json"),
                 "--out", str(again)]) == 0
    assert [r["strict_accuracy"] for r in _rows(again)] == [r["strict_accuracy"] for r in _rows(out)]
    assert any(float(r["strict_accuracy"]) > 0 for r in _rows(again))
