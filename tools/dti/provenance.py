"""Which pairs a model learned from, and how much a test set shares with them.

A pair is keyed by the canonical SMILES of the scored species (`tools.dti.chem.parse_smiles`) and the
cleaned protein sequence (`clean_protein`), so two spellings of one molecule, or a sequence in lower
case, count as the same pair. `overlap` reports the shared pairs, drugs and targets of two pair sets;
`file_record` names a training or test file by path, row count, usable pair count and sha256.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

PairKey = tuple[str, str]


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pairs_sha256(keys: Iterable[PairKey], labels: Iterable[float] | None = None) -> str:
    """Order-independent sha256 of a set of (canonical SMILES, sequence[, label]) pairs, for pair sets that
    are not one file (sampled negatives, folds)."""
    rows = (
        sorted(f"{s}\t{q}" for s, q in keys)
        if labels is None
        else sorted(f"{s}\t{q}\t{int(v)}" for (s, q), v in zip(keys, labels, strict=True))
    )
    h = hashlib.sha256()
    for r in rows:
        h.update(r.encode())
        h.update(b"\n")
    return h.hexdigest()


def file_record(path: str | Path, rows: int, pairs: int, **extra: Any) -> dict[str, Any]:
    """`{file, rows, pairs, sha256, ...}`: a training or test file as a model card or evaluation states it."""
    p = Path(path)
    return {"file": str(p), "rows": int(rows), "pairs": int(pairs), "sha256": file_sha256(p)} | extra


def pair_keys(smiles: Sequence[str], sequences: Sequence[str]) -> list[PairKey | None]:
    """Canonical (SMILES, sequence) keys of raw pairs; None where either side is invalid."""
    from tools.dti.chem import clean_protein, try_parse_smiles
    from tools.errors import ResearchError

    seq_cache: dict[str, str | None] = {}
    out: list[PairKey | None] = []
    for s, q in zip(smiles, sequences, strict=True):
        parsed, _ = try_parse_smiles(s)
        if q not in seq_cache:
            try:
                seq_cache[q] = clean_protein(q)[0]
            except ResearchError:
                seq_cache[q] = None
        seq = seq_cache[q]
        out.append((parsed.smiles, seq) if parsed is not None and seq is not None else None)
    return out


def overlap(train: Iterable[PairKey | None], test: Iterable[PairKey | None]) -> dict[str, Any]:
    """Pairs, drugs and targets of `test` also present in `train` (counts over distinct test items, and
    the share of the test's valid rows whose pair is a training pair)."""
    tr = {k for k in train if k is not None}
    te_rows = [k for k in test if k is not None]
    te = set(te_rows)
    tr_d, tr_t = {s for s, _ in tr}, {q for _, q in tr}
    te_d, te_t = {s for s, _ in te}, {q for _, q in te}
    shared_rows = sum(k in tr for k in te_rows)
    return {
        "test_pairs": len(te),
        "shared_pairs": len(te & tr),
        "shared_pair_rows": shared_rows,
        "shared_pair_fraction": round(shared_rows / len(te_rows), 4) if te_rows else 0.0,
        "test_drugs": len(te_d),
        "shared_drugs": len(te_d & tr_d),
        "test_targets": len(te_t),
        "shared_targets": len(te_t & tr_t),
    }


def overlap_text(ov: dict[str, Any], train_name: str, test_name: str) -> str:
    """One line saying what `test_name` shares with `train_name`."""
    return (
        f"{test_name} shares {ov['shared_pairs']} of its {ov['test_pairs']} distinct pairs "
        f"({ov['shared_pair_fraction']:.1%} of its rows), {ov['shared_drugs']} of {ov['test_drugs']} drugs and "
        f"{ov['shared_targets']} of {ov['test_targets']} targets with {train_name} "
        "(canonical SMILES + cleaned sequence)"
    )
