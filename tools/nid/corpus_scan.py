"""Natural identifiers across a corpus of many files (JSONL, Parquet, text), partitioned and run on Dask.

Each text or JSONL file is cut into byte ranges at line boundaries (a line belongs to the range where it
starts), each Parquet file into its row groups; one partition is one Dask task (`tools.execution`).
Detection is `find_nids` per document (a JSONL record's text field, a Parquet row's, or a text line);
the first occurrence of each distinct identifier is found by merging the partitions in corpus order,
exactly as one pass over the concatenated corpus would. With a model, the distinct identifiers (at most
max_nids, a seeded sample past it) are scored against their GIDs in the contexts cut out by the
detecting task, again in partitions.
"""

from __future__ import annotations

import csv
import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field

from tools.atomic import atomic_output
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import output_path, resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings

TEXT_SUFFIXES = (".txt", ".text", ".md", ".log", ".csv", ".tsv", ".json", ".java", ".py", ".js", ".sol")
PARTITION_BYTES = 4 << 20
MAX_FILES = 100_000


# ------------------------------------------------------------------ partitions


@dataclass(frozen=True)
class ScanTask:
    path: str
    kind: str  # jsonl | text | parquet
    start: int  # byte offset (text, jsonl) or row group (parquet)
    end: int
    text_field: str
    types: tuple[str, ...] | None
    plausible_only: bool
    context_chars: int  # kept on each side of a detection for scoring


@dataclass(frozen=True)
class Found:
    """One occurrence: its document (line or row, 0-based within the partition) and its span there."""

    line: int
    type: str
    value: str
    start: int
    end: int
    casing: str
    snippet: str  # the document around the identifier
    offset: int  # where the identifier starts in the snippet


@dataclass(frozen=True)
class ScanPart:
    documents: int
    found: list[Found]
    errors: list[tuple[int, str]]  # (line within the partition, reason)


def _kind(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    return "text"


def corpus_files(paths: list[str]) -> list[Path]:
    """The files of the corpus: each path given, and the JSONL/Parquet/text files under each folder given."""
    out: list[Path] = []
    for given in paths:
        p = resolve_input(given)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")
                           and f.name.lower().endswith((".jsonl", ".ndjson", ".parquet", ".pq", *TEXT_SUFFIXES)))
            out += found
        else:
            out.append(p)
        if len(out) > MAX_FILES:
            raise InvalidInput(f"The corpus holds over {MAX_FILES} files.", hint="Split it into several calls.")
    for f in out:
        if f.suffix == ".gz":
            raise InvalidInput(f"{f.name} is gzipped; a corpus file is read in byte ranges, which needs it plain.",
                               hint="Decompress it (gunzip) or convert it to Parquet.")
    if not out:
        raise InvalidInput("The corpus holds no files.", hint="Pass files or folders with .jsonl, .parquet or text.")
    return out


def scan_tasks(files: list[Path], text_field: str, types: list[str] | None, plausible_only: bool,
               context_chars: int, partition_bytes: int | None = None) -> Iterator[ScanTask]:
    partition_bytes = partition_bytes or PARTITION_BYTES
    for f in files:
        kind = _kind(f)
        if kind == "parquet":
            import pyarrow.parquet as pq

            groups = pq.ParquetFile(f).metadata.num_row_groups
            spans = [(g, g + 1) for g in range(groups)]
        else:
            size = f.stat().st_size
            spans = [(a, min(size, a + partition_bytes)) for a in range(0, max(size, 1), partition_bytes)]
        for a, b in spans:
            yield ScanTask(str(f), kind, a, b, text_field, tuple(types) if types else None, plausible_only,
                           context_chars)


def _lines(path: str, start: int, end: int) -> Iterator[bytes]:
    """The lines that start in [start, end) of a file."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":
                fh.readline()  # the line in progress belongs to the previous range
        while fh.tell() < end:
            line = fh.readline()
            if not line:
                return
            yield line


def _documents(task: ScanTask) -> Iterator[tuple[str | None, str | None]]:
    """(document text, error) per line or row of the partition."""
    if task.kind == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(task.path)
        if task.text_field not in pf.schema_arrow.names:
            raise InvalidInput(f"{Path(task.path).name} has no column {task.text_field!r} "
                               f"(columns: {', '.join(pf.schema_arrow.names)}).", hint="Pass text_field.")
        for v in pf.read_row_group(task.start, columns=[task.text_field]).column(0).to_pylist():
            yield (v if isinstance(v, str) else None), (None if isinstance(v, str) else "not a string")
        return
    for raw in _lines(task.path, task.start, task.end):
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if task.kind == "text":
            yield line, None
            continue
        if not line.strip():
            yield None, None
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            yield None, f"not JSON ({exc.msg})"
            continue
        value = rec.get(task.text_field) if isinstance(rec, dict) else None
        yield (value, None) if isinstance(value, str) else (None, f"no string field {task.text_field!r}")


def scan_partition(task: ScanTask) -> ScanPart:
    """Every identifier occurrence in one partition, with the context around it."""
    from tools.nid.detect import find_nids

    found: list[Found] = []
    errors: list[tuple[int, str]] = []
    n = 0
    for i, (doc, err) in enumerate(_documents(task)):
        n += 1
        if err:
            errors.append((i, err))
        if not doc:
            continue
        for d in find_nids(doc, list(task.types) if task.types else None, plausible_only=task.plausible_only):
            a = max(0, d.start - task.context_chars)
            found.append(Found(i, d.type, d.value, d.start, d.end, d.casing,
                               doc[a: d.end + task.context_chars], d.start - a))
    return ScanPart(n, found, errors)


# ------------------------------------------------------------------ scoring partitions


@dataclass(frozen=True)
class ScoreTask:
    model: str
    sets: list  # CandidateSet
    prefix_chars: int
    suffix_chars: int
    k: float
    recall: bool
    batch_size: int


@functools.lru_cache(maxsize=4)
def _scorer(path: str, mtime: float):
    from tools.nid.scorers import open_model

    return open_model(Path(path))


def score_partition(task: ScoreTask) -> np.ndarray:
    """Membership scores (sets, candidates, scores) of one partition of candidate sets, on one thread."""
    import torch

    from tools.nid.pipeline import score_features

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        scorer = _scorer(task.model, os.stat(task.model).st_mtime)
        return score_features(scorer, task.sets, prefix_chars=task.prefix_chars, suffix_chars=task.suffix_chars,
                              k=task.k, recall=task.recall, batch_size=task.batch_size)
    finally:
        torch.set_num_threads(threads)


# ------------------------------------------------------------------ the tool


class CorpusNID(BaseModel):
    type: str
    value: str
    file: str
    line: int = Field(description="1-based line (JSONL, text) or row (Parquet) of the first occurrence.")
    start: int = Field(description="Character offset of the identifier in that document.")
    end: int
    casing: str
    occurrences: int


class CorpusScanResult(BaseModel):
    files: int
    documents: int
    partitions: int
    distributed: bool = Field(description="Whether the partitions ran on a Dask cluster (else in this process).")
    total_occurrences: int
    unique: int
    by_type: dict[str, int] = Field(description="Distinct identifiers per type.")
    identifiers: list[CorpusNID] = Field(description="First max_results distinct identifiers, in corpus order.")
    identifiers_csv: str = Field(description="CSV of every distinct identifier: type, value, file, line, span, count.")
    unreadable: int = Field(description="Lines or rows skipped (not JSON, no text field).")
    scores_path: str | None = Field(None, description="With a model: NPZ of features (NIDs x candidates x scores; "
                                    "candidate 0 = the NID), score_names, nids, types, as nid_score writes.")
    scored_nids: int = 0


def nid_corpus_scan(
    paths: Annotated[list[str], Field(description="Files or folders (JSONL, Parquet, text) in the roots.")],
    text_field: Annotated[str, Field(description="JSONL field / Parquet column of the text.")] = "text",
    types: Annotated[list[str] | None, Field(description="Types to look for; default: all.")] = None,
    plausible_only: Annotated[bool, Field(description="Drop values that cannot be random (1L, 20100212L).")] = True,
    max_results: Annotated[int, Field(ge=0, le=1000)] = 50,
    model: Annotated[str | None, Field(description="Also score each NID against its GIDs with this checkpoint "
                                       "or Hugging Face folder (as nid_score).")] = None,
    n_gids: Annotated[int, Field(ge=1, description="GIDs per NID.")] = 15,
    max_nids: Annotated[int, Field(ge=1)] = 200,
    prefix_chars: Annotated[int, Field(ge=0, le=4096, description="Context kept before the identifier.")] = 64,
    suffix_chars: Annotated[int, Field(ge=0, le=4096, description="Context kept after it.")] = 8,
    k: Annotated[float, Field(gt=0, le=1, description="Min-K% fraction.")] = 0.2,
    recall: bool = True,
    seed: int = 0,
    progress: Progress | None = None,
) -> CorpusScanResult:
    """Detect natural identifiers across a corpus of many files on Dask, optionally scoring them.

    JSONL, Parquet, logs too big for nid_detect. Counts per type, identifiers with file and line, a
    CSV and, with `model`, an NPZ as nid_score's.
    """
    from tools.execution import map_partitions, will_distribute

    lim = get_settings().nid
    if model is not None:
        if not 1 <= n_gids < lim.max_candidates:
            raise InvalidInput(f"n_gids must lie in [1, {lim.max_candidates - 1}], got {n_gids}.", hint="Use 15.")
        if max_nids > lim.max_nids:
            raise LimitExceeded("max_nids", max_nids, lim.max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
        model_path = resolve_input(model)
    if types:
        from tools.nid.formats import get_type

        for t in types:
            get_type(t)
    files = corpus_files(paths)
    total_bytes = sum(f.stat().st_size for f in files)
    context = max(prefix_chars, suffix_chars)
    first: dict[tuple[str, str], tuple[Found, str, int]] = {}
    counts: dict[tuple[str, str], int] = {}
    line_base: dict[str, int] = {}
    documents = occurrences = unreadable = n_parts = 0
    done_bytes = 0
    tasks = scan_tasks(files, text_field, types, plausible_only, context)
    report(progress, 0, total_bytes, "scanning")
    for task, part in zip(scan_tasks(files, text_field, types, plausible_only, context),
                          map_partitions(scan_partition, tasks, progress=progress, name="nid-scan"), strict=True):
        base = line_base.get(task.path, 0)
        for f in part.found:
            key = (f.type, f.value)
            if key not in counts:
                counts[key] = 0
                first[key] = (f, task.path, base + f.line + 1)
            counts[key] += 1
        line_base[task.path] = base + part.documents
        documents += part.documents
        occurrences += len(part.found)
        unreadable += len(part.errors)
        n_parts += 1
        done_bytes += (task.end - task.start) if task.kind != "parquet" else 0
        report(progress, min(done_bytes, total_bytes), total_bytes, f"scanned {documents} documents")
    by_type: dict[str, int] = {}
    for t, _ in first:
        by_type[t] = by_type.get(t, 0) + 1
    rows = [CorpusNID(type=f.type, value=f.value, file=path, line=line, start=f.start, end=f.end, casing=f.casing,
                      occurrences=counts[key]) for key, (f, path, line) in first.items()]
    csv_path = output_path("nid_corpus_identifiers", ".csv")
    with atomic_output(csv_path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["type", "value", "file", "line", "start", "end", "casing", "occurrences"])
        for r in rows:
            w.writerow([r.type, r.value, r.file, r.line, r.start, r.end, r.casing, r.occurrences])
    result = CorpusScanResult(
        files=len(files), documents=documents, partitions=n_parts, distributed=will_distribute(n_parts),
        total_occurrences=occurrences, unique=len(first), by_type=by_type, identifiers=rows[:max_results],
        identifiers_csv=str(csv_path), unreadable=unreadable,
    )
    if model is not None and first:
        result.scores_path, result.scored_nids = _score(
            str(model_path), [f for f, _, _ in first.values()], n_gids, max_nids, prefix_chars, suffix_chars, k,
            recall, seed, progress)
    return result


def _score(model: str, found: list[Found], n_gids: int, max_nids: int, prefix_chars: int, suffix_chars: int,
           k: float, recall: bool, seed: int, progress: Progress | None) -> tuple[str, int]:
    from tools.execution import map_partitions
    from tools.nid.pipeline import candidate_set
    from tools.nid.scores import SCORE_NAMES

    if len(found) > max_nids:
        idx = np.sort(np.random.default_rng(seed).choice(len(found), max_nids, replace=False))
        found = [found[i] for i in idx]
    sets = [candidate_set(f.snippet, f.offset, f.offset + f.end - f.start, f.type, n_gids, seed=seed) for f in found]
    step = 32
    tasks = (ScoreTask(model, sets[a: a + step], prefix_chars, suffix_chars, k, recall, 64)
             for a in range(0, len(sets), step))
    feats = []
    for block in map_partitions(score_partition, tasks, progress=progress, name="nid-score"):
        feats.append(block)
        report(progress, sum(len(b) for b in feats), len(sets), "scoring NIDs")
    npz = output_path("nid_corpus_scores", ".npz")
    with atomic_output(npz) as tmp:
        np.savez_compressed(tmp, features=np.concatenate(feats), score_names=np.array(SCORE_NAMES),
                            nids=np.array([s.nid for s in sets]), types=np.array([s.type for s in sets]))
    return str(npz), len(sets)
