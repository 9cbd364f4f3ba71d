"""Graph-reasoning eval: a generated benchmark on an OpenAI-compatible model, the factor optimizer, MCP overhead.

    python -m evals.graph --quick                      # small grid on the configured endpoint
    python -m evals.graph --tasks connectivity cycle --formats adjacency_set gml --schemes LTM CoT
    python -m evals.graph --optimize --task shortest_path   # factor optimizer live, with Rate
    python -m evals.graph --overhead                   # MCP call overhead of graph_solve
    python -m evals.graph --graphomni --limit 300      # GraphOmni's own LTM x Adjacency-Set prompts
    python -m evals.graph --shuffle --out DIR          # a long run; once stopped, it continues with
    python -m evals.graph --shuffle --out DIR --resume # the same options: only the unanswered questions

The endpoint is `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL` (or --base-url / --model).
Outputs go to --out: rows.csv (one row per question), factors.csv (accuracy, extraction rate, random
baseline and tokens per factor level), heatmap.png (accuracy, format x scheme), summary.json, and, while
the benchmark runs, rows.partial.jsonl (one JSON row per answered question) and run.json (the options
that decide which questions are asked, how, and by which model).

A stopped benchmark run continues with `--resume` and the same options in the same --out: the rows in
rows.partial.jsonl are kept (a line cut short by the stop is dropped), only the questions not answered
there are asked, in the order the uninterrupted run would ask them (with --shuffle too), and the outputs
cover all rows. A question is known by its task, generator, format, scheme, difficulty and item id (whose
last part is the item's seed, --seed plus its index in the cell). `--resume` with options other than the
ones in run.json is refused: repeat them, or give a new --out. Without `--resume` a run starts afresh.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict
from pathlib import Path

from tools.atomic import write_text
from tools.errors import InvalidInput, ResearchError
from tools.graph.benchmark import (
    Item,
    Row,
    check_levels,
    heatmap,
    make_items,
    run_items,
    summarize,
    write_factor_csv,
    write_rows,
)
from tools.graph.prompts import SCHEMES
from tools.graph.serialize import GRAPHOMNI_FORMATS
from tools.graph.tasks import GRAPHOMNI_TASKS
from tools.llm import ChatModel, OpenAIChat
from tools.paths import output_dir
from tools.settings import get_settings

QUICK = {
    "tasks": ["connectivity", "shortest_path", "triangle"],
    "generators": ["ERP"],
    "formats": ["adjacency_set", "edge_list", "friendship"],
    "schemes": ["none", "LTM", "CoT"],
    "difficulties": ["easy"],
    "per_cell": 2,
}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m evals.graph", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small grid that runs in seconds")
    ap.add_argument("--tasks", nargs="+", default=GRAPHOMNI_TASKS)
    ap.add_argument("--generators", nargs="+", default=["ERM", "ERP", "BAG", "SF"])
    ap.add_argument("--formats", nargs="+", default=GRAPHOMNI_FORMATS)
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES))
    ap.add_argument("--difficulties", nargs="+", default=["easy", "medium", "hard"])
    ap.add_argument("--per-cell", type=int, default=1)
    ap.add_argument("--samples", type=int, default=1, help="self-consistency samples (majority vote)")
    ap.add_argument("--k", type=int, default=3, help="exemplars for few-shot schemes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=None)
    ap.add_argument("--shuffle", action="store_true", help="ask the questions in a seeded random order")
    ap.add_argument("--resume", action="store_true",
                    help="continue the benchmark run stopped in --out: its answered questions (rows.partial.jsonl) "
                         "are kept and only the rest are asked; the options must be that run's (run.json has them)")
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: settings)")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--scripted", action="store_true",
                    help="use the built-in scripted solver (networkx answers, wrong on edge_list, silent under "
                         "'none') instead of an endpoint; --quick falls back to it when no endpoint is set")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: <output dir>/eval-graph)")
    ap.add_argument("--optimize", action="store_true", help="run the factor optimizer live, with an exhaustive "
                                                             "sweep for its Rate")
    ap.add_argument("--task", default="shortest_path", help="task for --optimize")
    ap.add_argument("--batch", type=int, default=4, help="questions per arm in the optimizer's first round")
    ap.add_argument("--table", action="store_true",
                    help="the factor optimizer on fixed accuracy tables (no model): Cost and Rate by interaction size")
    ap.add_argument("--from-rows", type=Path, default=None, metavar="ROWS_CSV",
                    help="the factor optimizer on the accuracy table measured in a benchmark's rows.csv (no model): "
                         "its Cost and Rate against exhaustive search, pooled over tasks and per task")
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.25, 0.5],
                    help="with --from-rows: fractions of the (format, scheme) pairs the optimizer may touch")
    ap.add_argument("--graphomni", action="store_true",
                    help="ask GraphOmni's published LTM x Adjacency-Set prompts (bundled), scored against graph_info")
    ap.add_argument("--limit", type=int, default=None, help="with --graphomni: every k-th record, about this many")
    ap.add_argument("--overhead", action="store_true", help="measure the MCP call overhead of graph_solve")
    ap.add_argument("--calls", type=int, default=200, help="calls per side for --overhead")
    ap.add_argument("--stdio", action="store_true", help="with --overhead: also through a stdio subprocess")
    return ap


def _model(args) -> ChatModel:
    s = get_settings().llm
    if args.scripted or (args.quick and not (args.base_url or args.api_key or s.configured)):
        from evals.graph.scripted import ScriptedSolver

        why = "as asked" if args.scripted else "no LLM endpoint is configured"
        print(f"using the scripted networkx solver ({why}; set OPENAI_BASE_URL for a real model)")
        return ScriptedSolver()
    if args.base_url or args.api_key:
        return OpenAIChat(base_url=args.base_url or s.base_url, api_key=args.api_key or "not-needed",
                          model=args.model or s.model, timeout_s=s.timeout_s, max_retries=s.max_retries,
                          concurrency=args.concurrency or s.concurrency)
    if not s.configured:
        from tools.llm import default_llm

        return default_llm()  # the embedded model (or NotConfigured with the fix when it is switched off)
    m = OpenAIChat.from_settings()
    if args.model:
        m.model = args.model
    if args.concurrency:
        m.concurrency = args.concurrency
    return m


def _print_table(summary: dict) -> None:
    o = summary["overall"]
    ratio = o["accuracy"] / o["random_baseline"] if o["random_baseline"] else float("inf")
    print(f"overall: n={o['n']} accuracy={o['accuracy']:.3f} extraction={o['extraction_rate']:.3f} "
          f"random={o['random_baseline']:.3f} (accuracy / random = {ratio:.2f}x) "
          f"prompt_tokens={o['mean_prompt_tokens']:.0f} completion_tokens={o['mean_completion_tokens']:.0f}")
    for factor, levels in summary["by"].items():
        print(f"-- by {factor}")
        for level, a in levels.items():
            print(f"   {level:24s} n={a['n']:4d} acc={a['accuracy']:.3f} extr={a['extraction_rate']:.3f} "
                  f"rand={a['random_baseline']:.3f} tok={a['mean_prompt_tokens']:.0f}")


def _item_key(x: Item | Row) -> tuple[str, ...]:
    """What identifies a question across runs with the same options (the id ends in the item's seed)."""
    return (x.task, x.generator, x.format, x.scheme, x.difficulty, x.id)


def _run_settings(args, grid: dict, levels: tuple[list[str], ...], model_name: str) -> dict:
    """The options that decide which questions a benchmark run asks, in which order, how, and of which model."""
    t, g, f, s, d = levels
    return {"tasks": t, "generators": g, "formats": f, "schemes": s, "difficulties": d, "per_cell": grid["per_cell"],
            "seed": args.seed, "k": 1 if args.quick else args.k, "samples": args.samples,
            "max_tokens": args.max_tokens, "shuffle": args.shuffle, "model": model_name}


def _check_resumable(out: Path, settings: dict) -> None:
    """Refuse to resume the run in `out` when it was made with other options than `settings`."""
    run_file = out / "run.json"
    if not run_file.is_file():
        print(f"note: {run_file} is missing (a run from before run.json was written); answered questions are "
              "matched to this run's by key, but --samples, --k, --max-tokens and the model cannot be checked")
        return
    earlier = json.loads(run_file.read_text(encoding="utf-8"))
    changed = sorted(k for k in settings.keys() | earlier.keys() if earlier.get(k) != settings.get(k))
    if changed:
        was = "; ".join(f"{k}: {earlier.get(k)!r} there, {settings.get(k)!r} now" for k in changed)
        raise InvalidInput(f"--resume: the run in {out} was made with other options ({was}).",
                           hint=f"Repeat that run's options (recorded in {run_file}) with --resume, or give a new "
                                "--out (or drop --resume) to start a fresh run.")


def _answered_rows(partial: Path, items: list[Item]) -> list[Row]:
    """The rows in `partial` that answer one of `items`, first answer per question; then `partial` holds only those.

    A line that does not read back as a row (cut short when the run was killed) is dropped, and the file is
    rewritten without it so the rows this run appends start on a line of their own.
    """
    wanted = {_item_key(it) for it in items}
    kept: dict[tuple[str, ...], Row] = {}
    unreadable = foreign = 0
    for line in partial.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = Row(**json.loads(line))
        except (json.JSONDecodeError, TypeError):
            unreadable += 1
            continue
        key = _item_key(row)
        if key not in wanted:
            foreign += 1
        elif key not in kept:
            kept[key] = row
    write_text(partial, "".join(json.dumps(asdict(r)) + "\n" for r in kept.values()))
    if unreadable or foreign:
        print(f"resume: dropped {unreadable} unreadable line(s) and {foreign} row(s) of questions this run does "
              f"not ask from {partial}")
    return list(kept.values())


async def _benchmark(args, out: Path) -> dict:
    """Run (or with --resume, finish) the generated benchmark and write rows.csv, factors.csv, heatmap, summary."""
    grid = dict(QUICK) if args.quick else {
        "tasks": args.tasks, "generators": args.generators, "formats": args.formats, "schemes": args.schemes,
        "difficulties": args.difficulties, "per_cell": args.per_cell}
    levels = check_levels(grid["tasks"], grid["generators"], grid["formats"], grid["schemes"], grid["difficulties"])
    model = _model(args)
    settings = _run_settings(args, grid, levels, model.name)
    partial = out / "rows.partial.jsonl"  # one line per answered question, kept if the run is stopped
    resuming = args.resume and partial.is_file()
    if resuming:
        _check_resumable(out, settings)
    items = make_items(*levels, grid["per_cell"], args.seed, k=settings["k"])
    if args.shuffle:  # any prefix a stopped run leaves is then a random sample of the grid
        import random

        random.Random(args.seed).shuffle(items)
    kept = _answered_rows(partial, items) if resuming else []
    if not resuming:
        partial.unlink(missing_ok=True)
    write_text(out / "run.json", json.dumps(settings, indent=1) + "\n")
    done = {_item_key(r) for r in kept}
    todo = [it for it in items if _item_key(it) not in done]
    if args.resume:
        print(f"resume: {len(kept)} of {len(items)} questions answered in {partial}; asking the other {len(todo)}")
    t0 = time.perf_counter()

    def keep(row: Row) -> None:
        with partial.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(row)) + "\n")

    new = await run_items(todo, model, samples=args.samples, max_tokens=args.max_tokens,
                          concurrency=args.concurrency or get_settings().llm.concurrency, on_row=keep)
    by_key = {_item_key(r): r for r in [*kept, *new]}
    rows = [by_key[_item_key(it)] for it in items if _item_key(it) in by_key]  # the uninterrupted run's order
    summ = summarize(rows)
    write_rows(rows, out / "rows.csv")
    write_factor_csv(summ, out / "factors.csv")
    heatmap(rows, out / "heatmap.png")
    summ["model"] = model.name
    summ["seconds"] = time.perf_counter() - t0
    summ["resumed_rows"] = len(kept)
    write_text(out / "summary.json", json.dumps(summ, indent=2))
    print(f"graph benchmark: {len(new)} questions on {model.name} in {summ['seconds']:.1f}s"
          f"{f' (and {len(kept)} answered before the resume)' if kept else ''} -> {out}")
    _print_table(summ)
    return summ


async def _optimize(args, out: Path) -> dict:
    from tools.graph.catalog import graph_optimize_factors

    formats = QUICK["formats"] if args.quick else args.formats
    schemes = QUICK["schemes"] + ["k-shot"] if args.quick else args.schemes
    res = await graph_optimize_factors(task=args.task, formats=formats, schemes=schemes,
                                       budget=0.5 if args.quick else 0.25, batch=args.batch, seed=args.seed,
                                       exhaustive=True, llm=_model(args))
    data = res.model_dump()
    write_text(out / "optimize.json", json.dumps(data, indent=2))
    print(f"factor optimizer on {res.model} for {res.task}: chose {res.best_format}/{res.best_scheme} "
          f"(accuracy {res.best_accuracy:.3f}); Cost {res.cost:.3f}; Rate {res.rate:.3f} "
          f"(exhaustive best {res.exhaustive_best.format}/{res.exhaustive_best.scheme} "
          f"{res.exhaustive_best.accuracy:.3f}); {res.questions_asked} questions")
    return data


def _read_rows(path: Path) -> list[dict]:
    """Benchmark rows from rows.csv, or from the rows.partial.jsonl a stopped run left."""
    import csv

    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def summarize_rows(path: Path) -> dict:
    """The benchmark's summary (overall and per factor) of rows read back from `path`."""
    def typed(r: dict) -> Row:
        kinds = {f.name: f.type for f in Row.__dataclass_fields__.values()}
        conv = {"int": int, "float": float, "bool": lambda v: v in (True, "True", "true", "1"), "str": str}
        return Row(**{k: conv[str(kinds[k])](v) for k, v in r.items() if k in kinds})

    return summarize([typed(r) for r in _read_rows(path)])


async def measured_table_study(rows_csv: Path, budgets: list[float]) -> list[dict]:
    """`factor_search` on measured (format, scheme) accuracies: Cost, Rate and the exhaustive best, per table.

    One table pools every task of the rows; one more per task. Rate is the chosen pair's measured accuracy
    over the best measured accuracy (1.0 when the best is 0: nothing to find).
    """
    from collections import defaultdict

    from tools.graph.optimize import factor_search, table_evaluator

    rows = _read_rows(rows_csv)
    if not rows:
        raise InvalidInput(f"{rows_csv} has no rows.", hint="Give the rows.csv a `python -m evals.graph` run wrote.")
    cells: dict[str, dict[tuple[str, str], list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        ok = int(r["correct"] in (True, "True", "true", "1"))
        cells["all tasks"][(r["format"], r["scheme"])].append(ok)
        cells[r["task"]][(r["format"], r["scheme"])].append(ok)
    formats = sorted({r["format"] for r in rows})
    schemes = sorted({r["scheme"] for r in rows})
    out = []
    for name, cell in cells.items():
        table = {(f, s): (sum(cell[(f, s)]) / len(cell[(f, s)]) if cell.get((f, s)) else 0.0)
                 for f in formats for s in schemes}
        best_arm = max(table, key=lambda a: table[a])
        for budget in budgets:
            res = await factor_search(formats, schemes, table_evaluator(table), budget=budget)
            out.append({"table": name, "budget": budget, "items_per_cell": min(len(v) for v in cell.values()),
                        "chosen": "/".join(res.best), "chosen_accuracy": table[res.best],
                        "exhaustive_best": "/".join(best_arm), "exhaustive_accuracy": table[best_arm],
                        "cost": res.cost, "rate": table[res.best] / table[best_arm] if table[best_arm] else 1.0,
                        "arms_evaluated": res.arms_evaluated, "arms_total": res.arms_total})
    return out


async def _graphomni(args, out: Path) -> dict:
    """GraphOmni's own prompts, each reply checked against the record's graph (graph_info), never its gt string."""
    import csv
    from collections import defaultdict

    from tools.graph.graphomni import SAMPLE_NAME, read_records, record_graph, record_params
    from tools.graph.tasks import check, get_task, random_baseline, solve, task_params
    from tools.llm import Message
    from tools.paths import sample_path

    records = list(read_records(sample_path(SAMPLE_NAME)))
    limit = args.limit or (60 if args.quick else len(records))
    records = records[:: max(1, len(records) // limit)][:limit]
    model = _model(args)
    sem = asyncio.Semaphore(args.concurrency or get_settings().llm.concurrency)
    rows: list[dict] = []

    async def one(rec: dict) -> None:
        task = get_task(rec["task"])
        G = record_graph(rec)
        try:
            p = task_params(task, G, **record_params(rec))
        except ResearchError:
            rows.append({"id": rec["id"], "task": task.key, "difficulty": rec["difficulty"],
                         "graph_type": rec["graph_type"], "scorable": False, "extracted": False, "correct": False,
                         "random_baseline": 0.0, "reply": ""})
            return
        sol = solve(task, G, p)
        async with sem:
            c = await model.complete([Message("user", rec["query"])], max_tokens=args.max_tokens)
        v = check(task, G, p, c.text, sol)
        rows.append({"id": rec["id"], "task": task.key, "difficulty": rec["difficulty"],
                     "graph_type": rec["graph_type"], "scorable": True, "extracted": v.extracted,
                     "correct": v.correct, "random_baseline": random_baseline(task, G, p, sol),
                     "reply": c.text[-300:]})

    await asyncio.gather(*(one(r) for r in records))
    with (out / "graphomni_rows.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["task"]].append(r)
    scored = [r for r in rows if r["scorable"]]
    acc = sum(r["correct"] for r in scored) / max(1, len(scored))
    print(f"GraphOmni LTM x Adjacency Set on {model.name}: {len(rows)} records, {len(scored)} scorable, "
          f"accuracy {acc:.3f}, extraction {sum(r['extracted'] for r in scored) / max(1, len(scored)):.3f}, "
          f"random {sum(r['random_baseline'] for r in scored) / max(1, len(scored)):.3f}")
    summary = {"model": model.name, "records": len(rows), "scorable": len(scored), "accuracy": acc, "by_task": {}}
    for task, rs in sorted(by.items()):
        sc = [r for r in rs if r["scorable"]]
        a = sum(r["correct"] for r in sc) / max(1, len(sc))
        rb = sum(r["random_baseline"] for r in sc) / max(1, len(sc))
        summary["by_task"][task] = {"n": len(rs), "scorable": len(sc), "accuracy": a, "random_baseline": rb}
        print(f"   {task:16s} n={len(rs):4d} acc={a:.3f} rand={rb:.3f}")
    write_text(out / "graphomni_summary.json", json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = args.out or (output_dir() / "eval-graph")
    out.mkdir(parents=True, exist_ok=True)
    try:
        if args.overhead:
            from evals.graph.overhead import measure

            measure(calls=20 if args.quick else args.calls, stdio=args.stdio, out=out)
        elif args.table:
            from tools.graph.optimize import table_study

            study = asyncio.run(table_study(GRAPHOMNI_TASKS, GRAPHOMNI_FORMATS, list(SCHEMES),
                                            seeds=2 if args.quick else 10))
            write_text(out / "optimizer_table.json", json.dumps(study, indent=2))
            for r in study:
                print(f"interaction sd {r['interaction_sd']:.2f}: {r['tables']} tables, Cost {r['cost']:.3f}, "
                      f"Rate {r['rate']:.3f} (min {r['min_rate']:.3f}); random search, same cost: Rate "
                      f"{r['random_search_rate']:.3f}")
        elif args.from_rows:
            summ = summarize_rows(args.from_rows)
            write_text(out / "summary_from_rows.json", json.dumps(summ, indent=2))
            _print_table(summ)
            study = asyncio.run(measured_table_study(args.from_rows, args.budgets))
            write_text(out / "optimizer_measured.json", json.dumps(study, indent=2))
            for r in study:
                print(f"{r['table']:18s} budget {r['budget']:.2f}: chose {r['chosen']} ({r['chosen_accuracy']:.3f}); "
                      f"exhaustive {r['exhaustive_best']} ({r['exhaustive_accuracy']:.3f}); Cost {r['cost']:.3f} "
                      f"({r['arms_evaluated']}/{r['arms_total']}); Rate {r['rate']:.3f}")
        elif args.graphomni:
            asyncio.run(_graphomni(args, out))
        elif args.optimize:
            asyncio.run(_optimize(args, out))
        else:
            asyncio.run(_benchmark(args, out))
    except ResearchError as exc:
        print(f"error: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
