"""`python -m evals.scale --quick` runs the single-process path, 1 worker and 2 workers for both jobs and finds
their outputs identical."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, server_env


def test_scale_benchmark_quick() -> None:
    proc = subprocess.run([sys.executable, "-m", "evals.scale", "--quick"], cwd=REPO, env=server_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 workers / 1 worker" in proc.stdout
    written = Path(proc.stdout.strip().splitlines()[-1].removeprefix("results: "))
    assert written == Path(server_env()["RESEARCH_MCP_OUTPUT_DIR"]).resolve() / "scale_quick.json"
    result = json.loads(written.read_text())
    rows = result["rows"]
    assert [(r["job"], r["path"]) for r in rows] == [
        (job, path) for job in ("dti", "eo") for path in ("single process", "1 worker", "2 workers")]
    assert all(r["identical_to_single_process"] for r in rows)
    assert [len(r["worker_peak_mb"]) for r in rows] == [0, 1, 2, 0, 1, 2]
    assert all(r["seconds"] > 0 and r["caller_peak_mb"] > 0 for r in rows)


def test_an_in_process_run_gives_the_caller_its_environment_back(monkeypatch, isolated_settings: Path) -> None:
    import os

    from evals.scale import run as scale
    from tools.paths import output_dir

    seen = {}
    monkeypatch.setattr(scale, "one", lambda job, workers, path: seen.setdefault("out", str(output_dir())) and {})
    monkeypatch.delenv("SCALE_KEEP_CLUSTER", raising=False)
    env = dict(os.environ) | {"RESEARCH_MCP_OUTPUT_DIR": str(isolated_settings.parent / "scratch"),
                              "SCALE_KEEP_CLUSTER": "1"}
    assert scale._run("dti", 0, isolated_settings, env, in_process=True) == {}
    assert seen["out"] == str(isolated_settings.parent / "scratch")  # the run saw its own folder
    assert output_dir() == isolated_settings and "SCALE_KEEP_CLUSTER" not in os.environ
