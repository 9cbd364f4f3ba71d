"""Train the shipped DTI models and write their cards (training files with sha256, overlap, metrics, date).

    python -m evals.dti.ship [--models default human_cold ...] [--threads 1] [--epochs N]

One model per published protocol, trained on that protocol's training file only, and `default`, trained
on the union of every training file:

- human_cold: DrugBAN Human cold train.csv;
- human_random: DrugBAN Human random train.csv;
- biosnap_cluster: DrugBAN BioSNAP cluster target_train.csv;
- default: the three above plus Yamanishi 08 (DTIAM positives, 10 sampled negatives per positive, seed 0).

Each card lists, for every evaluation file here (the DrugBAN val files), the pairs, drugs and targets it
shares with the model's training pairs, and the model's AUROC / AUPRC on the file's pairs that are not
training pairs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

DRUGBAN = "drugban/datasets"
TRAIN_FILES = {
    "human_cold": f"{DRUGBAN}/human/cold/train.csv",
    "human_random": f"{DRUGBAN}/human/random/train.csv",
    "biosnap_cluster": f"{DRUGBAN}/biosnap/cluster/target_train.csv",
}
EVAL_FILES = {
    "human cold val": f"{DRUGBAN}/human/cold/val.csv",
    "human random val": f"{DRUGBAN}/human/random/val.csv",
    "biosnap random val": f"{DRUGBAN}/biosnap/random/val.csv",
    "bindingdb random val": f"{DRUGBAN}/bindingdb/random/val.csv",
}
# the blend weight of each model: a cross-validation inside its training pairs, its folds grouped as the
# protocol's test pairs differ from its training pairs (no evaluation file is read to choose it)
BLEND_FOLDS = 3
BLEND_GROUP = {"human_cold": "drug", "human_random": "pair", "biosnap_cluster": "target", "default": "drug"}
PROTOCOLS = {
    "human_cold": ["human_cold"],
    "human_random": ["human_random"],
    "biosnap_cluster": ["biosnap_cluster"],
    "default": ["human_cold", "human_random", "biosnap_cluster", "yamanishi_08"],
}
SOURCES = {
    "drugban": "DrugBAN (github.com/peizhenbai/DrugBAN @9923f8c, MIT; data from Human (Tsubaki et al.), "
    "BioSNAP (MolTrans, BSD-3), BindingDB)",
    "yamanishi_08": "Yamanishi 08 via DTIAM (github.com/CSUBioGroup/DTIAM @2b72b2d, Apache-2.0; KEGG)",
}


def _csv(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    from evals.dti.data import load_csv_pairs

    ps = load_csv_pairs(path)
    return ps.smiles, ps.sequences, ps.y


def build(name: str, data: Path, threads: int, epochs: int | None, out_dir: Path) -> dict[str, Any]:
    from evals.dti.data import load_dtiam
    from evals.dti.methods import auroc_auprc, gb_baseline
    from evals.dti.protocol import keys_of, shared_pair_mask
    from tools.dti.provenance import file_record, file_sha256, overlap, overlap_text, pairs_sha256
    from tools.dti.registry import SHIPPED, card_path
    from tools.dti.train import Pairs, TrainConfig, build_tables, fit, predict, save_checkpoint

    smiles: list[str] = []
    seqs: list[str] = []
    ys: list[np.ndarray] = []
    spans: dict[str, np.ndarray] = {}
    records: list[dict[str, Any]] = []
    described: list[str] = []

    def add(part: str, s: list[str], q: list[str], y: np.ndarray) -> None:
        spans[part] = np.arange(len(smiles), len(smiles) + len(s))
        smiles.extend(s)
        seqs.extend(q)
        ys.append(y)

    for part in PROTOCOLS[name]:
        if part == "yamanishi_08":
            ps = load_dtiam("yamanishi_08", 0, root=data)
            add(part, ps.smiles, ps.sequences, ps.y)
        else:
            add(part, *_csv(data / TRAIN_FILES[part]))
    for label, rel in EVAL_FILES.items():
        if (data / rel).exists():
            add(f"eval:{label}", *_csv(data / rel))
    y = np.concatenate(ys)
    tables, di, pi, _ = build_tables(smiles, seqs)
    ok = (di >= 0) & ~np.isnan(y)
    train_parts = PROTOCOLS[name]
    tr = np.concatenate([spans[p][ok[spans[p]]] for p in train_parts])
    for part in train_parts:
        idx = spans[part]
        used = idx[ok[idx]]
        if part == "yamanishi_08":
            positives = data / "dtiam/data/dti/yamanishi_08/dti.csv"
            records.append(
                {
                    "file": "dtiam/data/dti/yamanishi_08/dti.csv",
                    "rows": int(y[idx].sum()),
                    "pairs": len(used),
                    "sha256": file_sha256(positives),
                    "negatives": "10 per positive, sampled uniformly from unobserved pairs (numpy seed 0)",
                    "pairs_sha256": pairs_sha256(keys_of(tables, di, pi, used), y[used]),
                }
            )
            described.append(f"{SOURCES['yamanishi_08']}: {len(used)} pairs, all of them (no fold held out)")
        else:
            # paths relative to the data folder (the shared DTI folder's layout), so the card holds on any machine
            records.append(file_record(data / TRAIN_FILES[part], len(idx), len(used)) | {"file": TRAIN_FILES[part]})
            described.append(f"{SOURCES['drugban']} {TRAIN_FILES[part].removeprefix(DRUGBAN + '/')}: {len(used)} pairs")
    overrides = {"epochs": epochs} if epochs else {}
    cfg = TrainConfig.for_shift(BLEND_GROUP[name], threads=threads, blend_folds=BLEND_FOLDS, **overrides)
    t0 = time.time()
    model, hist = fit(
        tables,
        Pairs(di[tr], pi[tr], y[tr]),
        cfg,
        progress=lambda d, t, m: print(f"\r{name}: {int(d)}/{int(t)} {m}" + " " * 10, end="", flush=True),
    )
    print()
    train_seconds = time.time() - t0
    tr_keys = keys_of(tables, di, pi, tr)
    metrics: dict[str, Any] = {}
    warnings: list[str] = []
    evals = {p.removeprefix("eval:"): spans[p][ok[spans[p]]] for p in spans if p.startswith("eval:")}
    kept = {}
    for label, te in evals.items():
        ov = overlap(tr_keys, keys_of(tables, di, pi, te))
        kept[label] = te[~shared_pair_mask(di, pi, tr, te)]
        metrics[label] = {"file": EVAL_FILES[label], "overlap_with_training": ov}
        if ov["shared_pairs"] or ov["shared_drugs"] or ov["shared_targets"]:
            warnings.append(overlap_text(ov, "this model's training pairs", label))
    gbs = gb_baseline(tables, di, pi, y, tr, list(kept.values()), 0, threads)
    for (label, te), pg in zip(kept.items(), gbs, strict=True):
        if len(np.unique(y[te])) < 2:
            continue
        au, apr = auroc_auprc(y[te], predict(model, tables, di[te], pi[te], threads=threads))
        gau, gapr = auroc_auprc(y[te], pg)
        metrics[label] |= {
            "pairs_evaluated": len(te),
            "auroc": round(au, 4),
            "auprc": round(apr, 4),
            "gb_baseline_auroc": round(gau, 4),
            "gb_baseline_auprc": round(gapr, 4),
            "note": "shared pairs left out; shared drugs and targets stay (see overlap_with_training)",
        }
    if "human_random" in train_parts:
        warnings.append(
            "Trained on DrugBAN Human random train, which holds most pairs of Human cold val (see above); "
            "DrugBAN's Human cold test is drawn from the same Human set: evaluate on Human cold files with "
            "'human_cold' only."
        )
    card = {
        "name": name,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "description": (
            f"GRAM-DTI-style multimodal drug-target interaction model: an ensemble of {cfg.members} networks "
            "(drug ECFP4, RDKit-descriptor and SMILES n-gram encoders; protein sequence n-gram and "
            "AAC+dipeptide+CTD encoders; gated fusion; GRAM volume loss and adaptive modality dropout; a "
            "known-interaction neighbourhood modality read from the training pairs, with cold simulation) "
            f"blended (weight {model.boost_weight}) with gradient-boosted members, one per drug view "
            f"({', '.join(model.boost.specs)}; '+nbr': also the neighbourhood features), each with the protein's "
            "amino-acid composition. Trained on CPU."
        ),
        "modalities": list(model.modalities),
        "training_data": described,
        "training_files": records,
        "overlap_warnings": warnings,
        "splits": "Metrics are on the DrugBAN val files here, with the pairs shared with the training pairs "
        "left out; drugs and targets they share are counted in overlap_with_training. Cold-split and "
        "cross-data-set figures are measured by python -m evals.dti.",
        "metrics": metrics,
        "config": cfg.to_dict()
        | {
            "steps": hist["steps"],
            "train_seconds": round(train_seconds, 1),
            "boost_weight": model.boost_weight,
            "boost_weight_chosen_by": f"{BLEND_FOLDS}-fold cross-validation inside the training pairs, grouped by "
            f"{BLEND_GROUP[name]}; no evaluation file was read to choose it",
            "selection": hist.get("blend_cv"),
        },
        "parameters": sum(p.numel() for p in model.parameters()),
        "limitations": [
            f"Learned from {len(tr)} drug-target pairs: scores are rankings, not binding affinities.",
            "Pairs, drugs or targets shared with the training pairs are scored from memory as much as from "
            "structure: check overlap_warnings before reading a figure as a prediction.",
            "Protein features are sequence-only (no structure, no pretrained language model).",
            "Inorganic compounds are scored with less training support than organic molecules.",
        ],
    }
    out = out_dir / SHIPPED[name]
    save_checkpoint(model, out, card)
    from tools.atomic import write_text

    write_text(out_dir / card_path(name).name, json.dumps(card, indent=1) + "\n")
    summary = {k: {m: v.get(m) for m in ("auroc", "gb_baseline_auroc", "pairs_evaluated")} for k, v in metrics.items()}
    print(json.dumps(summary, indent=1))
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB) in {train_seconds:.0f}s of training")
    return card


def main(argv: list[str] | None = None) -> int:
    from evals.shared_data import shared_data_path
    from tools.dti.registry import WEIGHTS_DIR

    ap = argparse.ArgumentParser(prog="python -m evals.dti.ship")
    ap.add_argument("--models", nargs="*", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", type=Path, default=shared_data_path("dti"))
    ap.add_argument("--out-dir", type=Path, default=WEIGHTS_DIR)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    for name in args.models:
        build(name, args.data, args.threads, args.epochs, args.out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
