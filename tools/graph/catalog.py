"""The graph-reasoning tools (GraphOmni and beyond), as typed functions the server registers."""

import json
import statistics
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

from tools.atomic import write_text
from tools.errors import InvalidInput
from tools.graph.benchmark import (
    check_levels,
    heatmap,
    make_item,
    make_items,
    run_items,
    summarize,
    write_factor_csv,
    write_rows,
)
from tools.graph.generate import DIFFICULTIES, GENERATORS, generate
from tools.graph.model import GraphSpec, from_spec, is_weighted, to_spec
from tools.graph.optimize import factor_search
from tools.graph.prompts import SCHEMES, answer_text, build_prompt, scheme_key
from tools.graph.serialize import FORMATS, GRAPHOMNI_FORMATS, format_key, parse, serialize
from tools.graph.tasks import (
    GRAPHOMNI_TASKS,
    TASKS,
    check,
    get_task,
    np_hard_bound,
    random_baseline_info,
    solve,
    task_params,
)
from tools.llm import ChatModel, resolve_llm
from tools.paths import output_path, resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings
from tools.spec import ToolSpec

if TYPE_CHECKING:
    import networkx as nx

GraphArg = Annotated[GraphSpec | None, Field(
    description='e.g. {"edges": [[0, 1], [1, 2, 4.5]]}; nodes: integers or names. Or `text`/`path`.')]
TextArg = Annotated[str | None, Field(description="Graph text in `text_format`.")]
TextFormatArg = Annotated[str | None, Field(description="Format of `text`/`path` (graph_serialize's).")]
PathArg = Annotated[str | None, Field(description="File: JSON, or text in `text_format`.")]
DirectedArg = Annotated[bool, Field(description="For text formats that do not say.")]
SourceArg = Annotated[int | str | None, Field(description="Source node (bfsorder, shortest_path...).")]
TargetArg = Annotated[int | str | None, Field(description="Target node (connectivity, shortest_path, max_flow...).")]
NodeArg = Annotated[int | str | None, Field(description="The node asked about (node_degree).")]
TaskArg = Annotated[str, Field(description="A graph_list_tasks name, e.g. 'shortest_path'.")]


def _load_graph(graph: GraphSpec | None, text: str | None, text_format: str | None, path: str | None,
                directed: bool) -> "nx.Graph":
    given = [x is not None for x in (graph, text, path)]
    if sum(given) != 1:
        raise InvalidInput("Give the graph exactly one way: `graph` (JSON), `text` with `text_format`, or `path`.",
                           hint='Example: graph={"edges": [[0, 1], [1, 2]]}.')
    if graph is not None:
        return from_spec(graph)
    if path is not None:
        p = resolve_input(path)
        limit = get_settings().graph.max_text_chars
        if p.stat().st_size > limit:
            from tools.errors import LimitExceeded

            raise LimitExceeded("The graph file size (bytes)", p.stat().st_size, limit,
                                "RESEARCH_MCP_GRAPH__MAX_TEXT_CHARS")
        text = p.read_text(encoding="utf-8", errors="replace")
        if text_format is None:
            try:
                return from_spec(json.loads(text))
            except json.JSONDecodeError:
                raise InvalidInput(f"{path} is not JSON and no `text_format` was given.",
                                   hint="Pass text_format (e.g. 'edge_list') for a text file.") from None
    if text_format is None:
        raise InvalidInput("`text` needs `text_format`.", hint="Known formats: " + ", ".join(FORMATS) + ".")
    return parse(text, text_format, directed=directed)


def _inline_or_file(content: str, name: str, suffix: str) -> tuple[str | None, str | None]:
    if len(content) <= get_settings().graph.max_inline_chars:
        return content, None
    out = write_text(output_path(name, suffix), content)
    return None, str(out)


# ---------------------------------------------------------------------------------------------- results


class TaskInfo(BaseModel):
    name: str
    title: str
    source: str = Field(description="Benchmark it comes from: GraphOmni, NLGraph, GraphQA or classic.")
    answer: str = Field(description="What an answer is: yes/no, integer, number or node list.")
    params: list[str]
    needs: list[str] = Field(description="Graph requirements: directed, undirected, dag, weighted, bipartite.")
    np_hard: bool
    exact_search_max_nodes: int | None
    question: str


class Catalogue(BaseModel):
    tasks: list[TaskInfo]
    formats: dict[str, str] = Field(description="Format key -> title (source).")
    generators: dict[str, str]
    schemes: dict[str, str]
    difficulties: dict[str, list[int]]
    limits: dict[str, int]


class GraphResult(BaseModel):
    n_nodes: int
    n_edges: int
    directed: bool
    weighted: bool
    graph: GraphSpec | None = Field(None, description="The graph as JSON (absent when written to `path`).")
    path: str | None = Field(None, description="A JSON file with the graph when it is too big to inline.")
    text: str | None = Field(None, description="The graph serialized in `format`, when one was asked for.")


class Serialized(BaseModel):
    format: str
    text: str | None = Field(None, description="The serialization (absent when written to `path`).")
    path: str | None = None
    chars: int
    approx_tokens: int = Field(description="chars / 4, a rough token count.")


class Solved(BaseModel):
    task: str
    answer: bool | int | float | list[int | str] | dict[str, list[float]] = Field(
        description="The exact answer (for gnn: node label -> vector).")
    answer_text: str = Field(description="The answer as a model should write it.")
    witness: dict[str, Any] | None = Field(None, description="Evidence: a path, cycle, matching, colouring, cut...")
    explanation: str
    random_baseline: float = Field(description="Chance that a uniform random guess is right on this instance.")
    random_baseline_method: str = Field(description="'exact', or how the baseline was estimated (BFS orders past "
                                                    "7 nodes, topological orders past 12 nodes).")
    drawing: str | None = Field(None, description="PNG of the graph with the witness highlighted (graphs of up to "
                                "60 nodes and 300 edges).")


class Checked(BaseModel):
    task: str
    extracted: bool = Field(description="An answer of the right kind was found in the text.")
    correct: bool
    parsed: bool | int | float | list[int | str] | dict[str, list[float]] | str | None = Field(
        None, description="What was read from the text.")
    reason: str
    expected: str = Field(description="One correct answer (others may be valid: any BFS order, any shortest path).")


class PromptResult(BaseModel):
    task: str
    format: str
    scheme: str
    prompt: str | None = Field(None, description="The prompt (absent when written to `path`).")
    path: str | None = None
    chars: int
    params: dict[str, int | str]
    expected_answer: str


class FactorLevel(BaseModel):
    n: int
    accuracy: float
    extraction_rate: float
    random_baseline: float
    mean_prompt_tokens: float
    mean_completion_tokens: float


class BenchmarkResult(BaseModel):
    model: str
    items: int
    skipped_cells: int = Field(description="Cells whose generator cannot give a graph the task is defined on.")
    overall: FactorLevel
    by_factor: dict[str, dict[str, FactorLevel]]
    rows_csv: str
    factors_csv: str
    heatmap_png: str


class ArmScore(BaseModel):
    format: str
    scheme: str
    accuracy: float
    asked: int


class OptimizeResult(BaseModel):
    task: str
    model: str
    best_format: str
    best_scheme: str
    best_accuracy: float
    cost: float = Field(description="Fraction of (format, scheme) combinations evaluated.")
    rate: float | None = Field(None, description="Accuracy of the chosen pair / best accuracy in the exhaustive "
                                                 "run (only when exhaustive=true).")
    exhaustive_best: ArmScore | None = None
    evaluated: list[ArmScore]
    questions_asked: int
    trace: list[str]


# ---------------------------------------------------------------------------------------------- tools


def graph_list_tasks() -> Catalogue:
    """List the graph tasks, formats, generators, prompt schemes and bounds: call it first.

    Each task: its answer kind, node arguments (source/target/node) and NP-hard search bound.
    """
    s = get_settings().graph
    infos = []
    for t in TASKS.values():
        infos.append(TaskInfo(name=t.key, title=t.title, source=t.source, answer=t.answer_format,
                              params=list(t.params), needs=sorted(t.needs), np_hard=t.np_hard,
                              exact_search_max_nodes=np_hard_bound(t)[0] if t.np_hard else None,
                              question=t.question.format(source="node s", target="node t", node="node v")))
    return Catalogue(
        tasks=infos,
        formats={k: f"{f.title} ({f.source})" for k, f in FORMATS.items()},
        generators={k: f"{g.title} ({g.source})" for k, g in GENERATORS.items()},
        schemes=dict(SCHEMES),
        difficulties={k: list(v) for k, v in DIFFICULTIES.items()},
        limits=s.model_dump(),
    )


def graph_generate(
    generator: Annotated[str, Field(description="ERM, ERP, Bipartite-ERM, Bipartite-ERP, BAG, BAF, SF, SBM, "
                                                "complete, star, path, or a bundled real graph (karate_club, "
                                                "florentine_families, davis_southern_women, les_miserables, "
                                                "petersen, dodecahedral).")],
    n_nodes: Annotated[int | None, Field(description="Default: drawn from the difficulty's range.")] = None,
    difficulty: Annotated[str, Field(description="easy (5-10 nodes), medium (10-20) or hard (20-30).")] = "medium",
    seed: int = 0,
    directed: Annotated[bool, Field(description="Orient each edge at random.")] = False,
    acyclic: Annotated[bool, Field(description="With directed: a DAG.")] = False,
    weighted: Annotated[bool, Field(description="Integer edge weights 1..max_weight.")] = False,
    max_weight: Annotated[int, Field(ge=1, le=10**6)] = 10,
    features: Annotated[int, Field(description="Length of a 0/1 vector per node (gnn task); 0: none.",
                                   ge=0, le=64)] = 0,
    format: Annotated[str | None, Field(description="Also return this serialization.")] = None,
) -> GraphResult:
    """Generate a seeded random or real-world graph (GraphOmni's and GraphQA's generators).

    Returns JSON for the other graph tools (a file path when large). Bounded by max_nodes and max_edges.
    """
    G = generate(generator, n_nodes=n_nodes, difficulty=difficulty, seed=seed, directed=directed, acyclic=acyclic,
                 weighted=weighted, max_weight=max_weight, features=features)
    spec = to_spec(G)
    blob = spec.model_dump_json()
    inline, path = _inline_or_file(blob, f"graph-{generator}", ".json")
    text = serialize(G, format) if format else None
    if text is not None and len(text) > get_settings().graph.max_inline_chars:
        _, tpath = _inline_or_file(text, f"graph-{generator}-{format}", ".txt")
        text = f"(written to {tpath})"
    return GraphResult(n_nodes=G.number_of_nodes(), n_edges=G.number_of_edges(), directed=G.is_directed(),
                       weighted=is_weighted(G), graph=spec if inline is not None else None, path=path, text=text)


def graph_serialize(
    format: Annotated[str, Field(description="Target format: " + ", ".join(FORMATS) + ".")],
    graph: GraphArg = None,
    text: TextArg = None,
    text_format: TextFormatArg = None,
    path: PathArg = None,
    directed: DirectedArg = False,
) -> Serialized:
    """Write a graph in one of 13 serializations (GraphOmni's 7, GraphQA's 6): how a model sees it.

    Long texts go to a file.
    """
    G = _load_graph(graph, text, text_format, path, directed)
    key = format_key(format)
    out = serialize(G, key)
    inline, fpath = _inline_or_file(out, f"graph-{key}", ".txt")
    return Serialized(format=key, text=inline, path=fpath, chars=len(out), approx_tokens=len(out) // 4)


def graph_parse(
    text: str,
    format: Annotated[str, Field(description="Its format (graph_serialize's).")],
    directed: DirectedArg = False,
) -> GraphResult:
    """Read a graph written by graph_serialize (any format) back into JSON; errors say what could not be read."""
    G = parse(text, format, directed=directed)
    spec = to_spec(G)
    inline, path = _inline_or_file(spec.model_dump_json(), "graph-parsed", ".json")
    return GraphResult(n_nodes=G.number_of_nodes(), n_edges=G.number_of_edges(), directed=G.is_directed(),
                       weighted=is_weighted(G), graph=spec if inline is not None else None, path=path)


def graph_solve(
    task: TaskArg,
    graph: GraphArg = None,
    text: TextArg = None,
    text_format: TextFormatArg = None,
    path: PathArg = None,
    directed: DirectedArg = False,
    source: SourceArg = None,
    target: TargetArg = None,
    node: NodeArg = None,
    draw: Annotated[bool, Field(description="Also draw the graph with the witness highlighted (PNG).")] = True,
    progress: Progress | None = None,
) -> Solved:
    """Solve a graph task exactly: the answer, a witness (path, cycle, matching, cut...) and a random baseline.

    NP-hard tasks: exact search to max_nodes_np_hard nodes (max_nodes_max_cut: max_cut), max_search_steps.
    """
    t = get_task(task)
    G = _load_graph(graph, text, text_format, path, directed)
    p = task_params(t, G, source=source, target=target, node=node)
    sol = solve(t, G, p, progress)
    witness = sol.witness if isinstance(sol.witness, dict) else None
    baseline, method = random_baseline_info(t, G, p, sol, progress)
    text_answer = answer_text(t, sol, "adjacency_set")
    picture = None
    if draw:
        from tools.graph import drawing

        if drawing.readable(G):
            hl = drawing.highlight(t.key, G, sol.answer, witness, p)
            picture = str(drawing.draw(G, hl, f"{t.title}: {text_answer[:80]}", output_path(f"graph_{t.key}", ".png"),
                                       task=t.key))
    return Solved(task=t.key, answer=sol.answer, answer_text=text_answer, witness=witness,
                  explanation=sol.explanation[:4000], random_baseline=baseline, random_baseline_method=method,
                  drawing=picture)


def graph_check_answer(
    task: TaskArg,
    answer: Annotated[str, Field(max_length=200_000)],
    graph: GraphArg = None,
    text: TextArg = None,
    text_format: TextFormatArg = None,
    path: PathArg = None,
    directed: DirectedArg = False,
    source: SourceArg = None,
    target: TargetArg = None,
    node: NodeArg = None,
    prompt_format: Annotated[str | None, Field(
        description="The prompt's format if it named nodes (friendship, coauthorship, social_network, "
                    "expert).")] = None,
    progress: Progress | None = None,
) -> Checked:
    """Check a model's free-text answer to a graph task against the graph itself.

    Any valid BFS order or path counts; the final answer (after 'Answer:') is read and every witness offered (path,
    weight, matching, colouring, cut, clique, cover) must hold.
    """
    t = get_task(task)
    G = _load_graph(graph, text, text_format, path, directed)
    p = task_params(t, G, source=source, target=target, node=node)
    sol = solve(t, G, p, progress)
    fkey = format_key(prompt_format) if prompt_format else "adjacency_set"
    c = check(t, G, p, answer, sol, naming=FORMATS[fkey].naming, progress=progress)
    return Checked(task=t.key, extracted=c.extracted, correct=c.correct, parsed=c.parsed, reason=c.reason,
                   expected=answer_text(t, sol, fkey))


def graph_prompt(
    task: TaskArg,
    graph: GraphArg = None,
    text: TextArg = None,
    text_format: TextFormatArg = None,
    path: PathArg = None,
    directed: DirectedArg = False,
    format: Annotated[str, Field(description="How the prompt shows the graph.")] = "adjacency_set",
    scheme: Annotated[str, Field(description="Prompt scheme: " + ", ".join(SCHEMES) + ".")] = "LTM",
    k: Annotated[int, Field(description="Few-shot exemplars.", ge=0, le=10)] = 3,
    seed: int = 0,
    source: SourceArg = None,
    target: TargetArg = None,
    node: NodeArg = None,
    answer_instruction: Annotated[bool, Field(description="Ask for a last line 'Answer: ...'.")] = True,
    progress: Progress | None = None,
) -> PromptResult:
    """Build a GraphOmni-style prompt for a graph question in a serialization and prompt scheme.

    Few-shot schemes get k solved exemplars. Returns the prompt and an expected answer.
    """
    t = get_task(task)
    G = _load_graph(graph, text, text_format, path, directed)
    p = task_params(t, G, source=source, target=target, node=node)
    sol = solve(t, G, p, progress)
    fkey, skey = format_key(format), scheme_key(scheme)
    prompt = build_prompt(t, G, p, fkey, skey, k=k, seed=seed, answer_instruction=answer_instruction)
    inline, fpath = _inline_or_file(prompt, f"prompt-{t.key}", ".txt")
    return PromptResult(task=t.key, format=fkey, scheme=skey, prompt=inline, path=fpath, chars=len(prompt),
                        params=p, expected_answer=answer_text(t, sol, fkey))


async def graph_benchmark(
    tasks: Annotated[list[str] | None, Field(description="Default: GraphOmni's 6.")] = None,
    generators: Annotated[list[str] | None, Field(description="Default: ERP.")] = None,
    formats: Annotated[list[str] | None, Field(description="Serializations; default: adjacency_set.")] = None,
    schemes: Annotated[list[str] | None, Field(description="Prompt schemes; default: LTM.")] = None,
    difficulties: Annotated[list[str] | None, Field(description="easy, medium, hard; default: easy.")] = None,
    per_cell: Annotated[int, Field(description="Questions per combination.", ge=1, le=1000)] = 2,
    seed: int = 0,
    k: Annotated[int, Field(description="Few-shot exemplars.", ge=0, le=10)] = 3,
    samples: Annotated[int, Field(description="Self-consistency votes per question.", ge=1)] = 1,
    temperature: Annotated[float, Field(description="Used when samples > 1.", ge=0, le=2)] = 0.7,
    max_tokens: int | None = None,
    llm: ChatModel | None = None,
    progress: Progress | None = None,
) -> BenchmarkResult:
    """Benchmark an LLM on generated GraphOmni questions, checking every reply against its graph.

    Accuracy, extraction rate, random baseline and tokens per factor level; CSVs and a heatmap. Bounded by
    max_benchmark_items.
    """
    limit = get_settings().graph.max_samples
    if samples > limit:
        from tools.errors import LimitExceeded

        raise LimitExceeded("Self-consistency samples", samples, limit, "RESEARCH_MCP_GRAPH__MAX_SAMPLES")
    model = resolve_llm(llm)
    t, g, f, s, d = check_levels(tasks or GRAPHOMNI_TASKS, generators or ["ERP"], formats or ["adjacency_set"],
                                 schemes or ["LTM"], difficulties or ["easy"])
    cells = len(t) * len(g) * len(f) * len(s) * len(d) * per_cell
    items = make_items(t, g, f, s, d, per_cell, seed, k=k, progress=progress)
    rows = await run_items(items, model, samples=samples, temperature=temperature, max_tokens=max_tokens,
                           progress=progress)
    summ = summarize(rows)
    rows_csv = write_rows(rows, output_path("graph-benchmark-rows", ".csv"))
    factors_csv = write_factor_csv(summ, output_path("graph-benchmark-factors", ".csv"))
    png = heatmap(rows, output_path("graph-benchmark-heatmap", ".png"))
    return BenchmarkResult(
        model=getattr(model, "name", "model"), items=len(rows), skipped_cells=cells - len(items),
        overall=FactorLevel(**summ["overall"]),
        by_factor={fac: {lv: FactorLevel(**a) for lv, a in levels.items()} for fac, levels in summ["by"].items()},
        rows_csv=str(rows_csv), factors_csv=str(factors_csv), heatmap_png=str(png))


async def graph_optimize_factors(
    task: TaskArg = "shortest_path",
    formats: Annotated[list[str] | None, Field(description="Default: GraphOmni's 7.")] = None,
    schemes: Annotated[list[str] | None, Field(description="Default: all 9.")] = None,
    budget: Annotated[float, Field(description="Most combinations evaluated, as a fraction.", gt=0, le=1)] = 0.25,
    batch: Annotated[int, Field(description="Questions per arm in the first round.", ge=1, le=200)] = 4,
    generator: str = "ERP",
    difficulty: Annotated[str, Field(description="easy, medium or hard.")] = "easy",
    seed: int = 0,
    exhaustive: Annotated[bool, Field(description="Also evaluate every combination, for Rate.")] = False,
    llm: ChatModel | None = None,
    progress: Progress | None = None,
) -> OptimizeResult:
    """Find the best (serialization, prompt scheme) pair for a task on an LLM, cheaply.

    Successive halving within `budget`. Returns the pair, its accuracy, Cost (share evaluated) and, with exhaustive,
    Rate (its accuracy / the best).
    """
    model = resolve_llm(llm)
    t = get_task(task)
    fmts = [format_key(x) for x in (formats or GRAPHOMNI_FORMATS)]
    schs = [scheme_key(x) for x in (schemes or list(SCHEMES))]
    _, gens, _, _, diffs = check_levels([t.key], [generator], fmts[:1], schs[:1], [difficulty])
    asked_of: dict[tuple[str, str], int] = {}
    asked = {"n": 0}

    async def evaluate(arm: tuple[str, str], n: int) -> tuple[int, int]:
        # Every arm gets the same question sequence (paired comparison): its k-th question is seed + k.
        start = asked_of.get(arm, 0)
        asked_of[arm] = start + n
        items = [it for i in range(start, start + n)
                 if (it := make_item(t.key, gens[0], arm[0], arm[1], diffs[0], seed + i)) is not None]
        rows = await run_items(items, model)
        asked["n"] += len(rows)
        report(progress, asked["n"], None, f"evaluated {arm[0]}/{arm[1]}")
        return sum(r.correct for r in rows), len(rows)

    res = await factor_search(fmts, schs, evaluate, budget=budget, batch=batch)
    evaluated = [ArmScore(format=a[0], scheme=a[1], accuracy=st.mean, asked=st.asked) for a, st in res.stats.items()]
    rate = None
    ex_best = None
    if exhaustive:
        full: dict[tuple[str, str], float] = {}
        n_ex = max(batch * 4, 8)
        for f in fmts:
            for s in schs:
                items = [it for i in range(n_ex) if (it := make_item(t.key, gens[0], f, s, diffs[0],
                                                                      seed + 10**6 + i)) is not None]
                rows = await run_items(items, model)
                full[(f, s)] = statistics.mean(r.correct for r in rows) if rows else 0.0
                report(progress, len(full), len(fmts) * len(schs), "exhaustive sweep")
        top = max(full, key=full.get)
        ex_best = ArmScore(format=top[0], scheme=top[1], accuracy=full[top], asked=n_ex)
        rate = full[res.best] / full[top] if full[top] > 0 else 1.0
    return OptimizeResult(task=t.key, model=getattr(model, "name", "model"), best_format=res.best[0],
                          best_scheme=res.best[1], best_accuracy=res.best_observed, cost=res.cost, rate=rate,
                          exhaustive_best=ex_best, evaluated=evaluated, questions_asked=res.questions_asked,
                          trace=res.trace)


TOOLS: list[ToolSpec] = [
    ToolSpec(graph_list_tasks, title="List graph tasks, formats and schemes"),
    ToolSpec(graph_generate, title="Generate a seeded graph"),
    ToolSpec(graph_serialize, title="Serialize a graph"),
    ToolSpec(graph_parse, title="Parse a serialized graph"),
    ToolSpec(graph_solve, title="Solve a graph task exactly", heavy=True),
    ToolSpec(graph_check_answer, title="Check a free-text answer against the graph", heavy=True),
    ToolSpec(graph_prompt, title="Build a graph-reasoning prompt", heavy=True),
    ToolSpec(graph_benchmark, title="Benchmark an LLM on graph reasoning", read_only=False, open_world=True,
             idempotent=False),
    ToolSpec(graph_optimize_factors, title="Best graph format and prompt scheme",
             read_only=False, open_world=True, idempotent=False),
]
