"""Dataset inference: calibrated under the null (exchangeable NIDs and GIDs), powerful under a shift."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from tools.errors import InvalidInput
from tools.nid.inference import dataset_inference, rank_test


def test_rank_test_exactly_uniform_with_ties() -> None:
    """The randomized rank u is Uniform(0, 1) under exchangeability even with heavy ties."""
    rng = np.random.default_rng(0)
    ps = np.array([rank_test(np.round(rng.random((30, 8)), 1), seed=s)[2] for s in range(1500)])
    assert abs(np.mean(ps < 0.01) - 0.01) < 0.01
    assert abs(np.mean(ps < 0.2) - 0.2) < 0.04


@pytest.mark.parametrize(("classifier", "runs"), [("logistic", 150), ("hgb", 12)])
def test_calibrated_under_null_with_classifier(classifier: str, runs: int) -> None:
    """Out-of-fold predictions keep NIDs and GIDs exchangeable, whatever the classifier."""
    rng = np.random.default_rng(1)
    ps, pt = [], []
    with threadpool_limits(1):
        for s in range(runs):
            feats = rng.normal(size=(24, 8, 3)) * rng.uniform(0.5, 2, size=(24, 1, 1))  # per-NID context effects
            res = dataset_inference(feats, folds=3, max_iter=8, seed=s, classifier=classifier)
            ps.append(res.p_value_ks)
            pt.append(res.p_value_ttest)
    ps_arr = np.array(ps)
    if runs >= 100:
        # about 1% below 0.01 (binomial: 150 runs, <= 5 is within 3 sd of 1.5) and roughly uniform overall
        assert np.sum(ps_arr < 0.01) <= 5
        assert 0.1 < np.mean(ps_arr < 0.25) < 0.4
        assert np.sum(np.array(pt) < 0.01) <= 8
    else:
        assert np.sum(ps_arr < 0.01) <= 1 and np.sum(ps_arr < 0.25) <= 7


def test_power_under_shift() -> None:
    rng = np.random.default_rng(2)
    feats = rng.normal(size=(60, 16, 4))
    feats[:, 0, 1] += 0.8  # members: one score shifted up
    with threadpool_limits(1):
        res = dataset_inference(feats, folds=5, max_iter=30)
        lin = dataset_inference(feats, folds=5, classifier="logistic")
    assert res.p_value_ks < 0.01 and res.p_value_ttest < 0.01 and lin.p_value_ks < 0.01
    assert res.mean_normalized_rank < 0.4
    assert res.ranks.min() >= 1 and res.ranks.max() <= 16


def test_bad_inputs() -> None:
    with pytest.raises(InvalidInput, match="c >= 2"):
        dataset_inference(np.zeros((10, 1, 3)))
    with pytest.raises(InvalidInput, match="shape"):
        dataset_inference(np.zeros((10, 3)))
