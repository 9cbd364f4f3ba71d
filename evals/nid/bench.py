"""Batched scoring against a per-string loop, side by side, on the byte-level LM and on the embedded Gemma 3 270M.

Both sides get the same candidate sets of real NIDs (an NID and its GIDs in the same context, the nid_score
defaults: 64 characters before, 8 after, 15 GIDs). "Batched" is one `token_stats` call over all contexts:
the prefix before the identifier runs once per candidate set (its key/value cache repeated over the
candidates), the output head and the vocabulary-wide statistics run only where an identifier token is
predicted. The per-string loop is what a user writes: one plain forward pass per string, the full logits
of every position, log-softmax, then the identifier's rows. Both give the same log-probabilities (checked,
tolerance `TOLERANCE` nats). On the embedded model the loop runs on every `loop_every`-th context and the
time per context is compared. Threads = cores on both sides.

    python -m evals.nid.bench [--quick]   # or: research-mcp eval nid --bench [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

TOLERANCE = 1e-3  # nats; float32 sums in a different order (cached prefix vs one pass, batch shapes)
BENCH_DATASETS = ("tweets", "jsonlite_md5", "opacus_git_log", "serialversionuid")
# --quick: fewer byte-LM contexts, two data sets on the embedded model, the loop on every 8th context
QUICK = {"byte_contexts": 128, "datasets": ("tweets", "jsonlite_md5"), "loop_every": 8}


def _sets(dataset: str, n_nids: int, gids: int, seed: int):
    from tools.nid.corpus import DATASETS, dataset_nids
    from tools.nid.pipeline import candidate_set

    docs, occ = dataset_nids(dataset)
    return [candidate_set(docs[o.doc], o.detection.start, o.detection.end, DATASETS[dataset][1], gids, seed=seed)
            for o in occ[:n_nids]]


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def plain_loop_hf(model, tokenizer, contexts):
    """Per string: one forward pass with the full logits, log-softmax over every position, the identifier's rows."""
    import torch

    from tools.nid.scorers import _stats_from_logprobs

    out = []
    with torch.inference_mode():
        for ctx in contexts:
            enc = tokenizer(ctx.text, return_offsets_mapping=True)
            ids, offs = enc["input_ids"], enc["offset_mapping"]
            keep = torch.tensor([t for t in range(1, len(ids)) if offs[t][0] < ctx.end and offs[t][1] > ctx.start])
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
            out.append(_stats_from_logprobs(logp[keep - 1], torch.tensor(ids)[keep]))
    return out


def plain_loop_bytelm(model, contexts):
    """The byte LM's plain loop: [BOS] + the text's bytes, full logits, log-softmax, the identifier's rows."""
    import torch

    from tools.nid.bytelm import BOS
    from tools.nid.scorers import _stats_from_logprobs

    out = []
    with torch.inference_mode():
        for ctx in contexts:
            data = list(ctx.text.encode("utf-8"))
            start = len(ctx.text[: ctx.start].encode("utf-8"))
            end = len(ctx.text[: ctx.end].encode("utf-8"))
            logp = torch.log_softmax(model(torch.tensor([[BOS, *data[:-1]]]))[0].float(), dim=-1)
            sel = torch.arange(start, end)
            out.append(_stats_from_logprobs(logp[sel], torch.tensor(data)[sel]))
    return out


def max_diff(a, b) -> float:
    """The largest absolute difference of the identifier tokens' log-probabilities (inf on a length mismatch)."""
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if len(x) != len(y):
            return float("inf")
        if len(x):
            worst = max(worst, float(np.max(np.abs(x.logp - y.logp))))
    return worst


def bench_bytelm(out: Path, *, gids: int = 15, contexts: int = 512, prefix: int = 64, suffix: int = 8) -> dict:
    from tools.nid.bytelm import ByteLMConfig
    from tools.nid.contexts import make_context
    from tools.nid.corpus import load_documents
    from tools.nid.scorers import ByteLMScorer
    from tools.nid.train import TrainConfig, train_byte_lm

    # a small model trained on git-commit contexts (speed does not depend on its fit)
    sets = _sets("opacus_git_log", contexts // (gids + 1), gids, 0)
    docs = load_documents("opacus_git_log")
    texts = [make_context(docs[i], 0, min(40, len(docs[i])), prefix_chars=0, suffix_chars=64).text for i in range(64)]
    cfg = TrainConfig(epochs=1, batch_size=16, model=ByteLMConfig(block_size=160, d_model=64, n_layer=2, n_head=4))
    sc = ByteLMScorer(train_byte_lm(texts, out / "bench_bytelm.pt", cfg).checkpoint)
    ctxs = [c for s in sets for c in s.contexts(prefix, suffix)]
    sc.token_stats(ctxs[:32], batch_size=64)
    plain_loop_bytelm(sc.model, ctxs[:4])
    t_batch, got = _time(lambda: sc.token_stats(ctxs, batch_size=64))
    t_loop, want = _time(lambda: plain_loop_bytelm(sc.model, ctxs))
    return {"contexts": len(ctxs), "looped_contexts": len(ctxs), "batched_s": t_batch, "loop_s": t_loop,
            "per_context_batched_ms": 1e3 * t_batch / len(ctxs), "per_context_loop_ms": 1e3 * t_loop / len(ctxs),
            "ratio": t_loop / t_batch, "max_abs_diff": max_diff(got, want)}


def bench_gemma(*, gids: int = 15, nids_per_dataset: int = 1, loop_every: int = 4, prefix: int = 64,
                suffix: int = 8, datasets=BENCH_DATASETS) -> dict:
    from tools.nid.scorers import HFScorer

    lm = HFScorer.embedded()
    warm = [c for s in _sets(datasets[0], 1, 1, 1) for c in s.contexts(prefix, suffix)]
    lm.token_stats(warm, batch_size=64)  # one-time costs (allocator, kernels) on neither side's clock
    plain_loop_hf(lm.model, lm.tokenizer, warm[:1])
    rows = {}
    for name in datasets:
        ctxs = [c for s in _sets(name, nids_per_dataset, gids, 0) for c in s.contexts(prefix, suffix)]
        sub = ctxs[::loop_every]
        t_batch, got = _time(lambda ctxs=ctxs: lm.token_stats(ctxs, batch_size=64))
        t_loop, want = _time(lambda sub=sub: plain_loop_hf(lm.model, lm.tokenizer, sub))
        per_b, per_l = t_batch / len(ctxs), t_loop / len(sub)
        # rows of the 262k-logit output head, the cost that dominates both sides: every position of the text in
        # the loop, the identifier's tokens here
        loop_rows = sum(len(ids) for ids in lm.tokenizer([c.text for c in ctxs])["input_ids"])
        head_rows = sum(len(g) for g in got)
        rows[name] = {"contexts": len(ctxs), "looped_contexts": len(sub), "batched_s": t_batch, "loop_s": t_loop,
                      "per_context_batched_ms": 1e3 * per_b, "per_context_loop_ms": 1e3 * per_l,
                      "ratio": per_l / per_b, "max_abs_diff": max_diff(got[::loop_every], want),
                      "identifier_tokens": float(np.mean([len(g) for g in got])),
                      "head_rows_ratio": loop_rows / max(1, head_rows)}
    return rows


def bench(out: Path, *, gids: int = 15, byte_contexts: int = 512, nids_per_dataset: int = 1, loop_every: int = 4,
          prefix: int = 64, suffix: int = 8, threads: int | None = None, datasets=BENCH_DATASETS, log=print) -> dict:
    import torch

    from tools.atomic import write_text

    torch.set_num_threads(threads or os.cpu_count() or 1)
    out.mkdir(parents=True, exist_ok=True)
    rows = {"threads": torch.get_num_threads(), "prefix_chars": prefix, "suffix_chars": suffix, "gids": gids}
    b = rows["bytelm"] = bench_bytelm(out, gids=gids, contexts=byte_contexts, prefix=prefix, suffix=suffix)
    log(f"byte LM: {b['contexts']} contexts, batched {b['batched_s']:.2f} s, per-string loop {b['loop_s']:.2f} s, "
        f"ratio {b['ratio']:.1f}x, max |d log p| {b['max_abs_diff']:.1e}")
    g = rows["gemma3_270m"] = bench_gemma(gids=gids, nids_per_dataset=nids_per_dataset, loop_every=loop_every,
                                          prefix=prefix, suffix=suffix, datasets=datasets)
    for name, r in g.items():
        log(f"Gemma 3 270M, {name} ({r['identifier_tokens']:.0f} identifier tokens): {r['contexts']} contexts "
            f"batched {r['per_context_batched_ms']:.0f} ms each; per-string loop on {r['looped_contexts']} "
            f"{r['per_context_loop_ms']:.0f} ms each; ratio {r['ratio']:.1f}x (output-head rows "
            f"{r['head_rows_ratio']:.1f}x fewer), max |d log p| {r['max_abs_diff']:.1e}")
    tb = sum(r["batched_s"] for r in g.values())
    nb = sum(r["contexts"] for r in g.values())
    tl = sum(r["loop_s"] for r in g.values())
    nl = sum(r["looped_contexts"] for r in g.values())
    rows["gemma3_270m_all"] = {"per_context_batched_ms": 1e3 * tb / nb, "per_context_loop_ms": 1e3 * tl / nl,
                               "ratio": (tl / nl) / (tb / nb),
                               "max_abs_diff": max(r["max_abs_diff"] for r in g.values())}
    log(f"Gemma 3 270M, all: ratio {rows['gemma3_270m_all']['ratio']:.1f}x")
    write_text(out / "bench.json", json.dumps(rows, indent=1))
    return rows


def perf_rows(quick: bool) -> list[dict]:
    """Rows for the one-run performance table (evals/perf/run.py): the byte LM and the embedded Gemma 3 270M."""
    import tempfile

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    limit = ("the 262k-logit output head, which exact statistics need at every identifier token: the loop runs it "
             "on {r:.1f}x as many rows (every position), a bound the ratio can pass only by the loop's small-batch "
             "inefficiency")
    with tempfile.TemporaryDirectory() as tmp:
        b = bench_bytelm(Path(tmp), contexts=QUICK["byte_contexts"] if quick else 512)
    g = bench_gemma(datasets=QUICK["datasets"] if quick else BENCH_DATASETS,
                    loop_every=QUICK["loop_every"] if quick else 4)
    out = [{"target": f"NID scoring, byte LM, {b['contexts']} contexts (NID + 15 GIDs, 64+8 chars)",
            "ours": b["per_context_batched_ms"], "baseline": b["per_context_loop_ms"], "unit": "ms",
            "ratio": b["ratio"], "goal": ">= 5x", "met": b["ratio"] >= 5, "limit": "small model: Python per call",
            "same_output": b["max_abs_diff"] <= TOLERANCE, "baseline_name": "per-string loop, full logits",
            "n": b["contexts"]}]
    for name, r in g.items():
        out.append({"target": f"NID scoring, Gemma 3 270M, {name} (NID + 15 GIDs, 64+8 chars)",
                    "ours": r["per_context_batched_ms"], "baseline": r["per_context_loop_ms"], "unit": "ms",
                    "ratio": r["ratio"], "goal": ">= 5x", "met": r["ratio"] >= 5,
                    "limit": limit.format(r=r["head_rows_ratio"]),
                    "same_output": r["max_abs_diff"] <= TOLERANCE, "baseline_name": "per-string loop, full logits",
                    "n": r["looped_contexts"]})
    return out


def main(argv: list[str] | None = None) -> int:
    from tools.paths import output_dir

    ap = argparse.ArgumentParser(prog="evals.nid.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--nids", type=int, default=1, help="NIDs (x 16 candidates) per data set on the embedded model")
    ap.add_argument("--loop-every", type=int, default=4)
    ap.add_argument("--prefix", type=int, default=64, help="context characters before the identifier")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: every core)")
    ap.add_argument("--quick", action="store_true", help="fewer contexts and data sets (the sizes of perf --quick)")
    a = ap.parse_args(argv)
    bench(a.out or (output_dir() / "eval_nid_bench"), nids_per_dataset=a.nids, prefix=a.prefix, threads=a.threads,
          **(QUICK if a.quick else {"loop_every": a.loop_every}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
