"""The longctx eval against the scripted endpoint: chunked KV retrieval is exact at every length."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evals.longctx.run import SHARED, main


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


@pytest.mark.skipif(not (SHARED / "divideconquer_kv" / "kv_15000.jsonl").is_file(),
                    reason="the full D&C key-value sets live in ../shared/data/longctx beside the repository")
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
    fits = json.loads((again / "noise.json").read_text())["fits"]
    assert {"kv", "kv/chain", "kv/workers_manager"} <= set(fits)


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
