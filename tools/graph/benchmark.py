"""A generated benchmark (task x generator x format x scheme x difficulty) run against a chat model.

Each item is a fresh seeded graph of its generator and difficulty (directed, acyclic or weighted when
the task needs it), a question with sampled node parameters, the prompt in its format and scheme, and
the exact solution. A model's reply is checked against the graph; with `samples > 1` the replies are
sampled at a temperature and the majority reading wins (self-consistency).
"""

from __future__ import annotations

import asyncio
import csv
import itertools
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from tools.atomic import atomic_output
from tools.errors import InvalidInput, LimitExceeded
from tools.graph.generate import DIFFICULTIES, GENERATORS, generate
from tools.graph.prompts import build_prompt, majority_vote
from tools.graph.serialize import FORMATS
from tools.graph.tasks import (
    Solution,
    Task,
    applicable,
    check,
    get_task,
    np_hard_bound,
    random_baseline_info,
    sample_params,
    solve,
)
from tools.lazy import LazyModule
from tools.llm import ChatModel, Message
from tools.progress import Progress, checkpoint, report
from tools.settings import get_settings

nx = LazyModule("networkx")


@dataclass
class Item:
    id: str
    task: str
    generator: str
    format: str
    scheme: str
    difficulty: str
    seed: int
    graph: nx.Graph
    params: dict
    prompt: str
    solution: Solution
    baseline: float


@dataclass
class Row:
    id: str
    task: str
    generator: str
    format: str
    scheme: str
    difficulty: str
    n_nodes: int
    n_edges: int
    extracted: bool
    correct: bool
    random_baseline: float
    prompt_tokens: int
    completion_tokens: int
    votes: int
    reply: str


def graph_flags(task: Task) -> dict:
    """Generator flags that make a graph the task is defined on."""
    directed = bool({"directed", "dag"} & task.needs) or task.key == "max_flow"
    return {"directed": directed, "acyclic": "dag" in task.needs,
            "weighted": "weighted" in task.needs or task.key in ("max_flow", "mst_weight"),
            "features": 2 if "features" in task.needs else 0}


def make_item(task_name: str, generator: str, fmt: str, scheme: str, difficulty: str, seed: int, *,
              k: int = 3, answer_instruction: bool = True, progress: Progress | None = None) -> Item | None:
    """One benchmark question, or None when this generator cannot give a graph the task is defined on."""
    task = get_task(task_name)
    rng = random.Random(f"item|{task.key}|{generator}|{difficulty}|{seed}")
    flags = graph_flags(task)
    lo, hi = DIFFICULTIES[difficulty]
    for attempt in range(8):
        n = rng.randint(lo, hi)
        if task.np_hard:
            n = min(n, np_hard_bound(task)[0])
        G = generate(generator, n_nodes=n, seed=seed * 1000 + attempt, **flags)
        if applicable(task, G) is not None or ("target" in task.params and G.number_of_nodes() < 2):
            continue
        try:
            p = sample_params(task, G, rng)
            sol = solve(task, G, p, progress)
        except (InvalidInput, LimitExceeded):
            continue
        prompt = build_prompt(task, G, p, fmt, scheme, k=k, seed=seed, answer_instruction=answer_instruction)
        return Item(id=f"{task.key}-{generator}-{fmt}-{scheme}-{difficulty}-{seed}", task=task.key,
                    generator=generator, format=fmt, scheme=scheme, difficulty=difficulty, seed=seed, graph=G,
                    params=p, prompt=prompt, solution=sol, baseline=random_baseline_info(task, G, p, sol, progress)[0])
    return None


def make_items(tasks: list[str], generators: list[str], formats: list[str], schemes: list[str],
               difficulties: list[str], per_cell: int, seed: int = 0, *, k: int = 3,
               progress: Progress | None = None) -> list[Item]:
    """The full factorial of items (cells a generator cannot serve are skipped)."""
    cells = list(itertools.product(tasks, generators, formats, schemes, difficulties, range(per_cell)))
    limit = get_settings().graph.max_benchmark_items
    if len(cells) > limit:
        raise LimitExceeded("The number of benchmark items", len(cells), limit,
                            "RESEARCH_MCP_GRAPH__MAX_BENCHMARK_ITEMS")
    items = []
    for i, (t, g, f, s, d, r) in enumerate(cells):
        it = make_item(t, g, f, s, d, seed + r, k=k, progress=progress)
        if it is not None:
            items.append(it)
        if i % 20 == 0:
            report(progress, i, len(cells), "building questions")
    return items


async def ask(item: Item, llm: ChatModel, *, samples: int = 1, temperature: float = 0.7,
              max_tokens: int | None = None) -> Row:
    """Ask one item (with self-consistency when samples > 1) and check the reply against the graph."""
    task = get_task(item.task)
    msgs = [Message("user", item.prompt)]
    if samples <= 1:
        outs = [await llm.complete(msgs, max_tokens=max_tokens)]
    else:
        outs = list(await asyncio.gather(*[llm.complete(msgs, max_tokens=max_tokens, temperature=temperature)
                                           for _ in range(samples)]))
    naming = FORMATS[item.format].naming
    reply, votes = majority_vote(task, [o.text for o in outs], naming=naming) if samples > 1 else (outs[0].text, 1)
    c = check(task, item.graph, item.params, reply, item.solution, naming=naming)
    checkpoint()
    return Row(id=item.id, task=item.task, generator=item.generator, format=item.format, scheme=item.scheme,
               difficulty=item.difficulty, n_nodes=item.graph.number_of_nodes(), n_edges=item.graph.number_of_edges(),
               extracted=c.extracted, correct=c.correct, random_baseline=item.baseline,
               prompt_tokens=sum(o.prompt_tokens for o in outs),
               completion_tokens=sum(o.completion_tokens for o in outs),
               votes=votes, reply=reply[-400:])


async def run_items(items: list[Item], llm: ChatModel, *, samples: int = 1, temperature: float = 0.7,
                    max_tokens: int | None = None, concurrency: int = 8, progress: Progress | None = None,
                    on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Ask every item, `concurrency` at a time, reporting progress after each."""
    sem = asyncio.Semaphore(max(1, concurrency))
    rows: list[Row | None] = [None] * len(items)
    done = 0

    async def one(i: int, it: Item) -> None:
        nonlocal done
        async with sem:
            rows[i] = await ask(it, llm, samples=samples, temperature=temperature, max_tokens=max_tokens)
        done += 1
        if on_row is not None:
            on_row(rows[i])
        report(progress, done, len(items), f"{done}/{len(items)} answered")

    await asyncio.gather(*(one(i, it) for i, it in enumerate(items)))
    return [r for r in rows if r is not None]


FACTORS = ("task", "generator", "format", "scheme", "difficulty")


def summarize(rows: list[Row]) -> dict:
    """Overall and per-factor accuracy, extraction rate, random baseline and tokens."""

    def agg(rs: list[Row]) -> dict:
        n = len(rs)
        return {
            "n": n,
            "accuracy": sum(r.correct for r in rs) / n if n else 0.0,
            "extraction_rate": sum(r.extracted for r in rs) / n if n else 0.0,
            "random_baseline": sum(r.random_baseline for r in rs) / n if n else 0.0,
            "mean_prompt_tokens": sum(r.prompt_tokens for r in rs) / n if n else 0.0,
            "mean_completion_tokens": sum(r.completion_tokens for r in rs) / n if n else 0.0,
        }

    out = {"overall": agg(rows), "by": {}}
    for f in FACTORS:
        groups: dict[str, list[Row]] = defaultdict(list)
        for r in rows:
            groups[getattr(r, f)].append(r)
        out["by"][f] = {k: agg(v) for k, v in sorted(groups.items())}
    return out


def write_rows(rows: list[Row], path: Path) -> Path:
    with atomic_output(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(Row.__dataclass_fields__))
        w.writeheader()
        for r in rows:
            w.writerow(asdict(r))
    return path


def write_factor_csv(summary: dict, path: Path) -> Path:
    with atomic_output(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["factor", "level", "n", "accuracy", "extraction_rate", "random_baseline", "mean_prompt_tokens",
                    "mean_completion_tokens"])
        for factor, levels in summary["by"].items():
            for level, a in levels.items():
                w.writerow([factor, level, a["n"], f"{a['accuracy']:.4f}", f"{a['extraction_rate']:.4f}",
                            f"{a['random_baseline']:.4f}", f"{a['mean_prompt_tokens']:.1f}",
                            f"{a['mean_completion_tokens']:.1f}"])
    return path


def heatmap(rows: list[Row], path: Path, row_factor: str = "format", col_factor: str = "scheme") -> Path:
    """A PNG heatmap of accuracy over two factors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rlev = sorted({getattr(r, row_factor) for r in rows})
    clev = sorted({getattr(r, col_factor) for r in rows})
    acc = np.full((len(rlev), len(clev)), np.nan)
    for i, a in enumerate(rlev):
        for j, b in enumerate(clev):
            rs = [r for r in rows if getattr(r, row_factor) == a and getattr(r, col_factor) == b]
            if rs:
                acc[i, j] = sum(r.correct for r in rs) / len(rs)
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * len(clev), 1.0 + 0.5 * len(rlev)))
    im = ax.imshow(acc, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(clev)), clev, rotation=45, ha="right")
    ax.set_yticks(range(len(rlev)), rlev)
    for i in range(len(rlev)):
        for j in range(len(clev)):
            if not np.isnan(acc[i, j]):
                ax.text(j, i, f"{acc[i, j]:.2f}", ha="center", va="center", color="w" if acc[i, j] < 0.6 else "k",
                        fontsize=8)
    ax.set_xlabel(col_factor)
    ax.set_ylabel(row_factor)
    ax.set_title("accuracy")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    try:
        with atomic_output(path) as tmp:
            fig.savefig(tmp, dpi=110)
    finally:
        plt.close(fig)
    return path


def check_levels(tasks: list[str], generators: list[str], formats: list[str], schemes: list[str],
                 difficulties: list[str]) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """Normalise factor levels to their registry keys (unknown names raise with suggestions)."""
    from tools.graph.generate import generator_key
    from tools.graph.prompts import scheme_key
    from tools.graph.serialize import format_key
    from tools.graph.tasks import task_key

    for d in difficulties:
        if d not in DIFFICULTIES:
            from tools.errors import unknown_name

            raise unknown_name("difficulty", d, DIFFICULTIES)
    gens = [generator_key(g) for g in generators]
    for g in gens:
        if GENERATORS[g].fixed_size:
            raise InvalidInput(f"{g} is a fixed real-world graph; the benchmark needs sized generators.",
                               hint="Use ERM, ERP, Bipartite-ERM/ERP, BAG, BAF, SF, SBM, complete, star or path.")
    return ([task_key(t) for t in tasks], gens, [format_key(f) for f in formats], [scheme_key(s) for s in schemes],
            list(difficulties))
