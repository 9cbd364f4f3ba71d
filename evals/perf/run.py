"""One performance benchmark, every ratio side by side: MCP per-call latency over stdio, server start-up,
tools/list latency, chunked-QA (D&C) concurrency, and the rows other families contribute (EO, DTI, NID).

    research-mcp eval perf [--quick]        # or: python -m evals.perf [--quick]

Row format. Every benchmark, here or in a family's ``perf_rows(quick: bool) -> list[dict]``, returns rows
that are plain dicts with these keys:

    target      str    what is measured, one short line ("MCP call latency, graph_solve 20 nodes, stdio")
    ours        float  our figure, in ``unit`` (a median where repeated)
    baseline    float  the comparison's figure, in ``unit``, measured in the same run, interleaved
    unit        str    "s", "ms", "calls/s", ... (the same unit for ours and baseline)
    ratio       float  ours / baseline when lower is better (times), baseline / ours when higher is better
                       (throughputs), so that a ratio below 1 always means ours is the better side
    goal        str    the target as text. A relative goal ends in "x" and is judged on ``ratio``
                       ("<= 1.2x"); an absolute goal names a unit and is judged on ``ours`` ("<= 1.5 s",
                       "<= 50 ms", the same unit as ``unit``)
    met         bool   whether the goal is met in this run (``judge(row)`` computes it from ratio/ours and goal)
    limit       str    what limits it (the bottleneck measured or reasoned), one short line
    same_output bool   both sides gave the same outputs (checked, not assumed); None if not applicable

Optional keys: ``baseline_name`` (str, what the baseline is: "bare mcp MCPServer", "gdal_calc.py"),
``n`` (int, repetitions behind a median), ``note`` (str). A family's ``perf_rows`` may raise; the
harness then prints that family's row as failed with the error and carries on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import importlib
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from tools.atomic import atomic_output
from tools.paths import output_dir

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
KEYS = ("target", "ours", "baseline", "unit", "ratio", "goal", "met", "limit", "same_output")
# Where each family's rows come from: the first module of the list that defines `perf_rows`.
FAMILIES: dict[str, tuple[str, ...]] = {
    "eo": ("evals.eo.run",),
    "dti": ("evals.scale.perf", "evals.scale.run", "evals.dti.run"),
    "nid": ("evals.nid.bench",),
}
FAMILY_TIMEOUT_S = {"quick": 300, "full": 900}
MARK = "PERF_ROWS_JSON "
_GOAL = re.compile(r"^\s*(<=|>=|<|>)\s*([0-9.eE+-]+)\s*(\S*)\s*$")


# ---------------------------------------------------------------------------------------------- rows


def row(target: str, ours: float, baseline: float, unit: str, goal: str, limit: str, same_output: bool | None,
        **extra: Any) -> dict[str, Any]:
    """A row in the shared format, with ``ratio`` (ours / baseline) and ``met`` filled in."""
    r = {"target": target, "ours": ours, "baseline": baseline, "unit": unit,
         "ratio": ours / baseline if baseline else math.nan, "goal": goal, "limit": limit,
         "same_output": same_output, **extra}
    r["met"] = judge(r)
    return r


def judge(r: dict[str, Any]) -> bool:
    """Whether row `r` meets its goal: a goal ending in "x" is judged on the ratio, any other on ``ours``."""
    m = _GOAL.match(str(r.get("goal", "")))
    if not m:
        return bool(r.get("met", False))
    op, bound, unit = m.group(1), float(m.group(2)), m.group(3)
    value = r.get("ratio") if unit == "x" else r.get("ours")
    if not isinstance(value, int | float) or math.isnan(value):
        return False
    return {"<=": value <= bound, "<": value < bound, ">=": value >= bound, ">": value > bound}[op]


def failed_row(target: str, error: str) -> dict[str, Any]:
    """A row for a benchmark that could not run: it says why, and counts as not met."""
    return {"target": target, "ours": math.nan, "baseline": math.nan, "unit": "", "ratio": math.nan, "goal": "",
            "met": False, "limit": f"FAILED: {error}", "same_output": None}


def normalise(r: Any, source: str) -> dict[str, Any]:
    """A family's row checked against the shared format; missing keys make it a failed row naming them."""
    if not isinstance(r, dict):
        return failed_row(source, f"perf_rows returned {type(r).__name__}, not a dict")
    missing = [k for k in KEYS if k not in r and k not in ("met", "ratio")]
    if missing:
        return failed_row(str(r.get("target", source)), f"row lacks {', '.join(missing)}")
    out = dict(r)
    if "ratio" not in out:
        out["ratio"] = out["ours"] / out["baseline"] if out["baseline"] else math.nan
    if "met" not in out:
        out["met"] = judge(out)
    return out


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


# ---------------------------------------------------------------------------------------------- MCP over stdio


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RESEARCH_MCP_LLM"))}
    env["RESEARCH_MCP_LOG_LEVEL"] = "WARNING"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _ours_command() -> tuple[str, list[str]]:
    """`research-mcp serve` from the interpreter's own bin folder, else `python -m server serve`."""
    exe = shutil.which("research-mcp", path=str(Path(sys.executable).parent))
    return (exe, ["serve"]) if exe else (sys.executable, ["-m", "server", "serve"])


def _params(which: str):
    """`ours` (listed from the schema cache), `ours-built` (every tool built at start-up) or `bare`."""
    from mcp import StdioServerParameters

    cmd, args = _ours_command() if which.startswith("ours") else (sys.executable, ["-m", "evals.perf.bare_server"])
    env = _server_env() | ({"RESEARCH_MCP_SCHEMA_CACHE": "false"} if which == "ours-built" else {})
    return StdioServerParameters(command=cmd, args=args, cwd=str(REPO), env=env)


def _client(which: str):
    from mcp import Client

    return Client(_params(which), cache=None)  # no client-side cache: every tools/list reaches the server


def solve_arguments() -> dict[str, Any]:
    """The call of the latency row: shortest path on a seeded 20-node graph, not drawn (a drawing's file name is
    new at every call, and what is measured is the call's cost, not the picture's)."""
    from tools.graph.catalog import graph_generate

    g = graph_generate("ERP", n_nodes=20, seed=3).graph.model_dump()
    return {"task": "shortest_path", "graph": g, "source": 0, "target": 19, "draw": False}


def _result_payload(r: Any) -> Any:
    if r.is_error:
        raise RuntimeError(f"graph_solve failed: {r.content[0].text if r.content else r}")
    return r.structured_content if r.structured_content is not None else [c.model_dump() for c in r.content]


async def stdio_rows(calls: int, lists: int) -> list[dict[str, Any]]:
    """Per-call latency of graph_solve and of tools/list, ours and the bare server, interleaved call by call."""
    args = solve_arguments()
    async with _client("ours") as ours, _client("bare") as bare:
        sides = {"ours": ours, "bare": bare}
        outputs: dict[str, Any] = {}
        for name, c in sides.items():  # warm-up: first-call imports and caches on both sides
            outputs[name] = _result_payload(await c.call_tool("graph_solve", args))
            await c.list_tools()
        times: dict[str, list[float]] = {"ours": [], "bare": []}
        same = True
        for i in range(calls):
            order = ("ours", "bare") if i % 2 == 0 else ("bare", "ours")
            for name in order:
                t0 = time.perf_counter()
                r = await sides[name].call_tool("graph_solve", args)
                times[name].append(time.perf_counter() - t0)
                same = same and _result_payload(r) == outputs[name]
        same = same and outputs["ours"] == outputs["bare"]
        ltimes: dict[str, list[float]] = {"ours": [], "bare": []}
        counts: dict[str, int] = {}
        listed_solve = {"ours": False, "bare": False}
        for i in range(lists):
            order = ("ours", "bare") if i % 2 == 0 else ("bare", "ours")
            for name in order:
                t0 = time.perf_counter()
                listed = await sides[name].list_tools()
                ltimes[name].append(time.perf_counter() - t0)
                counts[name] = len(listed.tools)
                listed_solve[name] = any(t.name == "graph_solve" for t in listed.tools)
    call_ours, call_bare = median(times["ours"]) * 1e3, median(times["bare"]) * 1e3
    list_ours, list_bare = median(ltimes["ours"]) * 1e3, median(ltimes["bare"]) * 1e3
    return [
        row("MCP call latency: graph_solve, 20 nodes, stdio", call_ours, call_bare, "ms", "<= 1.2x",
            "the SDK's own dispatch, validation and JSON framing (the bare side's whole cost); ours adds "
            "argument checks and a cancellable worker thread", same,
            baseline_name="bare mcp MCPServer, same function", n=calls),
        row(f"tools/list latency: {counts.get('ours', 0)} tools vs {counts.get('bare', 0)}", list_ours, list_bare,
            "ms", "<= 50 ms", "JSON encoding of the tool list by the SDK", all(listed_solve.values()),
            baseline_name="bare mcp MCPServer listing 1 tool", n=lists),
    ]


async def _time_start(which: str) -> float:
    t0 = time.perf_counter()
    async with _client(which):
        elapsed = time.perf_counter() - t0
    return elapsed


async def startup_row(repeats: int) -> list[dict[str, Any]]:
    """Spawn to an initialised session (the handshake answered): ours listed from the schema cache, ours with
    every tool built at start-up (the cache off, as the first start after a code change), the bare server;
    interleaved. One untimed start first writes the cache."""
    await _time_start("ours")
    times: dict[str, list[float]] = {"ours": [], "ours-built": [], "bare": []}
    for i in range(repeats):
        order = list(times) if i % 2 == 0 else list(times)[::-1]
        for name in order:
            times[name].append(await _time_start(name))
    base = median(times["bare"])
    return [row("Server start-up to an initialised session (stdio)", median(times["ours"]), base,
                "s", "<= 1.5 s", "importing mcp, the bare server's whole start-up; the tools are listed from the "
                "schema cache and each is built at its first call", None,
                baseline_name="bare mcp MCPServer with graph_solve", n=repeats),
            row("Server start-up, every tool built at start-up (schema cache off or stale)",
                median(times["ours-built"]), base, "s", "<= 1.5 s", "importing the tool modules and deriving "
                "47 argument models and schemas with pydantic", None,
                baseline_name="bare mcp MCPServer with graph_solve", n=repeats)]


def importtime_check() -> dict[str, Any]:
    """What a fresh interpreter holds after building the server: the heavy modules it must not import."""
    code = ("import sys, time; t = time.perf_counter(); import server.app; server.app.build_server(); "
            "import json; print(json.dumps({'s': time.perf_counter() - t, 'mods': sorted(m for m in sys.modules "
            "if m.split('.')[0] in {'torch','rdkit','rasterio','pandas','sklearn','transformers','dask','langchain',"
            "'scipy','matplotlib','networkx','numpy'} and '.' not in m)}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_server_env(), capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- chunked QA


class _Endpoint:
    """`evals.perf.endpoint` in a subprocess, for the span of a `with` block."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def __enter__(self) -> _Endpoint:
        self.proc = subprocess.Popen([sys.executable, "-m", "evals.perf.endpoint", "--latency", str(self.latency_s)],
                                     cwd=REPO, env=_server_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            self.__exit__()
            raise RuntimeError("the fixed-latency endpoint did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _run_summary(run: Any) -> tuple[str, list[tuple[int, str, str]]]:
    return run.answer, [(r.part, r.status, r.text) for r in run.reports]


async def dc_row(latency_s: float, workers: int, n_chunks: int, repeats: int) -> dict[str, Any]:
    """Chunked QA (workers + manager): wall time with `workers` concurrent calls against the ideal
    sequential / min(workers, chunks), on an endpoint that answers each call after a fixed sleep."""
    from tools.llm import OpenAIChat
    from tools.longctx.chunking import chunk_text
    from tools.longctx.prompts import TaskSpec
    from tools.longctx.tokens import default_tokenizer
    from tools.longctx.topologies import run_chunked
    from tools.paths import SAMPLE_DIR

    tok = default_tokenizer()
    text = (SAMPLE_DIR / "longctx" / "alice.txt").read_text(encoding="utf-8")
    chunks = chunk_text(text, 1000, 0, tok)[:n_chunks]
    if len(chunks) < n_chunks:
        raise RuntimeError(f"the sample text gives only {len(chunks)} chunks of 1000 tokens")
    spec = TaskSpec('Key: "00000000-0000-0000-0000-000000000000"', "retrieval")
    times: dict[int, list[float]] = {1: [], workers: []}
    outputs: dict[int, Any] = {}
    with _Endpoint(latency_s) as ep:
        model = OpenAIChat(base_url=ep.base_url, api_key="x", model="scripted", concurrency=workers)
        try:
            await run_chunked(model, spec, chunks, "workers_manager", tokenizer=tok, chunk_tokens=1200,
                              concurrency=workers)  # warm-up: the client's connections are opened once
            for i in range(repeats):
                for conc in ((1, workers) if i % 2 == 0 else (workers, 1)):
                    t0 = time.perf_counter()
                    run = await run_chunked(model, spec, chunks, "workers_manager", tokenizer=tok, chunk_tokens=1200,
                                            concurrency=conc)
                    times[conc].append(time.perf_counter() - t0)
                    outputs.setdefault(conc, _run_summary(run))
                    if _run_summary(run) != outputs[conc] or run.chunks_read != n_chunks:
                        outputs[conc] = None
        finally:
            await model.aclose()
    seq, conc_t = median(times[1]), median(times[workers])
    ideal = seq / min(workers, n_chunks)
    same = outputs.get(1) is not None and outputs.get(1) == outputs.get(workers)
    return row(f"Chunked QA: {n_chunks} chunks, {workers} workers vs sequential/{min(workers, n_chunks)}, "
               f"{latency_s * 1e3:.0f} ms endpoint", conc_t, ideal, "s", "<= 1.2x",
               "client CPU per call (openai + httpx request and response, ~3 ms) serialised on one event loop",
               same,
               baseline_name=f"sequential {seq:.3f} s / {min(workers, n_chunks)}", n=repeats)


# ---------------------------------------------------------------------------------------------- family rows


def family_rows_here(name: str, modules: list[str], quick: bool) -> list[dict[str, Any]]:
    """The rows of family `name` from the first of `modules` that defines `perf_rows`, in this process."""
    tried = []
    for module in modules:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            tried.append(f"{module} ({exc})")
            continue
        fn = getattr(mod, "perf_rows", None)
        if fn is None:
            tried.append(f"{module} (no perf_rows)")
            continue
        return [normalise(r, f"{name} rows") for r in fn(quick)]
    raise RuntimeError(f"no perf_rows(quick) for {name}: tried {'; '.join(tried)}")


def family_rows(name: str, quick: bool, timeout_s: float | None = None,
                modules: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The rows of family `name` (from `modules`, default FAMILIES[name]), computed in a subprocess of their own;
    a failure becomes one failed row carrying the error."""
    timeout_s = timeout_s or FAMILY_TIMEOUT_S["quick" if quick else "full"]
    cmd = [sys.executable, "-m", "evals.perf.run", "--family", name, "--modules", *(modules or FAMILIES[name])]
    cmd += ["--quick"] if quick else []
    # A session of its own, so that a timeout ends the benchmark's own children (Dask workers...) with it.
    proc = subprocess.Popen(cmd, cwd=REPO, env=_server_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return [failed_row(f"{name} rows", f"no answer within {timeout_s:.0f} s")]
    out = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith(MARK):
            return [normalise(r, f"{name} rows") for r in json.loads(line[len(MARK):])]
    tail = (out.stderr.strip().splitlines() or out.stdout.strip().splitlines() or [f"exit {out.returncode}"])[-1]
    return [failed_row(f"{name} rows", tail[:300])]


# ---------------------------------------------------------------------------------------------- output


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "-"}[v]
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


COLUMNS = ("target", "ours", "baseline", "unit", "ratio", "goal", "met", "same_output", "limit")


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c)).replace("|", "/") for c in COLUMNS) + " |")
    return lines


def _goal_fraction(r: dict[str, Any]) -> float:
    """The judged value over the goal's bound: at most 1 is met for a "<=" goal."""
    m = _GOAL.match(str(r.get("goal", "")))
    if not m:
        return math.nan
    value = r.get("ratio") if m.group(3) == "x" else r.get("ours")
    bound = float(m.group(2))
    if not isinstance(value, int | float) or not bound:
        return math.nan
    return value / bound if m.group(1).startswith("<") else bound / value if value else math.nan


def write_outputs(rows: list[dict[str, Any]], header: list[str], out: Path, stem: str) -> list[Path]:
    """CSV, Markdown and PNG of the rows under `out`, each written to a temporary name and renamed."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.png"]
    keys = list(COLUMNS) + sorted({k for r in rows for k in r} - set(COLUMNS))
    with atomic_output(paths[0]) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k) for k in keys})
    with atomic_output(paths[1]) as tmp:
        tmp.write_text("\n".join([f"# {stem}", "", *[f"- {h}" for h in header], "", *table_lines(rows), ""]),
                       encoding="utf-8")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fracs = [_goal_fraction(r) for r in rows]
    labels = [str(r["target"])[:70] for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.6))
    ys = range(len(rows))
    shown = [f if not math.isnan(f) else 0.0 for f in fracs]
    ax.barh(list(ys), shown, color=["tab:green" if r.get("met") else "tab:red" for r in rows])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("measured / goal (left of the line: goal met; a failed row shows no bar)")
    ax.set_title(header[0] if header else stem, fontsize=9)
    fig.tight_layout()
    with atomic_output(paths[2]) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return paths


# ---------------------------------------------------------------------------------------------- main

PLAN = {  # (calls, lists, start-ups, D&C latency, D&C repeats)
    "quick": (20, 10, 1, 0.05, 1),
    "full": (300, 60, 7, 0.2, 5),
}
OWN = ("stdio", "startup", "dc")


def _guarded(target: str, fn: Any, *args: Any) -> list[dict[str, Any]]:
    try:
        out = fn(*args)
    except Exception as exc:  # one benchmark failing must not stop the others
        traceback.print_exc(file=sys.stderr)
        return [failed_row(target, f"{type(exc).__name__}: {exc}"[:300])]
    return out if isinstance(out, list) else [out]


def run_all(quick: bool, only: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every selected benchmark, one after another; the rows and the header lines (load, CPUs, plan)."""
    calls, lists, starts, latency, repeats = PLAN["quick" if quick else "full"]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if "stdio" in only:
        rows += _guarded("MCP call and tools/list latency (stdio)", lambda: asyncio.run(stdio_rows(calls, lists)))
    if "startup" in only:
        rows += _guarded("Server start-up", lambda: asyncio.run(startup_row(starts)))
    if "dc" in only:
        rows += _guarded("Chunked QA concurrency", lambda: asyncio.run(dc_row(latency, 8, 8, repeats)))
    for name in FAMILIES:
        if name in only:
            rows += family_rows(name, quick)
    built = None
    if "startup" in only:
        try:
            built = importtime_check()
        except (subprocess.SubprocessError, OSError, ValueError) as exc:
            built = {"s": math.nan, "mods": [f"check failed: {exc}"]}
    load1 = os.getloadavg()
    header = [
        f"research-mcp eval perf{' --quick' if quick else ''}: {len(rows)} rows, "
        f"{sum(1 for r in rows if r.get('met'))} met, {time.perf_counter() - t0:.0f} s",
        f"CPUs: {os.cpu_count()}; load average (1, 5, 15 min) before {' '.join(f'{x:.2f}' for x in load0)}, "
        f"after {' '.join(f'{x:.2f}' for x in load1)}",
        f"plan: {calls} calls and {lists} tools/list per side (interleaved, medians), {starts} start-ups per side, "
        f"chunked QA at {latency * 1e3:.0f} ms per call, {repeats} repeats",
    ]
    if built is not None:
        header.append(f"build_server() in a fresh interpreter: {built['s']:.2f} s (imports included); numeric and ML "
                      f"libraries it loaded: {', '.join(built['mods']) or 'none'}")
    return rows, header


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="research-mcp eval perf", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions: checks every benchmark runs (seconds)")
    ap.add_argument("--only", nargs="+", choices=[*OWN, *FAMILIES], default=None,
                    help="run only these benchmarks (default: all)")
    ap.add_argument("--out", type=Path, default=None, help=f"output folder (default {RESULTS.relative_to(REPO)}; "
                    "--quick: <output dir>/eval-perf)")
    ap.add_argument("--family", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--modules", nargs="+", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.family:  # the subprocess side of family_rows
        rows = family_rows_here(args.family, args.modules or list(FAMILIES.get(args.family, ())), args.quick)
        print(MARK + json.dumps(rows), flush=True)
        return 0
    rows, header = run_all(args.quick, args.only or [*OWN, *FAMILIES])
    for h in header:
        print(h)
    print()
    for line in table_lines(rows):
        print(line)
    out = args.out or (output_dir() / "eval-perf" if args.quick else RESULTS)
    paths = write_outputs(rows, header, out, "perf_quick" if args.quick else "perf")
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0 if all(r.get("same_output") is not False and not str(r.get("limit", "")).startswith("FAILED")
                    for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
