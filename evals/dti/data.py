"""Benchmark sets and splits: DTIAM's sets with its negative sampling and K-fold settings; DrugBAN's CSVs.

DTIAM protocol: positives only on file; negatives drawn uniformly from unobserved drug x target pairs,
10 per positive; folds by sklearn KFold(shuffle=True, random_state=0) over pairs (warm), drugs
(drug-cold) or targets (target-cold). Both-cold crosses a drug fold with a target fold: test pairs have
both ends in the held-out folds, training pairs neither.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evals.shared_data import shared_data_path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tools" / "sample_data" / "dti"

DTIAM_SETS = {
    "yamanishi_08": ("dtiam/data/dti/yamanishi_08", 10),
    "activation": ("dtiam/data/moa/activation", 5),
    "inhibition": ("dtiam/data/moa/inhibition", 5),
}
DRUGBAN_SETS = {
    "human_random": ("drugban/datasets/human/random/train.csv", "drugban/datasets/human/random/val.csv"),
    "human_cold": ("drugban/datasets/human/cold/train.csv", "drugban/datasets/human/cold/val.csv"),
}
SPLITS = ("warm", "drug_cold", "target_cold", "both_cold")


@dataclass
class PairSet:
    """A labelled pair set: SMILES and sequences per pair, with drug and target ids for splitting."""

    name: str
    smiles: list[str]
    sequences: list[str]
    drug_ids: np.ndarray
    target_ids: np.ndarray
    y: np.ndarray
    n_folds: int = 10


def _tsv(path: Path, header: bool) -> list[list[str]]:
    with open(path, encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r]
    return rows[1:] if header else rows


def load_dtiam(name: str, seed: int, root: Path | None = None, neg_ratio: int = 10) -> PairSet:
    """A DTIAM set with `neg_ratio` sampled negatives per positive (uniform over unobserved pairs); `root`: the
    folder holding `dtiam/` (default: the shared data's `dti/`)."""
    root = shared_data_path("dti") if root is None else root
    folder, n_folds = DTIAM_SETS[name]
    base = root / folder
    if name == "yamanishi_08":
        smi = dict(_tsv(base / "drug_smiles.csv", True))
        seq = dict(_tsv(base / "protein_seq.csv", True))
        pos = [(r[0], r[2]) for r in _tsv(base / "dti.csv", False)]
        drugs = sorted({d for d, _ in pos})
        targets = sorted({t for _, t in pos})
    else:
        smi = dict(_tsv(base / "drug_smi.csv", True))
        seq = dict(_tsv(base / "tar_seq.csv", True))
        pos = [(r[0], r[1]) for r in _tsv(base / "dti.csv", True)]
        drugs = sorted(smi)
        targets = sorted(seq)
    pos = sorted({(d, t) for d, t in pos if d in smi and t in seq})
    drugs = [d for d in drugs if d in smi]
    targets = [t for t in targets if t in seq]
    di = {d: i for i, d in enumerate(drugs)}
    ti = {t: i for i, t in enumerate(targets)}
    pos_codes = np.array([di[d] * len(targets) + ti[t] for d, t in pos], dtype=np.int64)
    rng = np.random.default_rng(seed)
    n_neg = neg_ratio * len(pos_codes)
    universe = len(drugs) * len(targets)
    chosen: set[int] = set()
    taken = set(pos_codes.tolist())
    while len(chosen) < n_neg:
        for c in rng.integers(0, universe, size=2 * (n_neg - len(chosen))).tolist():
            if c not in taken and c not in chosen:
                chosen.add(c)
                if len(chosen) == n_neg:
                    break
    neg_codes = np.array(sorted(chosen), dtype=np.int64)
    codes = np.concatenate([pos_codes, neg_codes])
    y = np.concatenate([np.ones(len(pos_codes)), np.zeros(len(neg_codes))])
    d_idx, t_idx = codes // len(targets), codes % len(targets)
    return PairSet(
        name,
        [smi[drugs[i]] for i in d_idx],
        [seq[targets[i]] for i in t_idx],
        d_idx,
        t_idx,
        y,
        n_folds,
    )


def load_csv_pairs(path: Path, name: str | None = None) -> PairSet:
    """A CSV with columns SMILES, Protein, Y; drug and target ids are the strings themselves."""
    with open(path, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or not {"SMILES", "Protein", "Y"} <= set(rows[0]):
        raise ValueError(f"{path} needs columns SMILES, Protein, Y")
    smiles = [r["SMILES"] for r in rows]
    seqs = [r["Protein"] for r in rows]
    _, d = np.unique(smiles, return_inverse=True)
    _, t = np.unique(seqs, return_inverse=True)
    return PairSet(name or path.stem, smiles, seqs, d, t, np.array([float(r["Y"]) for r in rows]))


def folds(ps: PairSet, split: str, n_folds: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(train, test) pair indices for each fold of a split setting, DTIAM style."""
    from sklearn.model_selection import KFold

    kf = KFold(n_splits=n_folds, shuffle=True, random_state=0)
    n = len(ps.y)
    if split == "warm":
        yield from kf.split(np.arange(n))
        return
    drugs = np.unique(ps.drug_ids)
    targets = np.unique(ps.target_ids)
    if split == "drug_cold":
        for _, te in kf.split(drugs):
            test = np.isin(ps.drug_ids, drugs[te])
            yield np.flatnonzero(~test), np.flatnonzero(test)
        return
    if split == "target_cold":
        for _, te in kf.split(targets):
            test = np.isin(ps.target_ids, targets[te])
            yield np.flatnonzero(~test), np.flatnonzero(test)
        return
    if split == "both_cold":
        dfolds = [drugs[te] for _, te in kf.split(drugs)]
        tfolds = [targets[te] for _, te in kf.split(targets)]
        for k in range(n_folds):
            dt = np.isin(ps.drug_ids, dfolds[k])
            tt = np.isin(ps.target_ids, tfolds[k])
            yield np.flatnonzero(~dt & ~tt), np.flatnonzero(dt & tt)
        return
    raise ValueError(split)
