"""The embedded model's runtimes side by side: transformers (the default) against llama.cpp (optional).

    python -m evals.llm            # both runtimes when llama-cpp-python is installed, else transformers alone
    python -m evals.llm --quick    # shorter prompts (the tests run this)

For each runtime, in one process one after the other: load time, prompt tokens/s (prefill of a
Gutenberg excerpt), decode tokens/s (greedy), peak RSS added by the load, and the per-token log-probs
of the same text, whose largest difference between the runtimes is printed (both read the same Q4_K_M
weights; transformers dequantizes them to float32, llama.cpp computes on the quantized blocks).
Writes `runtimes.json` and `runtimes.md` to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

from tools.atomic import write_text
from tools.paths import SAMPLE_DIR, output_dir


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _text(tokens_wanted: int) -> str:
    words = (SAMPLE_DIR / "longctx" / "alice_chapter1.txt").read_text(encoding="utf-8").split()
    return " ".join(words[: int(tokens_wanted * 0.75)])


def bench_transformers(prompt: str, decode: int) -> dict:
    import torch

    from tools.embedded.runtime import load_local_lm

    rss0, t0 = _rss_mb(), time.perf_counter()
    lm = load_local_lm()
    load_s = time.perf_counter() - t0
    ids = torch.tensor([lm.encode(prompt)])
    with torch.inference_mode():
        t1 = time.perf_counter()
        logits = lm.model(input_ids=ids).logits[0].float()
        prefill_s = time.perf_counter() - t1
    logp = torch.log_softmax(logits, dim=-1)
    token_lp = [float(logp[t - 1, ids[0, t]]) for t in range(1, ids.shape[1])]
    t2 = time.perf_counter()
    gen = lm.generate("Question: What is the capital of France?\nAnswer:", max_tokens=decode)
    decode_s = time.perf_counter() - t2
    return {"runtime": "transformers (float32)", "load_s": load_s, "prompt_tokens": int(ids.shape[1]),
            "prefill_tok_s": ids.shape[1] / prefill_s, "decode_tokens": gen.completion_tokens,
            "decode_tok_s": gen.completion_tokens / decode_s, "rss_mb": _rss_mb() - rss0,
            "ids": ids[0].tolist(), "logprobs": token_lp}


def bench_llama_cpp(prompt: str, decode: int, ids: list[int]) -> dict | None:
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    import numpy as np

    from tools.embedded.weights import gguf_path

    rss0, t0 = _rss_mb(), time.perf_counter()
    llm = Llama(model_path=str(gguf_path()), n_ctx=max(512, len(ids) + decode + 64), logits_all=True, verbose=False,
                n_threads=os.cpu_count() or 2)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    llm.reset()
    llm.eval(ids)
    prefill_s = time.perf_counter() - t1
    scores = np.asarray(llm.scores[: len(ids)], dtype=np.float64)
    scores -= scores.max(axis=1, keepdims=True)
    logp = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    token_lp = [float(logp[t - 1, ids[t]]) for t in range(1, len(ids))]
    llm.reset()
    t2 = time.perf_counter()
    out = llm.create_completion("Question: What is the capital of France?\nAnswer:", max_tokens=decode,
                                temperature=0.0)
    decode_s = time.perf_counter() - t2
    n = out["usage"]["completion_tokens"]
    return {"runtime": "llama.cpp (Q4_K_M)", "load_s": load_s, "prompt_tokens": len(ids),
            "prefill_tok_s": len(ids) / prefill_s, "decode_tokens": n, "decode_tok_s": n / decode_s,
            "rss_mb": _rss_mb() - rss0, "logprobs": token_lp}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.llm", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a short prompt and few decode steps")
    ap.add_argument("--prompt-tokens", type=int, default=1024)
    ap.add_argument("--decode-tokens", type=int, default=32)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    prompt_tokens, decode = (128, 4) if args.quick else (args.prompt_tokens, args.decode_tokens)
    out = args.out or output_dir() / "eval-llm"
    out.mkdir(parents=True, exist_ok=True)
    prompt = _text(prompt_tokens)
    rows = [bench_transformers(prompt, decode)]
    other = bench_llama_cpp(prompt, decode, rows[0]["ids"])
    if other is not None:
        rows.append(other)
    load = os.getloadavg()
    report = {"load_average": load, "rows": [{k: v for k, v in r.items() if k not in ("ids", "logprobs")}
                                             for r in rows]}
    lines = [f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", "",
             "| runtime | load s | prompt tokens | prefill tok/s | decode tok/s | RSS MB |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['runtime']} | {r['load_s']:.1f} | {r['prompt_tokens']} | {r['prefill_tok_s']:.0f} | "
                     f"{r['decode_tok_s']:.1f} | {r['rss_mb']:.0f} |")
    if other is not None:
        diffs = [abs(a - b) for a, b in zip(rows[0]["logprobs"], other["logprobs"], strict=True)]
        diffs.sort()
        report["logprob_abs_diff"] = {"max": diffs[-1], "median": diffs[len(diffs) // 2],
                                      "p95": diffs[int(0.95 * (len(diffs) - 1))], "tokens": len(diffs)}
        lines += ["", "per-token log-prob |transformers - llama.cpp| over {tokens} tokens: median {median:.4f}, "
                  "p95 {p95:.4f}, max {max:.4f}".format(**report["logprob_abs_diff"])]
        lines.append(f"llama.cpp / transformers: prefill {other['prefill_tok_s'] / rows[0]['prefill_tok_s']:.2f}x, "
                     f"decode {other['decode_tok_s'] / rows[0]['decode_tok_s']:.2f}x")
    write_text(out / "runtimes.json", json.dumps(report, indent=1))
    write_text(out / "runtimes.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0
