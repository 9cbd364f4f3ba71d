"""Dataset inference with natural identifiers: are these NIDs members of the model's training data?

Every NID comes with g GIDs of its format, which are non-members by construction and, under the null
hypothesis that the NIDs were not trained on, exchangeable with the NID. A gradient-boosted tree
classifier (scikit-learn's HistGradientBoostingClassifier) learns to tell NIDs from GIDs by their
membership scores; it is fitted out of fold with grouped K-fold, so an NID and its GIDs are always in
the same held-out fold and never in the fitting data of their own prediction. Each NID is ranked
among its GIDs by the out-of-fold prediction; under the null the rank is uniform on {1, ..., g + 1}.
The rank is turned into u = (number of GIDs above the NID + U) / (g + 1), with ties split by a uniform
draw U, which is exactly Uniform(0, 1) under the null; a one-sided Kolmogorov-Smirnov test against
Uniform(0, 1) (alternative: u tends to be small) rejects at p < 0.01.

Maini et al. (2024)'s variant compares the out-of-fold predictions of NIDs and GIDs with a one-sided
Welch t-test instead.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from tools.errors import InvalidInput


@dataclass(frozen=True)
class InferenceResult:
    p_value_ks: float
    ks_statistic: float
    p_value_ttest: float
    t_statistic: float
    mean_normalized_rank: float
    n_nids: int
    candidates_per_nid: int
    ranks: np.ndarray  # 1 = the NID scored above all its GIDs
    u: np.ndarray


def out_of_fold_predictions(features: np.ndarray, *, folds: int = 5, seed: int = 0, max_iter: int = 100,
                            classifier: str = "hgb") -> np.ndarray:
    """Out-of-fold P(NID) for every candidate; `features` is (n_nids, c, n_features), candidate 0 = the NID."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    n, c, d = features.shape
    x = np.nan_to_num(features.reshape(n * c, d), nan=0.0, posinf=0.0, neginf=0.0)
    y = np.tile(np.r_[1, np.zeros(c - 1, dtype=int)], n)
    groups = np.repeat(np.arange(n), c)
    k = min(folds, n)
    # shuffle which groups share a fold (GroupKFold is deterministic in group order)
    perm = np.random.default_rng(seed).permutation(n)
    out = np.zeros(n * c)
    for train_idx, test_idx in GroupKFold(n_splits=k).split(x, y, perm[groups]):
        if classifier == "hgb":
            model = HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.1, max_leaf_nodes=15,
                                                   random_state=seed)
        else:
            model = LogisticRegression(max_iter=1000)
        model.fit(x[train_idx], y[train_idx])
        out[test_idx] = model.predict_proba(x[test_idx])[:, 1]
    return out.reshape(n, c)


def rank_test(pred: np.ndarray, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Ranks of column 0 in each row, their randomized normalisation u, and the one-sided KS test."""
    n, c = pred.shape
    above = np.sum(pred[:, 1:] > pred[:, :1], axis=1)
    ties = np.sum(pred[:, 1:] == pred[:, :1], axis=1)
    rng = np.random.default_rng(seed + 7919)
    # ties are split uniformly: position among the tied block is uniform, plus a uniform jitter inside a rank
    tied_above = np.floor(rng.random(n) * (ties + 1))
    u = (above + tied_above + rng.random(n)) / c
    ks = stats.kstest(u, "uniform", alternative="greater")
    return 1 + above, u, float(ks.pvalue), float(ks.statistic)


def dataset_inference(features: np.ndarray, *, folds: int = 5, seed: int = 0, max_iter: int = 100,
                      classifier: str = "hgb") -> InferenceResult:
    """Rank test and t-test of NIDs against their GIDs from membership-score features (n, c, d)."""
    f = np.asarray(features, dtype=float)
    if f.ndim != 3:
        raise InvalidInput(f"Features must be (NIDs, candidates, scores); got shape {f.shape}.",
                           hint="Give each NID's scores first, then its GIDs'.")
    n, c, _ = f.shape
    if c < 2:
        raise InvalidInput(f"Each NID needs at least one GID (c >= 2); got c = {c}.", hint="Generate GIDs first.")
    if n < 2 * max(2, folds) // 2 or n < 4:
        raise InvalidInput(f"Dataset inference needs at least 4 NIDs (and as many as folds); got {n}.",
                           hint="Give more NIDs, or fewer folds.")
    pred = out_of_fold_predictions(f, folds=folds, seed=seed, max_iter=max_iter, classifier=classifier)
    ranks, u, p_ks, d_ks = rank_test(pred, seed=seed)
    with warnings.catch_warnings():
        # near-constant predictions (a classifier that learnt nothing) make scipy warn; the test is then moot
        warnings.simplefilter("ignore", RuntimeWarning)
        t = stats.ttest_ind(pred[:, 0], pred[:, 1:].ravel(), equal_var=False, alternative="greater")
    p_t = float(t.pvalue) if np.isfinite(t.pvalue) else 1.0
    return InferenceResult(p_ks, d_ks, p_t, float(t.statistic) if np.isfinite(t.statistic) else 0.0,
                           float(np.mean(u)), n, c, ranks, u)
