"""The agent-suite comparison table, on hand-made results: the rates it prints are the counts in the files."""

from __future__ import annotations

import json
from pathlib import Path

from evals.agents.compare import main, rows_for


def _write(tmp: Path) -> tuple[Path, Path]:
    results = tmp / "results.csv"
    results.write_text(
        "task,family,style,any_order,in_order,exact_match,parameter,accuracy,efficiency,missing\n"
        "eo-a,eo,goal,1.0,1.0,0.5,0.0,1.0,1.0,False\n"
        "graph-b,graph,goal,0.0,0.0,0.0,0.0,0.0,0.0,False\n"
        "eo-a,eo,instruction,1.0,1.0,1.0,1.0,1.0,1.0,False\n", encoding="utf-8")
    runs = tmp / "runs.jsonl"
    rows = [{"task": "eo-a", "style": "goal", "calls": 3, "known_calls": 3, "valid_calls": 2, "steps": 4,
             "seconds": 30.0},
            {"task": "graph-b", "style": "goal", "calls": 0, "known_calls": 0, "valid_calls": 0, "steps": 1,
             "seconds": 10.0},
            {"task": "eo-a", "style": "instruction", "calls": 1, "known_calls": 1, "valid_calls": 1, "steps": 2,
             "seconds": 20.0}]
    runs.write_text("\n".join(json.dumps(r) for r in rows) + "\n{cut short", encoding="utf-8")
    return results, runs


def test_rates_are_the_counts_in_the_files(tmp_path: Path) -> None:
    results, runs = _write(tmp_path)
    goal = next(r for r in rows_for("m", results, [runs]) if r["style"] == "goal")
    assert goal["runs"] == 2 and goal["tool-call rate"] == 0.5          # one of two runs called a tool
    assert goal["known-tool"] == 1.0 and goal["valid args"] == 2 / 3    # over the 3 calls made
    assert goal["any_order"] == 0.5 and goal["exact_match"] == 0.25 and goal["accuracy"] == 0.5
    assert goal["acc eo"] == "1/1" and goal["acc graph"] == "0/1" and goal["acc dti"] == "-"
    assert goal["mean steps"] == 2.5 and goal["mean s"] == 20.0


def test_the_table_is_written_and_a_missing_file_is_refused(tmp_path: Path, capsys) -> None:
    import pytest

    results, runs = _write(tmp_path)
    out = tmp_path / "table.md"
    assert main(["--run", "model-x", str(results), str(runs), "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("| model | style | runs | tool-call rate |") and len(lines) == 4
    assert "| model-x | goal | 2 | 0.500 | 1.000 | 0.667 |" in lines[2]
    with pytest.raises(SystemExit) as exc:
        main(["--run", "m", str(tmp_path / "nope.csv")])
    assert exc.value.code == 2 and "no such file" in capsys.readouterr().err
