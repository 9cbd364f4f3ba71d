"""How much the frozen molecular graph embedding carries to unseen drugs: a gradient-boosting probe.

    python -m evals.dti.molgraph_probe [--weights tools/dti/molgraph.pt] [--split human/cold]

On a DrugBAN cold-drug split (train on train.csv, evaluate on val.csv, whose drugs are not in train),
sklearn HistGradientBoostingClassifier(max_iter=100, learning_rate=0.2, random_state=0) is fitted on
each feature set beside the protein amino-acid composition (20 fractions):

- ECFP4 1024 bits (the reference),
- the pretrained graph embedding (128),
- ECFP4 bits + pretrained embedding,
- the embedding of a randomly initialised (untrained) encoder, alone and with ECFP4.

For each it prints the val AUROC and the AUROC of out-of-fold predictions of 5-fold GroupKFold by drug
within train (no drug in both a fold's training and its held-out part). It also prints the embedding
throughput on 2,000 corpus molecules beside RDKit ECFP4 alone. Run on one thread.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from evals.shared_data import shared_data_path


def _auroc_pair(x_tr: np.ndarray, y_tr: np.ndarray, groups: np.ndarray, x_va: np.ndarray, y_va: np.ndarray) -> tuple:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    def model() -> Any:
        return HistGradientBoostingClassifier(max_iter=100, learning_rate=0.2, random_state=0)

    val = roc_auc_score(y_va, model().fit(x_tr, y_tr).predict_proba(x_va)[:, 1])
    oof = np.zeros(len(y_tr))
    for tr, te in GroupKFold(n_splits=5).split(x_tr, y_tr, groups):
        oof[te] = model().fit(x_tr[tr], y_tr[tr]).predict_proba(x_tr[te])[:, 1]
    return float(val), float(roc_auc_score(y_tr, oof))


def throughput(smiles: list[str], encoder: Any) -> dict[str, float]:
    """Molecules per second of `embed_mols` (graph featurization included) and of RDKit ECFP4 alone, both
    from parsed molecules."""
    from rdkit import Chem

    from tools.dti.features import _morgan_generator
    from tools.dti.molgraph import embed_mols

    mols = [Chem.MolFromSmiles(s) for s in smiles]
    t = time.perf_counter()
    embed_mols(mols, encoder)
    graph = len(mols) / (time.perf_counter() - t)
    gen = _morgan_generator()
    t = time.perf_counter()
    for m in mols:
        gen.GetFingerprintAsNumPy(m)
    ecfp = len(mols) / (time.perf_counter() - t)
    return {"molecules": len(mols), "graph_per_s": graph, "ecfp4_per_s": ecfp}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=Path, default=None, help="encoder checkpoint (default: the shipped one)")
    ap.add_argument("--split", default="human/cold", help="DrugBAN split folder with train.csv and val.csv")
    ap.add_argument("--data", type=Path, default=shared_data_path("dti"))
    args = ap.parse_args(argv)

    import torch
    from rdkit import Chem

    from evals.dti.pretrain_drugs import build_corpus
    from evals.dti.protocol import _labelled
    from tools.dti.molgraph import WEIGHTS, MolGraphEncoder, embed_mols, load_encoder
    from tools.dti.train import build_tables

    torch.set_num_threads(1)
    folder = args.data / "drugban" / "datasets" / args.split
    s_tr, q_tr, y_tr, _ = _labelled(folder / "train.csv")
    s_va, q_va, y_va, _ = _labelled(folder / "val.csv")
    tables, di, pi, _ = build_tables(s_tr + s_va, q_tr + q_va)
    y = np.concatenate([y_tr, y_va])
    ok = (di >= 0) & ~np.isnan(y)
    tr = np.flatnonzero(ok[: len(s_tr)])
    va = len(s_tr) + np.flatnonzero(ok[len(s_tr) :])
    mols = [Chem.MolFromSmiles(s) for s in tables.smiles]
    trained = load_encoder(str(args.weights or WEIGHTS))
    torch.manual_seed(0)
    untrained = MolGraphEncoder(**trained.config()).eval()
    emb = {"pretrained": embed_mols(mols, trained), "untrained": embed_mols(mols, untrained)}
    ecfp = tables.drugs["ecfp"].astype(np.float32)
    comp = tables.proteins["comp"][:, :20]
    sets = {
        "ECFP4 1024 + composition": lambda d: ecfp[d],
        "graph (pretrained) + composition": lambda d: emb["pretrained"][d],
        "ECFP4 + graph (pretrained) + composition": lambda d: np.hstack([ecfp[d], emb["pretrained"][d]]),
        "graph (untrained) + composition": lambda d: emb["untrained"][d],
        "ECFP4 + graph (untrained) + composition": lambda d: np.hstack([ecfp[d], emb["untrained"][d]]),
    }
    shared = len(set(di[tr].tolist()) & set(di[va].tolist()))
    print(
        f"{args.split}: {len(tr)} train pairs ({len(set(di[tr].tolist()))} drugs), {len(va)} val pairs, "
        f"{shared} drugs in both"
    )
    print("| features | val AUROC | drug-GroupKFold OOF AUROC |\n|---|---|---|")
    for name, drug in sets.items():
        x_tr = np.hstack([drug(di[tr]), comp[pi[tr]]])
        x_va = np.hstack([drug(di[va]), comp[pi[va]]])
        v, cv = _auroc_pair(x_tr, y[tr], di[tr], x_va, y[va])
        print(f"| {name} | {v:.3f} | {cv:.3f} |")
    corpus, _ = build_corpus(args.data)
    rate = throughput(corpus[:2000], trained)
    print(
        f"throughput on {rate['molecules']} molecules: graph embedding {rate['graph_per_s']:.0f}/s, "
        f"RDKit ECFP4 {rate['ecfp4_per_s']:.0f}/s (ratio {rate['ecfp4_per_s'] / rate['graph_per_s']:.1f}x)"
    )


if __name__ == "__main__":
    main()
