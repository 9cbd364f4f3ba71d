"""Prompt-start reuse on the embedded model, side by side: the same questions over the same haystacks, answered by
a server that keeps the key/value caches of prompt starts and by one that keeps none.

Two embedded servers are started on 127.0.0.1, one with `RESEARCH_MCP_LLM_EMBEDDED_PREFIX_CACHE_MB=0` (the
baseline). Each haystack's questions go to the baseline and then to the caching server, through the eval's own
path (`evaluate`: single-shot and the chosen chunked topologies). Prints the wall time of each side, their ratio,
and whether every answer is the same (greedy decoding: the cache must change no answer).

    python -m evals.longctx.prefix_bench --length 2000 --haystacks 1 --questions 6
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.longctx.run import evaluate, kv_items

START_TIMEOUT_S = 900


def start_server(state: Path, cache_mb: int, log: Path) -> subprocess.Popen:
    env = dict(os.environ, RESEARCH_MCP_LLM_EMBEDDED_PREFIX_CACHE_MB=str(cache_mb))
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "tools.embedded.serve", "--port", "0", "--quiet",
                                 "--state-file", str(state)], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out, start_new_session=True)


def wait_url(proc: subprocess.Popen, state: Path, log: Path) -> str:
    t0 = time.monotonic()
    while time.monotonic() - t0 < START_TIMEOUT_S:
        if proc.poll() is not None:
            raise RuntimeError(f"the embedded server exited ({proc.returncode}); its log: {log}")
        if state.is_file():
            return json.loads(state.read_text())["url"]
        time.sleep(0.5)
    raise RuntimeError(f"the embedded server did not start within {START_TIMEOUT_S} s; its log: {log}")


async def side_by_side(urls: dict[str, str], items, chunk_tokens: int, topologies: list[str]) -> dict:
    from tools.llm import EmbeddedChat

    models = {}
    for side, url in urls.items():
        m = EmbeddedChat()
        m.base_url = url
        models[side] = m
    rows: dict[str, list] = {side: [] for side in urls}
    wall = dict.fromkeys(urls, 0.0)
    by_text: dict[str, list] = {}
    for it in items:
        by_text.setdefault(it.text, []).append(it)
    try:
        for group in by_text.values():
            for side in ("baseline", "cached"):
                t0 = time.perf_counter()
                rows[side] += await evaluate(models[side], group, {"kv": chunk_tokens}, topologies, True)
                wall[side] += time.perf_counter() - t0
    finally:
        for m in models.values():
            await m.aclose()
    same = [a["answer"] == b["answer"] and a["prompt_tokens"] == b["prompt_tokens"]
            for a, b in zip(rows["baseline"], rows["cached"], strict=True)]
    return {"baseline_s": wall["baseline"], "cached_s": wall["cached"], "ratio": wall["cached"] / wall["baseline"],
            "rows": len(same), "same_answers": sum(same), "rows_by_side": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.longctx.prefix_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=2000, help="KV haystack length (a kv_<len>.jsonl set)")
    ap.add_argument("--haystacks", type=int, default=1)
    ap.add_argument("--questions", type=int, default=6, help="questions per haystack")
    ap.add_argument("--chunk-tokens", type=int, default=1000)
    ap.add_argument("--topology", nargs="*", default=["workers_manager", "chain"],
                    choices=["workers_manager", "chain", "map_reduce"])
    ap.add_argument("--json", type=Path, default=None, help="write the figures (and every row) here")
    args = ap.parse_args(argv)
    items = kv_items([args.length], args.haystacks, args.questions)
    with tempfile.TemporaryDirectory(prefix="prefix-bench-") as tmp:
        procs, urls = {}, {}
        try:
            for side, mb in (("baseline", 0), ("cached", 2048)):
                state, log = Path(tmp) / f"{side}.json", Path(tmp) / f"{side}.log"
                procs[side] = (start_server(state, mb, log), state, log)
            for side, (proc, state, log) in procs.items():
                urls[side] = wait_url(proc, state, log)
            out = asyncio.run(side_by_side(urls, items, args.chunk_tokens, args.topology))
        finally:
            for proc, _, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
    print(f"prompt-start reuse, {len(items)} questions over {args.haystacks} KV haystack(s) of {args.length} tokens, "
          f"single-shot + {' + '.join(args.topology) or 'no chunked topology'}: baseline {out['baseline_s']:.1f} s, "
          f"cached {out['cached_s']:.1f} s, ratio {out['ratio']:.3f}; same answers and prompt tokens on "
          f"{out['same_answers']} of {out['rows']} rows")
    if args.json:
        from tools.atomic import write_text

        write_text(args.json, json.dumps(out, indent=1, default=str) + "\n")
    return 0 if out["same_answers"] == out["rows"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
