"""Which protein similarity carries a drug's known targets to an unseen target: a nearest-neighbour probe.

    python -m evals.dti.similarity_probe [--fold 0 [1 ...]] [--csv evals/dti/results/target_similarity_probe.csv]

Inside the training pairs of a target-cold fold of Yamanishi 08 (DTIAM protocol; the fold's test
targets are never read), the training targets are split into 5 groups (KFold, shuffle, seed 1). Each
group in turn is held out, and a pair (drug d, held-out target t) is scored from d's pairs with the
other groups' targets t' only, for each k-mer size k (cosine of k-mer count vectors, as the model's
neighbourhood uses):

- weighted profile: sum s(t, t')^p y(d, t') / sum s(t, t')^p, for p = 1, 3, 8;
- nearest positive: max s(t, t') over d's positive targets t'.

It prints the mean held-out AUROC over the 5 groups per fold, similarity and predictor; the
neighbourhood's `target_kmer` is the k this probe ranks best inside every fold's own training pairs, so
the choice is blind to each fold's test targets.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from evals.dti.data import folds, load_dtiam
from evals.rows import write_rows_csv
from tools.dti.neighbours import KMERS, kmer_profiles

POWERS = (1, 3, 8)


def _scores(sim: np.ndarray, d: np.ndarray, t: np.ndarray, y: np.ndarray, ref: np.ndarray, query: np.ndarray):
    """(weighted profile per power, nearest positive) scores of the query pairs from the reference pairs."""
    by_drug: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for a, b, c in zip(d[ref], t[ref], y[ref], strict=True):
        by_drug[int(a)].append((int(b), float(c)))
    weighted = {p: np.zeros(len(query)) for p in POWERS}
    nearest = np.zeros(len(query))
    for j, k in enumerate(query):
        known = by_drug.get(int(d[k]))
        if not known:
            continue
        tt = np.array([b for b, _ in known])
        yy = np.array([c for _, c in known])
        s = np.clip(sim[t[k], tt], 0.0, None)
        for p in POWERS:
            w = s**p
            weighted[p][j] = (w * yy).sum() / (w.sum() + 1e-9)
        if (yy > 0).any():
            nearest[j] = s[yy > 0].max()
    return weighted, nearest


def probe(fold: int = 0, groups: int = 5) -> list[dict]:
    """Rows of (similarity, predictor, mean inner-CV AUROC, sd) for the training pairs of one fold."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import KFold

    ps = load_dtiam("yamanishi_08", seed=0)
    tr = list(folds(ps, "target_cold", ps.n_folds))[fold][0]
    targets = np.unique(ps.target_ids)
    sequence = dict(zip(ps.target_ids.tolist(), ps.sequences, strict=True))
    position = {int(x): i for i, x in enumerate(targets)}
    t = np.array([position[int(x)] for x in ps.target_ids])
    train_targets = np.unique(t[tr])
    splits = list(KFold(groups, shuffle=True, random_state=1).split(train_targets))
    rows = []
    for k in KMERS:
        start = time.perf_counter()
        prof = kmer_profiles([sequence[int(x)] for x in targets], k)
        sim = (prof @ prof.T).toarray()
        np.fill_diagonal(sim, 0.0)
        seconds = time.perf_counter() - start
        aucs: dict[str, list[float]] = defaultdict(list)
        for _, held in splits:
            out = np.isin(t[tr], train_targets[held])
            ref, query = tr[~out], tr[out]
            weighted, nearest = _scores(sim, ps.drug_ids, t, ps.y, ref, query)
            for p in POWERS:
                aucs[f"weighted profile p={p}"].append(roc_auc_score(ps.y[query], weighted[p]))
            aucs["nearest positive"].append(roc_auc_score(ps.y[query], nearest))
        for name, vals in aucs.items():
            rows.append({"fold": fold, "similarity": f"{k}-mer cosine", "predictor": name,
                         "auroc_mean": float(np.mean(vals)), "auroc_sd": float(np.std(vals)),
                         "similarity_seconds": seconds})
            print(f"fold {fold}  {k}-mer cosine  {name:22s} AUROC {np.mean(vals):.4f} ± {np.std(vals):.4f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fold", type=int, nargs="+", default=[0],
                    help="Target-cold folds whose training pairs are probed (0-9).")
    ap.add_argument("--csv", type=Path, help="Write the rows here.")
    args = ap.parse_args(argv)
    bad = [f for f in args.fold if not 0 <= f < 10]
    if bad:
        raise SystemExit(f"--fold must be 0 to 9; got {bad[0]}")
    rows = [row for fold in args.fold for row in probe(fold)]
    if args.csv:
        write_rows_csv(args.csv, rows)


if __name__ == "__main__":
    main()
