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


def test_perf_rows_without_gdal_calc_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import math

    from evals.eo import run
    from evals.perf.run import KEYS, normalise

    monkeypatch.setattr(run.shutil, "which", lambda name: None)
    rows = run.perf_rows(quick=True)
    assert len(rows) == 4
    for r in rows:
        assert set(KEYS) <= set(r) and normalise(r, "eo")["limit"] == r["limit"]
    gdal_wall, gdal_cpu, io, rss = rows
    for r in (gdal_wall, gdal_cpu):
        assert "gdal_calc.py not found" in r["limit"] and math.isnan(r["ratio"]) and r["met"] is False
    assert io["baseline"] > 0 and io["ratio"] == pytest.approx(io["ours"] / io["baseline"])
    assert rss["same_output"] is True  # ours equals the whole-array NDVI pixel for pixel
