"""The perf benchmark (`research-mcp eval perf`): each benchmark runs and both sides of each comparison give the
same outputs. No timed assertions: the figures are printed by the benchmark, not judged here."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from evals.perf import run as perf
from server.registry import count_values

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "rdkit", "rasterio", "transformers", "dask", "pandas", "sklearn", "langchain", "networkx")


def test_building_the_server_imports_no_heavy_library() -> None:
    code = ("import sys, server.app; server.app.build_server(); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _reference_count(v: object) -> int:
    if isinstance(v, dict):
        return 1 + sum(_reference_count(x) for x in v.values())
    if isinstance(v, list | tuple):
        return 1 + sum(_reference_count(x) for x in v)
    return 1


@pytest.mark.parametrize("value", [
    0, "s", [], {}, [[]], {"a": [1, 2, {"b": None}], "c": "x"},
    {"edges": [[i, i + 1, 0.5] for i in range(50)], "nodes": list(range(51)), "directed": False},
    [[[[]]], [{}], (1, (2, 3))],
])
def test_count_values_counts_every_container_and_leaf(value: object) -> None:
    assert count_values(value, 10**9) == _reference_count(value)


def test_count_values_stops_past_the_limit() -> None:
    value = [list(range(100)) for _ in range(100)]
    assert count_values(value, 50) > 50
    assert count_values(value, 10**6) == 1 + 100 * 101


def test_goal_is_judged_on_ratio_or_on_ours() -> None:
    assert perf.row("r", 1.1, 1.0, "ms", "<= 1.2x", "", True)["met"] is True
    assert perf.row("r", 1.3, 1.0, "ms", "<= 1.2x", "", True)["met"] is False
    assert perf.row("a", 60.0, 1.0, "ms", "<= 50 ms", "", None)["met"] is False
    assert perf.row("a", 40.0, 100.0, "ms", "<= 50 ms", "", None)["met"] is True
    assert perf.judge({"goal": ">= 2x", "ratio": 3.0}) is True
    assert perf.judge({"goal": "<= 1.2x", "ratio": math.nan}) is False


def test_a_family_row_lacking_keys_or_a_missing_module_becomes_a_failed_row() -> None:
    bad = perf.normalise({"target": "t", "ours": 1.0}, "x rows")
    assert bad["met"] is False and bad["limit"].startswith("FAILED") and "baseline" in bad["limit"]
    good = perf.normalise({"target": "t", "ours": 2.0, "baseline": 4.0, "unit": "s", "goal": "<= 1x", "limit": "io",
                           "same_output": True}, "x rows")
    assert good["ratio"] == 0.5 and good["met"] is True
    rows = perf.family_rows("nowhere", True, modules=("evals.no_such_module", "json"))
    assert len(rows) == 1 and rows[0]["limit"].startswith("FAILED")
    assert "evals.no_such_module" in rows[0]["limit"] and "json (no perf_rows)" in rows[0]["limit"]


def test_quick_run_gives_every_own_row_with_the_same_outputs_on_both_sides(tmp_path: Path) -> None:
    rc = perf.main(["--quick", "--only", *perf.OWN, "--out", str(tmp_path)])
    assert rc == 0
    with open(tmp_path / "perf_quick.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    targets = [r["target"] for r in rows]
    assert len(rows) == 5, targets
    assert any(t.startswith("MCP call latency") for t in targets)
    assert any(t.startswith("tools/list latency") for t in targets)
    assert sum(t.startswith("Server start-up") for t in targets) == 2  # from the schema cache, every tool built
    assert any(t.startswith("Chunked QA") for t in targets)
    for r in rows:
        assert not r["limit"].startswith("FAILED"), r
        assert float(r["ours"]) > 0 and float(r["baseline"]) > 0
        assert math.isclose(float(r["ratio"]), float(r["ours"]) / float(r["baseline"]), rel_tol=1e-9)
        assert r["same_output"] in ("True", ""), r  # "" where the row compares no outputs (start-up)
    assert sum(r["same_output"] == "True" for r in rows) == 3
    md = (tmp_path / "perf_quick.md").read_text(encoding="utf-8")
    assert "load average" in md and "CPUs:" in md and md.count("\n|") >= 6
    assert (tmp_path / "perf_quick.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left behind


def test_family_rows_subprocess_returns_rows_as_json(tmp_path: Path) -> None:
    mod = tmp_path / "perf_rows_probe.py"
    mod.write_text("def perf_rows(quick):\n    return [{'target': 'probe', 'ours': 1.0, 'baseline': 2.0, 'unit': 's', "
                   "'goal': '<= 1x', 'limit': 'none', 'same_output': quick}]\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "evals.perf.run", "--family", "probe", "--modules", "perf_rows_probe",
                          "--quick"], cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
                         env={**perf._server_env(), "PYTHONPATH": f"{tmp_path}:{REPO}"})
    line = next(x for x in out.stdout.splitlines() if x.startswith(perf.MARK))
    (r,) = json.loads(line[len(perf.MARK):])
    assert r["target"] == "probe" and r["ratio"] == 0.5 and r["met"] is True and r["same_output"] is True


def test_a_quick_run_writes_under_the_output_folder_and_leaves_the_results_alone(
        monkeypatch: pytest.MonkeyPatch, isolated_settings: Path) -> None:
    row = perf.row("probe", 1.0, 2.0, "s", "<= 1x", "none", True)
    monkeypatch.setattr(perf, "run_all", lambda quick, only: ([row], ["probe run"]))
    before = {p.name: p.read_bytes() for p in perf.RESULTS.iterdir()}
    assert perf.main(["--quick"]) == 0
    written = isolated_settings / "eval-perf"
    assert sorted(p.name for p in written.iterdir()) == ["perf_quick.csv", "perf_quick.md", "perf_quick.png"]
    assert {p.name: p.read_bytes() for p in perf.RESULTS.iterdir()} == before
