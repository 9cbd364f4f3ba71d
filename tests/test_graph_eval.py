"""The graph eval's --quick run against a scripted endpoint that answers with networkx (wrong on purpose
on one format, silent under one scheme), so every accuracy it reports is known in advance."""

import csv
import json

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
