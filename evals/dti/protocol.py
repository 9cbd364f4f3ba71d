"""A train / validation / test protocol that cannot leak: files named by sha256, overlap checked first.

    python -m evals.dti --train T.csv [--val V.csv] --test S.csv [S2.csv ...] --seeds 3 --json OUT.json

trains the model on T (the blend weight of its boosted member chosen on V, or without V by a grouped
cross-validation inside T), and prints AUROC and AUPRC on each S (mean ± sd over the seeds) for the model
and the GB baseline side by side. Before any training, each test (and the validation) file is compared with
T by canonical SMILES + cleaned sequence: a test file sharing pairs with T is refused, unless
`--allow-overlap` (evaluated as is, flagged in every output) or `--drop-overlap` (the shared pairs are left
out, and counted).

The model is configured for the shift it will meet (`--shift`, default `auto`: from the share of evaluated
rows whose drug, or target, is not in T; structures only, never labels): unseen drugs, unseen targets or
unseen pairs of known ones (`TrainConfig.for_shift`, with its blend weight chosen by a cross-validation
grouped the same way when no V is given). `--shift none` keeps the plain defaults; `--config` wins over both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

OVERLAP_BANNER = "!" * 100
SHIFTS = ("auto", "drug", "target", "pair", "none")
UNSEEN_SHARE = 0.5  # rows whose drug (target) is not a training one, above which `auto` takes that shift
SHIFT_BLEND_FOLDS = 3


class OverlapRefused(SystemExit):
    """A test set shares pairs with the training set and neither --allow-overlap nor --drop-overlap was given."""


def short(path: Path) -> str:
    """A file named by its last three path parts (human/cold/val.csv), enough to tell DrugBAN's files apart."""
    return "/".join(Path(path).parts[-3:])


def _log(msg: str) -> None:
    print(msg, flush=True)


def _labelled(path: Path) -> tuple[list[str], list[str], np.ndarray, int]:
    from tools.dti.files import read_pairs

    recs, pcol, ycol, _ = read_pairs(path, require_label=True)
    if ycol is None:
        raise SystemExit(f"{path} has no label column (Y, label or interaction).")
    y = np.array([float(r.fields.get(ycol) or "nan") for r in recs])
    return [r.smiles for r in recs], [r.fields.get(pcol) or "" for r in recs], y, len(recs)


def keys_of(tables: Any, di: np.ndarray, pi: np.ndarray, idx: np.ndarray) -> list[tuple[str, str]]:
    """Canonical (SMILES, sequence) keys of table-indexed pairs."""
    return [(tables.smiles[di[i]], tables.sequences[pi[i]]) for i in idx]


def shared_pair_mask(di: np.ndarray, pi: np.ndarray, tr: np.ndarray, te: np.ndarray) -> np.ndarray:
    """For each test index, whether its (drug, target) pair is among the training pairs."""
    seen = set(zip(di[tr].tolist(), pi[tr].tolist(), strict=True))
    return np.array([(int(di[i]), int(pi[i])) in seen for i in te], dtype=bool)


def detect_shift(di: np.ndarray, pi: np.ndarray, tr: np.ndarray, evaluated: np.ndarray) -> tuple[str, dict]:
    """The shift the evaluated rows show against the training rows: `drug` when most of their drugs are not
    training drugs, else `target` when most of their targets are not training targets, else `pair`; with the
    shares it was read from. Only structures are compared (canonical SMILES, cleaned sequence), never labels."""
    unseen_d = float(np.mean(~np.isin(di[evaluated], di[tr]))) if len(evaluated) else 0.0
    unseen_t = float(np.mean(~np.isin(pi[evaluated], pi[tr]))) if len(evaluated) else 0.0
    shift = "drug" if unseen_d > UNSEEN_SHARE else "target" if unseen_t > UNSEEN_SHARE else "pair"
    return shift, {"unseen_drug_rows": round(unseen_d, 4), "unseen_target_rows": round(unseen_t, 4)}


def shift_config(shift: str, cfg_kwargs: dict, has_val: bool) -> dict:
    """TrainConfig fields for `shift` (none: the plain defaults); a blend CV grouped by the shift when there is no
    validation file; `cfg_kwargs` win."""
    if shift == "none":
        return dict(cfg_kwargs)
    from tools.dti.train import TrainConfig

    base = {k: v for k, v in TrainConfig.for_shift(shift).to_dict().items()
            if k in ("blend_group", "boost_members")}
    base["boost_members"] = tuple(base["boost_members"])
    if not has_val:
        base["blend_folds"] = SHIFT_BLEND_FOLDS
    return base | dict(cfg_kwargs)


def run_protocol(
    train: Path,
    tests: Sequence[Path],
    val: Path | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    cfg_kwargs: dict | None = None,
    allow_overlap: bool = False,
    drop_overlap: bool = False,
    json_out: Path | None = None,
    shift: str = "auto",
) -> tuple[dict[str, Any], list[dict]]:
    """Train on `train`, select on `val`, evaluate on each of `tests`; returns the report and per-run rows.

    `shift` (`SHIFTS`): what the model is configured for; `auto` reads it from the validation and test rows."""
    if shift not in SHIFTS:
        raise SystemExit(f"--shift must be one of {', '.join(SHIFTS)}; got {shift!r}")
    from evals.dti.methods import MODEL, NETWORKS, auroc_auprc, gb_baseline
    from tools.dti.provenance import file_record, overlap, overlap_text
    from tools.dti.train import Pairs, TrainConfig, build_tables, fit, predict_parts

    t_start = time.time()
    parts = [("train", train)] + ([("val", val)] if val else []) + [(f"test:{p}", p) for p in tests]
    smiles: list[str] = []
    seqs: list[str] = []
    ys: list[np.ndarray] = []
    spans: dict[str, np.ndarray] = {}
    rows_in: dict[str, int] = {}
    for name, path in parts:
        s, q, y, n = _labelled(path)
        spans[name] = np.arange(len(smiles), len(smiles) + len(s))
        smiles += s
        seqs += q
        ys.append(y)
        rows_in[name] = n
    y = np.concatenate(ys)
    tables, di, pi, errors = build_tables(smiles, seqs)
    ok = (di >= 0) & ~np.isnan(y)

    def usable(name: str) -> np.ndarray:
        idx = spans[name]
        return idx[ok[idx]]

    tr = usable("train")
    report: dict[str, Any] = {
        "protocol": "train on --train, select the blend weight on --val (or by blend_folds inside --train), "
        "evaluate on each --test",
        "config": TrainConfig(**dict(cfg_kwargs or {})).to_dict(),
        "train": file_record(train, rows_in["train"], len(tr)),
        "seeds": list(seeds),
        "overlap_policy": "drop" if drop_overlap else "allow" if allow_overlap else "refuse",
        "tests": [],
    }
    tr_keys = keys_of(tables, di, pi, tr)
    va = None
    if val:
        va = usable("val")
        ov = overlap(tr_keys, keys_of(tables, di, pi, va))
        report["val"] = file_record(val, rows_in["val"], len(va)) | {"overlap_with_train": ov}
        _log("validation: " + overlap_text(ov, short(train), short(val)))
        if ov["shared_pairs"]:
            va = va[~shared_pair_mask(di, pi, tr, va)]
            _log(f"  the {ov['shared_pair_rows']} validation rows of shared pairs are left out of model selection")
    test_sets = []
    refused = []
    for path in tests:
        te = usable(f"test:{path}")
        ov = overlap(tr_keys, keys_of(tables, di, pi, te))
        _log("test: " + overlap_text(ov, short(train), short(path)))
        entry: dict[str, Any] = file_record(path, rows_in[f"test:{path}"], len(te)) | {"overlap_with_train": ov}
        if ov["shared_pairs"]:
            if drop_overlap:
                te = te[~shared_pair_mask(di, pi, tr, te)]
                entry["dropped_shared_rows"] = ov["shared_pair_rows"]
                _log(f"  --drop-overlap: {ov['shared_pair_rows']} rows of shared pairs left out; {len(te)} evaluated")
            elif allow_overlap:
                entry["overlap_allowed"] = True
                _log(OVERLAP_BANNER)
                _log(
                    f"WARNING: {short(path)} shares {ov['shared_pairs']} pairs with the training file; its figures "
                    "reward memory, not prediction (--allow-overlap)."
                )
                _log(OVERLAP_BANNER)
            else:
                refused.append(overlap_text(ov, short(train), short(path)))
        entry["pairs_evaluated"] = len(te)
        test_sets.append((path, te, entry))
    if refused:
        raise OverlapRefused(
            "Refused: a test set shares pairs with the training set, so its figures would measure memory.\n  "
            + "\n  ".join(refused)
            + "\nUse a test file without those pairs, --drop-overlap to leave them out, or --allow-overlap to "
            "evaluate anyway (flagged in every output)."
        )
    report["rejected_rows"] = {name: int(sum(1 for k in spans[name] if k in errors)) for name in spans}
    evaluated = np.concatenate([te for _, te, _ in test_sets] + ([va] if va is not None else []))
    chosen, shares = detect_shift(di, pi, tr, evaluated) if shift == "auto" else (shift, {})
    cfg_kwargs = shift_config(chosen, dict(cfg_kwargs or {}), va is not None and len(va) > 0)
    report["shift"] = {"asked": shift, "used": chosen} | shares
    report["config"] = TrainConfig(**cfg_kwargs).to_dict()
    _log(f"shift: {chosen}" + (f" (auto: {shares['unseen_drug_rows']:.1%} of evaluated rows have a drug and "
                               f"{shares['unseen_target_rows']:.1%} a target not in the training file)"
                               if shift == "auto" else "") + f"; config {_config_line(cfg_kwargs)}")
    rows: list[dict] = []
    per_test: dict[str, dict[str, list]] = {str(p): {} for p in tests}
    for seed in seeds:
        t0 = time.time()
        cfg = TrainConfig(**({"seed": seed} | cfg_kwargs))
        val_pairs = Pairs(di[va], pi[va], y[va]) if va is not None and len(va) else None
        model, hist = fit(tables, Pairs(di[tr], pi[tr], y[tr]), cfg, val=val_pairs)
        train_s = time.time() - t0
        w = float(getattr(model, "boost_weight", 0.0))
        how = "fixed"
        if "validation" in hist or "blend_cv" in hist:
            how = "chosen on --val" if "validation" in hist else f"chosen by a {cfg.blend_group}-grouped CV in --train"
        _log(f"seed {seed}: trained in {train_s:.0f}s, blend weight of the boosted member {w} ({how})")
        if "blend_cv" in hist:
            cv = hist["blend_cv"].get("auroc_by_weight", {})
            _log("  CV AUROC by weight: " + ", ".join(f"{k}: {v:.4f}" for k, v in cv.items()))
        gbs = gb_baseline(tables, di, pi, y, tr, [te for _, te, _ in test_sets], seed, cfg.threads)
        for (path, te, entry), pg in zip(test_sets, gbs, strict=True):
            pn, pb = predict_parts(model, tables, di[te], pi[te], threads=cfg.threads)
            pm = pn if pb is None else (1 - w) * pn + w * pb
            methods = {MODEL: pm, NETWORKS: pn, "GB baseline (ECFP4 + AAC)": pg}
            if pb is not None:
                methods["boosted member only"] = pb
            base = {
                "dataset": short(path).removesuffix(".csv"),
                "split": "given",
                "seed": seed,
                "fold": 0,
                "n_train": len(tr),
                "n_test": len(te),
                "train_file": str(train),
                "train_sha256": report["train"]["sha256"],
                "test_sha256": entry["sha256"],
                "overlap_pairs": entry["overlap_with_train"]["shared_pairs"],
                "overlap_drugs": entry["overlap_with_train"]["shared_drugs"],
                "overlap_targets": entry["overlap_with_train"]["shared_targets"],
                "overlap_policy": report["overlap_policy"],
            }
            for m, p in methods.items():
                au, ap = auroc_auprc(y[te], p)
                rows.append(base | {"method": m, "auroc": au, "auprc": ap, "seconds": train_s})
                per_test[str(path)].setdefault(m, []).append((au, ap))
            _log(
                f"  {short(path)}: model AUROC {rows[-len(methods)]['auroc']:.4f}, GB baseline "
                f"{rows[-len(methods) + 2]['auroc']:.4f} ({len(te)} pairs)"
            )
        rows[-1].setdefault("validation", json.dumps(hist.get("validation", hist.get("blend_cv", {}))))
        report.setdefault("blend_weights", []).append({"seed": seed, "weight": w, "how": how})
    for path, _te, entry in test_sets:
        res = {}
        for m, vals in per_test[str(path)].items():
            a = np.array(vals)
            res[m] = {
                "auroc_mean": float(np.mean(a[:, 0])),
                "auroc_sd": float(np.std(a[:, 0])),
                "auprc_mean": float(np.mean(a[:, 1])),
                "auprc_sd": float(np.std(a[:, 1])),
                "per_seed": [{"auroc": float(x), "auprc": float(z)} for x, z in vals],
            }
        entry["results"] = res
        report["tests"].append(entry)
    report["seconds"] = round(time.time() - t_start, 1)
    _log(format_report(report))
    if json_out:
        from tools.atomic import write_text

        write_text(json_out, json.dumps(report, indent=1) + "\n")
        _log(f"wrote {json_out}")
    return report, rows


def _config_line(cfg_kwargs: dict) -> str:
    shown = {k: v for k, v in cfg_kwargs.items() if k in ("blend_group", "blend_folds", "boost_members")}
    return ", ".join(f"{k}={','.join(v) if isinstance(v, tuple | list) else v}" for k, v in shown.items()) or "defaults"


def format_report(report: dict[str, Any]) -> str:
    """The side-by-side table of a protocol report (markdown)."""
    t = report["train"]
    lines = [
        f"Trained on {t['file']} ({t['pairs']} usable pairs of {t['rows']} rows, sha256 {t['sha256'][:16]}), "
        f"seeds {report['seeds']}"
        + (f"; selected on {report['val']['file']} ({report['val']['pairs']} pairs)" if "val" in report else ""),
        *([f"Configured for the shift: {report['shift']['used']} (asked: {report['shift']['asked']})"]
          if "shift" in report else []),
        "",
        "| test file | pairs | shared pairs / drugs / targets with train | method | AUROC | AUPRC |",
        "|---|---|---|---|---|---|",
    ]
    for e in report["tests"]:
        ov = e["overlap_with_train"]
        flag = (
            " (ALLOWED OVERLAP)"
            if e.get("overlap_allowed")
            else (f" ({e['dropped_shared_rows']} rows dropped)" if e.get("dropped_shared_rows") else "")
        )
        shared = f"{ov['shared_pairs']} / {ov['shared_drugs']} / {ov['shared_targets']}{flag}"
        for m, r in e.get("results", {}).items():
            lines.append(
                f"| {short(Path(e['file']))} | {e['pairs_evaluated']} | {shared} | {m} | "
                f"{r['auroc_mean']:.3f} ± {r['auroc_sd']:.3f} | {r['auprc_mean']:.3f} ± {r['auprc_sd']:.3f} |"
            )
    return "\n".join(lines)
