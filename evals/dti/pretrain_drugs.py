"""Self-supervised pretraining of the molecular graph encoder (tools/dti/molgraph.py), GRAM-aligned.

    python -m evals.dti.pretrain_drugs --out tools/dti/molgraph.pt [--epochs N] [--data DIR]

Corpus: every distinct molecule (canonical SMILES of the scored species, `tools.dti.chem.sanitize_smiles`)
of the offline DTI data: DTIAM's drug lists (Yamanishi 08, Hetionet, MoA activation and inhibition) and
the DrugBAN training files. Molecules that occur in any DrugBAN validation or test file are left out, so
an evaluation on those files sees molecules the encoder never saw. No labels are read.

Objective: four modalities of each molecule are embedded to one space: the graph (the encoder trained
here, the anchor), ECFP4 counts (2048, log1p), MACCS keys and the RDKit descriptors (standardized), the
last three by small MLPs. `tools.dti.model.gram_contrastive_loss` makes the modalities of one molecule
span a small Gram volume and those of different molecules a large one. In every batch 15% of atoms have
their features masked (an augmentation: the graph embedding is read from the masked graph). With
`--mask-weight` above 0 an auxiliary head also predicts the element of each masked atom; it is off by
default, since on the DrugBAN Human cold probe (`python -m evals.dti.molgraph_probe`) it lowered both the
val and the drug-grouped CV AUROC.
Only the graph encoder is saved, with its config and a record of the corpus (size, sha256 of the sorted
canonical SMILES, files used with their sha256, left-out evaluation molecules).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals.shared_data import shared_data_path
from tools.dti.views import COUNT_BITS

REPO = Path(__file__).resolve().parents[2]
CORPUS_FILES = (
    "dtiam/data/dti/yamanishi_08/drug_smiles.csv",
    "dtiam/data/dti/hetionet/drug_smiles.csv",
    "dtiam/data/moa/activation/drug_smi.csv",
    "dtiam/data/moa/inhibition/drug_smi.csv",
    "drugban/datasets/human/cold/train.csv",
    "drugban/datasets/human/random/train.csv",
    "drugban/datasets/biosnap/cluster/target_train.csv",
    "drugban/datasets/bindingdb_sample/train.csv",
)
EVALUATION_FILES = (
    "drugban/datasets/human/cold/val.csv",
    "drugban/datasets/human/random/val.csv",
    "drugban/datasets/biosnap/random/val.csv",
    "drugban/datasets/bindingdb/random/val.csv",
    "drugban/datasets/bindingdb_sample/val.csv",
    "drugban/datasets/bindingdb_sample/test.csv",
)


def read_smiles(path: Path) -> list[str]:
    """The SMILES column of a DTIAM drug list (tab-separated, SMILES second) or a DrugBAN CSV ('SMILES')."""
    with open(path, newline="") as fh:
        head = fh.readline()
        fh.seek(0)
        if "\t" in head:
            rows = csv.reader(fh, delimiter="\t")
            next(rows)
            return [r[1] for r in rows if len(r) > 1 and r[1]]
        return [r["SMILES"] for r in csv.DictReader(fh) if r.get("SMILES")]


def canonical_set(smiles: Sequence[str]) -> tuple[set[str], int]:
    """Canonical SMILES of the valid inputs and the count of inputs that could not be parsed."""
    from tools.dti.chem import try_parse_smiles

    out, bad = set(), 0
    for s in smiles:
        parsed, _ = try_parse_smiles(s)
        if parsed is None:
            bad += 1
        else:
            out.add(parsed.smiles)
    return out, bad


def build_corpus(data: Path | None = None) -> tuple[list[str], dict[str, Any]]:
    """Sorted canonical SMILES of the corpus files minus the evaluation files' molecules, and its record."""
    from tools.dti.provenance import file_sha256

    data = shared_data_path("dti") if data is None else data
    pool: set[str] = set()
    unparsable = 0
    files = []
    for rel in CORPUS_FILES:
        found, bad = canonical_set(read_smiles(data / rel))
        pool |= found
        unparsable += bad
        files.append({"file": rel, "molecules": len(found), "sha256": file_sha256(data / rel)})
    held: set[str] = set()
    for rel in EVALUATION_FILES:
        held |= canonical_set(read_smiles(data / rel))[0]
    corpus = sorted(pool - held)
    record = {
        "molecules": len(corpus),
        "smiles_sha256": hashlib.sha256("\n".join(corpus).encode()).hexdigest(),
        "files": files,
        "unparsable_inputs": unparsable,
        "evaluation_files_excluded": list(EVALUATION_FILES),
        "evaluation_molecules": len(held),
        "left_out_evaluation_molecules": len(pool & held),
    }
    return corpus, record


def modality_inputs(mols: Sequence[Any]) -> dict[str, np.ndarray]:
    """The non-graph modalities: 'ecfp' counts (n, 2048) uint8, 'maccs' (n, 167) uint8, 'desc' (n, 19)."""
    from tools.dti.features import _descriptors, fingerprint
    from tools.dti.views import view_matrix

    ecfp = view_matrix(mols, "ecfp_counts").astype(np.uint8)  # counts are clipped at 255 there
    maccs = np.stack([fingerprint(m, "maccs") for m in mols])
    desc = np.stack([_descriptors(m) for m in mols]).astype(np.float32)
    return {"ecfp": ecfp, "maccs": maccs, "desc": desc}


def _head(torch: Any, n_in: int, dim: int) -> Any:
    return torch.nn.Sequential(torch.nn.Linear(n_in, 256), torch.nn.ReLU(), torch.nn.Linear(256, dim))


def pretrain(
    smiles: Sequence[str],
    epochs: int = 6,
    batch: int = 256,
    lr: float = 1e-3,
    temperature: float = 0.1,
    mask_rate: float = 0.15,
    mask_weight: float = 0.0,
    seed: int = 0,
    progress: Callable[[str], None] | None = print,
) -> tuple[Any, dict[str, Any]]:
    """Pretrain a `MolGraphEncoder` on SMILES; returns it (eval mode) and the history: per-epoch mean
    'loss', 'gram' and 'masked_atom' losses and 'seconds'. Seeded and deterministic on one thread."""
    import torch
    from rdkit import Chem
    from torch.nn import functional as F

    from tools.dti.model import gram_contrastive_loss
    from tools.dti.molgraph import MASK_COLUMN, N_ELEMENT_CLASSES, MolGraphEncoder, collate, mol_arrays, to_tensors

    t0 = time.time()
    mols = [Chem.MolFromSmiles(s) for s in smiles]
    graphs = [mol_arrays(m) for m in mols]
    inputs = modality_inputs(mols)
    desc_mean, desc_std = inputs["desc"].mean(0), inputs["desc"].std(0) + 1e-3
    if progress:
        progress(f"featurized {len(mols)} molecules in {time.time() - t0:.1f}s")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    encoder = MolGraphEncoder()
    dim = encoder.out_dim
    heads = torch.nn.ModuleDict(
        {
            "ecfp": _head(torch, COUNT_BITS, dim),
            "maccs": _head(torch, inputs["maccs"].shape[1], dim),
            "desc": _head(torch, inputs["desc"].shape[1], dim),
        }
    )
    element_head = torch.nn.Linear(encoder.dim, N_ELEMENT_CLASSES)
    params = [*encoder.parameters(), *heads.parameters(), *element_head.parameters()]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    steps = epochs * math.ceil(len(mols) / batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * k / steps)))
    history: dict[str, Any] = {"loss": [], "gram": [], "masked_atom": [], "seconds": 0.0}
    encoder.train()
    for epoch in range(epochs):
        order = rng.permutation(len(mols))
        sums = np.zeros(3)
        n_batches = 0
        for s in range(0, len(order), batch):
            b = order[s : s + batch]
            if len(b) < 2:
                continue
            g = collate([graphs[i] for i in b])
            masked = np.flatnonzero(rng.random(len(g["x"])) < mask_rate)
            target = g["x"][masked, :N_ELEMENT_CLASSES].argmax(1)
            g["x"][masked] = 0.0
            g["x"][masked, MASK_COLUMN] = 1.0
            emb, nodes = encoder(to_tensors(g), nodes=True)
            ecfp = torch.from_numpy(np.log1p(inputs["ecfp"][b].astype(np.float32)))
            maccs = torch.from_numpy(inputs["maccs"][b].astype(np.float32))
            desc = torch.from_numpy(np.clip((inputs["desc"][b] - desc_mean) / desc_std, -6, 6).astype(np.float32))
            embs = {
                "graph": emb,
                "ecfp": heads["ecfp"](ecfp),
                "maccs": heads["maccs"](maccs),
                "desc": heads["desc"](desc),
            }
            gram = gram_contrastive_loss(embs, "graph", temperature)
            atom = (
                F.cross_entropy(element_head(nodes[torch.from_numpy(masked)]), torch.from_numpy(target))
                if len(masked) and mask_weight > 0
                else gram * 0.0
            )
            loss = gram + mask_weight * atom
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            sums += (loss.item(), gram.item(), atom.item())
            n_batches += 1
        means = sums / max(1, n_batches)
        for key, v in zip(("loss", "gram", "masked_atom"), means, strict=True):
            history[key].append(float(v))
        if progress:
            progress(
                f"epoch {epoch + 1}/{epochs}: loss {means[0]:.4f} (gram {means[1]:.4f}, masked atom {means[2]:.4f}),"
                f" {time.time() - t0:.0f}s"
            )
    history["seconds"] = time.time() - t0
    return encoder.eval(), history


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="checkpoint to write (e.g. tools/dti/molgraph.pt)")
    ap.add_argument("--data", type=Path, default=shared_data_path("dti"), help="the offline DTI data folder")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--mask-weight", type=float, default=0.0, help="weight of the masked-atom loss (0: off)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="use only the first N corpus molecules (0: all)")
    args = ap.parse_args(argv)

    import torch

    from tools.dti.molgraph import save_encoder

    torch.set_num_threads(1)
    t0 = time.time()
    corpus, record = build_corpus(args.data)
    print(
        f"corpus: {record['molecules']} molecules ({record['left_out_evaluation_molecules']} evaluation molecules"
        f" left out) in {time.time() - t0:.1f}s"
    )
    if args.limit:
        corpus = corpus[: args.limit]
        record |= {"limit": args.limit, "molecules": len(corpus)}
        record["smiles_sha256"] = hashlib.sha256("\n".join(corpus).encode()).hexdigest()
    encoder, history = pretrain(
        corpus, epochs=args.epochs, batch=args.batch, mask_weight=args.mask_weight, seed=args.seed
    )
    record["training"] = {
        "epochs": args.epochs,
        "batch": args.batch,
        "mask_weight": args.mask_weight,
        "seed": args.seed,
        "loss": [round(v, 5) for v in history["loss"]],
        "seconds": round(history["seconds"], 1),
    }
    save_encoder(encoder, args.out, record)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
