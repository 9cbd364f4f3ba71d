"""The methods the DTI tables compare: their row labels, AUROC/AUPRC, and the gradient-boosting baselines."""

from __future__ import annotations

import numpy as np

MODEL = "GRAM-DTI (this project)"
NETWORKS = "GRAM-DTI networks only (no boosted member)"
GB_NEIGHBOURS = "GB + neighbourhood features"


def auroc_auprc(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """AUROC and AUPRC of scores `p` for labels `y`; NaN for both when `y` holds one class."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    if len(np.unique(y)) < 2:
        return float("nan"), float("nan")
    return float(roc_auc_score(y, p)), float(average_precision_score(y, p))


def gb_baseline(tables, di, pi, y, tr, te, seed: int, threads: int = 1) -> np.ndarray | list[np.ndarray]:
    """HistGradientBoosting on Morgan ECFP4 bits (1024) + protein amino-acid composition (20).

    `te` may be one index array or a list of them (one fit, several test sets).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    def feats(idx):
        return np.hstack([tables.drugs["ecfp"][di[idx]], tables.proteins["comp"][pi[idx], :20]])

    clf = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.2, random_state=seed)
    with threadpool_limits(threads):
        clf.fit(feats(tr), y[tr])
        if isinstance(te, list):
            return [clf.predict_proba(feats(t))[:, 1] for t in te]
        return clf.predict_proba(feats(te))[:, 1]


def gb_neighbour_baseline(
    tables, di, pi, y, tr, te, seed: int, threads: int = 1, kmer: int | None = None
) -> np.ndarray:
    """The GB baseline with the model's 13 neighbourhood features added (same reference, same cold
    simulation of the training rows), to show what those features alone give a tree model."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    from tools.dti.neighbours import COLD_DRUG, COLD_TARGET, NeighbourIndex
    from tools.dti.train import TrainConfig

    index = NeighbourIndex.from_tables(tables, di[tr], pi[tr], y[tr], kmer or TrainConfig().target_kmer)
    ftr = index.features_for_tables(tables, di[tr], pi[tr])
    rng = np.random.default_rng(seed)
    p = TrainConfig().cold_simulation
    ftr[rng.random(len(tr)) < p, COLD_DRUG] = 0.0
    ftr[rng.random(len(tr)) < p, COLD_TARGET] = 0.0
    fte = index.features_for_tables(tables, di[te], pi[te])

    def feats(idx, nbr):
        return np.hstack([tables.drugs["ecfp"][di[idx]], tables.proteins["comp"][pi[idx], :20], nbr])

    clf = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.2, random_state=seed)
    with threadpool_limits(threads):
        clf.fit(feats(tr, ftr), y[tr])
        return clf.predict_proba(feats(te, fte))[:, 1]
