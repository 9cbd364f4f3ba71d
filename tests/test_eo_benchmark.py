"""The EO benchmark's --quick variant runs end to end (speed figures are printed, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.eo.run import main


def test_quick_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--size", "600", "--out", str(tmp_path / "bench")]) == 0
    text = capsys.readouterr().out
    assert "peak RSS ratio ours / whole-array numpy" in text
    assert "max |ours - whole-array| = 0.00e+00" in text  # the same NDVI as the whole-array computation
    assert (tmp_path / "bench" / "ndvi-benchmark-600.csv").exists()
