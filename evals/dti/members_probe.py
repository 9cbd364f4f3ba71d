"""Which boosted members carry to unseen targets (or drugs): a grouped cross-validation inside train.

    python -m evals.dti.members_probe [--split target_cold] [--fold 0] [--groups 3] [--csv OUT.csv]

Inside the training pairs of one fold of Yamanishi 08 (DTIAM protocol; the fold's test pairs are never
read), the training targets (drugs for `drug_cold`) are split into `--groups` groups. Each group in turn
is held out; on the other groups' pairs the model's own routine (`tools.dti.train._fit_boost`: cold
simulation, 100 trees, learning rate 0.2) fits every drug view with and without the neighbourhood
features, whose reference is those pairs only. Printed: the held-out AUROC of each member, and of the
mean probability of candidate member sets (the model's default set among them), mean ± sd over groups.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from evals.dti.data import folds, load_dtiam
from evals.rows import write_rows_csv
from tools.dti.views import VIEW_NAMES

SPECS = tuple(f"{v}{s}" for v in VIEW_NAMES for s in ("", "+nbr"))
SETS = {
    "default": ("ecfp+nbr", "ecfp_counts", "atompair_counts", "physchem+nbr"),
    "all four views + nbr": ("ecfp+nbr", "ecfp_counts+nbr", "atompair_counts+nbr", "physchem+nbr"),
    "ecfp+nbr, physchem+nbr": ("ecfp+nbr", "physchem+nbr"),
    "all eight": SPECS,
}


def held_out_probabilities(
    tables, d, p, y, ref: np.ndarray, query: np.ndarray, seed: int = 0, iterations: int = 100
) -> dict:
    """Probability per member spec of the `query` pairs, every member fitted on the `ref` pairs alone
    (`iterations` boosting rounds each, the model's 100 by default)."""
    from tools.dti.boost import boost_features
    from tools.dti.neighbours import NeighbourIndex
    from tools.dti.train import Pairs, TrainConfig, _fit_boost
    from tools.dti.views import view_key

    cfg = TrainConfig(seed=seed, boost_members=SPECS, boost_iterations=iterations)
    index = NeighbourIndex.from_tables(tables, d[ref], p[ref], y[ref], cfg.target_kmer)
    holder = SimpleNamespace(boost=None)
    _fit_boost(holder, tables, Pairs(d[ref], p[ref], y[ref]), cfg, index.features_for_tables(tables, d[ref], p[ref]),
               None)
    nbr = index.features_for_tables(tables, d[query], p[query])
    comp = tables.proteins["comp"][p[query]]
    out = {}
    for spec, view, use, trees in zip(SPECS, holder.boost.views, holder.boost.uses_nbr, holder.boost.trees,
                                      strict=True):
        out[spec] = trees.predict_proba(boost_features(tables.drugs[view_key(view)][d[query]], comp,
                                                       nbr if use else None))
    return out


def probe(split: str = "target_cold", fold: int = 0, groups: int = 3) -> list[dict]:
    """Rows of (members, mean held-out AUROC, sd) over the groups of one fold's training pairs."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import KFold

    from tools.dti.train import build_tables

    ps = load_dtiam("yamanishi_08", seed=0)
    tr = list(folds(ps, split, ps.n_folds))[fold][0]
    tables, d, p, _ = build_tables(ps.smiles, ps.sequences)
    tr = tr[d[tr] >= 0]
    side = ps.target_ids if split == "target_cold" else ps.drug_ids
    ids = np.unique(side[tr])
    aucs: dict[str, list[float]] = {name: [] for name in (*SPECS, *SETS)}
    for g, (_, held) in enumerate(KFold(groups, shuffle=True, random_state=1).split(ids)):
        start = time.perf_counter()
        out = np.isin(side[tr], ids[held])
        ref, query = tr[~out], tr[out]
        prob = held_out_probabilities(tables, d, p, ps.y, ref, query)
        for spec in SPECS:
            aucs[spec].append(roc_auc_score(ps.y[query], prob[spec]))
        for name, members in SETS.items():
            aucs[name].append(roc_auc_score(ps.y[query], np.mean([prob[m] for m in members], axis=0)))
        print(f"group {g}: {len(ref)} pairs fitted, {len(query)} held out, {time.perf_counter() - start:.0f} s",
              flush=True)
    rows = []
    for name, vals in aucs.items():
        kind = "member" if name in SPECS else "set"
        rows.append({"split": split, "fold": fold, "kind": kind, "members": name,
                     "auroc_mean": float(np.mean(vals)), "auroc_sd": float(np.std(vals))})
        print(f"{kind:6s} {name:26s} AUROC {np.mean(vals):.4f} ± {np.std(vals):.4f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("target_cold", "drug_cold"), default="target_cold")
    ap.add_argument("--fold", type=int, default=0, help="Fold whose training pairs are probed (0-9).")
    ap.add_argument("--groups", type=int, default=3, help="Groups of the cross-validation inside train (2-10).")
    ap.add_argument("--csv", type=Path, help="Write the rows here.")
    args = ap.parse_args(argv)
    if not 0 <= args.fold < 10:
        raise SystemExit(f"--fold must be 0 to 9; got {args.fold}")
    if not 2 <= args.groups <= 10:
        raise SystemExit(f"--groups must be 2 to 10; got {args.groups}")
    rows = probe(args.split, args.fold, args.groups)
    if args.csv:
        write_rows_csv(args.csv, rows)


if __name__ == "__main__":
    main()
