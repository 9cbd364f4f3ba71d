"""Run the agent suite and score it: `python -m evals.agents [--quick] [--policy oracle|model] [--out DIR] [--resume]`.

Each (task, style) is one ReAct-agent run over the server's tools through one shared MCP session.
`--policy model` uses the configured OpenAI-compatible endpoint; `--policy oracle` serves the scripted
oracle (it follows each expected chain) from a local ScriptedLLM, so the suite runs in CI without a
model. Before running, every expected tool name is checked against the server's tool list; tasks
naming tools the server lacks are left out and listed (their family is not installed), never scored
against chains no agent could follow. Writes results.csv, summary.md and metrics.png under --out, and
each run's row to runs.jsonl as it finishes (`--resume` runs only the pairs that file lacks).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

QUICK_TASKS = ("eo-l8-ndvi-mean", "eo-l8-vegetated-share", "eo-l8-lst-class", "eo-l8-sun-elevation",
               "eo-compare-ndvi")
METRICS = ("any_order", "in_order", "exact_match", "parameter", "accuracy", "efficiency")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="research-mcp eval agents", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"run {len(QUICK_TASKS)} tasks only")
    p.add_argument("--policy", choices=("oracle", "perturbed", "model"), default=None,
                   help="oracle: the scripted policy that follows each chain (default when no endpoint is configured); "
                   "perturbed: the oracle with one deterministic deviation per task; model: the configured endpoint")
    p.add_argument("--tasks", nargs="*", help="task ids to run (default: all)")
    p.add_argument("--styles", nargs="*", default=["instruction", "goal"], choices=["instruction", "goal"])
    p.add_argument("--http", metavar="URL", help="reach the server over streamable HTTP instead of stdio")
    p.add_argument("--out", type=Path, default=None, help="output folder (default <output>/eval-agents)")
    p.add_argument("--max-steps", type=int, default=12)
    p.add_argument("--selection", action="store_true",
                   help="no model: how often the tools the agent binds for each question cover its expected chain")
    p.add_argument("--heldout", action="store_true",
                   help="with --selection: the questions of evals/agents/heldout.py, which no selection rule was "
                   "tuned on, instead of the suite's")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in --out/runs.jsonl and run only the (task, style) pairs missing there")
    p.add_argument("--list", action="store_true", help="list the tasks and exit")
    return p


@contextlib.contextmanager
def _oracle_endpoint(tasks: list[Any], policy: str) -> Iterator[str]:
    from evals.agents.oracle import Oracle, Perturbed
    from evals.scripted_endpoint import ScriptedLLM

    with ScriptedLLM(Perturbed(tasks) if policy == "perturbed" else Oracle(tasks)) as llm:
        yield llm.base_url


def _model(policy: str, base_url: str | None) -> Any:
    from agents.model import chat_model
    from tools.settings import get_settings

    if policy in ("oracle", "perturbed"):
        return chat_model(get_settings().llm.model_copy(update={"base_url": base_url, "model": policy}))
    return chat_model()


def call_behaviour(calls: list[Any], names: set[str], schemas: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many calls name a tool the server has, and how many of those carry arguments its schema accepts."""
    import jsonschema

    known = [c for c in calls if c.name in names]
    valid = 0
    for c in known:
        try:
            jsonschema.validate(c.args, schemas.get(c.name) or {"type": "object"})
        except jsonschema.ValidationError:
            continue
        valid += 1
    return {"calls": len(calls), "known_calls": len(known), "valid_calls": valid}


def llm_figures(trace_file: Path) -> dict[str, Any]:
    """From a run's trace: the first prompt's tokens (the server's count), all prompt and completion
    tokens, and the seconds spent waiting for the model."""
    try:
        calls = json.loads(trace_file.read_text(encoding="utf-8")).get("llm_calls", [])
    except (OSError, json.JSONDecodeError):
        calls = []
    return {"first_prompt_tokens": calls[0]["prompt_tokens"] if calls else None,
            "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
            "completion_tokens": sum(c["completion_tokens"] for c in calls),
            "model_seconds": round(sum(c["seconds"] or 0.0 for c in calls), 1)}


def load_progress(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows of an earlier run's runs.jsonl that can be resumed from (those that kept their calls)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if isinstance(row, dict) and "calls_made" in row:
                rows[(row["task"], row["style"])] = row
    return rows


def result_of(row: dict[str, Any]) -> tuple[list[Any], str | None]:
    """(calls, reply) of a saved row, as `run_suite` returns them."""
    from evals.agents.metrics import Call

    return [Call(c["name"], c.get("args") or {}) for c in row["calls_made"]], row.get("reply")


async def run_suite(tasks: list[Any], styles: list[str], *, model: Any, target: Any, max_steps: int,
                    console: Any, behaviour: list[dict[str, Any]] | None = None,
                    progress: Path | None = None,
                    done: dict[tuple[str, str], dict[str, Any]] | None = None
                    ) -> tuple[dict[tuple[str, str], Any], dict[str, dict[str, Any]], list[str]]:
    """Run every (task, style) on one session; results keyed by (task id, style).

    `behaviour`, when given, gets one row per run: status, model turns, tool calls (to known tools, with
    schema-valid arguments), tool errors, seconds, the first prompt's tokens, the calls made and the reply;
    `progress` gets the same rows as JSON lines as they are made, so a stopped run keeps them. Pairs in
    `done` (rows of an earlier run) are not run again: their saved calls and reply are the result.
    """
    from agents.react import ask
    from agents.runner import open_session
    from evals.agents.metrics import Call, validate_chains

    results: dict[tuple[str, str], Any] = {}
    async with open_session(target) as session:
        schemas = {n: i.input_schema for n, i in session.box.info.items()}
        bad = validate_chains({t.id: t.expected_calls() for t in tasks}, session.box.names())
        served = {n.split("_")[0] for n in session.box.names()}
        broken = {tid: names for tid, names in bad.items() if {n.split("_")[0] for n in names} <= served}
        if broken:  # the family is there but the chain names a tool it does not have: a fault in the suite
            raise SystemExit("agent suite: expected chains name tools the server does not expose: "
                             + "; ".join(f"{tid}: {', '.join(n)}" for tid, n in broken.items()))
        runnable = [t for t in tasks if t.id not in bad]
        skipped = [f"{tid} (server lacks {', '.join(names)})" for tid, names in bad.items()]
        stamp = time.strftime("%H%M%S")
        for t in runnable:
            for style in styles:
                if done and (t.id, style) in done:
                    results[(t.id, style)] = result_of(done[(t.id, style)])
                    if behaviour is not None:
                        behaviour.append(done[(t.id, style)])
                    continue
                t0 = time.perf_counter()
                try:
                    r = await ask(t.question(style), session=session, thread_id=f"suite-{t.id}-{style}-{stamp}",
                                  approval="yes", max_steps=max_steps, console=console, model=model)
                except Exception as exc:  # a failed run is scored as missing, and said
                    console.print(f"[red]{t.id} {style}: {type(exc).__name__}: {exc}[/]")
                    continue
                # the agent's calls as it made them (from its messages), executed or not
                calls = [Call(c["name"], c.get("args") or {}) for m in r.values.get("messages", [])
                         for c in (getattr(m, "tool_calls", None) or [])]
                results[(t.id, style)] = (calls, r.answer)
                if behaviour is not None:
                    msgs = r.values.get("messages", [])
                    row = {"task": t.id, "style": style, "status": r.status,
                           "steps": sum(1 for m in msgs if getattr(m, "type", "") == "ai"),
                           **call_behaviour(calls, set(session.box.names()), schemas),
                           "tool_errors": sum(1 for e in r.executed if e.get("status") == "error"),
                           "seconds": round(time.perf_counter() - t0, 1), "answer": (r.answer or "")[:160],
                           **llm_figures(r.trace_path),
                           "calls_made": [{"name": c.name, "args": dict(c.args)} for c in calls], "reply": r.answer}
                    behaviour.append(row)
                    if progress is not None:
                        with progress.open("a", encoding="utf-8") as fh:
                            fh.write(json.dumps(row) + "\n")
    return results, schemas, skipped


async def selection_recall(groups: dict[str, list[tuple[str, list[str]]]], target: Any) -> str:
    """Markdown: per group of (question, expected chain), how many questions get the chain's first tool, and
    every tool of it, among the tools the ReAct agent binds at its first model call
    (`agents.tooluse.ToolUse.selected`), then the questions whose first tool was not the first pick; no model
    runs."""
    from agents.runner import open_session
    from agents.tooluse import ToolUse

    async with open_session(target) as session:
        box = session.box
        use = ToolUse(box)
        lines = ["| questions of | questions | first tool bound | first tool first | whole chain bound "
                 "| tools bound (mean) |", "|---|---|---|---|---|---|"]
        misses = []
        for label, questions in groups.items():
            picks = [(use.selected(q, []), need, q) for q, need in questions if all(n in box.info for n in need)]
            lines.append(f"| {label} | {len(picks)} | {sum(need[0] in got for got, need, _ in picks)} | "
                         f"{sum(got[:1] == need[:1] for got, need, _ in picks)} | "
                         f"{sum(set(need) <= set(got) for got, need, _ in picks)} | "
                         f"{sum(len(got) for got, _, _ in picks) / max(1, len(picks)):.2f} |")
            misses += [f"- {label}: {need[0]} needed first, bound {', '.join(got)}: {q[:90]}"
                       for got, need, q in picks if got[:1] != need[:1]]
    return "\n".join(lines) + "\n" + ("\nFirst pick not the chain's first tool:\n" + "\n".join(misses) + "\n"
                                      if misses else "")


def behaviour_table(rows: list[dict[str, Any]], scores: list[Any]) -> str:
    """Markdown: tool-call rate, known-tool and valid-argument rates, accuracy, mean steps, seconds and
    first-prompt tokens, runs that ended without a tool call, per style."""
    correct = {(s.task_id, s.style): float(s.correct) for s in scores}
    lines = ["| style | runs | tool-call rate | known-tool rate | valid-argument rate | accuracy | mean steps "
             "| tool errors | mean s | first prompt (tokens) | ended without a tool |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for style in sorted({r["style"] for r in rows}):
        sel = [r for r in rows if r["style"] == style]
        calls = sum(r["calls"] for r in sel)
        known, valid = ((f"{sum(r[k] for r in sel) / calls:.3f}" for k in ("known_calls", "valid_calls"))
                        if calls else ("n/a (no calls)", "n/a (no calls)"))
        firsts = [r["first_prompt_tokens"] for r in sel if r.get("first_prompt_tokens")]
        first = f"{sum(firsts) / len(firsts):.0f} (max {max(firsts)})" if firsts else "n/a"
        lines.append(f"| {style} | {len(sel)} | {sum(r['calls'] > 0 for r in sel) / len(sel):.3f} | "
                     f"{known} | {valid} | "
                     f"{sum(correct.get((r['task'], style), 0.0) for r in sel) / len(sel):.3f} | "
                     f"{sum(r['steps'] for r in sel) / len(sel):.2f} | {sum(r['tool_errors'] for r in sel)} | "
                     f"{sum(r['seconds'] for r in sel) / len(sel):.1f} | {first} | "
                     f"{sum(r['status'] == 'no_tool_call' for r in sel)} |")
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, tasks: list[Any], scores: list[Any]) -> dict[str, Any]:
    """results.csv (one row per task and style), summary.md (by style and family), metrics.png."""
    out.mkdir(parents=True, exist_ok=True)
    fam = {t.id: t.family for t in tasks}
    rows = [{"task": s.task_id, "family": fam[s.task_id], "style": s.style, "any_order": s.any_order,
             "in_order": s.in_order, "exact_match": s.exact_match, "parameter": s.parameter,
             "accuracy": float(s.correct), "efficiency": s.efficiency, "missing": s.missing} for s in scores]
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    def mean_of(sel: list[dict[str, Any]]) -> dict[str, float]:
        return {m: sum(r[m] for r in sel) / len(sel) for m in METRICS} if sel else {}

    groups: dict[str, dict[str, float]] = {}
    for style in sorted({r["style"] for r in rows}):
        groups[f"all / {style}"] = mean_of([r for r in rows if r["style"] == style])
        for f in sorted(set(fam.values())):
            sel = [r for r in rows if r["style"] == style and r["family"] == f]
            if sel:
                groups[f"{f} / {style}"] = mean_of(sel)
    lines = ["| group | n | " + " | ".join(METRICS) + " |", "|---|---|" + "---|" * len(METRICS)]
    for g, vals in groups.items():
        style = g.split(" / ")[1]
        n = sum(1 for r in rows if r["style"] == style and (g.startswith("all") or r["family"] == g.split(" / ")[0]))
        lines.append(f"| {g} | {n} | " + " | ".join(f"{vals[m]:.3f}" for m in METRICS) + " |")
    missing = [f"{r['task']} ({r['style']})" for r in rows if r["missing"]]
    text = "\n".join(lines) + (f"\n\nMissing results (scored 0): {', '.join(missing)}\n" if missing else "\n")
    (out / "summary.md").write_text(text, encoding="utf-8")
    _plot(out / "metrics.png", groups)
    return groups


def _plot(path: Path, groups: dict[str, dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = [g for g in groups if g.startswith("all")] + [g for g in groups if not g.startswith("all")]
    metrics = [m for m in METRICS if m != "efficiency"]
    x = np.arange(len(metrics))
    width = 0.8 / max(1, len(names))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [4, 1]})
    for i, g in enumerate(names):
        ax.bar(x + i * width, [groups[g][m] for m in metrics], width, label=g)
    ax.set_xticks(x + width * (len(names) - 1) / 2, metrics)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title("Trajectory (tools, order, parameters) and outcome (accuracy)")
    ax2.barh(range(len(names)), [groups[g]["efficiency"] for g in names], color="grey")
    ax2.axvline(1.0, color="black", lw=0.8)
    ax2.set_yticks(range(len(names)), names, fontsize=7)
    ax2.invert_yaxis()
    ax2.set_title("efficiency (calls / expected)")
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=min(5, len(names)), fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    import anyio
    from rich.console import Console

    from agents.connection import ServerTarget
    from evals.agents.families import all_tasks
    from evals.agents.metrics import default_context, score_suite
    from tools.paths import output_dir
    from tools.settings import get_settings

    args = _parser().parse_args(argv)
    tasks = list(all_tasks())
    if args.list:
        for t in tasks:
            print(f"{t.id} [{t.family}] {' -> '.join(s.name for s in t.steps)}")
        return 0
    if args.tasks:
        unknown = sorted(set(args.tasks) - {t.id for t in tasks})
        if unknown:
            print(f"unknown task ids: {', '.join(unknown)}", file=sys.stderr)
            return 2
        tasks = [t for t in tasks if t.id in args.tasks]
    elif args.quick:
        tasks = [t for t in tasks if t.id in QUICK_TASKS]
    if args.selection:
        if args.heldout:
            from evals.agents.heldout import PROBES

            groups = {"held out": [(p.question, p.chain) for p in PROBES]}
        else:
            groups = {style: [(t.question(style), [s.name for s in t.steps]) for t in tasks] for style in args.styles}
        print(anyio.run(selection_recall, groups, ServerTarget(url=args.http) if args.http else ServerTarget()))
        return 0
    policy = args.policy or ("model" if get_settings().llm.configured else "oracle")
    out = args.out or output_dir() / "eval-agents"
    console = Console(stderr=True, quiet=True)
    target = ServerTarget(url=args.http) if args.http else ServerTarget()
    t0 = time.perf_counter()
    behaviour: list[dict[str, Any]] = []
    out.mkdir(parents=True, exist_ok=True)
    progress = out / "runs.jsonl"
    done = load_progress(progress) if args.resume else {}
    if not args.resume:
        progress.unlink(missing_ok=True)

    async def go(model: Any) -> Any:
        return await run_suite(tasks, args.styles, model=model, target=target, max_steps=args.max_steps,
                               console=console, behaviour=behaviour, progress=progress, done=done)

    if policy in ("oracle", "perturbed"):
        with _oracle_endpoint(tasks, policy) as url:
            model_used = _model(policy, url)
            results, schemas, skipped = anyio.run(go, model_used)
    else:
        model_used = _model("model", None)  # the configured endpoint, else the embedded model
        results, schemas, skipped = anyio.run(go, model_used)
    runnable = [t for t in tasks if not any(s.startswith(t.id + " ") for s in skipped)]
    if not runnable:
        print("agent suite: no task can run on this server (its families are missing): " + "; ".join(skipped),
              file=sys.stderr)
        return 2
    truth = {t.id: (t.expected_calls(), t.expected) for t in runnable}
    scores = score_suite(truth, results, args.styles, default_context(), schemas)
    groups = write_outputs(out, runnable, scores)
    if behaviour:
        with (out / "summary.md").open("a", encoding="utf-8") as fh:
            fh.write("\nModel behaviour (calls to tools the server has; arguments checked against each tool's "
                     "input schema):\n\n" + behaviour_table(behaviour, scores))
    print(f"agent suite ({policy}, {getattr(model_used, 'model_name', policy)}): {len(runnable)} tasks x "
          f"{len(args.styles)} styles = {len(scores)} runs "
          f"in {time.perf_counter() - t0:.0f} s; {len(skipped)} tasks left out")
    for s in skipped:
        print(f"  left out: {s}")
    print((out / "summary.md").read_text(encoding="utf-8"))
    print(f"results: {out / 'results.csv'}  plot: {out / 'metrics.png'}")
    print(json.dumps({g: round(v["accuracy"], 3) for g, v in groups.items() if g.startswith("all")}))
    return 0
