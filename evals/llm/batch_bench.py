"""Batched decoding on the embedded model, side by side: the same concurrent requests served one after another
(`max_batch=1`) and decoded together (`max_batch=N`), in one process on the same loaded model.

    python -m evals.llm.batch_bench --requests 8 --prompt-tokens 200 --max-tokens 32

Each request is a different excerpt of a bundled public-domain book followed by a question; greedy decoding,
so both sides must write the same texts. Prints the wall time of each side, their ratio, decode tokens/s and
how many texts are the same; `--json` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tools.paths import SAMPLE_DIR


def prompts(n: int, tokens: int) -> list[str]:
    words = (SAMPLE_DIR / "longctx" / "alice_chapter1.txt").read_text(encoding="utf-8").split()
    size = max(8, int(tokens * 0.75))
    return [" ".join(words[(i * size) % max(1, len(words) - size):][:size]) + "\nQuestion: Who is named above?\nAnswer:"
            for i in range(n)]


def side(lm, texts: list[str], max_batch: int, max_tokens: int) -> dict:
    from tools.embedded.batching import DecodeBatcher

    batcher = DecodeBatcher(lm, max_batch)
    t0 = time.perf_counter()
    gens = [f.result() for f in [batcher.submit(t, max_tokens=max_tokens) for t in texts]]
    wall = time.perf_counter() - t0
    decoded = sum(g.completion_tokens for g in gens)
    return {"max_batch": max_batch, "wall_s": wall, "completion_tokens": decoded, "steps": batcher.steps,
            "decode_tokens_per_s": decoded / wall, "texts": [g.text for g in gens]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.llm.batch_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--prompt-tokens", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    from tools.embedded.runtime import LocalLM, load_local_lm

    shared = load_local_lm()
    lm = LocalLM(shared.model, shared.tokenizer, prefix_cache_mb=0)  # no prompt reuse on either side
    texts = prompts(args.requests, args.prompt_tokens)
    lm.generate(texts[0], max_tokens=2)  # warm-up
    base = side(lm, texts, 1, args.max_tokens)
    batched = side(lm, texts, args.requests, args.max_tokens)
    same = sum(a == b for a, b in zip(base["texts"], batched["texts"], strict=True))
    out = {"requests": args.requests, "prompt_tokens": args.prompt_tokens, "max_tokens": args.max_tokens,
           "one_at_a_time": base, "batched": batched, "ratio": batched["wall_s"] / base["wall_s"],
           "same_texts": same}
    print(f"{args.requests} concurrent requests, ~{args.prompt_tokens} prompt tokens, {args.max_tokens} new tokens: "
          f"one at a time {base['wall_s']:.1f} s ({base['decode_tokens_per_s']:.1f} tok/s), batched "
          f"{batched['wall_s']:.1f} s ({batched['decode_tokens_per_s']:.1f} tok/s, {batched['steps']} passes), "
          f"ratio {out['ratio']:.3f}; same texts {same}/{args.requests}")
    if args.json:
        from tools.atomic import write_text

        write_text(args.json, json.dumps(out, indent=1) + "\n")
    return 0 if same == args.requests else 1


if __name__ == "__main__":
    raise SystemExit(main())
