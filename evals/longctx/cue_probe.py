"""How well a base model retrieves a key's value from a whole KV haystack when the prompt cues the answer, by length.

The chunked-QA eval asks through chat prompts (instructions, `Answer:`), which a base model such as the embedded
Gemma 3 270M mostly does not follow: every mode scores near 0 at every length, so that eval cannot tell model noise
(what grows with length) from format noise. This probe removes the format: each prompt is the haystack followed by
the start of the asked pair as the JSON writes it (`{"KEY": "`), sent to `/v1/completions`, and the reply up to the
closing quote must be the value exactly. Its accuracy by length is the single-shot model-noise curve
L(T) = alpha * T^beta, fitted here as the noise model fits it.

    research-mcp llm serve --port 8391 &                   # or any OpenAI-compatible completions endpoint
    python -m evals.longctx.cue_probe --url http://127.0.0.1:8391/v1 --haystacks 3 --questions 10 --out DIR

Writes DIR/cue_rows.csv (one row a question: the asked pair's relative position, the reply, and which pair's value
came back, counted from the asked one), DIR/cue_results.csv (one row a length) and DIR/cue_fit.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from evals.longctx.run import haystack_pairs, interleave, kv_items
from evals.rows import write_rows_csv
from tools.atomic import write_text
from tools.errors import ResearchError
from tools.longctx.noise import accuracy_to_loss, fit_power_law
from tools.longctx.tokens import default_tokenizer

VALUE_TOKENS = 48  # a UUID is about 36 Gemma tokens


def cue_prompt(context: str, key: str) -> str:
    """The haystack, then the asked pair's start as its JSON writes it; the model continues with the value."""
    return f'{context}\n\n{{"{key}": "'


async def probe(base_url: str, model: str, items: list, parallel: int = 8) -> list[dict[str, Any]]:
    """One completion a question, `parallel` at once; exact match of the reply (up to the closing quote)."""
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient

    tok = default_tokenizer()
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", timeout=900.0, max_retries=1,
                         http_client=DefaultAsyncHttpxClient(timeout=900.0))
    gate = asyncio.Semaphore(max(1, parallel))
    rows: list[dict[str, Any]] = []

    async def one(index: int, it) -> None:
        key = it.task.split('"')[1]
        async with gate:
            t0 = time.perf_counter()
            resp = await client.completions.create(model=model, prompt=cue_prompt(it.text, key),
                                                   max_tokens=VALUE_TOKENS, temperature=0.0, stop=['"', "\n"])
            wall = time.perf_counter() - t0
        answer = resp.choices[0].text.strip()
        pairs = haystack_pairs(it.text)
        values = {v: i for i, (_, v) in enumerate(pairs)}
        asked = next(i for i, (k, _) in enumerate(pairs) if k == key)
        rows.append({"item": index, "length": it.length, "tokens": tok.count(it.text), "key": key,
                     "position": round(asked / max(1, len(pairs) - 1), 3),
                     "correct": int(answer == it.answers[0]), "answer": answer[:60],
                     # which pair's value came back, counted from the asked one (empty: no value of this haystack)
                     "offset": values[answer] - asked if answer in values else "",
                     "prompt_tokens": resp.usage.prompt_tokens if resp.usage else 0,
                     "completion_tokens": resp.usage.completion_tokens if resp.usage else 0,
                     "wall_s": round(wall, 2)})

    try:
        await asyncio.gather(*(one(i, it) for i, it in enumerate(items)))
    finally:
        await client.close()
    return sorted(rows, key=lambda r: r["item"])


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per length: questions, accuracy, mean tokens (project tokenizer) and prompt tokens (the model's)."""
    out = []
    for length in sorted({r["length"] for r in rows}):
        rs = [r for r in rows if r["length"] == length]
        out.append({"suite": "kv-cue", "length": length, "mode": "single_shot", "topology": "", "items": len(rs),
                    "tokens": round(sum(r["tokens"] for r in rs) / len(rs)),
                    "accuracy": sum(r["correct"] for r in rs) / len(rs),
                    "other_value": sum(r["offset"] != "" and not r["correct"] for r in rs) / len(rs),
                    "mean_prompt_tokens": round(sum(r["prompt_tokens"] for r in rs) / len(rs)),
                    "mean_wall_s": round(sum(r["wall_s"] for r in rs) / len(rs), 2)})
    return out


def fit(summary: list[dict[str, Any]]) -> dict[str, Any]:
    """L(T) = alpha * T^beta over the lengths (accuracy clipped at 1/(2n), as the noise model clips it)."""
    losses = [accuracy_to_loss(s["accuracy"], s["items"]) for s in summary]
    try:
        law = fit_power_law([float(s["tokens"]) for s in summary], losses)
    except ResearchError as exc:
        return {"error": str(exc), "losses": losses}
    return {"alpha": law.alpha, "beta": law.beta, "r2": law.r2, "points": law.points, "losses": losses,
            "superlinear": law.beta > 1.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.longctx.cue_probe", description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=None, help="an OpenAI-compatible base URL with /v1/completions (default: the "
                    "embedded model's server, started if needed)")
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 15000])
    ap.add_argument("--haystacks", type=int, default=3, help="KV haystacks per length")
    ap.add_argument("--questions", type=int, default=10, help="keys asked per haystack, spread over its positions")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    url = args.url
    if url is None:
        from tools.embedded.launcher import ensure_local_endpoint

        url = ensure_local_endpoint()
    items = interleave(kv_items(args.lengths, args.haystacks, args.questions))
    rows = asyncio.run(probe(url, args.model, items, args.parallel))
    summary = summarize(rows)
    result = {"model": args.model, "fit": fit(summary), "summary": summary}
    args.out.mkdir(parents=True, exist_ok=True)
    write_rows_csv(args.out / "cue_rows.csv", rows)
    write_rows_csv(args.out / "cue_results.csv", summary)
    write_text(args.out / "cue_fit.json", json.dumps(result, indent=2) + "\n")
    for s in summary:
        print(f"kv-cue {s['length']:>6} tokens {s['tokens']:>6} items {s['items']:>3} accuracy {s['accuracy']:.1%} "
              f"mean wall {s['mean_wall_s']:.1f} s")
    f = result["fit"]
    print(f"fit: {f['error']}" if "error" in f else
          f"fit: alpha {f['alpha']:.3g}, beta {f['beta']:.2f} (r2 {f['r2']:.2f}, {f['points']} lengths)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
