"""Featurizing many molecules at once: per-row results with errors, in parallel processes for big libraries."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from tools.dti.chem import sanitize_smiles
from tools.dti.features import DrugFeatures, drug_features_from_mol
from tools.errors import ResearchError

PARALLEL_MIN = 20_000
CHUNK = 2_000


@dataclass
class MolResult:
    """One input molecule: its features, or the reason it was rejected, and any salt-stripping note."""

    features: DrugFeatures | None
    note: str | None
    error: str | None


def _one(smiles: str) -> tuple[DrugFeatures | None, str | None, str | None]:
    try:
        parsed, mol = sanitize_smiles(smiles)
        return drug_features_from_mol(mol, parsed.smiles), parsed.note, None
    except ResearchError as exc:
        return None, None, str(exc)


def _chunk(smiles: Sequence[str]) -> list[tuple[DrugFeatures | None, str | None, str | None]]:
    return [_one(s) for s in smiles]


def featurize_blocks(
    keys: Sequence[str], workers: int = 1
) -> Iterator[tuple[int, list[tuple[DrugFeatures | None, str | None, str | None]]]]:
    """`(offset, results)` for consecutive blocks of `keys`, in order, as each block is ready.

    With `workers` > 1 and a long list, blocks are featurized in that many processes, so a caller can
    use one block while later ones are still being computed. Closing the generator early cancels the
    blocks not yet started.
    """
    blocks = [keys[i : i + CHUNK] for i in range(0, len(keys), CHUNK)]
    if workers > 1 and len(keys) >= PARALLEL_MIN:
        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(_chunk, b) for b in blocks]
            try:
                for k, f in enumerate(futures):
                    yield k * CHUNK, f.result()
            finally:
                for f in futures:
                    f.cancel()
    else:
        for k, b in enumerate(blocks):
            yield k * CHUNK, _chunk(b)


def featurize_many(
    smiles: Sequence[str], workers: int = 1, on_block: Callable[[int, int], None] | None = None
) -> list[MolResult]:
    """Features of every SMILES (duplicates featurized once), in `workers` processes when the list is long.

    `on_block(done, total)` is called between blocks (it may raise to cancel).
    """
    uniq: dict[str, int] = {}
    for s in smiles:
        uniq.setdefault(s, len(uniq))
    keys = list(uniq)
    out: list[tuple[DrugFeatures | None, str | None, str | None]] = []
    for _, block in featurize_blocks(keys, workers):
        out.extend(block)
        if on_block:
            on_block(len(out), len(keys))
    res = [MolResult(*t) for t in out]
    return [res[uniq[s]] for s in smiles]


def valid_index(results: Sequence[MolResult]) -> np.ndarray:
    return np.array([i for i, r in enumerate(results) if r.features is not None], dtype=np.int64)
