"""The gradient-boosted members of the DTI model: trees on drug views, protein composition and the
neighbourhood features, stored as plain arrays and evaluated in numpy.

The model holds one tree ensemble per drug view (`tools/dti/views.py`: ECFP4 bits, ECFP4 counts,
atom-pair counts, physicochemical values) and averages their probabilities (`BoostedViews`). Each reads,
per pair: its view of the drug, the protein's amino-acid composition (20) and, for members named
`<view>+nbr`, the 13 known-interaction neighbourhood features (nearest training partners by Tanimoto and k-mer cosine
similarity). For its training pairs, as for the networks', each side's block of the neighbourhood is
zeroed for half of the pairs (cold simulation), so it learns both the similarity evidence that carries
to new drugs and targets and the known partners of seen ones. (Single runs: Yamanishi 08 drug-cold fold
0, cold simulation 0.5: 0.888 AUROC; zeroing both blocks for every pair: 0.846 blended with the
networks, which had 0.834 alone. DrugBAN Human cold val: 0.870-0.900 over draws of the simulation,
0.901 with every block zeroed; descriptors, CTD or an L2 penalty of 1 lowered it.) sklearn's
HistGradientBoostingClassifier fits it; its trees are copied into arrays, so a checkpoint holds
tensors only and scoring needs no sklearn object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tools.dti.features import ECFP_BITS

TREE_FIELDS = ("feature", "threshold", "missing_left", "left", "right", "is_leaf", "value")


def boost_features(drug: np.ndarray, comp: np.ndarray, nbr: np.ndarray | None) -> np.ndarray:
    """(n, view width + 20 [+ 13]) float32 inputs of a boosted member, from per-pair rows (`comp` is the
    protein composition vector, of which the 20 amino-acid fractions are read)."""
    parts = [drug, comp[:, :20]]
    if nbr is not None:
        parts.append(nbr)
    return np.hstack([np.asarray(p, dtype=np.float32) for p in parts])


@dataclass
class BoostedTrees:
    """Binary gradient-boosted trees as flat node arrays; `roots[k]` is the first node of tree k."""

    baseline: float
    roots: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray  # absolute node indices
    right: np.ndarray
    is_leaf: np.ndarray
    value: np.ndarray
    n_features: int

    @classmethod
    def from_sklearn(cls, clf: Any) -> BoostedTrees:
        """Copy the trees of a fitted binary `HistGradientBoostingClassifier` (numeric features only)."""
        nodes = [tree[0].nodes for tree in clf._predictors]
        offsets = np.cumsum([0] + [len(n) for n in nodes[:-1]]).astype(np.int64)
        cat = np.concatenate(nodes) if nodes else np.zeros(0, dtype=[("value", "f8")])
        shift = np.repeat(offsets, [len(n) for n in nodes])
        return cls(
            baseline=float(np.ravel(clf._baseline_prediction)[0]),
            roots=offsets,
            feature=cat["feature_idx"].astype(np.int64),
            threshold=cat["num_threshold"].astype(np.float64),
            missing_left=cat["missing_go_to_left"].astype(bool),
            left=cat["left"].astype(np.int64) + shift,
            right=cat["right"].astype(np.int64) + shift,
            is_leaf=cat["is_leaf"].astype(bool),
            value=cat["value"].astype(np.float64),
            n_features=int(clf.n_features_in_),
        )

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """Raw scores (log-odds) of rows `x` (n, n_features). Every tree descends at once, one level a step;
        the leaf values are added tree by tree, in order."""
        x = np.asarray(x)
        if x.dtype not in (np.float32, np.float64):
            x = x.astype(np.float64)
        node = np.repeat(self.roots.astype(np.int64)[:, None], len(x), axis=1)  # (trees, rows)
        while True:
            tree, row = np.nonzero(~self.is_leaf[node])
            if not len(tree):
                break
            nl = node[tree, row]
            v = x[row, self.feature[nl]].astype(np.float64)
            go_left = np.where(np.isnan(v), self.missing_left[nl], v <= self.threshold[nl])
            node[tree, row] = np.where(go_left, self.left[nl], self.right[nl])
        out = np.full(len(x), self.baseline)
        for leaf in self.value[node]:
            out += leaf
        return out

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Interaction probabilities of rows `x`."""
        return 1.0 / (1.0 + np.exp(-self.decision_function(x)))

    def state(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "n_features": self.n_features,
            "roots": self.roots,
            **{k: getattr(self, k) for k in TREE_FIELDS},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> BoostedTrees:
        arrays = {k: np.asarray(state[k]) for k in ("roots", *TREE_FIELDS)}
        for k in ("missing_left", "is_leaf"):
            arrays[k] = arrays[k].astype(bool)
        return cls(baseline=float(state["baseline"]), n_features=int(state["n_features"]), **arrays)


def fit_trees(
    x: np.ndarray,
    y: np.ndarray,
    seed: int,
    iterations: int = 100,
    learning_rate: float = 0.2,
    threads: int = 1,
    check: Callable[[int, int], None] | None = None,
) -> BoostedTrees:
    """Fit HistGradientBoosting on `x`, `y` in blocks of 25 trees (`check(done, total)` between blocks may
    raise to cancel) and return its trees."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    clf = HistGradientBoostingClassifier(
        max_iter=0,
        learning_rate=learning_rate,
        early_stopping=False,
        warm_start=True,
        random_state=seed,
    )
    with threadpool_limits(threads):
        done = 0
        while done < iterations:
            done = min(iterations, done + 25)
            clf.set_params(max_iter=done)
            clf.fit(x, y)
            if check is not None:
                check(done, iterations)
    return BoostedTrees.from_sklearn(clf)


@dataclass
class BoostedViews:
    """The boosted members: `members[k]` (`trees[k]`) reads drug view `views[k]` and, where `uses_nbr[k]`,
    the neighbourhood; the score is the mean of their probabilities."""

    views: list[str]
    uses_nbr: list[bool]
    trees: list[BoostedTrees]

    @property
    def specs(self) -> list[str]:
        return [v + ("+nbr" if n else "") for v, n in zip(self.views, self.uses_nbr, strict=True)]

    def predict_proba(self, drugs: dict[str, np.ndarray], rows: np.ndarray, comp: np.ndarray,
                      nbr: np.ndarray | None) -> np.ndarray:
        """Mean probability of the members for pairs whose drugs are `rows` of the drug table `drugs`
        (which must hold every member's view, see `tools.dti.views.add_views`)."""
        from tools.dti.views import view_key

        out = np.zeros(len(rows))
        for view, use, trees in zip(self.views, self.uses_nbr, self.trees, strict=True):
            out += trees.predict_proba(boost_features(drugs[view_key(view)][rows], comp, nbr if use else None))
        return out / max(1, len(self.trees))

    def state(self) -> dict[str, Any]:
        return {"specs": self.specs, "members": [t.state() for t in self.trees]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> BoostedViews:
        """Members from `state()`, or one `ecfp+nbr` member from a single tree state (earlier checkpoints)."""
        from tools.dti.views import parse_member

        if "members" not in state:
            trees = BoostedTrees.from_state(state)
            return cls(["ecfp"], [trees.n_features > ECFP_BITS + 20], [trees])
        parsed = [parse_member(s) for s in state["specs"]]
        trees = [BoostedTrees.from_state(m) for m in state["members"]]
        return cls([v for v, _ in parsed], [n for _, n in parsed], trees)
