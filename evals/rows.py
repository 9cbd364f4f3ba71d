"""Per-row result tables that every eval writes: a list of dicts as one CSV, written atomically."""

from __future__ import annotations

import csv
from pathlib import Path


def write_rows_csv(path: Path, rows: list[dict]) -> None:
    """Rows (dicts with the same keys) as a CSV at `path`, written under a temporary name and renamed."""
    from tools.atomic import atomic_output

    with atomic_output(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
