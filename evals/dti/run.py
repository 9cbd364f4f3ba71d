"""DTI benchmarks: AUROC/AUPRC per data set and split against a gradient-boosting baseline and published
figures; ablations; screening speed against a per-pair loop.

    python -m evals.dti --quick                       # seconds, bundled samples only
    python -m evals.dti --sets yamanishi_08 --splits warm target_cold --seeds 0 1 --folds-used 2
    python -m evals.dti --train T.csv [--val V.csv] --test S.csv [S2.csv ...] --seeds 3 --json OUT.json
    python -m evals.dti --screen 100000               # screening benchmark only
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evals.dti.methods import GB_NEIGHBOURS, MODEL, NETWORKS, auroc_auprc, gb_baseline, gb_neighbour_baseline

# GRAM-DTI's reported AUROC / AUPR, DTIAM's in brackets where given (from GRAM-DTI's tables).
PUBLISHED = {
    ("yamanishi_08", "warm"): {"GRAM-DTI": (0.977, 0.904), "DTIAM": (0.967, 0.901)},
    ("yamanishi_08", "target_cold"): {"GRAM-DTI": (0.955, 0.849), "DTIAM": (0.941, 0.844)},
    ("hetionet", "drug_cold"): {"GRAM-DTI": (0.855, 0.529)},
    ("activation", "target_cold"): {"GRAM-DTI": (0.834, 0.450)},
    ("inhibition", "drug_cold"): {"GRAM-DTI": (0.940, 0.756)},
    ("inhibition", "warm"): {"GRAM-DTI": (0.949, 0.785), "DTIAM": (0.954, 0.845)},
}
ABLATIONS = {
    "no_volume_loss": {"gram_weight": 0.0, "pretrain_epochs": 0},
    "mean_fusion": {"fusion": "mean"},
    "no_modality_dropout": {"modality_dropout": "none"},
    "uniform_modality_dropout": {"modality_dropout": "uniform"},
    "one_modality_per_side": {"modalities": ("drug_ecfp", "protein_composition")},
    "no_neighbourhood": {"neighbours": False},
    "no_cold_simulation": {"cold_simulation": 0.0},
    "no_neighbour_head": {"neighbour_head": False},
    "single_network": {"members": 1},
    "no_boosted_member": {"boost": False},
}


def paired_bootstrap_delta(
    y: np.ndarray, p1: np.ndarray, p2: np.ndarray, n: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """AUROC(p1) - AUROC(p2) on the same test pairs, with a 95% percentile interval over `n` paired
    bootstrap resamples of the pairs (resamples with one class only are skipped)."""
    from sklearn.metrics import roc_auc_score

    delta = float(roc_auc_score(y, p1) - roc_auc_score(y, p2))
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n):
        i = rng.integers(0, len(y), len(y))
        if 0 < y[i].sum() < len(i):
            draws.append(roc_auc_score(y[i], p1[i]) - roc_auc_score(y[i], p2[i]))
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return delta, float(lo), float(hi)


def _train_eval(tables, di, pi, y, tr, te, cfg) -> tuple[float, float, float, np.ndarray, np.ndarray | None]:
    """AUROC, AUPRC, seconds and probabilities of the model, and the networks' own probabilities when the
    model blends in a boosted member (None otherwise)."""
    from tools.dti.train import Pairs, blend, fit, predict_parts

    t = time.time()
    model, _ = fit(tables, Pairs(di[tr], pi[tr], y[tr]), cfg)
    pn, pb = predict_parts(model, tables, di[te], pi[te], threads=cfg.threads)
    p = blend(model, pn, pb)
    return (*auroc_auprc(y[te], p), time.time() - t, p, pn if pb is not None else None)


def config_overrides(items: Sequence[str]) -> dict:
    """TrainConfig fields from FIELD=VALUE strings, converted to each field's type."""
    import dataclasses

    from tools.dti.train import TrainConfig

    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    out: dict = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in fields:
            raise SystemExit(f"--config takes FIELD=VALUE with FIELD one of {', '.join(fields)}; got {item!r}")
        default = getattr(TrainConfig(), name)
        if isinstance(default, bool):
            out[name] = value.lower() in ("1", "true", "yes")
        elif isinstance(default, tuple):
            out[name] = tuple(v for v in value.split(",") if v)
        else:
            out[name] = type(default)(value)
    return out


def _log(msg: str) -> None:
    print(msg, flush=True)


COLD_SIDES = {"drug_cold": ("drug",), "target_cold": ("target",), "both_cold": ("drug", "target")}
# the shift each split's model is configured for (`TrainConfig.for_shift`); a split not named takes the defaults
SPLIT_SHIFT = {"warm": "pair", "drug_cold": "drug", "target_cold": "target"}


def unseen_test(di: np.ndarray, pi: np.ndarray, tr: np.ndarray, te: np.ndarray, split: str) -> tuple[np.ndarray, dict]:
    """The test indices whose pair is not a training pair and, on a cold split, whose drug / target is
    not a training drug / target, by canonical SMILES and cleaned sequence (`di`, `pi` index them).

    DTIAM's folds are drawn over drug and target ids, and several ids name one structure (Yamanishi 08
    has 791 drug ids for 745 canonical structures), so an id-level split leaks without this."""
    from evals.dti.protocol import shared_pair_mask

    shared = shared_pair_mask(di, pi, tr, te)
    seen_d = np.isin(di[te], di[tr]) if "drug" in COLD_SIDES.get(split, ()) else np.zeros(len(te), bool)
    seen_t = np.isin(pi[te], pi[tr]) if "target" in COLD_SIDES.get(split, ()) else np.zeros(len(te), bool)
    drop = shared | seen_d | seen_t
    return te[~drop], {
        "removed": int(drop.sum()),
        "shared_pairs": int(shared.sum()),
        "seen_drug": int(seen_d.sum()),
        "seen_target": int(seen_t.sum()),
    }


def evaluate(
    name: str,
    smiles,
    seqs,
    drug_ids,
    target_ids,
    y,
    split_iter,
    seeds: Sequence[int],
    cfg_kwargs: dict,
    ablations: Sequence[str],
    rows: list[dict],
    resample=None,
    ablation_seeds: Sequence[int] = (0,),
    source: dict | None = None,
) -> None:
    """Train/test the model, the GB baseline and ablations on each fold; append one row per result.

    Test pairs that are not unseen in the sense of the split (`unseen_test`) are left out and counted.
    """
    from tools.dti.provenance import pairs_sha256
    from tools.dti.train import TrainConfig, build_tables

    for seed in seeds:
        if resample is not None:
            smiles, seqs, _, _, y, split_iter = resample(seed)
        tables, di, pi, _ = build_tables(smiles, seqs)
        ok = di >= 0
        for split, fold, tr, te in split_iter():
            tr, te = tr[ok[tr]], te[ok[te]]
            te, leak = unseen_test(di, pi, tr, te, split)
            if leak["removed"]:
                _log(f"{name} {split} seed {seed} fold {fold}: {leak['removed']} test pairs left out ({leak})")
            if len(te) == 0 or len(np.unique(y[te])) < 2:
                continue
            shift = SPLIT_SHIFT.get(split)
            cfg = TrainConfig.for_shift(shift, seed=seed, **cfg_kwargs) if shift else TrainConfig(seed=seed,
                                                                                                   **cfg_kwargs)
            base = {
                "dataset": name,
                "split": split,
                "seed": seed,
                "fold": fold,
                "n_train": len(tr),
                "n_test": len(te),
                "train_pairs_sha256": pairs_sha256(
                    [(tables.smiles[di[i]], tables.sequences[pi[i]]) for i in tr], y[tr]
                )[:16],
                "removed_shared_pairs": leak["shared_pairs"],
                "removed_seen_drugs": leak["seen_drug"],
                "removed_seen_targets": leak["seen_target"],
                "overlap_pairs": 0,
                "overlap_drugs": len(set(di[te].tolist()) & set(di[tr].tolist())),
                "overlap_targets": len(set(pi[te].tolist()) & set(pi[tr].tolist())),
            } | (source or {})
            au, ap, secs, pm, pn = _train_eval(tables, di, pi, y, tr, te, cfg)
            model_row = base | {"method": MODEL, "auroc": au, "auprc": ap, "seconds": secs}
            rows.append(model_row)
            _log(f"{name} {split} seed {seed} fold {fold}: model AUROC {au:.4f} AUPRC {ap:.4f} ({secs:.0f}s)")
            if pn is not None:
                au, ap = auroc_auprc(y[te], pn)
                rows.append(base | {"method": NETWORKS, "auroc": au, "auprc": ap, "seconds": secs})
                _log(f"{name} {split} seed {seed} fold {fold}: networks only AUROC {au:.4f} AUPRC {ap:.4f}")
            t = time.time()
            pg = gb_baseline(tables, di, pi, y, tr, te, seed, cfg.threads)
            au, ap = auroc_auprc(y[te], pg)
            delta, lo, hi = paired_bootstrap_delta(y[te], pm, pg, seed=seed)
            model_row |= {"delta_auroc_vs_gb": delta, "delta_ci_low": lo, "delta_ci_high": hi}
            rows.append(
                base | {"method": "GB baseline (ECFP4 + AAC)", "auroc": au, "auprc": ap, "seconds": time.time() - t}
            )
            _log(f"{name} {split} seed {seed} fold {fold}: GB    AUROC {au:.4f} AUPRC {ap:.4f}")
            t = time.time()
            p_nbr = gb_neighbour_baseline(tables, di, pi, y, tr, te, seed, cfg.threads, cfg.target_kmer)
            au, ap = auroc_auprc(y[te], p_nbr)
            rows.append(base | {"method": GB_NEIGHBOURS, "auroc": au, "auprc": ap, "seconds": time.time() - t})
            _log(f"{name} {split} seed {seed} fold {fold}: GB+nbr AUROC {au:.4f} AUPRC {ap:.4f}")
            for ab in ablations if seed in ablation_seeds else ():
                c = TrainConfig(**(cfg.to_dict() | ABLATIONS[ab]))
                c.modalities = tuple(c.modalities)
                au, ap, secs, _, _ = _train_eval(tables, di, pi, y, tr, te, c)
                rows.append(base | {"method": f"ablation: {ab}", "auroc": au, "auprc": ap, "seconds": secs})
                _log(f"{name} {split} seed {seed} fold {fold}: {ab} AUROC {au:.4f} AUPRC {ap:.4f}")


def run_dtiam(
    set_name,
    splits,
    seeds,
    folds_used,
    cfg_kwargs,
    ablations,
    ablation_splits,
    rows,
    root,
    ablation_seeds=(0,),
    only_folds: Sequence[int] | None = None,
) -> None:
    from evals.dti.data import folds, load_dtiam

    for split in splits:

        def resample(seed, split=split):
            ps = load_dtiam(set_name, seed, root=root)
            bad = [f for f in only_folds or () if not 0 <= f < ps.n_folds]
            if bad:
                raise SystemExit(f"--folds {bad}: {set_name} has folds 0 to {ps.n_folds - 1}")

            def it():
                for k, (tr, te) in enumerate(folds(ps, split, ps.n_folds)):
                    if only_folds is not None:
                        if k in only_folds:
                            yield split, k, tr, te
                        continue
                    if k >= folds_used:
                        break
                    yield split, k, tr, te

            return ps.smiles, ps.sequences, ps.drug_ids, ps.target_ids, ps.y, it

        from evals.dti.data import DTIAM_SETS
        from tools.dti.provenance import file_sha256

        positives = root / DTIAM_SETS[set_name][0] / "dti.csv"
        source = {
            "train_file": f"{positives} (a fold of it, with sampled negatives)",
            "train_sha256": file_sha256(positives)[:16],
        }
        evaluate(
            set_name,
            None,
            None,
            None,
            None,
            None,
            None,
            seeds,
            cfg_kwargs,
            ablations if split in ablation_splits else (),
            rows,
            resample=resample,
            ablation_seeds=ablation_seeds,
            source=source,
        )


def run_train_test(
    name, split, train_csv: Path, test_csv: Path, seeds, cfg_kwargs, ablations, rows, ablation_seeds=(0,)
) -> None:
    from evals.dti.data import load_csv_pairs

    a = load_csv_pairs(train_csv)
    b = load_csv_pairs(test_csv)
    smiles = a.smiles + b.smiles
    seqs = a.sequences + b.sequences
    y = np.concatenate([a.y, b.y])
    tr = np.arange(len(a.y))
    te = np.arange(len(a.y), len(y))

    def it():
        yield split, 0, tr, te

    from tools.dti.provenance import file_sha256

    source = {
        "train_file": str(train_csv),
        "train_sha256": file_sha256(train_csv)[:16],
        "test_file": str(test_csv),
        "test_sha256": file_sha256(test_csv)[:16],
    }
    evaluate(
        name,
        smiles,
        seqs,
        None,
        None,
        y,
        it,
        seeds,
        cfg_kwargs,
        ablations,
        rows,
        ablation_seeds=ablation_seeds,
        source=source,
    )


# ------------------------------------------------------------------ screening benchmark


def make_library(n: int, seed_smiles: Sequence[str], valid_only: bool = False) -> list[str]:
    """`n` distinct SMILES strings made by prefixing and suffixing real SMILES with small groups.

    String edits can break valences; with `valid_only` only strings RDKit sanitizes are kept (checked
    here, outside any timing), otherwise invalid ones stay in, as in real libraries, to be reported.
    """
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    prefixes = [
        "",
        "C",
        "CC",
        "OC",
        "NC",
        "FC",
        "ClC",
        "CCC",
        "C(C)",
        "OCC",
        "NCC",
        "C(F)(F)(F)C",
        "CO",
        "CN",
        "C=CC",
        "C#CC",
        "CSC",
        "N#CC",
        "OC(=O)C",
        "c1ccccc1C",
    ]
    suffixes = ["", "C", "CC", "O", "N", "F", "Cl", "OC", "C(=O)O", "CCN"]
    out: list[str] = []
    seen: set[str] = set()
    for suf in suffixes:
        for pre in prefixes:
            for s in seed_smiles:
                cand = pre + s + suf
                if cand in seen:
                    continue
                seen.add(cand)
                if valid_only and Chem.MolFromSmiles(cand) is None:
                    continue
                out.append(cand)
                if len(out) == n:
                    return out
    return out


def screen_benchmark(n: int, loop_sample: int = 200) -> dict:
    from tools.dti.files import read_molecules
    from tools.dti.scoring import PairIn, dti_score, dti_screen
    from tools.paths import sample_path

    lib = [r.smiles for r in read_molecules(sample_path("dti/screening_library.smi"))]
    generated = make_library(n + loop_sample, lib, valid_only=True)
    smiles, fresh = generated[:n], generated[n:]
    from tools.paths import output_path

    path = output_path(f"bench_library_{n}", ".smi")  # inside the output folder, which tools may read
    path.write_text("\n".join(f"{s} m{i}" for i, s in enumerate(smiles)) + "\n")
    import csv

    with open(sample_path("dti/targets.csv")) as fh:
        target = next(csv.DictReader(fh))["sequence"]
    # per-pair loop on a sample of fresh molecules (not in the feature cache), extrapolated
    t = time.time()
    for s in fresh:
        dti_score(pairs=[PairIn(smiles=s, protein=target)])
    loop_per_mol = (time.time() - t) / max(1, len(fresh))
    t = time.time()
    res = dti_screen(target=target, library=str(path), top_k=100, write_sdf=True)
    screen_s = time.time() - t
    est_loop = loop_per_mol * len(smiles)
    return {
        "molecules": len(smiles),
        "scored": res.scored,
        "rejected": res.rejected,
        "screen_seconds": round(screen_s, 2),
        "molecules_per_second": round(len(smiles) / screen_s, 1),
        "per_pair_loop_seconds_per_molecule": round(loop_per_mol, 5),
        "per_pair_loop_estimated_seconds": round(est_loop, 1),
        "speedup_vs_per_pair_loop": round(est_loop / screen_s, 2),
        "threads": int(os.environ.get("RESEARCH_MCP_DTI__THREADS", "2")),
        "top_hit": res.top[0].model_dump(),
    }


# ------------------------------------------------------------------ tables and plot


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["split"], r["method"]), []).append(r)
    out = []
    for (ds, sp, m), rs in groups.items():
        au = np.array([r["auroc"] for r in rs])
        ap = np.array([r["auprc"] for r in rs])
        out.append(
            {
                "dataset": ds,
                "split": sp,
                "method": m,
                "runs": len(rs),
                "auroc_mean": float(np.nanmean(au)),
                "auroc_sd": float(np.nanstd(au)),
                "auprc_mean": float(np.nanmean(ap)),
                "auprc_sd": float(np.nanstd(ap)),
            }
        )
    for (ds, sp), pub in PUBLISHED.items():
        if any(o["dataset"] == ds and o["split"] == sp for o in out):
            for m, (au, ap) in pub.items():
                out.append(
                    {
                        "dataset": ds,
                        "split": sp,
                        "method": f"{m} (published)",
                        "runs": 0,
                        "auroc_mean": au,
                        "auroc_sd": float("nan"),
                        "auprc_mean": ap,
                        "auprc_sd": float("nan"),
                    }
                )
    out.sort(key=lambda o: (o["dataset"], o["split"], o["method"]))
    return out


def write_outputs(summary: list[dict], rows: list[dict], out: Path, bench: dict | None) -> dict[str, str]:
    import csv

    paths = {}
    with open(out / "dti_results_runs.csv", "w", newline="") as fh:
        if rows:
            w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
            w.writeheader()
            w.writerows(rows)
    paths["runs_csv"] = str(out / "dti_results_runs.csv")
    with open(out / "dti_results.csv", "w", newline="") as fh:
        w = csv.DictWriter(
            fh, fieldnames=["dataset", "split", "method", "runs", "auroc_mean", "auroc_sd", "auprc_mean", "auprc_sd"]
        )
        w.writeheader()
        w.writerows(summary)
    paths["csv"] = str(out / "dti_results.csv")
    lines = ["| data set | split | method | runs | AUROC | AUPRC |", "|---|---|---|---|---|---|"]
    for s in summary:
        sd = "" if np.isnan(s["auroc_sd"]) else f" ± {s['auroc_sd']:.3f}"
        sd2 = "" if np.isnan(s["auprc_sd"]) else f" ± {s['auprc_sd']:.3f}"
        lines.append(
            f"| {s['dataset']} | {s['split']} | {s['method']} | {s['runs']} | {s['auroc_mean']:.3f}{sd} "
            f"| {s['auprc_mean']:.3f}{sd2} |"
        )
    deltas = [r for r in rows if r.get("method") == MODEL and str(r.get("delta_auroc_vs_gb", "")) != ""]
    if deltas:
        lines += [
            "",
            "Model minus GB baseline, AUROC, per run (95% interval over 1000 paired bootstrap resamples of "
            "the test pairs):",
            "",
            "| data set | split | seed | fold | test pairs | ΔAUROC | 95% interval |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in deltas:
            d, lo, hi = (float(r[k]) for k in ("delta_auroc_vs_gb", "delta_ci_low", "delta_ci_high"))
            lines.append(
                f"| {r['dataset']} | {r['split']} | {r['seed']} | {r['fold']} | {r['n_test']} | {d:+.3f} "
                f"| [{lo:+.3f}, {hi:+.3f}] |"
            )
    trained = [r for r in rows if r.get("method") == MODEL and r.get("train_sha256")]
    if trained:
        lines += [
            "",
            "Training and test pairs of each run (sha256: the training file's, first 16 hex digits; test pairs "
            "are counted after leaving out those shared with training and, on cold splits, those whose drug "
            "or target is a training one by canonical SMILES / sequence; shared drugs and targets are what "
            "remains):",
            "",
            "| data set | split | seed | fold | training file | sha256 | training pairs | test pairs | left out "
            "(shared pair / seen drug / seen target) | shared drugs | shared targets |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in trained:
            left = "/".join(
                str(r.get(k, "")) for k in ("removed_shared_pairs", "removed_seen_drugs", "removed_seen_targets")
            )
            if r.get("overlap_policy"):
                left = f"{r.get('overlap_pairs', 0)} shared pairs, policy {r['overlap_policy']}"
            lines.append(
                f"| {r['dataset']} | {r['split']} | {r['seed']} | {r['fold']} | {Path(str(r['train_file'])).name} "
                f"| {str(r['train_sha256'])[:16]} | {r['n_train']} | {r['n_test']} | {left} "
                f"| {r.get('overlap_drugs', '')} | {r.get('overlap_targets', '')} |"
            )
    if bench:
        lines += ["", "Screening benchmark:", "", "```", json.dumps(bench, indent=1), "```"]
    (out / "dti_results.md").write_text("\n".join(lines) + "\n")
    paths["markdown"] = str(out / "dti_results.md")
    if summary:
        paths["png"] = str(plot(summary, out / "dti_results.png"))
    return paths


def plot(summary: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = sorted({(s["dataset"], s["split"]) for s in summary})
    methods = sorted({s["method"] for s in summary})
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(cases)), 4.5))
    width = 0.8 / max(1, len(methods))
    for k, m in enumerate(methods):
        xs, ys, es = [], [], []
        for i, c in enumerate(cases):
            hit = [s for s in summary if (s["dataset"], s["split"]) == c and s["method"] == m]
            if hit:
                xs.append(i + k * width)
                ys.append(hit[0]["auroc_mean"])
                es.append(0 if np.isnan(hit[0]["auroc_sd"]) else hit[0]["auroc_sd"])
        ax.bar(xs, ys, width, yerr=es, label=m, capsize=2, color=plt.cm.tab20(k % 20))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
    ax.set_xticklabels([f"{d}\n{s}" for d, s in cases], fontsize=8)
    ax.set_ylim(0.5, 1.0)
    ax.set_ylabel("AUROC")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Drug-target interaction: AUROC (mean ± sd over seeds/folds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ entry point


def main(argv: list[str] | None = None) -> int:
    from evals.dti.data import DRUGBAN_SETS, DTIAM_SETS, SPLITS
    from evals.shared_data import shared_data_path

    ap = argparse.ArgumentParser(
        prog="python -m evals.dti", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="Seconds: bundled samples, one seed, small screen.")
    ap.add_argument(
        "--sets",
        nargs="*",
        default=["yamanishi_08", "human_random", "human_cold"],
        help=f"Of {sorted(DTIAM_SETS) + sorted(DRUGBAN_SETS)}.",
    )
    ap.add_argument("--splits", nargs="*", default=list(SPLITS), help="DTIAM splits to run.")
    ap.add_argument(
        "--seeds",
        nargs="*",
        type=int,
        default=[0, 1, 2, 3, 4],
        help="One value N: seeds 0..N-1; several values: those seeds.",
    )
    ap.add_argument("--folds-used", type=int, default=10, help="Evaluate only the first N folds of each K-fold.")
    ap.add_argument(
        "--folds",
        nargs="+",
        type=int,
        default=None,
        help="Evaluate these folds (0-based) of each K-fold instead, e.g. to share folds out between runs; "
        "merge their dti_results_runs.csv with --from-runs.",
    )
    ap.add_argument("--epochs", type=int, default=None, help="Fine-tuning epochs (default: the shipped model's).")
    ap.add_argument("--ablations", nargs="*", default=[], choices=sorted(ABLATIONS))
    ap.add_argument("--ablation-splits", nargs="*", default=["warm", "target_cold"])
    ap.add_argument("--ablation-seeds", nargs="*", type=int, default=[0], help="Seeds on which ablations run.")
    ap.add_argument("--pretrain-epochs", type=int, default=None, help="GRAM pretraining epochs (default: shipped).")
    ap.add_argument("--test", type=Path, nargs="+", help="CSV(s) with SMILES, Protein, Y to evaluate on.")
    ap.add_argument("--train", type=Path, help="Training CSV for --test (default: train.csv beside the first).")
    ap.add_argument("--val", type=Path, help="Validation CSV for --test: selects the model's blend weight.")
    ap.add_argument("--json", type=Path, help="With --test: write the report (files, sha256, overlap, metrics) here.")
    ap.add_argument(
        "--shift",
        choices=["auto", "drug", "target", "pair", "none"],
        default="auto",
        help="With --test: the shift the model is configured for (unseen drugs, targets or pairs); auto reads it "
        "from the test and validation rows' drugs and targets against the training file; none: plain defaults.",
    )
    ap.add_argument(
        "--allow-overlap",
        action="store_true",
        help="Evaluate a test set that shares pairs with the training set anyway (flagged in every output).",
    )
    ap.add_argument(
        "--drop-overlap", action="store_true", help="Leave the test pairs shared with the training set out."
    )
    ap.add_argument("--screen", type=int, default=0, help="Screening benchmark with N molecules (0 = skip).")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", type=Path, default=shared_data_path("dti"), help="Folder with dtiam/ and drugban/.")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="FIELD=VALUE",
        help="TrainConfig overrides for the model runs, e.g. cold_simulation=0.5 fusion=mean.",
    )
    ap.add_argument(
        "--from-runs",
        nargs="*",
        type=Path,
        default=[],
        help="Only re-summarise per-run CSVs written by earlier runs (dti_results_runs.csv).",
    )
    args = ap.parse_args(argv)
    if len(args.seeds) == 1:
        if args.seeds[0] < 1:
            ap.error("--seeds N needs N >= 1 (or give two or more seeds)")
        args.seeds = list(range(args.seeds[0]))

    import torch

    torch.set_num_threads(args.threads)
    from tools.paths import output_dir

    out = args.out or output_dir() / "evals" / "dti"
    out.mkdir(parents=True, exist_ok=True)
    cfg_kwargs: dict = {"threads": args.threads}
    if args.epochs:
        cfg_kwargs["epochs"] = args.epochs
    if args.pretrain_epochs is not None:
        cfg_kwargs["pretrain_epochs"] = args.pretrain_epochs
    cfg_kwargs |= config_overrides(args.config)
    rows: list[dict] = []
    bench = None
    if args.from_runs:
        import csv

        for f in args.from_runs:
            with open(f) as fh:
                for r in csv.DictReader(fh):
                    rows.append(r | {k: float(r[k]) for k in ("auroc", "auprc", "seconds")})
            bj = f.parent / "dti_benchmark.json"
            if bj.exists():
                bench = json.loads(bj.read_text())
    elif args.quick:
        from tools.paths import sample_path

        cfg_kwargs |= {"epochs": 4, "pretrain_epochs": 1, "batch_size": 64}
        run_train_test(
            "bindingdb_sample",
            "given",
            sample_path("dti/bindingdb_pairs_train.csv"),
            sample_path("dti/bindingdb_pairs_test.csv"),
            [0],
            cfg_kwargs,
            args.ablations or ["no_volume_loss"],
            rows,
        )
        bench = screen_benchmark(args.screen or 3000, loop_sample=20)
    elif args.test:
        from evals.dti.protocol import run_protocol

        train = args.train or (args.test[0].parent / "train.csv")
        if not train.exists():
            ap.error(f"--train is needed ({train} does not exist)")
        _, got = run_protocol(
            train,
            args.test,
            val=args.val,
            seeds=args.seeds,
            cfg_kwargs=cfg_kwargs,
            allow_overlap=args.allow_overlap,
            drop_overlap=args.drop_overlap,
            json_out=args.json,
            shift=args.shift,
        )
        rows += got
    else:
        for s in args.sets:
            if s in DTIAM_SETS:
                if not (args.data / DTIAM_SETS[s][0]).exists():
                    _log(f"skipping {s}: {args.data / DTIAM_SETS[s][0]} not found")
                    continue
                run_dtiam(
                    s,
                    args.splits,
                    args.seeds,
                    args.folds_used,
                    cfg_kwargs,
                    args.ablations,
                    args.ablation_splits,
                    rows,
                    args.data,
                    ablation_seeds=args.ablation_seeds,
                    only_folds=args.folds,
                )
            elif s in DRUGBAN_SETS:
                tr, te = (args.data / p for p in DRUGBAN_SETS[s])
                if not tr.exists():
                    _log(f"skipping {s}: {tr} not found")
                    continue
                split = "random" if "random" in s else "both_cold"
                run_train_test(
                    s, split, tr, te, args.seeds, cfg_kwargs, args.ablations, rows, ablation_seeds=args.ablation_seeds
                )
            else:
                ap.error(f"unknown set {s!r}")
    if args.screen and not args.quick:
        bench = screen_benchmark(args.screen)
    if bench:
        (out / "dti_benchmark.json").write_text(json.dumps(bench, indent=1))
    summary = summarise(rows)
    paths = write_outputs(summary, rows, out, bench)
    print((out / "dti_results.md").read_text())
    print(json.dumps(paths, indent=1))
    return 0
