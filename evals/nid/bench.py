"""Batched scoring against a per-string loop, side by side, on the byte-level LM and on the embedded Gemma 3 270M.

Both scorers get candidate sets of real NIDs (an NID and its GIDs in the same context). "Batched" is one
`token_stats` call over all contexts (shared prefix passes, several contexts per model call); the loop
calls `token_stats` once per context. Both give the same statistics (tests check it). On the embedded
model the loop runs on every `--loop-every`-th context and its time per context is compared.

    python -m evals.nid.bench            # or: research-mcp eval nid --bench
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def _sets(dataset: str, n_nids: int, gids: int, seed: int):
    from tools.nid.corpus import DATASETS, dataset_nids
    from tools.nid.pipeline import candidate_set

    docs, occ = dataset_nids(dataset)
    return [candidate_set(docs[o.doc], o.detection.start, o.detection.end, DATASETS[dataset][1], gids, seed=seed)
            for o in occ[:n_nids]]


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(out: Path, *, gids: int = 15, byte_contexts: int = 512, lm_nids: int = 4, loop_every: int = 4,
          prefix: int = 32, suffix: int = 8, threads: int = 1) -> dict:
    import torch

    from tools.atomic import write_text
    from tools.nid.bytelm import ByteLMConfig
    from tools.nid.contexts import make_context
    from tools.nid.corpus import load_documents
    from tools.nid.scorers import ByteLMScorer, HFScorer
    from tools.nid.train import TrainConfig, train_byte_lm

    torch.set_num_threads(threads)
    out.mkdir(parents=True, exist_ok=True)
    rows = {}

    # byte-level LM: a small model trained on md5 and git-commit contexts (speed does not depend on its fit)
    sets = _sets("opacus_git_log", byte_contexts // (gids + 1), gids, 0)
    docs = load_documents("opacus_git_log")
    texts = [make_context(docs[i], 0, min(40, len(docs[i])), prefix_chars=0, suffix_chars=64).text for i in range(64)]
    cfg = TrainConfig(epochs=1, batch_size=16, model=ByteLMConfig(block_size=160, d_model=64, n_layer=2, n_head=4))
    res = train_byte_lm(texts, out / "bench_bytelm.pt", cfg)
    sc = ByteLMScorer(res.checkpoint)
    ctxs = [c for s in sets for c in s.contexts(prefix, suffix)]
    t_batch = _time(lambda: sc.token_stats(ctxs, batch_size=64))
    t_loop = _time(lambda: [sc.token_stats([c], batch_size=1) for c in ctxs])
    rows["bytelm"] = {"contexts": len(ctxs), "batched_s": t_batch, "loop_s": t_loop, "looped_contexts": len(ctxs),
                      "ratio": t_loop / t_batch}
    print(f"byte LM:  {len(ctxs)} contexts, batched {t_batch:.2f} s, per-string loop {t_loop:.2f} s, "
          f"ratio {t_loop / t_batch:.1f}x", flush=True)

    # the embedded Gemma 3 270M (exact full-vocabulary statistics)
    lm = HFScorer.embedded()
    sets = _sets("opacus_git_log", lm_nids, gids, 0)
    ctxs = [c for s in sets for c in s.contexts(prefix, suffix)]
    sub = ctxs[::loop_every]
    t_batch = _time(lambda: lm.token_stats(ctxs, batch_size=64))
    t_loop = _time(lambda: [lm.token_stats([c], batch_size=1) for c in sub])
    per_b, per_l = t_batch / len(ctxs), t_loop / len(sub)
    rows["gemma3_270m"] = {"contexts": len(ctxs), "batched_s": t_batch, "loop_s": t_loop, "looped_contexts": len(sub),
                           "ratio": per_l / per_b}
    print(f"Gemma 3 270M: {len(ctxs)} contexts batched {t_batch:.1f} s ({per_b:.2f} s each); per-string loop on "
          f"{len(sub)} of them {t_loop:.1f} s ({per_l:.2f} s each); ratio {per_l / per_b:.1f}x", flush=True)
    write_text(out / "bench.json", json.dumps(rows, indent=1))
    return rows


def main(argv: list[str] | None = None) -> int:
    from tools.paths import output_dir

    ap = argparse.ArgumentParser(prog="evals.nid.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--lm-nids", type=int, default=4, help="NIDs (x 16 candidates) scored on the embedded model")
    ap.add_argument("--loop-every", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    bench(a.out or (output_dir() / "eval_nid_bench"), lm_nids=a.lm_nids, loop_every=a.loop_every, threads=a.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
