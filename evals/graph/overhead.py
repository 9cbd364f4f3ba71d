"""MCP call overhead of graph_solve: the same calls made directly, through an in-memory MCP client, and
(optionally) through a stdio subprocess, side by side; printed as ratios to the direct call.

    python -m evals.graph --overhead [--calls 200] [--stdio]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import anyio

from tools.graph.catalog import graph_generate, graph_solve

REPO = Path(__file__).resolve().parents[2]


def _calls() -> list[dict]:
    """Small and medium questions: shortest path on a 20-node and a 200-node graph."""
    small = graph_generate("ERP", n_nodes=20, seed=1).graph.model_dump()
    medium = graph_generate("BAG", n_nodes=200, seed=1).graph.model_dump()
    return [  # no drawing: what is measured is the cost of the call, not of the picture
        {"task": "shortest_path", "graph": small, "source": 0, "target": 19, "draw": False},
        {"task": "shortest_path", "graph": medium, "source": 0, "target": 199, "draw": False},
    ]


def _time_direct(args: dict, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        graph_solve(**args)
        out.append(time.perf_counter() - t0)
    return out


async def _time_client(client, args: dict, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        r = await client.call_tool("graph_solve", args)
        out.append(time.perf_counter() - t0)
        if r.is_error:
            raise RuntimeError(r.content[0].text)
    return out


async def _in_memory(cases: list[dict], calls: int) -> list[list[float]]:
    from mcp import Client

    from server.app import build_server

    async with Client(build_server(log_level="WARNING")) as client:
        await client.call_tool("graph_solve", cases[0])  # warm-up
        return [await _time_client(client, a, calls) for a in cases]


async def _stdio(cases: list[dict], calls: int) -> list[list[float]]:
    import os

    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RESEARCH_MCP_LLM"))}
    env["RESEARCH_MCP_LOG_LEVEL"] = "WARNING"
    params = StdioServerParameters(command=sys.executable, args=["-m", "server", "serve"], cwd=str(REPO), env=env)
    async with Client(params) as client:
        await client.call_tool("graph_solve", cases[0])
        return [await _time_client(client, a, calls) for a in cases]


def measure(calls: int = 200, stdio: bool = False, out: Path | None = None) -> dict:
    """Median seconds per call on each path, and the ratios to the direct call."""
    cases = _calls()
    for a in cases:
        graph_solve(**a)  # warm caches
    direct = [_time_direct(a, calls) for a in cases]
    mem = anyio.run(_in_memory, cases, calls)
    sub = anyio.run(_stdio, cases, max(10, calls // 4)) if stdio else None
    report = {"calls": calls, "cases": []}
    for i, a in enumerate(cases):
        n = len(a["graph"]["nodes"])
        d, m = statistics.median(direct[i]), statistics.median(mem[i])
        row = {"graph_nodes": n, "direct_ms": d * 1e3, "in_memory_ms": m * 1e3, "in_memory_ratio": m / d}
        line = (f"graph_solve shortest_path, {n} nodes: direct {d * 1e3:.3f} ms, in-memory MCP {m * 1e3:.3f} ms "
                f"(x{m / d:.1f})")
        if sub is not None:
            s = statistics.median(sub[i])
            row.update({"stdio_ms": s * 1e3, "stdio_ratio": s / d})
            line += f", stdio MCP {s * 1e3:.3f} ms (x{s / d:.1f})"
        report["cases"].append(row)
        print(line)
    if out is not None:
        (out / "overhead.json").write_text(json.dumps(report, indent=2))
    return report
