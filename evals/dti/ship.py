"""Train the model shipped in tools/dti/weights/ and write its card (data, splits, metrics, date).

    python -m evals.dti.ship [--epochs N] [--threads 2]

Training data: Yamanishi 08 (DTIAM, 1:10 sampled negatives, seed 0) minus its warm fold 0, plus the
DrugBAN Human random train file. Held out for the card: Yamanishi warm fold 0 and Human random val.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    from evals.dti.data import DRUGBAN_SETS, SHARED, folds, load_csv_pairs, load_dtiam
    from evals.dti.run import _metrics, gb_baseline
    from tools.dti.registry import WEIGHTS_DIR
    from tools.dti.train import Pairs, TrainConfig, build_tables, fit, predict, save_checkpoint

    ap = argparse.ArgumentParser(prog="python -m evals.dti.ship")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pretrain-epochs", type=int, default=None)
    ap.add_argument("--no-baseline", action="store_true", help="Skip the gradient-boosting comparison.")
    ap.add_argument("--data", type=Path, default=SHARED)
    ap.add_argument("--out", type=Path, default=WEIGHTS_DIR / "gram_dti.pt")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    ys = load_dtiam("yamanishi_08", 0, root=args.data)
    tr_y, te_y = next(folds(ys, "warm", ys.n_folds))
    hr = load_csv_pairs(args.data / DRUGBAN_SETS["human_random"][0])
    hv = load_csv_pairs(args.data / DRUGBAN_SETS["human_random"][1])
    smiles = ys.smiles + hr.smiles + hv.smiles
    seqs = ys.sequences + hr.sequences + hv.sequences
    y = np.concatenate([ys.y, hr.y, hv.y])
    n1, n2 = len(ys.y), len(ys.y) + len(hr.y)
    tables, di, pi, _ = build_tables(smiles, seqs)
    ok = di >= 0
    tr = np.concatenate([tr_y, np.arange(n1, n2)])
    tr = tr[ok[tr]]
    tests = {"yamanishi_08 warm fold 0 (of 10)": te_y[ok[te_y]], "human random val": np.arange(n2, len(y))[ok[n2:]]}
    overrides = {"epochs": args.epochs, "pretrain_epochs": args.pretrain_epochs}
    cfg = TrainConfig(threads=args.threads, **{k: v for k, v in overrides.items() if v is not None})
    model, hist = fit(
        tables,
        Pairs(di[tr], pi[tr], y[tr]),
        cfg,
        progress=lambda d, t, m: print(f"\r{int(d)}/{int(t)} {m}", end="", flush=True),
    )
    print()
    metrics = {}
    gb = None if args.no_baseline else gb_baseline(tables, di, pi, y, tr, list(tests.values()), 0, args.threads)
    for k, (name, te) in enumerate(tests.items()):
        au, apr = _metrics(y[te], predict(model, tables, di[te], pi[te], threads=args.threads))
        metrics[name] = {"auroc": round(au, 4), "auprc": round(apr, 4), "pairs": len(te)}
        if gb is not None:
            gau, gapr = _metrics(y[te], gb[k])
            metrics[name] |= {"gb_baseline_auroc": round(gau, 4), "gb_baseline_auprc": round(gapr, 4)}
    card = {
        "name": "default",
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "description": f"GRAM-DTI-style multimodal drug-target interaction model, an ensemble of {cfg.members} "
        "networks (seeds 0.., probabilities averaged). Each network: five modality encoders (drug ECFP4 MLP, "
        "drug RDKit-descriptor MLP, drug SMILES n-gram CNN, protein sequence n-gram CNN, protein "
        "AAC+dipeptide+CTD MLP) in one space; per side, gated residual fusion anchored on the ECFP4 and "
        "composition embeddings (the other modalities enter through learned gates that start closed); a "
        "pair-level known-interaction neighbourhood modality (13 features from the training pairs: the "
        "drug's and the target's other partners, similarity-weighted label means over similar drugs and "
        "targets, a drug x target similarity kernel; the pair itself always left out; each side's block "
        f"dropped for {cfg.cold_simulation:.0%} of training pairs to simulate unseen drugs and targets; "
        "an MLP encodes them for the interaction head, and a second head on that encoding alone adds its "
        "logit); "
        f"trained on the labels with the GRAM volume loss (weight {cfg.gram_weight}) on each batch's "
        "interacting pairs as an auxiliary term and adaptive gradient-informed modality dropout of the "
        "gated modalities; an interaction head. The two sequence CNNs are frozen at their seeded "
        "initialisation (random n-gram features); their norms and gates train. The checkpoint carries the "
        "training pairs (packed fingerprints, sequences, labels) that the neighbourhood modality reads. "
        "Trained on CPU.",
        "modalities": list(model.modalities),
        "training_data": [
            f"Yamanishi 08 via DTIAM (github.com/CSUBioGroup/DTIAM @2b72b2d, Apache-2.0; KEGG): {len(tr_y)} pairs "
            "(warm folds 1-9 of sklearn KFold(10, shuffle, random_state=0); negatives sampled 10 per positive "
            "uniformly from unobserved pairs, seed 0)",
            f"Human (Tsubaki et al.) random train via DrugBAN (github.com/peizhenbai/DrugBAN @9923f8c, MIT): "
            f"{n2 - n1} pairs",
        ],
        "splits": "Held out: Yamanishi 08 warm fold 0 (pairs), DrugBAN Human random val.csv. Cold-split "
        "performance is measured by evals/dti (python -m evals.dti), not by this card.",
        "metrics": metrics,
        "config": cfg.to_dict() | {"steps": hist["steps"], "train_seconds": round(hist["seconds"], 1)},
        "parameters": sum(p.numel() for p in model.parameters()),
        "limitations": [
            "Learned from about 10k drug-target pairs only: scores are rankings, not binding affinities.",
            "Warm-split figures reward memorised drugs and targets; expect lower accuracy for new targets.",
            "Protein features are sequence-only (no structure, no pretrained language model).",
            "Yamanishi negatives are unobserved pairs, some of which may be true interactions.",
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(model, args.out, card)
    args.out.with_name("model_card.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps(card["metrics"], indent=1))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
