"""PNG figures: histograms of NID ranks among their GIDs and of membership scores, ROC curves of those scores, and
the audit's picture (members' and stand-ins' score histograms beside the ROC that separates them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tools.atomic import atomic_output


def rank_histogram(ranks: np.ndarray, candidates: int, out: Path, *, title: str = "NID ranks among GIDs",
                   others: dict[str, np.ndarray] | None = None) -> Path:
    """Histogram of ranks 1..candidates (1 = the NID scored above all its GIDs); uniform under the null."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    series = {"NIDs": np.asarray(ranks)} if others is None else {k: np.asarray(v) for k, v in others.items()}
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=110)
    bins = np.arange(0.5, candidates + 1.5, max(1, candidates // 32))
    for label, r in series.items():
        ax.hist(r, bins=bins, alpha=0.6, label=f"{label} (n={r.size})", density=True)
    ax.axhline(1.0 / candidates, color="k", linestyle="--", linewidth=1, label="uniform (null)")
    ax.set_xlabel("rank among candidates (1 = above all GIDs)")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, out)


def score_histogram(series: dict[str, np.ndarray], out: Path, *, title: str) -> Path:
    """Density histograms of membership scores per label (members, non-members, GIDs) on shared bins."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    finite = {label: v[np.isfinite(v)] for label, v in series.items()}
    every = np.concatenate(list(finite.values()))
    bins = np.linspace(float(every.min()), float(every.max()), 31)
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=110)
    for label, v in finite.items():
        ax.hist(v, bins=bins, alpha=0.5, density=True, label=f"{label} (n={series[label].size})")
    ax.set_xlabel("score (higher = more member-like)")
    ax.set_ylabel("density")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, out)


def roc_plot(curves: dict[str, tuple[np.ndarray, np.ndarray]], out: Path, *, title: str = "ROC") -> Path:
    """ROC curves from (member scores, non-member scores) per label, with their AUCs in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from sklearn.metrics import roc_auc_score, roc_curve

    fig, ax = plt.subplots(figsize=(4.8, 4.4), dpi=110)
    for label, (pos, neg) in curves.items():
        y = np.r_[np.ones(pos.size), np.zeros(neg.size)]
        s = np.nan_to_num(np.r_[pos, neg], nan=-1e9)
        fpr, tpr, _ = roc_curve(y, s)
        ax.plot(fpr, tpr, label=f"{label} (AUC {roc_auc_score(y, s):.3f})")
    ax.plot([0, 1], [0, 1], "k--", linewidth=1)
    ax.set_xscale("linear")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return _save(fig, out)


def _save(fig, out: Path) -> Path:
    """Write the figure to `out` under a temporary name, renamed when complete, and free it."""
    from matplotlib import pyplot as plt

    fig.tight_layout()
    with atomic_output(out) as tmp:
        fig.savefig(tmp)
    plt.close(fig)
    return out


def roc_points(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The ROC of telling `pos` (members) from `neg` (stand-ins) by score, higher = member: (fpr, tpr, AUC).

    Tied scores move both rates at once (a diagonal step), so the AUC counts a tie as half, as the Mann-Whitney U
    statistic does. Non-finite scores rank lowest.
    """
    pos = np.nan_to_num(np.asarray(pos, dtype=float).ravel(), nan=-np.inf)
    neg = np.nan_to_num(np.asarray(neg, dtype=float).ravel(), nan=-np.inf)
    scores = np.r_[pos, neg]
    labels = np.r_[np.ones(pos.size), np.zeros(neg.size)]
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    last_of_tie = np.r_[scores[1:] != scores[:-1], True]
    tp = np.cumsum(labels)[last_of_tie]
    fp = np.cumsum(1 - labels)[last_of_tie]
    tpr = np.r_[0.0, tp / max(pos.size, 1)]
    fpr = np.r_[0.0, fp / max(neg.size, 1)]
    return fpr, tpr, float(np.trapezoid(tpr, fpr))


def audit_plot(nid_scores: np.ndarray, gid_scores: np.ndarray, out: Path, *, title: str) -> Path:
    """Two panels: density histograms of the NIDs' (members') and GIDs' (stand-ins') scores on shared bins, and
    the ROC of telling them apart with its AUC (0.5: no sign of membership)."""
    from tools.figures import figure, save_png

    nids = np.asarray(nid_scores, dtype=float).ravel()
    gids = np.asarray(gid_scores, dtype=float).ravel()
    finite = np.r_[nids, gids]
    finite = finite[np.isfinite(finite)]
    fig = figure(9.6, 4.0)
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 31)
        for label, v, colour in (("NIDs (members)", nids, "#d62728"), ("GIDs (stand-ins)", gids, "#1f77b4")):
            ok = v[np.isfinite(v)]
            if ok.size:
                left.hist(ok, bins=bins, alpha=0.55, density=True, color=colour, label=f"{label}, n={ok.size}")
    left.set_xlabel("membership score (higher = more member-like)")
    left.set_ylabel("density")
    left.legend(fontsize=8)
    fpr, tpr, auc = roc_points(nids, gids)
    right.plot(fpr, tpr, color="#d62728", linewidth=2, label=f"NIDs vs GIDs (AUC {auc:.3f})")
    right.plot([0, 1], [0, 1], "k--", linewidth=1, label="chance")
    right.set_xlim(0, 1)
    right.set_ylim(0, 1.005)
    right.set_xlabel("false positive rate")
    right.set_ylabel("true positive rate")
    right.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, out)
