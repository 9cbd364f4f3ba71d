"""The five workflows end to end on the configured model (else the embedded one), once each:
`python -m evals.agents.workflows [--only NAME ...] [--out DIR]`.

Each runs as a user runs it (`research-mcp agent --workflow NAME --input JSON --approve --quiet --json`,
a stdio server of its own), and its trace is read back: status, seconds, the tool chain, the model's calls
and tokens, and what each model step wrote (each model call's reply, and the model-written fields of tool
results). Where the answer is known it is checked (the mean NDVI of the Landsat sample, the bottle's label in
Alice). Rows are appended to `workflows.jsonl` as
each run ends (a stopped run resumes with the rest); `workflows.md` is the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tools.atomic import write_text
from tools.paths import output_dir

INPUTS: dict[str, dict[str, Any]] = {
    "eo": {"scene": "sample://eo/landsat8_c1_l1t", "product": "NDVI", "area_rules": [{"op": ">", "value": 0.3}],
           "question": "What is the mean NDVI, and what share of the scene has NDVI above 0.3?"},
    "qa": {"task": "What was written on the little bottle Alice found?", "path": "sample://longctx/alice_chapter1.txt",
           "chunk_tokens": 1500},
    "graph": {"tasks": ["connectivity", "shortest_path", "triangle"], "generator": "ERP", "n_nodes": 6,
              "seeds": [0], "format": "adjacency_set", "scheme": "LTM"},
    "dti": {"target": None, "library": "sample://dti/screening_library.smi", "top_k": 3,
            "question": "Which molecule scores highest, and how sure is the model?"},
    "nid": {"path": "sample://nid/jsonlite_MD5.txt", "dataset": "jsonlite_md5", "mode": "audit",
            "train": {"per_dataset": 10, "epochs": 1}, "n_gids": 7, "max_nids": 10},
}
EXPECTED = {"eo": ("0.53", "the mean NDVI 0.5306"), "qa": ("drink me", "DRINK ME")}
MODEL_FIELDS = ("answer", "reply", "model_answer", "answer_text", "text")


def _first_target() -> str:
    from tools.paths import SAMPLE_DIR

    line = (SAMPLE_DIR / "dti" / "targets.csv").read_text(encoding="utf-8").splitlines()[1]
    return line.strip().split(",")[-1]


def _model_written(result_text: str) -> list[str]:
    """The fields of a tool result that a model wrote (answers of chunk workers, of graph questions)."""
    try:
        data = json.loads(result_text)
    except (TypeError, ValueError):
        return []
    found: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if "model" in v or "reply" in v or "status" in v:
                for k in MODEL_FIELDS:
                    if isinstance(v.get(k), str) and v[k].strip():
                        found.append(v[k].strip()[:160])
                        break
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(data)
    return found[:12]


def run_one(name: str, inputs: dict[str, Any], out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "server", "agent", "--workflow", name, "--input", json.dumps(inputs),
                           "--approve", "--quiet", "--json"], capture_output=True, text=True, env=dict(os.environ),
                          timeout=3600)
    seconds = time.perf_counter() - t0
    row: dict[str, Any] = {"workflow": name, "exit": proc.returncode, "seconds": round(seconds, 1)}
    try:
        head = json.loads(proc.stdout)
    except ValueError:
        row.update(status="failed", error=(proc.stderr or proc.stdout)[-600:])
        return row
    trace = json.loads(Path(head["trace"]).read_text(encoding="utf-8"))
    row.update(status=head["status"], answer=head.get("answer"), model=trace.get("model"),
               tools=[c["name"] for c in trace.get("tool_calls", [])],
               model_calls=len(trace.get("llm_calls", [])), tokens=trace.get("tokens"),
               model_replies=[c.get("reply", "") for c in trace.get("llm_calls", [])],
               model_steps_in_tools=[s for c in trace.get("tool_calls", []) for s in _model_written(c.get("result"))])
    if name in EXPECTED:
        row["right"] = EXPECTED[name][0] in str(row["answer"]).lower()
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| workflow | status | seconds | model calls | tools | the model's answer | check |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        check = "" if "right" not in r else (
            "right" if r["right"] else f"wrong (expected {EXPECTED[r['workflow']][1]})")
        answer = " ".join(str(r.get("answer") or r.get("error") or "").split())[:220].replace("|", "/")
        lines.append(f"| {r['workflow']} | {r['status']} | {r['seconds']} | {r.get('model_calls', '-')} | "
                     f"{' > '.join(r.get('tools', []))} | {answer} | {check} |")
    lines.append("")
    for r in rows:
        for i, reply in enumerate(r.get("model_replies") or [], start=1):
            lines.append(f"- {r['workflow']}, model step {i}: `{' '.join(reply.split())[:300]}`".replace("|", "/"))
        if r.get("model_steps_in_tools"):
            lines.append(f"- {r['workflow']}: what the model wrote inside the tools: "
                         + "; ".join(f"`{s}`" for s in r["model_steps_in_tools"]).replace("|", "/"))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.agents.workflows", description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=list(INPUTS), help="these workflows only")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    out = args.out or output_dir() / "eval-workflows"
    out.mkdir(parents=True, exist_ok=True)
    rows_file = out / "workflows.jsonl"
    done = {}
    if rows_file.exists():
        for line in rows_file.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            done[r["workflow"]] = r
    for name in args.only or list(INPUTS):
        if name in done:
            continue
        inputs = dict(INPUTS[name])
        if name == "dti":
            inputs["target"] = _first_target()
        row = run_one(name, inputs, out)
        done[name] = row
        with rows_file.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row)[:400], flush=True)
    rows = [done[n] for n in INPUTS if n in done]
    write_text(out / "workflows.md", table(rows))
    print(table(rows))
    return 0 if all(r["status"] == "done" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
