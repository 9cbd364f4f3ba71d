"""Screening a molecule library of any size: streamed in partitions, scored on Dask, top-k merged exactly.

The library file (SMILES, CSV/TSV, SDF, optionally gzipped, or Parquet) is read as a stream; each
partition of `screen_partition_rows` records is featurized and scored in one task (`tools.execution`).
Each task returns its rows (written in order to one Parquet file of full scores) and its own top-k
molecules; merging the partitions' top-k lists gives the exact global top-k, because a molecule among
the k best overall is among the k best of the partition where it scores highest. Molecules are grouped
by InChIKey (of the kept fragment), so one molecule written two ways is one hit carrying every input id.

InChI is the slowest step per molecule (slower than parsing, fingerprints and the model together), so it
is computed only where a key is needed: for a partition's molecules in score order until it has its k
best distinct keys, and, once the hits are known, for the records that could share a hit's key. Records
with one InChI have the same heavy atoms (InChI keeps every heavy atom; it moves hydrogens and charges),
so only records whose molecular formula has a hit's heavy atoms are checked.
"""

from __future__ import annotations

import csv
import functools
import gzip
import heapq
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tools.atomic import atomic_output
from tools.dti.files import (
    ID_COLUMNS,
    SMILES_COLUMNS,
    _iter_sdf,
    _iter_smi,
    _iter_table,
    _pick,
    file_kind,
    table_columns,
)
from tools.errors import InvalidInput, LimitExceeded, ResearchError
from tools.progress import Progress, report

Record = tuple[int, str, str, str | None]  # (1-based row, id, SMILES as given, error already known)

PARQUET_SCHEMA_FIELDS = (
    ("row", "int64"),
    ("id", "string"),
    ("input", "string"),
    ("smiles", "string"),
    ("formula", "string"),
    ("score", "float64"),
    ("note", "string"),
    ("error", "string"),
)


def library_kind(path: Path) -> str:
    """'parquet', or the text kind of `tools.dti.files.file_kind` ('sdf', 'csv', 'tsv', 'smi')."""
    if path.name.lower().endswith((".parquet", ".pq")):
        return "parquet"
    return file_kind(path)


def count_records(path: Path) -> int:
    """An upper bound on the records of a library (lines, SDF records or Parquet rows), read fast."""
    kind = library_kind(path)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    opener = gzip.open if path.suffix == ".gz" else open
    marker = b"$$$$" if kind == "sdf" else b"\n"
    n = 0
    with opener(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            n += chunk.count(marker)
    return n + (1 if kind != "sdf" else 0)


def iter_library(path: Path) -> Iterator[Record]:
    """Every record of a library file, streamed: `(row, id, smiles, error)`."""
    kind = library_kind(path)
    if kind == "parquet":
        yield from _iter_parquet(path)
        return
    if kind in ("smi", "sdf"):
        for r in _iter_smi(path) if kind == "smi" else _iter_sdf(path):
            yield r.row, r.id, r.smiles, r.fields.get("_error")
        return
    header = table_columns(path)
    col, idcol = _columns(header, path)
    for i, rec in enumerate(_iter_table(path, "\t" if kind == "tsv" else ","), start=1):
        rid = (rec.get(idcol) or "").strip() if idcol else ""
        yield i, rid or f"row{i}", (rec.get(col) or "").strip(), None


def _columns(header: list[str], path: Path) -> tuple[str, str | None]:
    col = _pick(header, SMILES_COLUMNS)
    if col is None:
        raise InvalidInput(
            f"{path.name} has no SMILES column (columns: {', '.join(header) or 'none'}).",
            hint="Name the column 'SMILES' (or smiles, canonical_smiles, smi).",
        )
    return col, _pick(header, ID_COLUMNS)


def _iter_parquet(path: Path) -> Iterator[Record]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    col, idcol = _columns(pf.schema_arrow.names, path)
    row = 0
    for batch in pf.iter_batches(batch_size=8192, columns=[c for c in (col, idcol) if c]):
        smiles = batch.column(col).to_pylist()
        ids = batch.column(idcol).to_pylist() if idcol else [None] * len(smiles)
        for s, rid in zip(smiles, ids, strict=True):
            row += 1
            yield row, (str(rid).strip() if rid is not None else "") or f"row{row}", (s or "").strip(), None


def partitions(records: Iterator[Record], size: int, limit: int) -> Iterator[list[Record]]:
    """Consecutive lists of `size` records; `LimitExceeded` once more than `limit` records were read."""
    seen = 0
    while block := list(itertools.islice(records, size)):
        seen += len(block)
        if seen > limit:
            raise LimitExceeded("Library records (counting stopped at the limit)", seen, limit,
                                "RESEARCH_MCP_DTI__MAX_SCREEN_ROWS")
        yield block


# ------------------------------------------------------------------ one partition, in a worker


@dataclass(frozen=True)
class ScreenTask:
    model: str
    target: str  # a validated sequence
    top_k: int
    records: list[Record]


@dataclass(frozen=True)
class Candidate:
    """The best-scoring occurrence of one molecule (group key: InChIKey) in a partition."""

    score: float
    row: int
    key: str
    id: str
    smiles: str
    inchikey: str | None
    formula: str
    note: str | None

    def order(self) -> tuple[float, int]:
        return (-self.score, self.row)


@dataclass
class ScreenPart:
    """Every row of a partition and its best `top_k` molecules."""

    rows: list[int]
    ids: list[str]
    inputs: list[str]
    smiles: list[str | None]
    formulas: list[str | None]
    scores: np.ndarray
    notes: list[str | None]
    errors: list[str | None]
    top: list[Candidate] = field(default_factory=list)


@functools.lru_cache(maxsize=8)
def _target_vector(model: str, target: str) -> Any:
    from tools.dti.registry import load_model
    from tools.dti.train import embed_table, protein_table

    net, _ = load_model(model)
    return embed_table(net, protein_table([target]), net.protein_modalities, threads=1)


def group_key(inchikey: str | None, smiles: str) -> str:
    return inchikey or f"smiles:{smiles}"


def inchikey_of(smiles: str) -> str | None:
    """The standard InChIKey of a canonical SMILES (stereo perceived as in that SMILES), None where InChI fails."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    return (Chem.MolToInchiKey(mol) if mol is not None else "") or None


_HYDROGEN_AND_CHARGE = re.compile(r"H\d*|[+-]\d*$")  # RE2 reads it as Python does (pyarrow in `ids_of`)


def heavy_formula(formula: str) -> str:
    """A molecular formula (RDKit's Hill formula) without its hydrogens and charge: equal for any two
    molecules of one InChI. (It also drops the H of Hg, He, Hf, Ho and Hs alike on both sides.)"""
    return _HYDROGEN_AND_CHARGE.sub("", formula)


def screen_partition(task: ScreenTask) -> ScreenPart:
    """Parse, featurize and score one partition against the target, on one thread (so any process gives
    the same bits); rejected rows keep their reason."""
    import torch
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula
    from threadpoolctl import threadpool_limits

    from tools.dti.chem import sanitize_smiles
    from tools.dti.features import drug_table
    from tools.dti.registry import load_model
    from tools.dti.train import _inputs, blend_block, library_neighbourhood
    from tools.dti.views import add_views

    n = len(task.records)
    smiles: list[str | None] = [None] * n
    formulas: list[str | None] = [None] * n
    notes: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    mols, good = [], []
    for j, (_row, _rid, text, err) in enumerate(task.records):
        if err:
            errors[j] = err
            continue
        try:
            parsed, mol = sanitize_smiles(text)
        except ResearchError as exc:
            errors[j] = str(exc)
            continue
        smiles[j], notes[j], formulas[j] = parsed.smiles, parsed.note, CalcMolFormula(mol)
        mols.append(mol)
        good.append(j)
    scores = np.full(n, np.nan)
    if good:
        net, _ = load_model(task.model)
        threads = torch.get_num_threads()
        kept = [smiles[j] for j in good]
        try:
            with torch.no_grad(), threadpool_limits(1):
                torch.set_num_threads(1)
                pvec = _target_vector(task.model, task.target)
                table = drug_table(mols, kept)
                if net.boost is not None:
                    add_views(table, net.boost.views, mols=mols)
                del mols
                dvec = net.fuse(net.embed(_inputs(torch, table, np.arange(len(good))), net.drug_modalities))
                nbr = library_neighbourhood(net, table["ecfp"], kept, task.target)
                logit = net.interaction_logit(dvec, pvec.expand(len(good), -1), nbr)
                scores[np.array(good)] = blend_block(net, logit, table, task.target, nbr)
        finally:
            torch.set_num_threads(threads)
    part = ScreenPart([r[0] for r in task.records], [r[1] for r in task.records], [r[2] for r in task.records],
                      smiles, formulas, scores, notes, errors)
    part.top = partition_top(part, task.top_k)
    return part


def partition_top(part: ScreenPart, k: int) -> list[Candidate]:
    """The best occurrence of each molecule of a partition, the `k` best molecules first. Records are taken
    best first (ties: the earlier row), so the first record of a key is its best; InChIKeys are computed
    until `k` distinct keys are found."""
    ok = np.flatnonzero(np.isfinite(part.scores))
    order = ok[np.lexsort((np.asarray(part.rows)[ok], -part.scores[ok]))]
    best: dict[str, Candidate] = {}
    seen: set[str] = set()
    for j in order:
        if len(best) >= k:
            break
        smi = part.smiles[j]
        assert smi is not None
        if smi in seen:  # a worse record of a canonical SMILES already taken: the same key
            continue
        seen.add(smi)
        inchikey = inchikey_of(smi)
        key = group_key(inchikey, smi)
        if key not in best:
            best[key] = Candidate(float(part.scores[j]), part.rows[j], key, part.ids[j], smi, inchikey,
                                  part.formulas[j] or "", part.notes[j])
    return list(best.values())


class TopK:
    """The exact k best molecules over partitions merged in row order (ties: the earlier row first)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.best: dict[str, Candidate] = {}

    def add(self, candidates: list[Candidate]) -> None:
        for c in candidates:
            old = self.best.get(c.key)
            if old is None or c.order() < old.order():
                self.best[c.key] = c
        if len(self.best) > 4 * self.k:
            self.best = {c.key: c for c in self.ranked()}

    def ranked(self) -> list[Candidate]:
        return heapq.nsmallest(self.k, self.best.values(), key=Candidate.order)


# ------------------------------------------------------------------ the whole screen, in the caller


@dataclass
class ScreenSummary:
    records: int
    scored: int
    rejected: int
    partitions: int
    hits: list[tuple[Candidate, list[str]]]  # best first, with every input id of the molecule
    scores_parquet: Path
    rejected_csv: Path | None


def _arrow_table(part: ScreenPart) -> Any:
    import pyarrow as pa

    scores = [None if not math.isfinite(x) else float(x) for x in part.scores]
    cols = [part.rows, part.ids, part.inputs, part.smiles, part.formulas, scores, part.notes, part.errors]
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in PARQUET_SCHEMA_FIELDS])
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)


def screen_library(path: Path, target: str, model: str, top_k: int, scores_path: Path, rejected_path: Path,
                   partition_rows: int, max_rows: int, progress: Progress | None = None) -> ScreenSummary:
    """Score every record of `path` against `target`; write all rows to `scores_path` (Parquet) and the
    rejected ones to `rejected_path` (CSV, only when there are any); return the top-k molecules."""
    import pyarrow.parquet as pq

    from tools.execution import map_partitions

    total = count_records(path)
    tasks = (ScreenTask(model, target, top_k, block) for block in partitions(iter_library(path), partition_rows,
                                                                              max_rows))
    top = TopK(top_k)
    records = scored = rejected = n_parts = 0
    report(progress, 0, total, "featurizing and scoring")
    with atomic_output(scores_path) as tmp_scores, atomic_output(rejected_path) as tmp_rej:
        with open(tmp_rej, "w", newline="", encoding="utf-8") as rej_fh:
            rej = csv.writer(rej_fh)
            rej.writerow(["row", "id", "input", "error"])
            writer = None
            try:
                for part in map_partitions(screen_partition, tasks, progress=progress, name="dti-screen"):
                    table = _arrow_table(part)
                    if writer is None:
                        writer = pq.ParquetWriter(tmp_scores, table.schema, compression="zstd")
                    writer.write_table(table)
                    top.add(part.top)
                    n_parts += 1
                    records += len(part.rows)
                    ok = int(np.isfinite(part.scores).sum())
                    scored += ok
                    rejected += len(part.rows) - ok
                    for j, err in enumerate(part.errors):
                        if err is not None:
                            rej.writerow([part.rows[j], part.ids[j], part.inputs[j][:200], err])
                    report(progress, records, max(total, records), "featurizing and scoring")
            finally:
                if writer is not None:
                    writer.close()
        if records == 0:
            raise InvalidInput(f"The library {path.name!r} holds no molecules.", hint="Check the file.")
    if not rejected:
        rejected_path.unlink()
    ranked = top.ranked()
    ids = ids_of(scores_path, ranked)
    return ScreenSummary(records, scored, rejected, n_parts, [(c, ids[c.key]) for c in ranked], scores_path,
                         rejected_path if rejected else None)


def ids_of(scores_path: Path, hits: list[Candidate]) -> dict[str, list[str]]:
    """Every input id of the molecules of `hits` (by group key), in row order, read back from the scores
    file: the records whose heavy atoms match a hit's, whose InChIKeys are then computed (once per SMILES)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out: dict[str, list[str]] = {c.key: [] for c in hits}
    if not hits:
        return out
    key_of: dict[str, str | None] = {c.smiles: c.inchikey for c in hits}
    heavy = _pa_strings(sorted({heavy_formula(c.formula) for c in hits if c.inchikey}))
    by_smiles = _pa_strings([c.smiles for c in hits if not c.inchikey])
    for batch in pq.ParquetFile(scores_path).iter_batches(columns=["id", "smiles", "formula"], batch_size=65536):
        formula = pc.replace_substring_regex(batch.column("formula"), _HYDROGEN_AND_CHARGE.pattern, "")
        hit = pc.or_(pc.fill_null(pc.is_in(formula, value_set=heavy), False),
                     pc.fill_null(pc.is_in(batch.column("smiles"), value_set=by_smiles), False))
        if not pc.any(hit).as_py():
            continue
        sel = batch.filter(hit)
        for rid, smi in zip(sel.column("id").to_pylist(), sel.column("smiles").to_pylist(), strict=True):
            if smi not in key_of:
                key_of[smi] = inchikey_of(smi)
            key = group_key(key_of[smi], smi)
            if key in out:
                out[key].append(rid)
    return out


def _pa_strings(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, type=pa.string())
