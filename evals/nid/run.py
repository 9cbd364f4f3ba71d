"""End to end on this machine: a byte-level LM trained on contexts of real NIDs, then audited with their GIDs.

1. Split: from each bundled data set (t.co codes in tweets, Ethereum addresses in token JSON, MD5 lines,
   git commit ids, serialVersionUIDs) take NIDs; half are members (their context is a training text),
   half non-members.
2. Train without DP; score every member and non-member NID and its GIDs in the same context.
3. DP audit (rank version, c = 1 + GIDs, r = 1, score "loss" fixed in advance, alpha = 0.05): the eps
   lower bound should be > 0.
4. Dataset inference: p < 0.01 on members, p > 0.05 on non-members.
5. DP-SGD runs at a target eps under add/remove-one (Opacus RDP accountant, Poisson sampling, one text
   per NID). The audit assumes substitution of one text (an NID by a GID), so its theoretical eps is
   2 eps with delta' = (1 + e^eps) delta (group privacy over remove-then-add); the audit is run with
   delta' and the bound may exceed 2 eps in no more than alpha of the runs.
6. Benchmark: batched scoring against a per-string loop, as a ratio.

Writes summary.json, audit_runs.csv, roc.png and rank_histogram.png to --out.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from pathlib import Path

import numpy as np


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="evals.nid", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a seconds-long smoke run (tiny model, few NIDs)")
    ap.add_argument("--bench", action="store_true", help="only the scoring benchmark: batched vs per-string loop on "
                    "the byte LM and on the embedded Gemma 3 270M (evals/nid/bench.py)")
    ap.add_argument("--real", action="store_true", help="real-model mode: LoRA fine-tunes of the embedded Gemma 3 "
                    "270M on real git-log / serialVersionUID / MD5 records, with and without DP-SGD, audited "
                    "(evals/nid/real.py)")
    ap.add_argument("--seeds", type=int, default=5, help="--real: seeds (each: a member split, a no-DP and a DP run)")
    ap.add_argument("--records", type=int, default=6, help="--real: records per corpus (members + non-members)")
    ap.add_argument("--steps", type=int, default=20, help="--real: LoRA steps per run")
    ap.add_argument("--lr", type=float, default=2e-2, help="--real: LoRA learning rate")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: <output dir>/eval_nid)")
    ap.add_argument("--per-dataset", type=int, default=48, help="NIDs per data set (members + non-members)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--gids", type=int, default=None, help="GIDs per NID (default 15; 5 with --real)")
    ap.add_argument("--dp-runs", type=int, default=5)
    ap.add_argument("--dp-epsilon", type=float, default=4.0, help="target eps of DP-SGD (add/remove one)")
    ap.add_argument("--dp-epochs", type=int, default=15)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    if a.gids is None:
        a.gids = 5 if a.real else 15
    if a.quick and not a.real:
        a.per_dataset, a.epochs, a.d_model, a.gids, a.dp_runs, a.dp_epochs = 4, 2, 16, 7, 1, 1
    return a


def _texts(split: dict, docs: dict, prefix: int, suffix: int) -> list[str]:
    from tools.nid.contexts import make_context

    return [make_context(docs[it["dataset"]][it["doc"]], it["start"], it["end"], prefix_chars=prefix,
                         suffix_chars=suffix).text for it in split["members"]]


def _sets(items: list[dict], docs: dict, gids: int, seed: int):
    from tools.nid.corpus import DATASETS
    from tools.nid.pipeline import candidate_set

    return [candidate_set(docs[it["dataset"]][it["doc"]], it["start"], it["end"], DATASETS[it["dataset"]][1], gids,
                          seed=seed) for it in items]


def main(argv: list[str] | None = None) -> int:
    import torch
    from threadpoolctl import threadpool_limits

    from tools.atomic import atomic_output, write_text
    from tools.nid.audit import binary_audit, rank_audit
    from tools.nid.bytelm import ByteLMConfig
    from tools.nid.corpus import load_documents
    from tools.nid.inference import dataset_inference
    from tools.nid.pipeline import score_features
    from tools.nid.plots import rank_histogram, roc_plot
    from tools.nid.scorers import ByteLMScorer
    from tools.nid.scores import SCORE_NAMES
    from tools.nid.sources import ALL_DATASETS
    from tools.nid.train import TrainConfig, train_byte_lm
    from tools.nid.train_tools import build_split
    from tools.paths import output_dir

    a = _args(argv)
    out = a.out or (output_dir() / "eval_nid")
    if a.bench:
        from evals.nid.bench import QUICK, bench

        bench(out, threads=max(a.threads, 2), **(QUICK if a.quick else {}))
        return 0
    if a.real:
        import os

        from evals.nid.real import RealConfig, run_real

        rc = RealConfig(per_dataset=a.records, gids=a.gids, seeds=a.seeds, steps=a.steps,
                        lr=a.lr, alpha=a.alpha, seed=a.seed, threads=max(a.threads, os.cpu_count() or 1))
        if a.quick:
            rc.per_dataset, rc.gids, rc.seeds, rc.steps = 4, 3, 1, 2
        run_real(a.out or (output_dir() / "eval_nid_real"), rc, log=lambda m: print(m, flush=True))
        return 0
    torch.set_num_threads(a.threads)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    prefix, suffix = 64, 8
    recall = not a.quick
    split = build_split(list(ALL_DATASETS), a.per_dataset, 0.5, a.seed)
    docs = {name: load_documents(name) for name in ALL_DATASETS}
    texts = _texts(split, docs, prefix, suffix)
    block = max(len(t.encode("utf-8")) for t in texts) + 1
    mcfg = ByteLMConfig(block_size=block, d_model=a.d_model, n_layer=2, n_head=4)
    members = _sets(split["members"], docs, a.gids, a.seed + 1)
    non_members = _sets(split["non_members"], docs, a.gids, a.seed + 1)
    print(f"corpus: {len(texts)} member texts, {len(non_members)} non-member NIDs, {a.gids} GIDs each, "
          f"block {block} bytes")

    res = train_byte_lm(texts, out / "model.pt", TrainConfig(epochs=a.epochs, seed=a.seed, model=mcfg))
    print(f"trained without DP: {res.parameters} parameters, {res.steps} steps, loss {res.final_loss:.3f} "
          f"nats/byte, {res.seconds:.0f} s")
    scorer = ByteLMScorer(res.checkpoint)
    fm = score_features(scorer, members, prefix_chars=prefix, suffix_chars=suffix, recall=recall)
    fn = score_features(scorer, non_members, prefix_chars=prefix, suffix_chars=suffix, recall=recall)
    loss_i = SCORE_NAMES.index("loss")
    audit = rank_audit(fm[:, :, loss_i], r=1, alpha=a.alpha)
    audit_non = rank_audit(fn[:, :, loss_i], r=1, alpha=a.alpha)
    binary = binary_audit(fm[:, 0, loss_i], fm[:, 1, loss_i], alpha=a.alpha)
    per_score = {}
    for j, name in enumerate(SCORE_NAMES):
        if np.isnan(fm[:, :, j]).all():
            continue
        per_score[name] = rank_audit(np.nan_to_num(fm[:, :, j], nan=-np.inf), r=1, alpha=a.alpha).eps_lower_bound
    print(f"DP audit (rank, c={a.gids + 1}, r=1, loss, alpha={a.alpha}): {audit.correct}/{audit.guesses} NIDs "
          f"ranked first, eps lower bound {audit.eps_lower_bound:.3f} (non-members: {audit_non.eps_lower_bound:.3f}); "
          f"binary mode: {binary.correct}/{binary.guesses}, eps >= {binary.eps_lower_bound:.3f}")
    print("  eps lower bound per score (exploratory): "
          + ", ".join(f"{k} {v:.2f}" for k, v in per_score.items()))
    keep = ~np.all(np.isnan(fm), axis=(0, 1))
    folds = 3 if a.quick else 5
    with threadpool_limits(a.threads):
        di_m = dataset_inference(fm[:, :, keep], folds=folds, seed=a.seed)
        di_n = dataset_inference(fn[:, :, keep], folds=folds, seed=a.seed)
    print(f"dataset inference: members KS p = {di_m.p_value_ks:.3g} (t-test {di_m.p_value_ttest:.3g}), "
          f"non-members KS p = {di_n.p_value_ks:.3g} (t-test {di_n.p_value_ttest:.3g})")

    curves = {}
    for j, name in enumerate(SCORE_NAMES):
        if np.isnan(fm[:, :, j]).all():
            continue
        dm = fm[:, 0, j] - np.nanmean(fm[:, 1:, j], axis=1)
        dn = fn[:, 0, j] - np.nanmean(fn[:, 1:, j], axis=1)
        curves[name] = (dm, dn)
    roc_plot(curves, out / "roc.png", title="members vs non-members\n(NID score minus its GIDs' mean)")
    rank_histogram(di_m.ranks, a.gids + 1, out / "rank_histogram.png", title="out-of-fold NID ranks among GIDs",
                   others={"members": di_m.ranks, "non-members": di_n.ranks})

    # DP-SGD runs
    rows = []
    exceed = 0
    for k in range(a.dp_runs):
        seed = a.seed + 100 + k
        dres = train_byte_lm(texts, out / f"model_dp{k}.pt", TrainConfig(
            epochs=a.dp_epochs, seed=seed, dp_epsilon=a.dp_epsilon, dp_delta=1e-5, max_grad_norm=1.0, model=mcfg))
        eps_ar = float(dres.epsilon or math.nan)
        eps_sub = 2 * eps_ar
        delta_sub = (1 + math.exp(eps_ar)) * 1e-5
        fdp = score_features(ByteLMScorer(dres.checkpoint), members, prefix_chars=prefix, suffix_chars=suffix,
                             recall=False)
        au = rank_audit(fdp[:, :, loss_i], r=1, alpha=a.alpha, delta=delta_sub)
        exceed += au.eps_lower_bound > eps_sub
        rows.append({"run": k, "seed": seed, "eps_add_remove": eps_ar, "eps_substitution": eps_sub,
                     "delta_substitution": delta_sub, "noise_multiplier": dres.noise_multiplier,
                     "top1": au.correct, "nids": au.guesses, "eps_lower_bound": au.eps_lower_bound,
                     "exceeds": au.eps_lower_bound > eps_sub, "seconds": round(dres.seconds, 1)})
        print(f"DP-SGD run {k}: accountant eps {eps_ar:.2f} (add/remove) -> {eps_sub:.2f} (substitution), "
              f"noise {dres.noise_multiplier:.2f}; {au.correct}/{au.guesses} first; "
              f"eps lower bound {au.eps_lower_bound:.3f}")
    if rows:
        with atomic_output(out / "audit_runs.csv") as tmp, tmp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"DP runs where the bound exceeds the theoretical eps: {exceed}/{len(rows)} (allowed rate {a.alpha})")

    # benchmark: batched against a per-string loop, same contexts
    ctxs = [c for s in members for c in s.contexts(prefix, suffix)][: (64 if a.quick else 512)]
    t0 = time.perf_counter()
    scorer.token_stats(ctxs, batch_size=64)
    t_batch = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in ctxs:
        scorer.token_stats([c], batch_size=1)
    t_loop = time.perf_counter() - t0
    print(f"benchmark: {len(ctxs)} contexts, batched {t_batch:.2f} s, per-string loop {t_loop:.2f} s, "
          f"ratio {t_loop / t_batch:.1f}x")

    summary = {
        "members": len(members), "non_members": len(non_members), "candidates": a.gids + 1,
        "train": {"parameters": res.parameters, "steps": res.steps, "final_loss": res.final_loss,
                  "seconds": res.seconds},
        "audit": {"eps_lower_bound": audit.eps_lower_bound, "top1": audit.correct, "nids": audit.guesses,
                  "non_member_eps_lower_bound": audit_non.eps_lower_bound, "binary": binary.eps_lower_bound,
                  "per_score": per_score},
        "dataset_inference": {"members_p_ks": di_m.p_value_ks, "members_p_ttest": di_m.p_value_ttest,
                              "non_members_p_ks": di_n.p_value_ks, "non_members_p_ttest": di_n.p_value_ttest},
        "dp_runs": rows, "dp_exceedances": exceed,
        "benchmark": {"contexts": len(ctxs), "batched_s": t_batch, "loop_s": t_loop, "ratio": t_loop / t_batch},
        "seconds": time.perf_counter() - t_start,
    }
    write_text(out / "summary.json", json.dumps(summary, indent=1, default=float))
    print(f"wrote {out} in {summary['seconds']:.0f} s")
    return 0
