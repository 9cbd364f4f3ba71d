"""The real-model NID evaluation, quick: LoRA on the embedded Gemma 3 270M, a few steps on a few real records."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evals.nid.real import RealConfig, max_bound, overlap, run_real, select_records, split_records


def test_records_and_splits_are_disjoint() -> None:
    cfg = RealConfig(per_dataset=8)
    records, _ = select_records(cfg)
    assert {r["dataset"] for r in records} == {"opacus_git_log", "serialversionuid", "jsonlite_md5"}
    for r in records:  # the span is the identifier inside its training text
        assert r["text"][r["span"][0] : r["span"][1]] == r["nid"]
    for seed in range(5):
        members, non = split_records(records, seed)
        assert set(members).isdisjoint(non) and sorted(members + non) == list(range(len(records)))
        assert overlap(records, members, non) == {"shared_nids": 0, "non_member_nids_in_training_texts": 0}
    assert split_records(records, 0) != split_records(records, 1)
    # the audit's ceiling: 12 NIDs all first among 8 candidates; closed form from the binomial tail
    p = 0.05 ** (1 / 12)  # P[all 12 first] = p^12 = alpha
    assert max_bound(12, 8, 0.05) == pytest.approx(math.log(7 * p / (1 - p)), rel=1e-6)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    import torch

    out = tmp_path_factory.mktemp("real")
    cfg = RealConfig(per_dataset=2, gids=3, seeds=1, steps=2, batch_size=2, rank=4, top_layers=4, threads=2)
    try:
        return out, run_real(out, cfg, log=lambda m: None)
    finally:
        torch.set_num_threads(1)


@pytest.mark.slow
def test_quick_real_run_dp_bound_below_accountant(quick_run: tuple[Path, dict]) -> None:
    out, summary = quick_run
    rows = {r["run"]: r for r in summary["rows"]}
    assert set(rows) == {"base (post-hoc)", "no DP", "DP-SGD"}
    dp = rows["DP-SGD"]
    assert dp["eps_accountant"] > 0 and dp["noise_multiplier"] > 0 and 0 < dp["sample_rate"] <= 1
    assert dp["eps_substitution"] == pytest.approx(2 * dp["eps_accountant"])
    assert dp["delta_substitution"] == pytest.approx((1 + math.exp(dp["eps_accountant"])) * 1e-5)
    assert 0 <= dp["eps_lower_bound"] <= dp["eps_substitution"] and dp["bound_below_accountant"] is True
    assert rows["no DP"]["overlap"] == 0 and summary["overlap"][0]["shared_nids"] == 0
    for name in ("real_runs.csv", "real_runs.md", "real_summary.json", "real_histograms.png", "real_roc.png",
                 "real_features.npz"):
        assert (out / name).stat().st_size > 0
    with (out / "real_runs.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 3
    assert json.loads((out / "real_summary.json").read_text())["dp_bound_violations"] == 0
    assert not list(out.glob("*.tmp*"))


@pytest.mark.slow
def test_shuffled_control_gives_uniform_p_values(quick_run: tuple[Path, dict]) -> None:
    """The fine-tuned model's features with the NID's column drawn at random in every row (labels independent of
    the scores): dataset-inference p-values over many draws are consistent with Uniform(0, 1)."""
    from tools.nid.inference import dataset_inference

    out, _ = quick_run
    data = np.load(out / "real_features.npz")
    f = data["seed0_plain"]
    n, c, _ = f.shape
    rng = np.random.default_rng(0)
    p = []
    for d in range(40):
        perm = np.argsort(rng.random((n, c)), axis=1)
        # logistic regression: on so few rows the boosted trees would not split, and ties alone would decide
        p.append(dataset_inference(np.take_along_axis(f, perm[:, :, None], axis=1), folds=3, seed=d,
                                   classifier="logistic").p_value_ks)
    assert stats.kstest(p, "uniform").pvalue > 0.001
    assert 0.2 < np.mean(p) < 0.8
