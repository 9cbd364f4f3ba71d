"""The DTI eval's quick variant: trains, compares with the baseline, writes table and plot, screens."""

import csv

import pytest

from evals.dti.data import SHARED, folds, load_dtiam
from evals.dti.run import main, make_library


def test_quick_eval_writes_table_png_and_benchmark(tmp_path, monkeypatch):
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_DIR", str(tmp_path / "out"))
    from tools.settings import reload_settings

    reload_settings()
    try:
        assert main(["--quick", "--screen", "1500", "--out", str(tmp_path)]) == 0
    finally:
        monkeypatch.delenv("RESEARCH_MCP_OUTPUT_DIR")
        reload_settings()
    with open(tmp_path / "dti_results.csv") as fh:
        rows = list(csv.DictReader(fh))
    methods = {r["method"] for r in rows}
    assert {"GRAM-DTI (this project)", "GB baseline (ECFP4 + AAC)", "ablation: no_volume_loss"} <= methods
    assert all(0.0 <= float(r["auroc_mean"]) <= 1.0 for r in rows)
    assert (tmp_path / "dti_results.png").stat().st_size > 5000
    md = (tmp_path / "dti_results.md").read_text()
    assert "speedup_vs_per_pair_loop" in md and "| bindingdb_sample |" in md


def test_generated_library_is_distinct_and_sized():
    lib = make_library(5000, ["CCO", "c1ccccc1", "CC(=O)O"])
    assert len(lib) == len(set(lib)) == 3 * 20 * 10  # seeds x prefixes x suffixes caps the size
    assert make_library(7, ["CCO", "CCN"])[:2] == ["CCO", "CCN"]


@pytest.mark.skipif(not (SHARED / "dtiam").exists(), reason="DTIAM benchmark files are not beside the repository")
def test_dtiam_protocol_negatives_and_cold_folds():
    ps = load_dtiam("yamanishi_08", seed=0)
    pos = int(ps.y.sum())
    assert pos == 5127 and len(ps.y) == 11 * pos  # 10 sampled negatives per positive
    pairs = set(zip(ps.drug_ids.tolist(), ps.target_ids.tolist(), strict=True))
    assert len(pairs) == len(ps.y)  # negatives are unobserved pairs, never duplicates of positives
    tr, te = next(folds(ps, "drug_cold", 10))
    assert not set(ps.drug_ids[tr]) & set(ps.drug_ids[te])
    tr, te = next(folds(ps, "target_cold", 10))
    assert not set(ps.target_ids[tr]) & set(ps.target_ids[te])
    tr, te = next(folds(ps, "both_cold", 10))
    assert not set(ps.drug_ids[tr]) & set(ps.drug_ids[te]) and not set(ps.target_ids[tr]) & set(ps.target_ids[te])
    tr, te = next(folds(ps, "warm", 10))
    assert len(te) == pytest.approx(len(ps.y) / 10, abs=1)
