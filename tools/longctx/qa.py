"""The model-calling longctx tools: chunked answering, single-shot answering, choosing the chunk size."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from pydantic import Field

from tools.errors import InvalidInput, LimitExceeded, unknown_name
from tools.llm import ChatModel, resolve_llm
from tools.longctx.inputs import load_text
from tools.longctx.models import AnswerResult, CandidateScore, ChooseResult, ChunkReport, Document, SingleShotResult
from tools.longctx.prompts import TaskSpec
from tools.longctx.scoring import substring_match
from tools.longctx.tokens import DEFAULT_ENCODING, ENCODING_NAMES, Tokenizer, get_tokenizer
from tools.longctx.topologies import Report, RunResult, make_chunks, run_chunked, run_single_shot
from tools.progress import Progress, report
from tools.settings import get_settings

TaskKindArg = Annotated[
    Literal["retrieval", "qa", "summarization", "aggregation"],
    Field(description="retrieval: exact value; qa: short answer; aggregation: set `aggregate`."),
]
AggregateArg = Annotated[
    Literal["min", "max", "count"] | None,
    Field(description="Only for task_kind='aggregation'."),
]
TopologyArg = Annotated[
    Literal["workers_manager", "chain", "map_reduce"],
    Field(description="workers_manager: a manager decides; chain: notes passed along (facts spread over chunks); "
                      "map_reduce: confidence-scored."),
]
EncodingArg = Annotated[str, Field(description="cl100k_base, o200k_base or approx.")]
TextArg = Annotated[str | None, Field(description="The text inline, or give `path`.")]
PathArg = Annotated[str | None, Field(description="A UTF-8 file, e.g. sample://longctx/alice.txt.")]


def _tokenizer(name: str) -> Tokenizer:
    if name not in ENCODING_NAMES:
        raise unknown_name("token encoding", name, ENCODING_NAMES)
    return get_tokenizer(name)


def _spec(task: str, task_kind: str, aggregate: str | None) -> TaskSpec:
    if not task.strip():
        raise InvalidInput("The task is empty.", hint="Say what to find, answer or summarise.")
    if task_kind == "aggregation" and aggregate is None:
        raise InvalidInput("task_kind='aggregation' needs `aggregate`.", hint="Set aggregate to min, max or count.")
    if task_kind != "aggregation" and aggregate is not None:
        raise InvalidInput(f"`aggregate` only applies to task_kind='aggregation', not {task_kind!r}.",
                           hint="Drop `aggregate`, or set task_kind='aggregation'.")
    return TaskSpec(task.strip(), task_kind, aggregate)  # type: ignore[arg-type]


def _short(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _report_out(r: Report) -> ChunkReport:
    return ChunkReport(part=r.part, start_char=r.start, end_char=r.end, status=r.status, text=_short(r.text),
                       confidence=r.confidence, error=r.error)


def _answer_result(run: RunResult, llm: ChatModel, text_tokens: int, chunk_tokens: int, budget: int,
                   overlap: int, encoding: str) -> AnswerResult:
    answers = [r for r in run.reports if r.status == "answer"]
    nas = sum(1 for r in run.reports if r.status == "na")
    failed = run.failed
    summary = (f"Read {run.chunks_read} of {len(run.chunks)} chunks: {len(answers)} with information, {nas} NA"
               + (f", {len(failed)} failed (parts {', '.join(str(r.part) for r in failed[:20])})." if failed else "."))
    return AnswerResult(
        answer=run.answer, summary=summary, task_kind=run.kind, topology=run.topology,
        chunks_total=len(run.chunks), chunks_read=run.chunks_read, chunks_with_answer=len(answers), chunks_na=nas,
        chunks_failed=[_report_out(r) for r in failed], evidence=[_report_out(r) for r in answers[:40]],
        aggregator=run.aggregator, planner_instruction=run.instruction, text_tokens=text_tokens,
        chunk_tokens=chunk_tokens, text_tokens_per_chunk=budget, overlap_tokens=overlap, encoding=encoding,
        model=getattr(llm, "name", "") or "", llm_calls=run.llm_calls, prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens, collapse_rounds=run.collapse_rounds, notes=run.notes,
    )


async def longctx_answer(
    task: Annotated[str, Field(description="The question or instruction (for key-value retrieval, with the key).")],
    text: TextArg = None,
    path: PathArg = None,
    task_kind: TaskKindArg = "qa",
    aggregate: AggregateArg = None,
    topology: TopologyArg = "workers_manager",
    chunk_tokens: Annotated[int, Field(ge=64, le=1_000_000, description="Tokens per worker prompt, "
                                       "template and task included.")] = 4000,
    overlap_tokens: Annotated[int, Field(ge=0, description="Tokens consecutive chunks share; 0 for counting.")] = 200,
    planner: Annotated[bool, Field(description="First rewrite the task as a per-chunk instruction.")] = False,
    concurrency: Annotated[int, Field(ge=1, le=64, description="Chunks read at once.")] = 8,
    encoding: EncodingArg = DEFAULT_ENCODING,
    progress: Progress | None = None,
    llm: ChatModel | None = None,
) -> AnswerResult:
    """Answer a question over a long text by splitting it into chunks that worker models read.

    Returns the answer, failed chunks, evidence spans, calls and tokens.
    """
    spec = _spec(task, task_kind, aggregate)
    body = load_text(text, path)
    tok = _tokenizer(encoding)
    model = resolve_llm(llm)
    # Tokenizing megabytes is CPU work: do it off the event loop.
    chunks, budget, overlap, notes = await asyncio.to_thread(
        make_chunks, body, spec, topology, chunk_tokens, overlap_tokens, tok, planner=planner)
    text_tokens = await asyncio.to_thread(tok.count, body)
    report(progress, 0, len(chunks) + 1 + int(planner), f"{len(chunks)} chunks of up to {budget} text tokens")
    run = await run_chunked(model, spec, chunks, topology, tokenizer=tok, chunk_tokens=chunk_tokens,
                            concurrency=concurrency, planner=planner, progress=progress)
    run.notes[:0] = notes
    return _answer_result(run, model, text_tokens, chunk_tokens, budget, overlap, tok.name)


async def longctx_single_shot(
    task: Annotated[str, Field(description="The question or instruction.")],
    text: TextArg = None,
    path: PathArg = None,
    task_kind: TaskKindArg = "qa",
    aggregate: AggregateArg = None,
    encoding: EncodingArg = DEFAULT_ENCODING,
    llm: ChatModel | None = None,
) -> SingleShotResult:
    """Answer a question with the whole text in one model call (the baseline).

    Returns the answer and token counts. Past max_single_shot_tokens, use longctx_answer.
    """
    spec = _spec(task, task_kind, aggregate)
    body = load_text(text, path)
    tok = _tokenizer(encoding)
    n = await asyncio.to_thread(tok.count, body)
    limit = get_settings().longctx.max_single_shot_tokens
    if n > limit:
        raise LimitExceeded("The text (tokens) for one call", n, limit, "RESEARCH_MCP_LONGCTX__MAX_SINGLE_SHOT_TOKENS")
    model = resolve_llm(llm)
    answer, c = await run_single_shot(model, spec, body)
    return SingleShotResult(answer=answer, task_kind=task_kind, text_tokens=n, model=c.model or model.name,
                            prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens)


async def longctx_choose_chunk_size(
    documents: Annotated[list[Document], Field(min_length=1, description="Labelled documents; 3-5 is typical.")],
    candidates: Annotated[list[int], Field(min_length=1, description="Chunk sizes (prompt tokens) to try.")]
    = [1000, 2000, 4000, 8000],  # noqa: B006 - pydantic copies defaults
    task_kind: TaskKindArg = "qa",
    aggregate: AggregateArg = None,
    topology: TopologyArg = "workers_manager",
    overlap_fraction: Annotated[float, Field(ge=0, le=0.5, description="Share of the chunk.")] = 0.05,
    include_single_shot: Annotated[bool, Field(description="Also score reading each document whole.")] = False,
    concurrency: Annotated[int, Field(ge=1, le=64, description="Chunks read at once.")] = 8,
    encoding: EncodingArg = DEFAULT_ENCODING,
    progress: Progress | None = None,
    llm: ChatModel | None = None,
) -> ChooseResult:
    """Pick the chunk size by trying each candidate on a few labelled documents.

    Returns accuracy (a gold answer in the prediction), chunks and calls per candidate and the best size. Bounded by
    max_documents and max_candidates.
    """
    lim = get_settings().longctx
    if len(documents) > lim.max_documents:
        raise LimitExceeded("The number of documents", len(documents), lim.max_documents,
                            "RESEARCH_MCP_LONGCTX__MAX_DOCUMENTS")
    sizes = sorted(set(candidates))
    if len(sizes) > lim.max_candidates:
        raise LimitExceeded("The number of candidate sizes", len(sizes), lim.max_candidates,
                            "RESEARCH_MCP_LONGCTX__MAX_CANDIDATES")
    if sizes[0] < 64:
        raise InvalidInput(f"Candidate chunk sizes must be at least 64 tokens, got {sizes[0]}.",
                           hint="Try sizes such as 1000, 2000, 4000, 8000.")
    tok = _tokenizer(encoding)
    model = resolve_llm(llm)
    docs = []
    for i, d in enumerate(documents):
        if not d.answers:
            raise InvalidInput(f"Document {i} has no gold answers.", hint="Give each document at least one answer.")
        docs.append((_spec(d.task, task_kind, aggregate), load_text(d.text, d.path), d.answers))
    steps = len(sizes) * len(docs) + (len(docs) if include_single_shot else 0)
    done = 0
    rows: list[CandidateScore] = []
    for size in sizes:
        correct = calls = failed = n_chunks = 0
        for spec, body, answers in docs:
            chunks, _, _, _ = await asyncio.to_thread(
                make_chunks, body, spec, topology, size, int(size * overlap_fraction), tok)
            run = await run_chunked(model, spec, chunks, topology, tokenizer=tok, chunk_tokens=size,
                                    concurrency=concurrency)
            correct += substring_match(run.answer, answers)
            calls += run.llm_calls
            failed += len(run.failed)
            n_chunks += len(chunks)
            done += 1
            report(progress, done, steps, f"chunk size {size}: document {done}")
        rows.append(CandidateScore(chunk_tokens=size, accuracy=correct / len(docs), correct=correct,
                                   documents=len(docs), mean_chunks=n_chunks / len(docs), llm_calls=calls,
                                   failed_chunks=failed))
    single = None
    if include_single_shot:
        hits = 0
        for spec, body, answers in docs:
            answer, _ = await run_single_shot(model, spec, body)
            hits += substring_match(answer, answers)
            done += 1
            report(progress, done, steps, "single shot")
        single = hits / len(docs)
    best = max(rows, key=lambda r: (r.accuracy, r.chunk_tokens))
    mean_tokens = sum(tok.count(b) for _, b, _ in docs) / len(docs)
    rec = f"Use chunk_tokens={best.chunk_tokens} (accuracy {best.accuracy:.0%} on {len(docs)} documents)."
    if single is not None and single >= best.accuracy:
        rec = f"Reading whole scored {single:.0%}, at least as well as chunking ({best.accuracy:.0%}): do not chunk."
    return ChooseResult(best_chunk_tokens=best.chunk_tokens, best_accuracy=best.accuracy, candidates=rows,
                        single_shot_accuracy=single, documents=len(docs), mean_text_tokens=mean_tokens,
                        recommendation=rec)
