"""PNG figures: histograms of NID ranks among their GIDs and of membership scores, ROC curves of those scores."""

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
