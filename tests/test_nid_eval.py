"""The end-to-end NID experiment in its --quick form: every stage runs and writes its outputs."""

from __future__ import annotations

import json
from pathlib import Path

from evals.nid.run import main


def test_quick_eval(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    assert main(["--quick", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["members"] == summary["non_members"] > 0
    assert summary["audit"]["eps_lower_bound"] >= 0
    assert 0 <= summary["dataset_inference"]["members_p_ks"] <= 1
    assert len(summary["dp_runs"]) == 1 and summary["dp_runs"][0]["eps_add_remove"] > 0
    assert summary["dp_runs"][0]["eps_substitution"] == 2 * summary["dp_runs"][0]["eps_add_remove"]
    for png in ("roc.png", "rank_histogram.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["benchmark"]["ratio"] > 0
