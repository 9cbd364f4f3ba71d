"""The DTI eval's quick variant: trains, compares with the baseline, writes table and plot, screens."""

import csv

import numpy as np
import pytest

from evals.dti.data import folds, load_dtiam
from evals.dti.run import GB_NEIGHBOURS, config_overrides, main, make_library, paired_bootstrap_delta


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
    assert {
        "GRAM-DTI (this project)",
        "GB baseline (ECFP4 + AAC)",
        GB_NEIGHBOURS,
        "ablation: no_volume_loss",
    } <= methods
    assert all(0.0 <= float(r["auroc_mean"]) <= 1.0 for r in rows)
    assert (tmp_path / "dti_results.png").stat().st_size > 5000
    md = (tmp_path / "dti_results.md").read_text()
    assert "speedup_vs_per_pair_loop" in md and "| bindingdb_sample |" in md


def test_config_overrides_are_typed_and_checked():
    got = config_overrides(["cold_simulation=0.5", "members=1", "neighbours=false", "fusion=mean", "modalities=a,b"])
    assert got == {
        "cold_simulation": 0.5,
        "members": 1,
        "neighbours": False,
        "fusion": "mean",
        "modalities": ("a", "b"),
    }
    with pytest.raises(SystemExit, match="FIELD=VALUE"):
        config_overrides(["colds=1"])
    with pytest.raises(SystemExit, match="FIELD=VALUE"):
        config_overrides(["members"])


def test_paired_bootstrap_delta():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.4
    good = y + rng.normal(0, 0.6, 300)
    noise = rng.normal(0, 1, 300)
    assert paired_bootstrap_delta(y, good, good, n=200) == (0.0, 0.0, 0.0)
    d, lo, hi = paired_bootstrap_delta(y, good, noise, n=300)
    assert d == pytest.approx(roc_auc_score(y, good) - roc_auc_score(y, noise))
    assert 0 < lo < d < hi
    d2, lo2, hi2 = paired_bootstrap_delta(y, noise, good, n=300)
    assert d2 == pytest.approx(-d) and lo2 < d2 < hi2 < 0


def test_generated_library_is_distinct_and_sized():
    lib = make_library(5000, ["CCO", "c1ccccc1", "CC(=O)O"])
    assert len(lib) == len(set(lib)) == 3 * 20 * 10  # seeds x prefixes x suffixes caps the size
    assert make_library(7, ["CCO", "CCN"])[:2] == ["CCO", "CCN"]


@pytest.mark.shared_data("dti/dtiam")
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


def test_similarity_probe_scores_by_hand():
    from evals.dti.similarity_probe import POWERS, _scores, main

    with pytest.raises(SystemExit, match="0 to 9; got 10"):
        main(["--fold", "2", "10"])  # refused before fold 2 is probed (no data is read)

    # drug 0 knows targets 0 (+) and 1 (-); query (drug 0, target 2) and (drug 1, target 2): drug 1 knows nothing
    sim = np.array([[0, 0.2, 0.5], [0.2, 0, 0.25], [0.5, 0.25, 0]])
    d, t, y = np.array([0, 0, 0, 1]), np.array([0, 1, 2, 2]), np.array([1.0, 0.0, 1.0, 0.0])
    weighted, nearest = _scores(sim, d, t, y, np.array([0, 1]), np.array([2, 3]))
    for p in POWERS:
        assert weighted[p][0] == pytest.approx(0.5**p / (0.5**p + 0.25**p), abs=1e-6)
        assert weighted[p][1] == 0.0
    assert nearest.tolist() == [0.5, 0.0]


@pytest.mark.shared_data("dti/dtiam")
def test_similarity_probe_runs_inside_the_training_pairs_of_one_fold(tmp_path):
    from evals.dti.similarity_probe import POWERS, main

    out = tmp_path / "probe.csv"
    main(["--fold", "3", "--csv", str(out)])  # the probe of one fold takes about 12 s
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * (len(POWERS) + 1)  # k = 2..5, each predictor
    assert all(0.5 < float(r["auroc_mean"]) < 1.0 for r in rows)
    assert {r["fold"] for r in rows} == {"3"}
