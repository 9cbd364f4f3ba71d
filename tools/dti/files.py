"""Molecule and pair files in (SDF, CSV, SMILES; optionally gzipped) and out (CSV, SDF), with row bounds.

Readers return raw rows (id, SMILES, other columns); parsing and validation happen per row later, so one
bad record never sinks a file. A file past `max_file_rows` is refused before any work is done.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.errors import InvalidInput, LimitExceeded
from tools.settings import get_settings

SMILES_COLUMNS = ("smiles", "canonical_smiles", "smi", "drug", "compound_smiles")
PROTEIN_COLUMNS = ("protein", "sequence", "target_sequence", "seq", "target")
LABEL_COLUMNS = ("y", "label", "interaction")
ID_COLUMNS = ("id", "name", "mol_id", "compound_id", "drugid", "drug_id", "title")
ACTIVITY_COLUMNS = ("activity", "pic50", "pki", "pkd", "pactivity", "affinity")


@dataclass
class RawRecord:
    """One row of an input file: its 1-based row number, an id, a SMILES and the other fields."""

    row: int
    id: str
    smiles: str
    fields: dict[str, str] = field(default_factory=dict)


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace", newline="")


def file_kind(path: Path) -> str:
    """'sdf', 'csv', 'tsv' or 'smi' from the file name."""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".sdf", ".sd", ".mol")):
        return "sdf"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".tsv", ".tab")):
        return "tsv"
    if name.endswith((".smi", ".smiles", ".txt", ".ism")):
        return "smi"
    raise InvalidInput(
        f"Unknown file type {path.name!r}.",
        hint="Use .sdf, .csv, .tsv or .smi (SMILES [id] per line), optionally gzipped (.gz).",
    )


def _check_size(path: Path) -> None:
    limits = get_settings().dti
    mb = path.stat().st_size / 1e6
    if mb > limits.max_file_mb:
        raise LimitExceeded(
            f"File size of {path.name} (MB)", round(mb, 1), limits.max_file_mb, "RESEARCH_MCP_DTI__MAX_FILE_MB"
        )


def _bounded(rows: Iterable[RawRecord], what: str) -> list[RawRecord]:
    limit = get_settings().dti.max_file_rows
    out: list[RawRecord] = []
    for r in rows:
        if len(out) >= limit:
            raise LimitExceeded(
                f"Rows in {what} (counting stopped at the limit)", limit + 1, limit, "RESEARCH_MCP_DTI__MAX_FILE_ROWS"
            )
        out.append(r)
    return out


def _pick(header: Sequence[str], choices: Sequence[str]) -> str | None:
    low = {h.strip().lower(): h for h in header}
    for c in choices:
        if c in low:
            return low[c]
    return None


def _iter_table(path: Path, delimiter: str) -> Iterator[dict[str, str]]:
    with _open_text(path) as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        if not reader.fieldnames:
            raise InvalidInput(
                f"{path.name} is empty or has no header row.", hint="The first row must name the columns."
            )
        yield from reader


def table_columns(path: Path) -> list[str]:
    """The header of a CSV/TSV file."""
    delimiter = "\t" if file_kind(path) == "tsv" else ","
    with _open_text(path) as fh:
        first = fh.readline()
    return [c.strip() for c in next(csv.reader([first], delimiter=delimiter), [])]


def read_molecules(path: Path, smiles_column: str | None = None) -> list[RawRecord]:
    """Molecule records from an SDF, CSV/TSV (a SMILES column) or SMILES file."""
    _check_size(path)
    kind = file_kind(path)
    if kind == "sdf":
        return _bounded(_iter_sdf(path), path.name)
    if kind == "smi":
        return _bounded(_iter_smi(path), path.name)
    delimiter = "\t" if kind == "tsv" else ","
    header = table_columns(path)
    col = smiles_column if smiles_column in header else _pick(header, SMILES_COLUMNS)
    if col is None:
        raise InvalidInput(
            f"{path.name} has no SMILES column (columns: {', '.join(header) or 'none'}).",
            hint="Name the column 'SMILES' or pass smiles_column.",
        )
    idcol = _pick(header, ID_COLUMNS)

    def rows() -> Iterator[RawRecord]:
        for i, rec in enumerate(_iter_table(path, delimiter), start=1):
            smi = (rec.get(col) or "").strip()
            rid = (rec.get(idcol) or "").strip() if idcol else ""
            yield RawRecord(i, rid or f"row{i}", smi, {k: v for k, v in rec.items() if k not in (col,) and k})

    return _bounded(rows(), path.name)


def _iter_smi(path: Path) -> Iterator[RawRecord]:
    with _open_text(path) as fh:
        n = 0
        for line in fh:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split(None, 1)
            if n == 0 and parts[0].lower() in SMILES_COLUMNS:
                continue
            n += 1
            yield RawRecord(n, parts[1].strip() if len(parts) > 1 else f"row{n}", parts[0])


def _iter_sdf(path: Path) -> Iterator[RawRecord]:
    """SDF records; a record RDKit cannot read keeps its row with an empty SMILES and the reason."""
    from rdkit import Chem

    from tools.dti.chem import _quiet_rdkit

    _quiet_rdkit()
    fh = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115
    with fh:
        supplier = Chem.ForwardSDMolSupplier(fh, sanitize=False, removeHs=False)
        for i, mol in enumerate(supplier, start=1):
            if mol is None:
                yield RawRecord(i, f"record{i}", "", {"_error": "SDF record could not be read (bad molfile block)."})
                continue
            props = {k: str(v) for k, v in mol.GetPropsAsDict().items()}
            name = mol.GetProp("_Name").strip() if mol.HasProp("_Name") else ""
            try:
                smi = Chem.MolToSmiles(mol)
            except Exception as exc:  # RDKit may fail to write an unsanitized record
                yield RawRecord(i, name or f"record{i}", "", {"_error": f"SDF record unreadable ({exc})."})
                continue
            yield RawRecord(i, name or f"record{i}", smi, props)


def read_pairs(path: Path, require_label: bool = False) -> tuple[list[RawRecord], str, str | None, str | None]:
    """Pair rows from a CSV/TSV with a SMILES and a protein column (and Y / activity when present).

    Returns `(records, protein_column, label_column, activity_column)`; each record's fields hold the row.
    """
    _check_size(path)
    kind = file_kind(path)
    if kind not in ("csv", "tsv"):
        raise InvalidInput(
            f"Pairs need a CSV/TSV file, got {path.name!r}.", hint="Give columns SMILES, Protein (and Y to train)."
        )
    header = table_columns(path)
    smi = _pick(header, SMILES_COLUMNS)
    prot = _pick(header, PROTEIN_COLUMNS)
    label = _pick(header, LABEL_COLUMNS)
    act = _pick(header, ACTIVITY_COLUMNS)
    missing = [n for n, c in (("SMILES", smi), ("Protein", prot)) if c is None]
    if require_label and label is None and act is None:
        missing.append("Y")
    if missing:
        raise InvalidInput(
            f"{path.name} lacks the column(s) {', '.join(missing)} (found: {', '.join(header) or 'none'}).",
            hint="A pair file needs columns SMILES, Protein and, for training or evaluation, Y (0/1).",
        )
    delimiter = "\t" if kind == "tsv" else ","
    idcol = _pick(header, ID_COLUMNS)

    def rows() -> Iterator[RawRecord]:
        for i, rec in enumerate(_iter_table(path, delimiter), start=1):
            rid = (rec.get(idcol) or "").strip() if idcol else ""
            yield RawRecord(i, rid or f"row{i}", (rec.get(smi) or "").strip(), dict(rec))

    return _bounded(rows(), path.name), prot, label, act


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """Write rows to a CSV file with a header (atomically: the file appears only when complete)."""
    from tools.atomic import atomic_output

    with atomic_output(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in r])
    return path


def write_sdf(path: Path, records: Iterable[tuple[str, str, dict[str, object]]]) -> Path:
    """Write `(name, smiles, properties)` records to an SDF file with 2D coordinates."""
    from rdkit import Chem
    from rdkit.Chem import rdDepictor

    from tools.atomic import atomic_output

    with atomic_output(path) as tmp, Chem.SDWriter(str(tmp)) as w:
        for name, smiles, props in records:
            mol = Chem.MolFromSmiles(smiles)
            if mol is None:
                continue
            rdDepictor.Compute2DCoords(mol)
            mol.SetProp("_Name", str(name))
            for k, v in props.items():
                mol.SetProp(str(k), f"{v:.6g}" if isinstance(v, float) else str(v))
            w.write(mol)
    return path
