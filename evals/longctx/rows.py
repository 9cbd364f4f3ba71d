"""The per-item rows of a long-context run read back, and the Wilson interval every table of them uses."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any

from tools.errors import InvalidInput


def wilson_interval(correct: float, n: int, z: float = statistics.NormalDist().inv_cdf(0.975)) -> tuple[float, float]:
    """The Wilson score interval of a proportion `correct / n` (95% by default); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The per-item rows a run wrote (rows.csv), typed again."""
    ints = ("length", "tokens", "correct", "chunks", "failed_chunks", "calls", "prompt_tokens", "completion_tokens",
            "item", "strict")
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise InvalidInput(f"{path} has no rows.", hint="Give the rows.csv a `--endpoint settings` run wrote.")
    for r in rows:
        for k in ints:
            if k in r:  # rows of older runs have no item index or strict score
                r[k] = int(r[k])
        r["wall_s"] = float(r["wall_s"])
        r["chunk_tokens"] = int(r["chunk_tokens"]) if r["chunk_tokens"] else ""
    return rows
