"""The blind filter: can characters alone tell an NID from its GIDs?

A character n-gram logistic regression is fitted out of fold (grouped K-fold: an NID and its GIDs share
a fold) to separate NIDs (label 1) from GIDs (label 0) using only the identifier strings. With a correct
generator the NIDs are indistinguishable and the overall AUC is about 0.5; a generator with the wrong
alphabet, length or casing gives an AUC near 1. NIDs that the classifier ranks at the extreme among
their own GIDs (top or bottom `extreme` fraction of ranks) are dropped from the audit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tools.errors import InvalidInput


@dataclass(frozen=True)
class BlindFilterResult:
    auc: float
    kept: list[int]
    dropped: list[int]
    normalized_ranks: np.ndarray  # per NID: fraction of its GIDs the classifier scores above it


def blind_filter(nids: list[str], gids: list[list[str]], *, folds: int = 5, ngram_max: int = 2,
                 extreme: float = 0.02, seed: int = 0) -> BlindFilterResult:
    """Out-of-fold character n-gram classifier AUC, and the NIDs kept after dropping extreme ranks."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    n = len(nids)
    if n < 2 or len(gids) != n or any(len(g) == 0 for g in gids):
        raise InvalidInput(f"The blind filter needs at least 2 NIDs, each with at least one GID; got {n} NIDs.",
                           hint="Detect more identifiers, or generate GIDs for each.")
    if not 0 <= extreme < 0.5:
        raise InvalidInput(f"extreme must lie in [0, 0.5), got {extreme}.", hint="Use e.g. 0.02.")
    texts: list[str] = []
    labels: list[int] = []
    groups: list[int] = []
    for i, (nid, gs) in enumerate(zip(nids, gids, strict=True)):
        texts += [nid, *gs]
        labels += [1] + [0] * len(gs)
        groups += [i] * (1 + len(gs))
    y = np.array(labels)
    grp = np.random.default_rng(seed).permutation(n)[np.array(groups)]
    vec = CountVectorizer(analyzer="char", ngram_range=(1, ngram_max), lowercase=False, dtype=np.float64)
    x = vec.fit_transform(texts)
    pred = np.zeros(len(texts))
    for tr, te in GroupKFold(n_splits=min(folds, n)).split(x, y, grp):
        clf = LogisticRegression(C=1.0, class_weight="balanced", solver="liblinear")
        clf.fit(x[tr], y[tr])
        pred[te] = clf.decision_function(x[te])
    auc = float(roc_auc_score(y, pred))
    ranks = np.zeros(n)
    drop = np.zeros(n, dtype=bool)
    pos = 0
    for i, gs in enumerate(gids):
        own, others = pred[pos], pred[pos + 1 : pos + 1 + len(gs)]
        above, below = int(np.sum(others >= own)), int(np.sum(others <= own))
        ranks[i] = (np.sum(others > own) + 0.5 * np.sum(others == own)) / len(gs)
        drop[i] = min(above + 1, below + 1) / (len(gs) + 1) <= extreme
        pos += 1 + len(gs)
    return BlindFilterResult(auc, [i for i in range(n) if not drop[i]], [i for i in range(n) if drop[i]], ranks)
