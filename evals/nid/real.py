"""Real-model mode: LoRA fine-tunes of the embedded Gemma 3 270M on real suspect corpora, audited with their NIDs.

1. Records: NIDs in their real contexts from three bundled corpora (pytorch/opacus git log with commit SHAs,
   commons-lang serialVersionUIDs, the jsonlite MD5 manifest), chosen so that no record's identifier
   occurs inside another record's context (members' texts never show a non-member NID). Each record gets
   GIDs of its format (drawn once, the same for every seed).
2. Per seed: members = a seeded random half of each corpus's records, non-members = the rest. LoRA
   adapters train on the members' contexts with the loss on the identifier's tokens, once without DP and
   once with DP-SGD (Opacus, Poisson sampling, per-example clipping; the RDP accountant's eps under
   add/remove-one).
3. Every record's NID and GIDs are scored in the same context by the fine-tuned model and by the base
   model (the reference). Scores: loss, zlib, min-k%, min-k%++, hinge and `ref` = loss minus the base
   model's loss.
4. DP audit (one run, rank version of Steinke et al., r = 1, alpha = 0.05) on the members with the score
   fixed in advance, `ref`. For DP runs the audit works under substitution of one text (an NID by a GID):
   eps' = 2 eps, delta' = (1 + e^eps) delta; the bound must stay below eps'.
5. Dataset inference (out-of-fold classifier over all scores, KS rank test): members vs their GIDs
   (expect a small p without DP) and non-members vs theirs (no signal).
6. Post-hoc audit of the untouched base model on the same records (was the public corpus in its
   pre-training data?): rank audit and dataset inference with its own scores.

Writes real_runs.csv, real_runs.md, real_summary.json, real_histograms.png and real_roc.png to the output
folder.

    research-mcp eval nid --real [--seeds 5]
"""

from __future__ import annotations

import copy
import csv
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

CORPORA = ("opacus_git_log", "serialversionuid", "jsonlite_md5")
FEATURES = ("loss", "zlib", "min_k", "min_k_pp", "hinge", "ref")  # recall is left out (a second pass per candidate)
AUDIT_SCORE = "ref"


@dataclass
class RealConfig:
    per_dataset: int = 6  # records per corpus (members + non-members)
    gids: int = 5
    seeds: int = 5
    steps: int = 20
    batch_size: int = 4
    lr: float = 2e-2
    rank: int = 16
    top_layers: int | None = 6  # adapters on the last 6 of 18 decoder layers: backward stops below them
    prefix_chars: int = 48
    suffix_chars: int = 8
    dp_epsilon: float = 1.0  # target eps of DP-SGD (add/remove one text)
    dp_delta: float = 1e-5
    max_grad_norm: float = 1.0
    alpha: float = 0.05
    folds: int = 4
    threads: int = 2
    seed: int = 0


def select_records(cfg: RealConfig) -> tuple[list[dict], dict]:
    """Up to `per_dataset` records per corpus whose identifiers do not occur in each other's contexts."""
    from tools.nid.contexts import make_context
    from tools.nid.corpus import DATASETS, dataset_nids

    rng = np.random.default_rng(cfg.seed)
    records: list[dict] = []
    docs_by_name: dict[str, list[str]] = {}
    for name in CORPORA:
        docs, occ = dataset_nids(name)
        docs_by_name[name] = docs
        chosen: list[dict] = []
        for i in rng.permutation(len(occ)):
            o = occ[int(i)]
            ctx = make_context(docs[o.doc], o.detection.start, o.detection.end, prefix_chars=cfg.prefix_chars,
                               suffix_chars=cfg.suffix_chars)
            rec = {"dataset": name, "type": DATASETS[name][1], "doc": o.doc, "start": o.detection.start,
                   "end": o.detection.end, "nid": o.detection.value, "text": ctx.text, "span": [ctx.start, ctx.end]}
            clash = any(rec["nid"] in r["text"] or r["nid"] in rec["text"] for r in records + chosen)
            if not clash:
                chosen.append(rec)
            if len(chosen) == cfg.per_dataset:
                break
        records += chosen
    return records, docs_by_name


def split_records(records: list[dict], seed: int) -> tuple[list[int], list[int]]:
    """A seeded random half of each corpus's records as members, the rest as non-members."""
    rng = np.random.default_rng(10_000 + seed)
    members: list[int] = []
    for name in CORPORA:
        idx = [i for i, r in enumerate(records) if r["dataset"] == name]
        members += [idx[j] for j in rng.permutation(len(idx))[: len(idx) // 2]]
    members.sort()
    return members, [i for i in range(len(records)) if i not in set(members)]


def overlap(records: list[dict], members: list[int], non_members: list[int]) -> dict:
    """Train/test overlap: shared NIDs, and non-member NIDs (or GIDs) appearing in a member's training text."""
    texts = [records[i]["text"] for i in members]
    return {"shared_nids": len({records[i]["nid"] for i in members} & {records[i]["nid"] for i in non_members}),
            "non_member_nids_in_training_texts": sum(any(records[j]["nid"] in t for t in texts) for j in non_members)}


def _features(scorer, sets, cfg: RealConfig, progress=None) -> np.ndarray:
    from tools.nid.pipeline import score_features
    from tools.nid.scores import SCORE_NAMES

    f = score_features(scorer, sets, prefix_chars=cfg.prefix_chars, suffix_chars=cfg.suffix_chars, recall=False,
                       batch_size=64, progress=progress)
    return f[:, :, [SCORE_NAMES.index(n) for n in FEATURES[:-1]]]


def _with_ref(f: np.ndarray, base: np.ndarray) -> np.ndarray:
    return np.concatenate([f, (f[:, :, :1] - base[:, :, :1])], axis=2)


def _calibrated(f: np.ndarray, j: int) -> np.ndarray:
    """The NID's score minus the mean of its GIDs' (one number per NID)."""
    return f[:, 0, j] - f[:, 1:, j].mean(axis=1)


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.r_[np.ones(pos.size), np.zeros(neg.size)], np.r_[pos, neg]))


def max_bound(n: int, c: int, alpha: float) -> float:
    """The eps lower bound if every one of n NIDs ranked first among c candidates: the audit's ceiling."""
    from tools.nid.audit import eps_lower_bound

    return eps_lower_bound(np.full(n, c), np.ones(n, dtype=np.int64), n, alpha=alpha)


def _evaluate(f: np.ndarray, members: list[int], non_members: list[int], cfg: RealConfig, *, delta: float) -> dict:
    from tools.nid.audit import rank_audit
    from tools.nid.inference import dataset_inference

    j = FEATURES.index(AUDIT_SCORE)
    fm, fn = f[members], f[non_members]
    au = rank_audit(fm[:, :, j], r=1, alpha=cfg.alpha, delta=delta)
    au_loss = rank_audit(fm[:, :, 0], r=1, alpha=cfg.alpha, delta=delta)
    au_non = rank_audit(fn[:, :, j], r=1, alpha=cfg.alpha, delta=delta)
    out = {"top1": au.correct, "audited": au.guesses, "eps_lower_bound": au.eps_lower_bound,
           "eps_lower_bound_loss": au_loss.eps_lower_bound, "eps_lower_bound_non_members": au_non.eps_lower_bound}
    folds = min(cfg.folds, len(members), len(non_members))
    if min(len(members), len(non_members)) >= 4:
        di_m = dataset_inference(fm, folds=folds, seed=cfg.seed)
        di_n = dataset_inference(fn, folds=folds, seed=cfg.seed)
        out.update({"di_p_members": di_m.p_value_ks, "di_p_non_members": di_n.p_value_ks,
                    "di_p_members_ttest": di_m.p_value_ttest, "di_p_non_members_ttest": di_n.p_value_ttest})
    for name in ("ref", "loss", "min_k_pp"):
        k = FEATURES.index(name)
        out[f"auc_{name}"] = _auc(_calibrated(fm, k), _calibrated(fn, k))
    out["auc_nid_vs_gid"] = _auc(fm[:, 0, j], fm[:, 1:, j].ravel())
    return out


def run_real(out: Path, cfg: RealConfig, log=print) -> dict:
    """The whole real-model evaluation; returns the summary (also written to `out`).

    real_features.npz holds every run's features (records, 1 + gids, FEATURES), the base model's under
    `base` (without `ref`) and each run's member indices.
    """
    import tempfile

    import torch

    from tools.atomic import atomic_output, write_text
    from tools.nid.finetune import LoRAConfig, finetune_lora, fresh_base
    from tools.nid.pipeline import candidate_set
    from tools.nid.scorers import HFScorer

    t_start = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    adapters = Path(tempfile.mkdtemp(prefix="nid_real_adapters_"))
    out.mkdir(parents=True, exist_ok=True)
    records, docs = select_records(cfg)
    sets = [candidate_set(docs[r["dataset"]][r["doc"]], r["start"], r["end"], r["type"], cfg.gids, seed=cfg.seed + 1)
            for r in records]
    counts = {name: sum(r["dataset"] == name for r in records) for name in CORPORA}
    log(f"records: {len(records)} ({', '.join(f'{k} {v}' for k, v in counts.items())}), {cfg.gids} GIDs each")
    base, tok = fresh_base()
    base.eval()
    t0 = time.perf_counter()
    fb = _features(HFScorer(base, tok, "base"), sets, cfg)
    base_f = fb  # the base model has no reference of its own: every score but ref
    score_s = time.perf_counter() - t0
    log(f"base model scored {len(sets) * (cfg.gids + 1)} candidates in {score_s:.0f} s")

    from tools.nid.audit import rank_audit
    from tools.nid.inference import dataset_inference

    pa = rank_audit(base_f[:, :, 0], r=1, alpha=cfg.alpha)
    di_base = dataset_inference(base_f, folds=min(cfg.folds, len(records)), seed=cfg.seed)
    rows: list[dict] = [{
        "run": "base (post-hoc)", "seed": "", "dp": False, "members": 0, "non_members": len(records),
        "candidates": cfg.gids + 1, "steps": 0, "final_loss": math.nan, "eps_accountant": math.nan,
        "eps_substitution": math.nan, "delta_substitution": 0.0, "noise_multiplier": math.nan,
        "max_grad_norm": math.nan, "sample_rate": math.nan, "top1": pa.correct, "audited": pa.guesses,
        "eps_lower_bound": math.nan, "eps_lower_bound_loss": pa.eps_lower_bound,
        "eps_lower_bound_non_members": math.nan, "bound_below_accountant": "",
        "di_p_members": math.nan, "di_p_non_members": di_base.p_value_ks, "di_p_members_ttest": math.nan,
        "di_p_non_members_ttest": di_base.p_value_ttest, "auc_ref": math.nan, "auc_loss": math.nan,
        "auc_min_k_pp": math.nan, "auc_nid_vs_gid": _auc(base_f[:, 0, 0], base_f[:, 1:, 0].ravel()),
        "overlap": 0, "train_s": 0.0, "score_s": round(score_s, 1)}]
    log(f"base model (post-hoc, all {len(records)} records): {pa.correct}/{pa.guesses} NIDs first by loss, "
        f"eps lower bound {pa.eps_lower_bound:.3f}; dataset inference p = {di_base.p_value_ks:.3g}")

    saved: dict[str, np.ndarray] = {"base": fb}
    hist: dict[str, list[np.ndarray]] = {"members": [], "non-members": [], "GIDs": []}
    roc: dict[str, tuple[list, list]] = {}
    overlaps = []

    def write_all() -> dict:
        """The table, summary, features and figures so far (rewritten after every seed)."""
        fields = list(rows[0])
        with atomic_output(out / "real_runs.csv") as tmp, tmp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        n_members = rows[-1]["members"] if len(rows) > 1 else 0
        summary = {"config": asdict(cfg), "records": len(records), "corpora": counts, "features": list(FEATURES),
                   "audit_score": AUDIT_SCORE, "audit_ceiling_eps": max_bound(n_members, cfg.gids + 1, cfg.alpha)
                   if n_members else math.nan, "overlap": overlaps, "rows": rows,
                   "seeds_done": len({r["seed"] for r in rows if r["dp"]}),
                   "dp_bound_violations": sum(1 for r in rows if r["dp"] and not r["bound_below_accountant"]),
                   "seconds": time.perf_counter() - t_start}
        with atomic_output(out / "real_features.npz") as tmp, tmp.open("wb") as fh:
            np.savez(fh, features=np.array(FEATURES), **saved)
        write_text(out / "real_runs.md", markdown_table(rows, summary))
        write_text(out / "real_summary.json", json.dumps(summary, indent=1, default=float))
        if hist["members"]:
            from tools.nid.plots import roc_plot, score_histogram

            score_histogram({k: np.concatenate(v) for k, v in hist.items()}, out / "real_histograms.png",
                            title=f"'{AUDIT_SCORE}' score (fine-tuned minus base loss), no-DP runs, "
                                  f"{len(hist['members'])} seeds")
            roc_plot({k: (np.concatenate(p), np.concatenate(n)) for k, (p, n) in roc.items()}, out / "real_roc.png",
                     title="members vs non-members, no-DP runs\n(NID score minus its GIDs' mean)")
        return summary

    for s in range(cfg.seeds):
        seed = cfg.seed + s
        members, non_members = split_records(records, seed)
        ov = overlap(records, members, non_members)
        overlaps.append(ov)
        texts = [records[i]["text"] for i in members]
        spans = [tuple(records[i]["span"]) for i in members]
        for dp in (False, True):
            model = copy.deepcopy(base)
            lcfg = LoRAConfig(steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, rank=cfg.rank,
                              alpha=2 * cfg.rank, max_tokens=128, top_layers=cfg.top_layers, seed=seed,
                              dp_epsilon=cfg.dp_epsilon if dp else None, dp_delta=cfg.dp_delta,
                              max_grad_norm=cfg.max_grad_norm)
            tag = f"seed{seed}_{'dp' if dp else 'plain'}"
            res = finetune_lora(texts, adapters / tag, lcfg, spans=spans, model=model, tokenizer=tok)
            t0 = time.perf_counter()
            f = _with_ref(_features(HFScorer(model, tok, tag), sets, cfg), fb)
            t_score = time.perf_counter() - t0
            del model
            saved[tag] = f
            saved[f"{tag}_members"] = np.array(members)
            eps_sub = 2 * res.epsilon if dp else math.nan
            delta_sub = (1 + math.exp(res.epsilon)) * cfg.dp_delta if dp else 0.0
            ev = _evaluate(f, members, non_members, cfg, delta=delta_sub)
            row = {"run": "DP-SGD" if dp else "no DP", "seed": seed, "dp": dp, "members": len(members),
                   "non_members": len(non_members), "candidates": cfg.gids + 1, "steps": res.steps,
                   "final_loss": res.final_loss, "eps_accountant": res.epsilon if dp else math.nan,
                   "eps_substitution": eps_sub, "delta_substitution": delta_sub,
                   "noise_multiplier": res.noise_multiplier if dp else math.nan,
                   "max_grad_norm": cfg.max_grad_norm if dp else math.nan,
                   "sample_rate": res.sample_rate if dp else math.nan, **ev,
                   "bound_below_accountant": bool(ev["eps_lower_bound"] <= eps_sub) if dp else "",
                   "overlap": ov["shared_nids"] + ov["non_member_nids_in_training_texts"],
                   "train_s": round(res.seconds, 1), "score_s": round(t_score, 1)}
            rows.append(row)
            j = FEATURES.index(AUDIT_SCORE)
            if not dp:
                hist["members"].append(f[members, 0, j])
                hist["non-members"].append(f[non_members, 0, j])
                hist["GIDs"].append(f[:, 1:, j].ravel())
                for name in ("ref", "loss", "min_k_pp"):
                    k = FEATURES.index(name)
                    pos, neg = roc.setdefault(name, ([], []))
                    pos.append(_calibrated(f[members], k))
                    neg.append(_calibrated(f[non_members], k))
            dp_txt = (f"; accountant eps {res.epsilon:.2f} (add/remove) -> {eps_sub:.2f} (substitution, delta "
                      f"{delta_sub:.2g}), noise {res.noise_multiplier:.2f}, clip {cfg.max_grad_norm}, "
                      f"rate {res.sample_rate:.3f}") if dp else ""
            log(f"seed {seed} {row['run']}: loss {res.final_loss:.3f}, train {res.seconds:.0f} s, score {t_score:.0f} s"
                f"{dp_txt}; {ev['top1']}/{ev['audited']} first, eps lower bound {ev['eps_lower_bound']:.3f} "
                f"(loss {ev['eps_lower_bound_loss']:.3f}); DI p members {ev.get('di_p_members', math.nan):.3g}, "
                f"non-members {ev.get('di_p_non_members', math.nan):.3g}; AUC ref {ev['auc_ref']:.3f}")
        summary = write_all()

    summary = write_all()
    import shutil

    shutil.rmtree(adapters, ignore_errors=True)
    log(f"wrote {out} in {summary['seconds']:.0f} s")
    return summary


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else (f"{v:.3g}" if abs(v) < 1e-2 and v != 0 else f"{v:.3f}")
    return str(v)


def markdown_table(rows: list[dict], summary: dict) -> str:
    cols = ["run", "seed", "eps_accountant", "eps_substitution", "noise_multiplier", "max_grad_norm", "sample_rate",
            "top1", "audited", "eps_lower_bound", "eps_lower_bound_loss", "bound_below_accountant", "di_p_members",
            "di_p_non_members", "auc_ref", "auc_loss", "auc_min_k_pp", "auc_nid_vs_gid", "overlap", "train_s",
            "score_s"]
    corpora = ", ".join(f"{k} {v}" for k, v in summary["corpora"].items())
    lines = [
        f"Gemma 3 270M + LoRA on {summary['records']} real NID records ({corpora}); "
        f"{rows[0]['candidates']} candidates per NID; audit score '{summary['audit_score']}', alpha "
        f"{summary['config']['alpha']}; the audit's ceiling with these sizes (every member first): eps "
        f"{summary['audit_ceiling_eps']:.3f}; seeds {summary['seeds_done']} of {summary['config']['seeds']}; run time "
        f"{summary['seconds']:.0f} s.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"
