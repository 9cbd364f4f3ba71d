"""The agent suite in CI: the scripted oracle follows each expected chain through the real agent and tools."""

from __future__ import annotations

import csv
from pathlib import Path

from evals.agents.metrics import validate_chains
from evals.agents.run import main
from evals.agents.suite import STYLES, all_tasks


def test_suite_has_both_styles_and_enough_tasks_with_independent_answers():
    tasks = all_tasks()
    assert len(tasks) >= 30 and sum(t.family == "eo" for t in tasks) >= 15
    assert len({t.family for t in tasks}) >= 4
    for t in tasks:
        goal, steps = t.question("goal"), t.question("instruction")
        assert steps.startswith(goal) and "Follow these steps" in steps and "Follow" not in goal
        assert t.expected.kind in ("number", "choice", "text")
        if t.expected.kind == "choice":
            assert t.expected.value in (t.options or {})


def test_every_expected_tool_is_one_the_server_exposes():
    from server.registry import load_specs

    names = [s.name for s in load_specs()]
    families = {n.split("_")[0] for n in names}
    chains = {t.id: t.expected_calls() for t in all_tasks() if t.family in families}
    assert chains and validate_chains(chains, names) == {}


def test_quick_suite_runs_end_to_end_with_the_oracle(tmp_path: Path, capsys):
    assert main(["--quick", "--policy", "oracle", "--styles", "goal", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert len(rows) == 5 and {r["style"] for r in rows} == {"goal"}
    # the oracle takes each expected chain, so every trajectory metric is 1, and its answers, read from the
    # tools' results, agree with the independent reference answers
    for r in rows:
        assert r["missing"] == "False"
        assert float(r["parameter"]) == 1.0 and float(r["in_order"]) == 1.0, r
        assert float(r["accuracy"]) == 1.0, r
    assert (tmp_path / "metrics.png").stat().st_size > 1000
    assert "| all / goal | 5 |" in (tmp_path / "summary.md").read_text()
    assert set(STYLES) == {"instruction", "goal"}
