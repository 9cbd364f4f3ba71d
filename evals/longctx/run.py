"""Chunked long-context eval: single-shot against chunked per length, the fitted noise regime, a concurrency benchmark.

    python -m evals.longctx --quick                # scripted endpoint, small sets, seconds
    python -m evals.longctx                        # scripted endpoint, KV 1K-16K and QA 4K-128K
    python -m evals.longctx --endpoint settings    # the configured OPENAI_BASE_URL / OPENAI_MODEL

Suites: the divide-and-conquer key-value sets (kv_<len>.jsonl, UUID keys, 1K-16K tokens) and real QA
(NaturalQuestions questions whose gold passage is inserted at --depth into public-domain books cut to
4K-128K tokens, scored by substring match of the gold answers). Data comes from ../shared/data/longctx
beside the repository when present, else from the bundled samples. The scripted endpoint's workers
look the answer up in their chunk or say NA, its manager picks the non-NA report, and its
single-shot reader errs with probability 1 - exp(-0.02 (T/1000)^1.5). Outputs in --out: results.csv,
noise.json. The benchmark prints the wall-time ratio of 8 workers read concurrently against one by one.

Two or more models side by side, from the rows.csv their runs wrote (evals/longctx/compare.py says more):

    python -m evals.longctx --compare qwen0.5b=A/rows.csv qwen1.5b=B/rows.csv --out DIR
    python -m evals.longctx --compare qwen0.5b=A/rows.csv qwen1.5b=B/rows.csv \\
        --headline qwen0.5b:workers_manager qwen1.5b --out DIR

--compare pairs the items every (model, mode) answered at each suite and length and writes compare.csv,
compare.md and compare.png in --out: n, accuracy with its 95% Wilson interval, and the mean prompt and completion
tokens, calls and wall seconds per question. --headline WEAK:TOPOLOGY STRONG adds, per length, the weak model
chunked against the strong one single-shot, an exact McNemar test, and from which length (if any) the weak one
overtakes (higher accuracy and p < 0.05); --score picks the score as elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gzip
import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.longctx.rows import read_rows, wilson_interval
from evals.scripted_endpoint import ScriptedLLM
from evals.shared_data import shared_data_path
from tools.errors import InvalidInput, ResearchError
from tools.llm import ChatModel, OpenAIChat
from tools.longctx.chunking import chunk_text
from tools.longctx.models import ChunkedPoint, SinglePoint
from tools.longctx.noise import longctx_fit_noise
from tools.longctx.prompts import TaskSpec
from tools.longctx.qa import longctx_answer, longctx_single_shot
from tools.longctx.scoring import answers_beyond_question, substring_match, substring_match_beyond_question
from tools.longctx.tokens import default_tokenizer
from tools.longctx.topologies import run_chunked
from tools.paths import SAMPLE_DIR, output_dir

REPO = Path(__file__).resolve().parents[2]
SAMPLES = SAMPLE_DIR / "longctx"


@dataclass
class Item:
    suite: str
    length: int
    task: str
    text: str
    answers: list[str]
    kind: str
    evidence: str | None = None


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m evals.longctx", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sets that run in seconds")
    ap.add_argument("--endpoint", choices=["scripted", "settings"], default="scripted",
                    help="the scripted local endpoint, or the one the settings name")
    ap.add_argument("--kv-lengths", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 15000])
    ap.add_argument("--kv-items", type=int, default=20, help="KV haystacks per length (spread over the set)")
    ap.add_argument("--kv-questions", type=int, default=1,
                    help="questions per KV haystack: 1 asks the set's own key; N > 1 asks N keys spread over the "
                    "haystack's positions, one after another, so a model server that keeps prompt starts reads "
                    "each haystack's prefill once")
    ap.add_argument("--qa-lengths", type=int, nargs="+", default=[4000, 8000, 16000, 32000, 64000, 128000])
    ap.add_argument("--qa-items", type=int, default=20)
    ap.add_argument("--depth", type=float, default=0.5, help="where the gold passage goes (0 start, 1 end)")
    ap.add_argument("--kv-chunk-tokens", type=int, default=1000)
    ap.add_argument("--qa-chunk-tokens", type=int, default=4000)
    ap.add_argument("--topology", nargs="+", choices=["workers_manager", "chain", "map_reduce"],
                    default=["workers_manager"], help="chunked topologies to run (each on every item)")
    ap.add_argument("--no-single-shot", action="store_true")
    ap.add_argument("--parallel", type=int, default=1,
                    help="questions answered at once (a model server that batches concurrent requests serves them "
                    "together); each question's modes run in turn")
    ap.add_argument("--interleave", action="store_true",
                    help="haystack by haystack across lengths, so a run stopped early has measured every length")
    ap.add_argument("--resume", action="store_true",
                    help="continue the run in --out: rows.csv's measured rows are kept and only the rest are asked "
                    "(the settings must be the same; run.json records them)")
    ap.add_argument("--score", choices=["strict", "substring"], default="strict",
                    help="the accuracy the table, plot and fit use: strict (KV: the reply's first value is the "
                    "asked one; QA: a gold answer the question does not contain) or substring (a gold answer "
                    "anywhere in the reply); both are in results.csv")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--bench-latency", type=float, default=0.2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--from-rows", type=Path, nargs="+", default=None, metavar="ROWS_CSV",
                    help="summarize, fit and plot the per-item rows.csv of earlier (possibly stopped) runs, e.g. a KV "
                    "run's and a QA run's together")
    ap.add_argument("--cue", type=Path, default=None, metavar="CUE_RESULTS_CSV",
                    help="also plot a cue probe's accuracy by length (cue_results.csv of evals.longctx.cue_probe)")
    ap.add_argument("--model-name", default="model", help="with --from-rows: the model named in the plot")
    ap.add_argument("--run-json", type=Path, default=None, metavar="RUN_JSON",
                    help="with --from-rows: the run.json of the run that wrote the rows; the QA rows' strict score is "
                    "recomputed against the questions that run asked (rows written before it left out answers the "
                    "question contains)")
    ap.add_argument("--compare", nargs="+", default=None, metavar="LABEL=ROWS_CSV",
                    help="compare models: each LABEL=ROWS_CSV is one run's rows.csv and the model it ran (a label "
                    "given several times pools its files); writes compare.csv, compare.md and compare.png in --out")
    ap.add_argument("--headline", nargs=2, default=None, metavar=("WEAK_LABEL:TOPOLOGY", "STRONG_LABEL"),
                    help="with --compare: per length, the weak model chunked with TOPOLOGY against the strong model "
                    "single-shot on the same items, with an exact McNemar test and the length it overtakes from")
    return ap


def _spread(n_total: int, k: int) -> list[int]:
    if k >= n_total:
        return list(range(n_total))
    return sorted({round(i * (n_total - 1) / max(1, k - 1)) for i in range(k)})


def haystack_pairs(context: str) -> list[tuple[str, str]]:
    """The key-value pairs of a KV haystack (`JSON data:` and a JSON object), in the order the text gives them."""
    body = context[context.index("{"):]
    return list(json.loads(body).items())


def spread_positions(n_pairs: int, k: int) -> list[int]:
    """`k` pair indices spread evenly over `n_pairs` positions (the middle of each of k equal spans)."""
    return sorted({min(n_pairs - 1, int((j + 0.5) * n_pairs / k)) for j in range(k)})


def kv_items(lengths: list[int], per_length: int, questions: int = 1) -> list[Item]:
    """`per_length` haystacks per length; each asked its own key (`questions` 1) or `questions` keys spread over it."""
    out = []
    for length in lengths:
        path = shared_data_path("longctx", "divideconquer_kv", f"kv_{length}.jsonl")
        if path.is_file():
            rows = [json.loads(line) for line in path.read_text().splitlines()]
        else:
            rows = [json.loads(line) for line in (SAMPLES / "kv_retrieval.jsonl").read_text().splitlines()]
            rows = [r for r in rows if r["length"] == length]
        for i in _spread(len(rows), per_length):
            r = rows[i]
            if questions <= 1:
                out.append(Item("kv", length, r["input"].strip(), r["context"], [r["answer"]], "retrieval"))
                continue
            pairs = haystack_pairs(r["context"])
            template = r["input"].strip().replace(r["input"].strip().split('"')[1], "{key}", 1)
            for j in spread_positions(len(pairs), questions):
                key, value = pairs[j]
                out.append(Item("kv", length, template.replace("{key}", key), r["context"], [value], "retrieval"))
    return out


def nq_questions(n: int) -> list[dict[str, Any]]:
    path = shared_data_path("longctx", "lost_in_the_middle", "nq-open-oracle.jsonl.gz")
    rows = []
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                rows.append({"question": d["question"], "answers": d["answers"], "title": d["ctxs"][0]["title"],
                             "passage": d["ctxs"][0]["text"]})
                if len(rows) >= n:
                    break
    else:
        rows = [json.loads(line) for line in (SAMPLES / "nq_questions.jsonl").read_text().splitlines()][:n]
    return rows


def _haystack(min_chars: int) -> str:
    """Public-domain books joined until they reach `min_chars` (the bundled one, repeated, if needed)."""
    folder = shared_data_path("longctx", "gutenberg")
    books = sorted(folder.glob("pg*.txt")) if folder.is_dir() else []
    books = books or [SAMPLES / "alice.txt"]
    texts: list[str] = []
    i = 0
    while sum(len(t) for t in texts) < min_chars:
        texts.append(books[i % len(books)].read_text(encoding="utf-8"))
        i += 1
    return "\n\n".join(texts)


def qa_items(lengths: list[int], per_length: int, depth: float) -> list[Item]:
    if per_length <= 0 or not lengths:
        return []
    tok = default_tokenizer()
    hay = _haystack(int(max(lengths) * 5))
    while tok.count(hay) < max(lengths) * 1.05:
        hay = hay + "\n\n" + hay
    offs = tok.offsets(hay)
    questions = nq_questions(per_length)
    out = []
    for length in lengths:
        for q in questions:
            gold = f"{q['title']}\n{q['passage']}"
            room = max(0, length - tok.count(gold) - 4)
            base = hay[: offs[room]] if room < len(offs) else hay
            cut = base.rfind("\n\n", 0, int(len(base) * depth)) + 2 if depth < 1 else len(base)
            cut = max(cut, 0)
            text = base[:cut] + gold + "\n\n" + base[cut:]
            out.append(Item("qa", length, q["question"], text, q["answers"], "qa", q["passage"]))
    return out


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def strict_kv_match(answer: str, task: str, gold: str) -> bool:
    """Whether the first UUID of `answer` that is not the asked key is the gold value.

    Substring scoring credits a reply that copies a run of the haystack (`{"k1": "v1", "k2": ...`) whenever the
    asked pair is in the copied run; this rule credits only a reply whose first value is the asked one.
    """
    asked = {m.lower() for m in _UUID.findall(task)}
    found = [m.lower() for m in _UUID.findall(answer) if m.lower() not in asked]
    return bool(found) and found[0] == gold.lower()


def _score(it: Item, answer: str) -> tuple[int, int]:
    """(substring score, strict score) of one answer. Strict: KV, the reply's first value is the asked one; QA, a
    gold answer the question does not contain is in the reply (a repeated question earns nothing)."""
    ok = int(substring_match(answer, it.answers))
    if it.suite == "kv":
        return ok, int(strict_kv_match(answer, it.task, it.answers[0]))
    return ok, int(substring_match_beyond_question(answer, it.answers, it.task))


def interleave(items: list[Item]) -> list[Item]:
    """The items reordered haystack by haystack across lengths (first haystack of every length, then the second...),
    keeping the questions of one haystack together: a run stopped early has measured every length."""
    groups: dict[int, list[list[Item]]] = {}
    for it in items:
        per_length = groups.setdefault(it.length, [])
        if per_length and per_length[-1][0].text == it.text and per_length[-1][0].suite == it.suite:
            per_length[-1].append(it)
        else:
            per_length.append([it])
    out: list[Item] = []
    for j in range(max((len(g) for g in groups.values()), default=0)):
        for length in sorted(groups):
            if j < len(groups[length]):
                out.extend(groups[length][j])
    return out


async def evaluate(model: ChatModel, items: list[Item], chunk_tokens: dict[str, int], topologies: list[str],
                   single: bool, progress: Path | None = None, parallel: int = 1,
                   done: set[tuple[int, str]] | None = None) -> list[dict[str, Any]]:
    """One row per item and mode (each chunked topology, then single-shot), with tokens and wall time.

    With `progress`, each row is appended to that CSV as it is made, so a long run keeps what it measured.
    `parallel` items are answered at once (each one's modes in turn), so a model server that decodes
    concurrent requests together, and keeps the prefill of a shared haystack, serves several questions at a time.
    `done`: (item index, topology or "single_shot") pairs measured already (a resumed run), skipped here.
    """
    done = done or set()
    tok = default_tokenizer()
    rows: list[dict[str, Any]] = []
    gate = asyncio.Semaphore(max(1, parallel))

    def keep(row: dict[str, Any]) -> None:
        rows.append(row)
        if progress is not None:
            new = not progress.is_file()
            with progress.open("a", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(row))
                if new:
                    w.writeheader()
                w.writerow(row)

    async def one(index: int, it: Item) -> None:
        async with gate:
            tokens = await asyncio.to_thread(tok.count, it.text)
            base = {"item": index, "suite": it.suite, "length": it.length, "tokens": tokens}
            for topology in topologies:
                if (index, topology) in done:
                    continue
                t0 = time.perf_counter()
                r = await longctx_answer(task=it.task, text=it.text, task_kind=it.kind, topology=topology,
                                         chunk_tokens=chunk_tokens[it.suite],
                                         overlap_tokens=chunk_tokens[it.suite] // 10, llm=model)
                ok, strict = _score(it, r.answer)
                keep({**base, "mode": "chunked", "topology": topology, "chunk_tokens": r.text_tokens_per_chunk,
                      "correct": ok, "strict": strict, "chunks": r.chunks_total, "failed_chunks": len(r.chunks_failed),
                      "calls": r.llm_calls, "prompt_tokens": r.prompt_tokens,
                      "completion_tokens": r.completion_tokens, "wall_s": round(time.perf_counter() - t0, 2),
                      "answer": r.answer[:80]})
            if single and (index, "single_shot") not in done:
                t0 = time.perf_counter()
                prompt_tokens = completion_tokens = 0
                try:
                    sr = await longctx_single_shot(task=it.task, text=it.text, task_kind=it.kind, llm=model)
                    (ok, strict), answer = _score(it, sr.answer), sr.answer
                    prompt_tokens, completion_tokens = sr.prompt_tokens, sr.completion_tokens
                except ResearchError as exc:
                    ok = strict = 0  # e.g. the text is over the model's context window
                    answer = f"error: {type(exc).__name__}"
                keep({**base, "mode": "single_shot", "topology": "", "chunk_tokens": "", "correct": ok,
                      "strict": strict, "chunks": 1, "failed_chunks": 0, "calls": 1, "prompt_tokens": prompt_tokens,
                      "completion_tokens": completion_tokens, "wall_s": round(time.perf_counter() - t0, 2),
                      "answer": answer[:80]})

    await asyncio.gather(*(one(i, it) for i, it in enumerate(items)))
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["suite"], r["length"], r["mode"], r.get("topology", "")), []).append(r)
    out = []
    for (suite, length, mode, topology), rs in sorted(groups.items()):
        out.append({"suite": suite, "length": length, "mode": mode, "topology": topology, "items": len(rs),
                    "tokens": round(sum(r["tokens"] for r in rs) / len(rs)),
                    "accuracy": sum(r["correct"] for r in rs) / len(rs),
                    "strict_accuracy": sum(r.get("strict", r["correct"]) for r in rs) / len(rs),
                    "chunk_tokens": rs[0]["chunk_tokens"], "mean_chunks": sum(r["chunks"] for r in rs) / len(rs),
                    "failed_chunks": sum(r["failed_chunks"] for r in rs),
                    "mean_calls": sum(r["calls"] for r in rs) / len(rs),
                    "mean_prompt_tokens": round(sum(r.get("prompt_tokens", 0) for r in rs) / len(rs)),
                    "mean_completion_tokens": round(sum(r.get("completion_tokens", 0) for r in rs) / len(rs)),
                    "mean_wall_s": round(sum(r.get("wall_s", 0.0) for r in rs) / len(rs), 2)})
    return out


def _key(score: str) -> str:
    return "strict_accuracy" if score == "strict" else "accuracy"


def fit_suite(summary: list[dict[str, Any]], suite: str, topology: str | None = None,
              score: str = "strict") -> dict[str, Any] | None:
    """The noise model fitted to one suite's single-shot points and its chunked points (one topology, or all)."""
    key = _key(score)
    single = [SinglePoint(tokens=s["tokens"], accuracy=s[key], items=s["items"])
              for s in summary if s["suite"] == suite and s["mode"] == "single_shot"]
    chunked = [ChunkedPoint(tokens=s["tokens"], chunk_tokens=int(s["chunk_tokens"]), accuracy=s[key],
                            items=s["items"], n_chunks=max(1, round(s["mean_chunks"])))
               for s in summary if s["suite"] == suite and s["mode"] == "chunked"
               and (topology is None or s.get("topology") == topology)]
    if not single:
        return None
    try:
        fit = longctx_fit_noise(single_shot=single, chunked=chunked)
    except ResearchError as exc:
        return {"error": str(exc)}
    return fit.model_dump(exclude={"rows"})


async def bench(latency_s: float, workers: int = 8, repeats: int = 3) -> dict[str, float]:
    """Median wall time of `workers` chunk calls read one by one against all at once (every worker says NA)."""
    from evals.longctx.scripted import PaperRules

    tok = default_tokenizer()
    text = (SAMPLES / "alice.txt").read_text(encoding="utf-8")
    chunks = chunk_text(text, 1000, 0, tok)[:workers]
    spec = TaskSpec('Key: "00000000-0000-0000-0000-000000000000"', "retrieval")
    out: dict[str, float] = {}
    with ScriptedLLM(PaperRules(), latency_s=latency_s) as server:
        model = OpenAIChat(base_url=server.base_url, api_key="x", model="scripted", concurrency=workers)
        try:
            # Warm-up: open the client's connections, so neither side pays for them.
            await run_chunked(model, spec, chunks, "workers_manager", tokenizer=tok, chunk_tokens=1200,
                              concurrency=workers)
            times: dict[str, list[float]] = {"sequential_s": [], "concurrent_s": []}
            for _ in range(repeats):
                for label, conc in (("sequential_s", 1), ("concurrent_s", workers)):
                    t0 = time.perf_counter()
                    run = await run_chunked(model, spec, chunks, "workers_manager", tokenizer=tok, chunk_tokens=1200,
                                            concurrency=conc)
                    times[label].append(time.perf_counter() - t0)
                    if run.llm_calls != workers or run.chunks_read != workers:
                        raise RuntimeError(f"benchmark run read {run.chunks_read} of {workers} chunks")
            out = {k: statistics.median(v) for k, v in times.items()}
        finally:
            await model.aclose()
        out["max_in_flight"] = server.max_active
    out["ratio"] = out["concurrent_s"] / out["sequential_s"]
    return out


def _print_table(summary: list[dict[str, Any]]) -> None:
    print(f"{'suite':5} {'length':>7} {'tokens':>7} {'mode':12} {'topology':16} {'items':>5} {'substr':>7} "
          f"{'strict':>7} {'chunks':>6} {'wall_s':>7}")
    for s in summary:
        print(f"{s['suite']:5} {s['length']:>7} {s['tokens']:>7} {s['mode']:12} {s['topology']:16} {s['items']:>5} "
              f"{s['accuracy']:>7.1%} {s['strict_accuracy']:>7.1%} {s['mean_chunks']:>6.1f} {s['mean_wall_s']:>7.1f}")


def markdown_table(summary: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table: per suite, length and mode, the scores with counts, calls, tokens, time."""
    lines = ["| suite | length | text tokens | mode | items | correct (substring) | correct (strict) | chunks | "
             "calls | prompt tokens | completion tokens | wall s |", "|" + "---|" * 12]
    for s in summary:
        n = s["items"]
        lines.append(f"| {s['suite']} | {s['length']:,} | {s['tokens']:,} | {s['topology'] or 'single-shot'} | {n} | "
                     f"{round(s['accuracy'] * n)}/{n} | {round(s['strict_accuracy'] * n)}/{n} | "
                     f"{s['mean_chunks']:.1f} | {s['mean_calls']:.1f} | {s['mean_prompt_tokens']:,} | "
                     f"{s['mean_completion_tokens']:,} | {s['mean_wall_s']:.1f} |")
    return "\n".join(lines) + "\n"


def _cue_summary(path: Path) -> list[dict[str, Any]]:
    """A cue probe's per-length rows in the summary's shape (its one score is exact match)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [{"suite": r["suite"], "length": int(r["length"]), "mode": r["mode"], "topology": r["topology"],
             "items": int(r["items"]), "tokens": int(r["tokens"]), "accuracy": float(r["accuracy"]),
             "strict_accuracy": float(r["accuracy"])}
            for r in rows]


def plot_accuracy(summary: list[dict[str, Any]], path: Path, title: str, score: str = "strict") -> None:
    """Accuracy against text length with 95% Wilson intervals, one line per suite and mode (single-shot or a
    chunked topology); lines are drawn a little apart along the length axis so that equal values stay visible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tools.atomic import atomic_output

    lines: dict[str, list[tuple[int, float, int]]] = {}
    for s in summary:
        label = f"{s['suite']} {s['topology'] or s['mode']}"
        lines.setdefault(label, []).append((s["tokens"], s[_key(score)], int(s.get("items") or 0)))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--")]
    for i, (label, pts) in enumerate(sorted(lines.items())):
        pts.sort()
        shift = 1.0 + 0.03 * (i - (len(lines) - 1) / 2)
        xs = [p[0] * shift for p in pts]
        ys = [p[1] for p in pts]
        bounds = [wilson_interval(round(p[1] * p[2]), p[2]) for p in pts]
        err = [[max(0.0, y - lo) for y, (lo, _) in zip(ys, bounds, strict=True)],
               [max(0.0, hi - y) for y, (_, hi) in zip(ys, bounds, strict=True)]]
        marker, style = styles[i % len(styles)]
        ax.errorbar(xs, ys, yerr=err, marker=marker, linestyle=style, capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("text length (tokens)")
    ax.set_ylabel(f"accuracy ({score}), 95% Wilson interval")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


async def _run(args: argparse.Namespace) -> int:
    if args.quick:
        args.kv_lengths, args.kv_items = [1000, 2000], 4
        args.qa_lengths, args.qa_items = [4000, 8000], 3
    if args.compare:
        from evals.longctx.compare import run_compare

        return run_compare(args.compare, args.out or output_dir() / "eval-longctx-compare", args.score, args.headline)
    out = args.out or output_dir() / "eval-longctx"
    out.mkdir(parents=True, exist_ok=True)
    if args.from_rows:
        rows, model_name = [r for path in args.from_rows for r in read_rows(path)], args.model_name
        if args.run_json:
            rescore_qa_rows(rows, build_items(json.loads(args.run_json.read_text())))
        args.no_bench = True
    else:
        rows, model_name = await _measure(args, out)
    return await _report(args, out, rows, model_name)


def build_items(settings: dict[str, Any]) -> list[Item]:
    """The items a run with these settings (its run.json, or the parsed options) asks, in the order it asks them."""
    items = (kv_items(settings["kv_lengths"], settings["kv_items"], settings["kv_questions"])
             + qa_items(settings["qa_lengths"], settings["qa_items"], settings["depth"]))
    return interleave(items) if settings["interleave"] else items


def rescore_qa_rows(rows: list[dict[str, Any]], items: list[Item]) -> None:
    """Set each QA row's strict score by the rule `_score` applies now: no credit for answers the question contains.

    Exact when all or none of an item's answers are in its question; otherwise the row's stored reply (its first
    80 characters) is matched again, which can only miss a later match.
    """
    for r in rows:
        if r["suite"] != "qa":
            continue
        it = items[r["item"]] if "item" in r and 0 <= r["item"] < len(items) else None
        if it is None or it.suite != "qa" or it.length != r["length"]:
            raise InvalidInput(f"row item {r.get('item')} ({r['suite']}, {r['length']} tokens) is not an item of "
                               "the run described by --run-json.", hint="Give the run.json written with these rows.")
        beyond = answers_beyond_question(it.answers, it.task)
        if not beyond:
            r["strict"] = 0
        elif len(beyond) < len(it.answers):
            r["strict"] = int(substring_match(r["answer"], beyond))
        else:
            r["strict"] = r["correct"]


async def _measure(args: argparse.Namespace, out: Path) -> tuple[list[dict[str, Any]], str]:
    items = build_items(vars(args))
    chunk_tokens = {"kv": args.kv_chunk_tokens, "qa": args.qa_chunk_tokens}
    progress = out / "rows.csv"
    done = _resume(args, out, progress)
    if args.endpoint == "scripted":
        from evals.longctx.scripted import PaperRules

        rules = PaperRules()
        for it in items:
            if it.evidence:
                rules.register_qa(it.task, it.evidence, it.answers[0])
        with ScriptedLLM(rules) as server:
            model = OpenAIChat(base_url=server.base_url, api_key="x", model="scripted", max_retries=2)
            try:
                rows = await evaluate(model, items, chunk_tokens, args.topology, not args.no_single_shot, progress,
                                      args.parallel, done)
            finally:
                await model.aclose()
        model_name = "scripted"
    else:
        from tools.llm import default_llm

        model = default_llm()  # the configured endpoint, else the embedded model
        model_name = model.name
        try:
            rows = await evaluate(model, items, chunk_tokens, args.topology, not args.no_single_shot, progress,
                                      args.parallel, done)
        finally:
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()
    return (read_rows(progress) if done else rows), model_name


_RUN_KEYS = ("endpoint", "quick", "kv_lengths", "kv_items", "kv_questions", "qa_lengths", "qa_items", "depth",
             "kv_chunk_tokens", "qa_chunk_tokens", "topology", "no_single_shot", "interleave")


def _resume(args: argparse.Namespace, out: Path, progress: Path) -> set[tuple[int, str]]:
    """With --resume, the (item, mode) rows an earlier run with the same settings measured; else a fresh start.
    The settings that decide the items are kept in run.json beside rows.csv, so a resume cannot mix two grids."""
    from tools.atomic import write_text

    settings = {k: getattr(args, k) for k in _RUN_KEYS}
    run_file = out / "run.json"
    if args.resume and progress.is_file():
        earlier = json.loads(run_file.read_text()) if run_file.is_file() else None
        if earlier != settings:
            changed = sorted(k for k in settings if earlier is None or earlier.get(k) != settings[k])
            raise InvalidInput(f"--resume: the run in {out} was made with other settings ({', '.join(changed)}).",
                               hint=f"Repeat that run's options (see {run_file}), or drop --resume to start afresh.")
        return {(r["item"], r["topology"] or r["mode"]) for r in read_rows(progress) if "item" in r}
    progress.unlink(missing_ok=True)
    write_text(run_file, json.dumps(settings, indent=1) + "\n")
    return set()


async def _report(args: argparse.Namespace, out: Path, rows: list[dict[str, Any]], model_name: str) -> int:
    summary = summarize(rows)
    from evals.rows import write_rows_csv
    from tools.atomic import write_text

    write_rows_csv(out / "results.csv", summary)
    _print_table(summary)
    write_text(out / "results.md", markdown_table(summary))
    plotted = summary + (_cue_summary(args.cue) if args.cue else [])
    plot_accuracy(plotted, out / "accuracy.png", f"accuracy against length ({model_name})", args.score)
    fits: dict[str, Any] = {}
    for suite in ("kv", "qa"):
        fits[suite] = fit_suite(summary, suite, score=args.score)
        topologies = sorted({s["topology"] for s in summary if s["suite"] == suite and s["mode"] == "chunked"})
        if len(topologies) > 1:
            for topology in topologies:
                fits[f"{suite}/{topology}"] = fit_suite(summary, suite, topology, args.score)
    for suite, fit in fits.items():
        if fit and "regime" in fit:
            cross = f"{fit['crossover_tokens']:.0f}" if fit["crossover_tokens"] is not None else "none"
            beta = f"{fit['beta']:.2f}" if fit["beta"] is not None else "n/a"
            print(f"{suite}: regime {fit['regime']}, beta {beta}, alpha {fit['alpha']}, crossover tokens {cross}")
        elif fit:
            print(f"{suite}: no fit ({fit['error']})")
    result: dict[str, Any] = {"model": model_name, "score": args.score, "fits": fits, "summary": summary}
    if not args.no_bench:
        b = await bench(args.bench_latency, repeats=1 if args.quick else 3)
        print(f"concurrency benchmark: 8 workers at {args.bench_latency * 1000:.0f} ms latency: sequential "
              f"{b['sequential_s']:.2f} s, concurrent {b['concurrent_s']:.2f} s, ratio {b['ratio']:.3f} "
              f"(ideal 0.125, median of {1 if args.quick else 3}), max in flight {b['max_in_flight']:.0f}")
        result["bench"] = b
    write_text(out / "noise.json", json.dumps(result, indent=2, default=str))
    print(f"wrote {out / 'results.csv'}, {out / 'results.md'}, {out / 'noise.json'} and {out / 'accuracy.png'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.headline and not args.compare:
        parser.error("--headline needs --compare LABEL=ROWS_CSV ... naming both of its labels")
    if args.compare and args.from_rows:
        parser.error("--compare and --from-rows are two reports: give one of them")
    try:
        return asyncio.run(_run(args))
    except ResearchError as exc:
        print(f"error: {exc}")
        return 2
