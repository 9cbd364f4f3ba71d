"""One table for several agent-suite runs: `python -m evals.agents.compare --run LABEL CSV JSONL... [--out MD]`.

Each `--run` is one model's suite: the `results.csv` that `python -m evals.agents` wrote (trajectory metrics
and accuracy per task and style) and the `runs.jsonl` file(s) of its runs (tool calls, steps, seconds). The
table has a row per model and style: tool-call rate, known-tool and valid-argument rates, the trajectory
metrics, accuracy overall and per family, mean model steps and seconds a run.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

FAMILIES = ("eo", "graph", "dti", "nid")
TRAJECTORY = ("any_order", "in_order", "exact_match", "parameter")


def _runs(paths: list[Path]) -> dict[tuple[str, str], dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "task" in row:
                rows[(row["task"], row["style"])] = row
    return rows


def rows_for(label: str, results: Path, runs: list[Path]) -> list[dict[str, Any]]:
    """The table's rows (one per style) for one model's suite."""
    with results.open(encoding="utf-8") as fh:
        scored = list(csv.DictReader(fh))
    behaviour = _runs(runs)
    out = []
    for style in sorted({r["style"] for r in scored}):
        sel = [r for r in scored if r["style"] == style]
        beh = [behaviour[(r["task"], style)] for r in sel if (r["task"], style) in behaviour]
        calls = sum(b.get("calls", 0) for b in beh)
        row: dict[str, Any] = {"model": label, "style": style, "runs": len(sel),
                               "with behaviour": len(beh),
                               "tool-call rate": sum(b.get("calls", 0) > 0 for b in beh) / len(beh) if beh else None,
                               "known-tool": sum(b.get("known_calls", 0) for b in beh) / calls if calls else None,
                               "valid args": sum(b.get("valid_calls", 0) for b in beh) / calls if calls else None}
        for m in TRAJECTORY:
            row[m] = sum(float(r[m]) for r in sel) / len(sel)
        row["accuracy"] = sum(float(r["accuracy"]) for r in sel) / len(sel)
        for fam in FAMILIES:
            fam_rows = [r for r in sel if r["family"] == fam]
            row[f"acc {fam}"] = (f"{sum(float(r['accuracy']) for r in fam_rows):.0f}/{len(fam_rows)}"
                                 if fam_rows else "-")
        row["mean steps"] = sum(b.get("steps", 0) for b in beh) / len(beh) if beh else None
        row["mean s"] = sum(b.get("seconds", 0.0) for b in beh) / len(beh) if beh else None
        out.append(row)
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    cols = [c for c in rows[0] if c != "with behaviour"]

    digits = {"mean steps": 2, "mean s": 1}

    def cell(col: str, v: Any) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, float):
            return f"{v:.{digits.get(col, 3)}f}"
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(c, r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m evals.agents.compare", description=__doc__.splitlines()[0])
    p.add_argument("--run", nargs="+", action="append", required=True, metavar="LABEL RESULTS_CSV RUNS_JSONL",
                   help="a label, the suite's results.csv, then its runs.jsonl file(s)")
    p.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for spec in args.run:
        if len(spec) < 2:
            p.error("--run needs a label and a results.csv (then runs.jsonl files)")
        paths = [Path(s) for s in spec[1:]]
        missing = [str(x) for x in paths if not x.is_file()]
        if missing:
            p.error(f"no such file: {', '.join(missing)}")
        rows.extend(rows_for(spec[0], paths[0], paths[1:]))
    text = markdown(rows)
    print(text, end="")
    if args.out:
        from tools.atomic import write_text

        write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
