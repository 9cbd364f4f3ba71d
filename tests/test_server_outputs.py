"""Output retention: the sweep deletes by age and quota, oldest first, and nothing outside the output folder."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tools.paths import MARKER, output_dir, sweep_outputs
from tools.settings import reload_settings

DAY = 86400.0


def _file(path: Path, size: int, age_days: float, now: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age_days * DAY, now - age_days * DAY))
    return path


def test_sweep_by_age_and_quota_oldest_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_RETENTION_DAYS", "10")
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_QUOTA_MB", "1")
    reload_settings()
    out = output_dir()
    assert (out / MARKER).is_file()
    now = time.time()
    mb = 1024 * 1024
    expired = _file(out / "old.tif", 1000, 11, now)
    oldest = _file(out / "sub" / "a.png", mb // 2, 5, now)
    middle = _file(out / "b.csv", mb // 2, 4, now)
    newest = _file(out / "c.json", mb // 4, 1, now)
    fresh = _file(out / ".d.1234.partial.tif", mb // 8, 0, now)  # a writer may still be filling it
    outside = _file(tmp_path / "elsewhere" / "keep.txt", mb, 400, now)
    (out / "link.txt").symlink_to(outside)

    report = sweep_outputs(now=now)
    assert not expired.exists()  # past the retention age
    assert not oldest.exists()  # quota: 1.375 MB -> oldest first until <= 1 MB
    assert middle.exists() and newest.exists() and fresh.exists()
    assert outside.exists() and (out / "link.txt").is_symlink()
    assert report.deleted == 2 and report.freed_bytes == 1000 + mb // 2
    assert (out / MARKER).is_file()


def test_a_folder_research_mcp_did_not_create_is_never_pruned(monkeypatch, tmp_path: Path) -> None:
    theirs = tmp_path / "their-files"
    now = time.time()
    precious = _file(theirs / "thesis.tex", 10, 3650, now)
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_DIR", str(theirs))
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_QUOTA_MB", "0.000001")
    reload_settings()
    report = sweep_outputs(now=now)
    assert precious.exists() and report.deleted == 0 and report.skipped
    assert not (theirs / MARKER).exists()


def test_zero_means_keep_everything(monkeypatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_RETENTION_DAYS", "0")
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_QUOTA_MB", "0")
    reload_settings()
    now = time.time()
    old = _file(output_dir() / "ancient.csv", 5000, 10_000, now)
    assert sweep_outputs(now=now).deleted == 0 and old.exists()
