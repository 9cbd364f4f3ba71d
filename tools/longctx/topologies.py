"""The three ways of reading a chunked text with a model, with failures and progress accounted for.

- `workers_manager` (the divide-and-conquer paper's): workers read their chunks in parallel and
  answer or say NA; a manager, warned that most workers lack the information, decides.
- `chain` (Chain-of-Agents): workers read the chunks in order, each rewriting a running summary;
  a manager answers from the last one.
- `map_reduce` (LLM x MapReduce): each chunk is mapped to a structured result with a confidence
  score; results are collapsed in groups until they fit one call; a reduce call answers.

For aggregation (min, max, count) the combination is done in code when every report is a number,
so the aggregator adds no noise. A chunk whose call fails (after the client's retries) is reported
as failed and named to the manager; it is never silently dropped. Every result says how many chunks
were read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from tools.errors import Cancelled, InvalidInput, UpstreamError
from tools.llm import ChatModel, Completion, Message
from tools.longctx import prompts
from tools.longctx.chunking import Chunk, chunk_text, validate_sizes
from tools.longctx.prompts import NA, TaskSpec
from tools.longctx.tokens import Tokenizer
from tools.progress import Progress, report

Topology = Literal["workers_manager", "chain", "map_reduce"]
TOPOLOGIES: tuple[str, ...] = ("workers_manager", "chain", "map_reduce")
Status = Literal["answer", "na", "failed"]

WORKER_MAX_TOKENS = 400
MANAGER_MAX_TOKENS = 800
NOTES_RESERVE = 300  # tokens kept free in a chain step for the running notes
PLANNER_RESERVE = 160  # tokens kept free for a planner's instruction (asked for <= 80 words)
MIN_TEXT_TOKENS = 32  # a chunk must leave at least this much room for text


@dataclass
class Report:
    """What one chunk's worker (or chain step, or map call) produced."""

    part: int
    start: int
    end: int
    tokens: int
    status: Status
    text: str = ""
    confidence: int | None = None
    error: str | None = None


@dataclass
class RunResult:
    """The answer and everything needed to audit it."""

    answer: str
    topology: str
    kind: str
    chunks: list[Chunk]
    reports: list[Report]
    aggregator: str
    instruction: str | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    collapse_rounds: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def chunks_read(self) -> int:
        return sum(1 for r in self.reports if r.status != "failed")

    @property
    def failed(self) -> list[Report]:
        return [r for r in self.reports if r.status == "failed"]


class _Meter:
    """Counts calls and tokens of one run."""

    def __init__(self, llm: ChatModel) -> None:
        self.llm = llm
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    async def complete(self, messages: list[Message], max_tokens: int) -> Completion:
        self.calls += 1
        c = await self.llm.complete(messages, max_tokens=max_tokens)
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        return c


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def prompt_overhead(spec: TaskSpec, topology: str, tokenizer: Tokenizer, planner: bool = False) -> int:
    """Tokens a worker prompt takes besides its chunk (template, task, reserves)."""
    if topology == "chain":
        msgs = prompts.chain_step(spec, "", 999, 999, "")
    elif topology == "map_reduce":
        msgs = prompts.map_step(spec, "", 999, 999)
    else:
        msgs = prompts.worker(spec, "", 999, 999)
    base = sum(tokenizer.count(m.content) + 4 for m in msgs) + 3
    return base + (NOTES_RESERVE if topology == "chain" else 0) + (PLANNER_RESERVE if planner else 0)


def make_chunks(text: str, spec: TaskSpec, topology: str, chunk_tokens: int, overlap_tokens: int,
                tokenizer: Tokenizer, *, planner: bool = False) -> tuple[list[Chunk], int, int, list[str]]:
    """Chunks whose worker prompts fit `chunk_tokens`: (chunks, text budget per chunk, overlap used, notes)."""
    if topology not in TOPOLOGIES:
        from tools.errors import unknown_name

        raise unknown_name("topology", topology, TOPOLOGIES)
    overhead = prompt_overhead(spec, topology, tokenizer, planner)
    budget = chunk_tokens - overhead
    if budget < MIN_TEXT_TOKENS:
        raise InvalidInput(
            f"chunk_tokens={chunk_tokens} is smaller than the {topology} worker prompt: its template with this task "
            f"takes {overhead} tokens, leaving {budget} for text (at least {MIN_TEXT_TOKENS} are needed).",
            hint=f"Pass chunk_tokens of at least {overhead + 4 * MIN_TEXT_TOKENS}, or shorten the task.",
        )
    notes: list[str] = []
    if spec.kind == "aggregation" and spec.aggregate == "count" and overlap_tokens:
        notes.append("Overlap set to 0 for counting, so that no item is counted twice.")
        overlap_tokens = 0
    overlap_tokens = min(overlap_tokens, budget // 2)
    validate_sizes(budget, overlap_tokens)
    return chunk_text(text, budget, overlap_tokens, tokenizer), budget, overlap_tokens, notes


async def _gather_reports(
    chunks: list[Chunk],
    call: Callable[[Chunk], Awaitable[Completion]],
    classify: Callable[[str], tuple[Status, int | None]],
    concurrency: int,
    progress: Progress | None,
    step0: int,
    total_steps: int,
    label: str,
) -> list[Report]:
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(chunk: Chunk) -> Report:
        part = chunk.index + 1
        async with sem:
            try:
                c = await call(chunk)
            except Cancelled:
                raise
            except Exception as exc:
                return Report(part, chunk.start, chunk.end, chunk.tokens, "failed", error=_describe(exc))
        status, confidence = classify(c.text)
        return Report(part, chunk.start, chunk.end, chunk.tokens, status, c.text.strip(), confidence)

    tasks = [asyncio.ensure_future(one(ch)) for ch in chunks]
    out: list[Report] = []
    try:
        for fut in asyncio.as_completed(tasks):
            rep = await fut
            out.append(rep)
            report(progress, step0 + len(out), total_steps, f"{label} {rep.part}/{len(chunks)}: {rep.status}")
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return sorted(out, key=lambda r: r.part)


def _classify_plain(text: str) -> tuple[Status, int | None]:
    return ("na" if prompts.is_na(prompts.labelled_answer(text)) else "answer"), None


def _classify_structured(text: str) -> tuple[Status, int | None]:
    answer, conf = prompts.parse_structured(text)
    return ("na" if prompts.is_na(answer) else "answer"), conf


def _code_aggregate(spec: TaskSpec, values: list[str]) -> str | None:
    """min / max / sum of the reported numbers when every one parses; None otherwise."""
    if spec.kind != "aggregation":
        return None
    nums = [prompts.parse_number(v) for v in values]
    if any(n is None for n in nums):
        return None
    clean = [n for n in nums if n is not None]
    op = spec.aggregate or "count"
    if not clean:
        return "0" if op == "count" else NA
    value = sum(clean) if op == "count" else (min(clean) if op == "min" else max(clean))
    return prompts.format_number(value)


def _fit_reports(
    items: list[tuple[int, str]], budget_tokens: int, tokenizer: Tokenizer
) -> tuple[list[tuple[int, str]], bool]:
    """Shorten the reports evenly so that together they fit `budget_tokens`."""
    total = sum(tokenizer.count(t) for _, t in items)
    if total <= budget_tokens or not items:
        return items, False
    share_chars = max(80, int(budget_tokens / len(items) * 3))
    return [(i, t if len(t) <= share_chars else t[:share_chars] + " [...]") for i, t in items], True


async def run_chunked(
    llm: ChatModel,
    spec: TaskSpec,
    chunks: list[Chunk],
    topology: str,
    *,
    tokenizer: Tokenizer,
    chunk_tokens: int,
    concurrency: int = 8,
    planner: bool = False,
    progress: Progress | None = None,
) -> RunResult:
    """Answer `spec` over `chunks` with the given topology; see the module docstring."""
    meter = _Meter(llm)
    n = len(chunks)
    notes: list[str] = []
    instruction: str | None = None
    total = n + 1 + (1 if planner else 0)
    step = 0
    if planner:
        try:
            c = await meter.complete(prompts.planner(spec, n), max_tokens=200)
            instruction = c.text.strip() or None
        except Cancelled:
            raise
        except Exception as exc:
            notes.append(f"The planner call failed ({_describe(exc)}); workers got the task as given.")
        step += 1
        report(progress, step, total, "planner")

    def finish(answer: str, reports: list[Report], aggregator: str, rounds: int = 0) -> RunResult:
        read = sum(1 for r in reports if r.status != "failed")
        failed = [r.part for r in reports if r.status == "failed"]
        if failed:
            notes.append(f"{len(failed)} of {n} chunks could not be read: parts {prompts.compress_ranges(failed)}.")
        notes.append(f"Read {read} of {n} chunks.")
        return RunResult(
            answer=answer, topology=topology, kind=spec.kind, chunks=chunks, reports=reports, aggregator=aggregator,
            instruction=instruction, llm_calls=meter.calls, prompt_tokens=meter.prompt_tokens,
            completion_tokens=meter.completion_tokens, collapse_rounds=rounds, notes=notes,
        )

    def all_failed(reports: list[Report]) -> None:
        if reports and all(r.status == "failed" for r in reports):
            raise UpstreamError(
                f"All {len(reports)} chunk calls failed; the first error: {reports[0].error}",
                hint="Check the endpoint (OPENAI_BASE_URL, model name, key) and its logs, then retry.",
            )

    if topology == "chain":
        reports: list[Report] = []
        notes_text = ""
        for ch in chunks:
            part = ch.index + 1
            try:
                c = await meter.complete(
                    prompts.chain_step(spec, ch.text, part, n, notes_text, instruction), WORKER_MAX_TOKENS)
                notes_text = c.text.strip()
                reports.append(Report(part, ch.start, ch.end, ch.tokens, "na" if prompts.is_na(notes_text) else
                                      "answer", notes_text))
            except Cancelled:
                raise
            except Exception as exc:
                reports.append(Report(part, ch.start, ch.end, ch.tokens, "failed", error=_describe(exc)))
            step += 1
            report(progress, step, total, f"chain step {part}/{n}: {reports[-1].status}")
        all_failed(reports)
        c = await meter.complete(
            prompts.chain_final(spec, notes_text, n, [r.part for r in reports if r.status == "failed"]),
            MANAGER_MAX_TOKENS)
        report(progress, total, total, "manager")
        return finish(prompts.labelled_answer(c.text), reports, "llm")

    if topology == "map_reduce":
        reports = await _gather_reports(
            chunks,
            lambda ch: meter.complete(prompts.map_step(spec, ch.text, ch.index + 1, n, instruction), WORKER_MAX_TOKENS),
            _classify_structured, concurrency, progress, step, total, "map")
        all_failed(reports)
        useful = [r for r in reports if r.status == "answer"]
        if not useful:
            report(progress, total, total, "reduce (every map result was NA)")
            return finish(_code_aggregate(spec, []) or NA, reports, "none")
        coded = _code_aggregate(spec, [prompts.parse_structured(r.text)[0] for r in useful])
        if coded is not None:
            report(progress, total, total, "reduce in code")
            return finish(coded, reports, "code")
        results = [(f"part {r.part}", r.text) for r in useful]
        budget = max(chunk_tokens - 400, 200)
        rounds = 0
        while len(results) > 1 and sum(tokenizer.count(t) for _, t in results) > budget:
            groups: list[list[tuple[str, str]]] = [[]]
            size = 0
            for item in results:
                t = tokenizer.count(item[1])
                if groups[-1] and (size + t > budget or len(groups[-1]) >= 8):
                    groups.append([])
                    size = 0
                groups[-1].append(item)
                size += t
            if len(groups) == len(results):  # each result alone fills the budget: pair them up
                groups = [results[i:i + 2] for i in range(0, len(results), 2)]
            merged = await asyncio.gather(*(meter.complete(prompts.collapse_step(spec, g), WORKER_MAX_TOKENS)
                                            for g in groups))
            results = [(f"{g[0][0]} to {g[-1][0]}", m.text.strip()) for g, m in zip(groups, merged, strict=True)]
            rounds += 1
            notes.append(f"Collapse round {rounds}: {len(groups)} groups.")
        c = await meter.complete(prompts.reduce_step(spec, results), MANAGER_MAX_TOKENS)
        report(progress, total, total, "reduce")
        return finish(prompts.labelled_answer(c.text), reports, "llm", rounds)

    reports = await _gather_reports(
        chunks,
        lambda ch: meter.complete(prompts.worker(spec, ch.text, ch.index + 1, n, instruction), WORKER_MAX_TOKENS),
        _classify_plain, concurrency, progress, step, total, "worker")
    all_failed(reports)
    useful = [r for r in reports if r.status == "answer"]
    if not useful:
        report(progress, total, total, "manager (every worker said NA)")
        return finish(_code_aggregate(spec, []) or NA, reports, "none")
    coded = _code_aggregate(spec, [r.text for r in useful])
    if coded is not None:
        report(progress, total, total, "aggregated in code")
        return finish(coded, reports, "code")
    items, shortened = _fit_reports([(r.part, r.text) for r in useful], max(chunk_tokens - 600, 200), tokenizer)
    if shortened:
        notes.append("Worker reports were shortened evenly to fit the manager's prompt.")
    c = await meter.complete(
        prompts.manager(spec, items, n, [r.part for r in reports if r.status == "na"],
                        [r.part for r in reports if r.status == "failed"]),
        MANAGER_MAX_TOKENS)
    report(progress, total, total, "manager")
    return finish(prompts.labelled_answer(c.text), reports, "llm")


async def run_single_shot(llm: ChatModel, spec: TaskSpec, text: str) -> tuple[str, Completion]:
    """The whole text in one call."""
    c = await llm.complete(prompts.single_shot(spec, text), max_tokens=MANAGER_MAX_TOKENS)
    return prompts.labelled_answer(c.text), c
