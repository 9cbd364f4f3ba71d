"""The graph eval's --quick run against a scripted endpoint that answers with networkx (wrong on purpose
on one format, silent under one scheme), so every accuracy it reports is known in advance."""

import csv
import json

import pytest

from evals.graph.run import QUICK, main
from evals.graph.scripted import solver_rule
from tests.scripted_llm import ScriptedLLM


def test_quick_benchmark_reports_the_known_accuracies(tmp_path, capsys):
    out = tmp_path / "eval"
    with ScriptedLLM(solver_rule(wrong_formats=("edge_list",), mute_schemes=("none",))) as llm:
        assert main(["--quick", "--base-url", llm.base_url, "--model", "scripted", "--out", str(out)]) == 0
        n_requests = len(llm.requests)
    summary = json.loads((out / "summary.json").read_text())
    n = len(QUICK["tasks"]) * len(QUICK["formats"]) * len(QUICK["schemes"]) * QUICK["per_cell"]
    assert summary["overall"]["n"] == n == n_requests
    by = summary["by"]
    assert by["format"]["edge_list"]["accuracy"] == 0.0
    assert by["format"]["adjacency_set"]["accuracy"] == by["format"]["friendship"]["accuracy"] == 2 / 3
    assert by["scheme"]["none"]["extraction_rate"] == 0.0
    assert by["scheme"]["LTM"]["accuracy"] == by["scheme"]["CoT"]["accuracy"] == 2 / 3
    assert 0 < summary["overall"]["random_baseline"] < 0.5
    assert summary["overall"]["mean_prompt_tokens"] > 0
    rows = list(csv.DictReader((out / "factors.csv").open()))
    assert {r["factor"] for r in rows} == {"task", "generator", "format", "scheme", "difficulty"}
    assert (out / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "accuracy / random" in capsys.readouterr().out


def test_quick_optimizer_live_reports_cost_and_rate(tmp_path, capsys):
    out = tmp_path / "opt"
    with ScriptedLLM(solver_rule(wrong_formats=("edge_list",), mute_schemes=("none",))) as llm:
        assert main(["--quick", "--optimize", "--task", "connectivity", "--batch", "1", "--base-url", llm.base_url,
                     "--out", str(out)]) == 0
    res = json.loads((out / "optimize.json").read_text())
    assert res["best_format"] != "edge_list" and res["best_scheme"] != "none"
    assert res["rate"] == 1.0 and res["cost"] <= 0.5
    assert "Rate 1.000" in capsys.readouterr().out


def test_overhead_benchmark_runs_and_reports_ratios(tmp_path, capsys):
    assert main(["--overhead", "--calls", "3", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "overhead.json").read_text())
    assert [c["graph_nodes"] for c in report["cases"]] == [20, 200]
    assert all(c["in_memory_ratio"] > 0 for c in report["cases"])
    assert "in-memory MCP" in capsys.readouterr().out


def test_graphomni_prompts_quick_scored_against_graph_info(tmp_path, capsys):
    # The scripted model reads the Adjacency Set GraphOmni showed and answers with networkx: right wherever
    # the shown graph is graph_info (every task but the relabelled shortest-path records).
    with ScriptedLLM(solver_rule(wrong_formats=(), mute_schemes=())) as llm:
        assert main(["--graphomni", "--quick", "--base-url", llm.base_url, "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "graphomni_summary.json").read_text())
    assert summary["records"] == 60
    for task, a in summary["by_task"].items():
        if task != "shortest_path":
            assert a["accuracy"] == 1.0, task


def test_optimizer_table_study_quick(tmp_path):
    assert main(["--table", "--quick", "--out", str(tmp_path)]) == 0
    study = json.loads((tmp_path / "optimizer_table.json").read_text())
    assert all(r["cost"] <= 0.25 for r in study)
    assert study[0]["rate"] == 1.0  # no interactions: the factor-wise search finds the best arm


def test_optimizer_on_measured_rows_matches_the_benchmark_and_exhaustive_search(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["--quick", "--scripted", "--out", str(out)]) == 0
    first = json.loads((out / "summary.json").read_text())
    again = tmp_path / "again"
    assert main(["--from-rows", str(out / "rows.csv"), "--budgets", "0.25", "1.0", "--out", str(again)]) == 0
    # the summary read back from rows.csv is the benchmark's own
    assert json.loads((again / "summary_from_rows.json").read_text())["by"] == first["by"]
    study = json.loads((again / "optimizer_measured.json").read_text())
    pooled = {r["budget"]: r for r in study if r["table"] == "all tasks"}
    # the scripted solver answers every task right on adjacency_set and friendship under LTM and CoT
    assert pooled[1.0]["exhaustive_accuracy"] == 1.0
    # adjacency_set under the anchor scheme CoT is one of the best cells, and the search starts there
    assert pooled[1.0]["chosen_accuracy"] == 1.0 and pooled[1.0]["rate"] == 1.0
    assert pooled[0.25]["arms_evaluated"] <= pooled[1.0]["arms_evaluated"] <= 9
    assert pooled[0.25]["cost"] <= 0.25 and pooled[0.25]["arms_total"] == 9
    assert pooled[0.25]["rate"] == pooled[0.25]["chosen_accuracy"] / pooled[0.25]["exhaustive_accuracy"]
    assert {r["table"] for r in study} == {"all tasks", *QUICK["tasks"]}
    assert "Rate" in capsys.readouterr().out


def _partial_lines(out):
    return (out / "rows.partial.jsonl").read_text(encoding="utf-8").splitlines()


def test_resume_asks_only_the_missing_questions_and_ends_with_the_uninterrupted_rows(tmp_path, capsys):
    rule = solver_rule(wrong_formats=("edge_list",), mute_schemes=("none",))
    full, stopped = tmp_path / "full", tmp_path / "stopped"
    with ScriptedLLM(rule) as llm:
        assert main(["--quick", "--base-url", llm.base_url, "--model", "scripted", "--out", str(full)]) == 0
        n = len(llm.requests)
    recorded = json.loads((full / "run.json").read_text())
    assert recorded == {"tasks": QUICK["tasks"], "generators": QUICK["generators"], "formats": QUICK["formats"],
                        "schemes": QUICK["schemes"], "difficulties": QUICK["difficulties"],
                        "per_cell": QUICK["per_cell"], "seed": 0, "k": 1, "samples": 1, "max_tokens": None,
                        "shuffle": False, "model": "scripted"}
    lines = _partial_lines(full)
    assert len(lines) == n == 54
    # a run killed after k answers, in the middle of writing answer k + 1
    k = 20
    stopped.mkdir()
    (stopped / "run.json").write_text((full / "run.json").read_text())
    (stopped / "rows.partial.jsonl").write_text("\n".join(lines[:k]) + "\n" + lines[k][: len(lines[k]) // 2])
    capsys.readouterr()
    with ScriptedLLM(rule) as llm:
        assert main(["--quick", "--base-url", llm.base_url, "--model", "scripted", "--resume",
                     "--out", str(stopped)]) == 0
        asked = [m["content"] for r in llm.requests for m in r["messages"] if m["role"] == "user"]
    assert len(asked) == n - k
    full_rows = list(csv.DictReader((full / "rows.csv").open()))
    assert (stopped / "rows.csv").read_text() == (full / "rows.csv").read_text()
    assert len(full_rows) == n and len({r["id"] for r in full_rows}) == n
    resumed = json.loads((stopped / "summary.json").read_text())
    assert resumed["by"] == json.loads((full / "summary.json").read_text())["by"]
    assert resumed["overall"]["n"] == n and resumed["resumed_rows"] == k
    # the cut-short line is gone and every question is in the partial file once
    again = [json.loads(line) for line in _partial_lines(stopped)]
    assert len(again) == n and {r["id"] for r in again} == {r["id"] for r in full_rows}
    assert f"resume: {k} of {n} questions answered" in capsys.readouterr().out


class _Stopped(Exception):
    pass


def test_stopped_shuffled_run_resumes_in_the_same_order(tmp_path, monkeypatch):
    from evals.graph.scripted import ScriptedSolver

    asked: list[str] = []
    stop_after: list[int | None] = [None]
    answer = ScriptedSolver.complete

    async def complete(self, messages, **options):
        if stop_after[0] is not None and len(asked) >= stop_after[0]:
            raise _Stopped("killed")
        asked.append(messages[-1].content)
        return await answer(self, messages, **options)

    monkeypatch.setattr(ScriptedSolver, "complete", complete)
    argv = ["--quick", "--scripted", "--shuffle", "--seed", "3", "--concurrency", "1"]
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    order = list(asked)
    asked.clear()
    assert main(["--quick", "--scripted", "--seed", "3", "--concurrency", "1", "--out", str(tmp_path / "plain")]) == 0
    assert sorted(asked) == sorted(order) and asked != order  # the shuffle changed the order, not the questions

    stopped = tmp_path / "stopped"
    asked.clear()
    stop_after[0] = 17
    with pytest.raises(_Stopped):
        main([*argv, "--out", str(stopped)])
    assert asked == order[:17] and len(_partial_lines(stopped)) == 17
    stop_after[0] = None
    asked.clear()
    assert main([*argv, "--resume", "--out", str(stopped)]) == 0
    assert asked == order[17:]
    assert (stopped / "rows.csv").read_text() == (tmp_path / "full" / "rows.csv").read_text()


def test_resume_with_other_options_is_refused_and_keeps_the_answers(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--quick", "--scripted", "--out", str(out)]) == 0
    before = (out / "rows.partial.jsonl").read_text()
    capsys.readouterr()
    assert main(["--quick", "--scripted", "--seed", "1", "--resume", "--out", str(out)]) == 2
    msg = capsys.readouterr().out
    assert "--resume: the run in" in msg and "seed: 0 there, 1 now" in msg
    assert "Repeat that run's options" in msg and "new --out" in msg
    assert (out / "rows.partial.jsonl").read_text() == before
    assert json.loads((out / "run.json").read_text())["seed"] == 0
    # without --resume the same options start afresh and record themselves
    assert main(["--quick", "--scripted", "--seed", "1", "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["seed"] == 1
    assert len(_partial_lines(out)) == 54


def test_quick_benchmark_on_the_small_embedded_model_is_scored_against_networkx(embedded_small_llm, tmp_path):
    """Four questions to Qwen2.5-Coder 0.5B: each row's score agrees with the answer networkx gives."""
    import re

    import networkx as nx

    from tools.graph.benchmark import check_levels, make_items

    levels = ["--tasks", "triangle", "connectivity", "--generators", "ERP", "--formats", "edge_list",
              "--schemes", "none", "--difficulties", "easy", "--per-cell", "2"]
    out = tmp_path / "small"
    assert main([*levels, "--max-tokens", "96", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "rows.csv").open()))
    items = {it.id: it for it in make_items(*check_levels(["triangle", "connectivity"], ["ERP"], ["edge_list"],
                                                          ["none"], ["easy"]), 2, 0, k=3)}
    assert sorted(r["id"] for r in rows) == sorted(items) and len(rows) == 4
    for r in rows:
        it = items[r["id"]]
        g = it.graph
        truth = (sum(nx.triangles(g).values()) // 3 if it.task == "triangle"
                 else nx.has_path(g, it.params["source"], it.params["target"]))
        said = re.findall(r"answer\s*:\s*\**\s*(\w+)", r["reply"], re.IGNORECASE)
        mine = None
        if said and it.task == "triangle" and said[-1].isdigit():
            mine = int(said[-1])
        elif said and said[-1].lower() in ("yes", "no"):
            mine = said[-1].lower() == "yes"
        if mine is not None:          # a plain last answer line is scored as networkx says it should be
            assert (r["correct"] == "True") == (mine == truth), r
        if r["correct"] == "True":
            assert (str(truth) if it.task == "triangle" else "yes" if truth else "no") in r["reply"].lower()
        assert int(r["prompt_tokens"]) > 50 and 0 < int(r["completion_tokens"]) <= 96
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "qwen2.5-coder-0.5b-instruct (embedded)" and summary["overall"]["n"] == 4
