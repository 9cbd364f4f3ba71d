"""Which atoms drive a drug-target score: ECFP4 bit occlusion.

Each on-bit of the molecule's ECFP4 fingerprint is switched off in turn (the molecule's other views kept) and the
model scores it again; the drop in score is the bit's contribution. A bit's contribution is shared equally over
the atoms of the environments that set it, which gives one weight per atom (positive: supports binding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class BitEffect:
    bit: int
    delta: float  # score drop when the bit is switched off
    atoms: list[int]
    substructure: str | None


@dataclass
class Occlusion:
    """One molecule's score against one protein, and what drives it."""

    mol: Any  # the RDKit molecule, atoms in the canonical SMILES' order
    score: float
    bits: list[BitEffect]  # on-bits ranked by |delta|
    weights: Any  # numpy array: one contribution per atom

    @property
    def top_atoms(self) -> list[int]:
        """Atoms by decreasing weight."""
        import numpy as np

        return [int(i) for i in np.argsort(-self.weights)]


def occlude(smiles: str, seq: str, model: str) -> Occlusion:
    """The score of canonical `smiles` against protein `seq` under `model`, with its bit and atom contributions."""
    import numpy as np
    import torch
    from rdkit import Chem

    from tools.dti.features import drug_features, ecfp_bit_atoms, stack_drugs
    from tools.dti.registry import load_model
    from tools.dti.train import _inputs, blend_block, embed_table, library_neighbourhood, protein_table
    from tools.dti.views import add_views

    net, _ = load_model(model)
    mol = Chem.MolFromSmiles(smiles)
    info = ecfp_bit_atoms(mol)
    feats = drug_features(smiles)
    bits = [int(b) for b in feats.ecfp_on]
    table = stack_drugs([feats] * (len(bits) + 1))
    for k, b in enumerate(bits, start=1):
        table["ecfp"][k, b] = 0.0
    if net.boost is not None:  # the other views are the molecule's own: only its ECFP4 bits are ablated
        for key, row in add_views({}, net.boost.views, mols=[mol]).items():
            table.setdefault(key, np.repeat(row, len(bits) + 1, axis=0))
    pvec = embed_table(net, protein_table([seq]), net.protein_modalities)
    with torch.no_grad():
        dvec = net.fuse(net.embed(_inputs(torch, table, np.arange(len(bits) + 1)), net.drug_modalities))
        nbr = library_neighbourhood(net, table["ecfp"], [smiles] * len(dvec), seq)
        probs = blend_block(net, net.interaction_logit(dvec, pvec.expand(len(dvec), -1), nbr), table, seq, nbr)
    base = float(probs[0])
    deltas = base - probs[1:]
    weights = np.zeros(mol.GetNumAtoms())
    effects = []
    for b, dlt in zip(bits, deltas, strict=True):
        atoms: set[int] = set()
        sub = None
        for centre, radius in info.get(b, []):
            env = Chem.FindAtomEnvironmentOfRadiusN(mol, radius, centre)
            amap: dict[int, int] = {}
            sm = Chem.PathToSubmol(mol, env, atomMap=amap) if env else None
            if sub is None:
                sub = (Chem.MolToSmiles(sm) if sm is not None and sm.GetNumAtoms()
                       else mol.GetAtomWithIdx(centre).GetSymbol())
            atoms |= set(amap) if env else {centre}
        for a in atoms:
            weights[a] += dlt / max(1, len(atoms))
        effects.append(BitEffect(bit=b, delta=round(float(dlt), 6), atoms=sorted(atoms), substructure=sub))
    effects.sort(key=lambda e: -abs(e.delta))
    return Occlusion(mol=mol, score=base, bits=effects, weights=weights)
