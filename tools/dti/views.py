"""Drug views of the boosted members: each member of the model's tree ensemble reads the drug through one
of these, beside the protein composition (and, for members named `<view>+nbr`, the neighbourhood).

- `ecfp`: the model's 1024 ECFP4 bits (already in every drug table);
- `ecfp_counts`: ECFP4 counts folded to 2048, radius 2 (how often each environment occurs);
- `atompair_counts`: atom-pair counts folded to 2048 (pairs of atoms and their topological distance:
  shape and size that circular environments miss);
- `physchem`: 103 physicochemical values: Crippen logP and MR, the PEOE/SMR/SlogP VSA bins, the 42
  molecular quantum numbers, Kier kappa 1-3 and alpha, and the model's 19 descriptors.

Counts are clipped at 255 and stored as float32. Costs on one core (Human cold's 1,599 drugs): ECFP
counts 0.10 ms, atom pairs 0.22 ms, physchem 1.4 ms a molecule.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

VIEW_NAMES = ("ecfp", "ecfp_counts", "atompair_counts", "physchem")
COUNT_BITS = 2048
PHYSCHEM_SIZE = 2 + 14 + 10 + 12 + 42 + 4 + 19


def parse_member(spec: str) -> tuple[str, bool]:
    """(`view`, reads the neighbourhood) of a member spec such as 'ecfp+nbr' or 'physchem'."""
    view, plus, suffix = spec.partition("+")
    if view not in VIEW_NAMES or (plus and suffix != "nbr"):
        raise ValueError(f"unknown boosted member {spec!r}: use one of {', '.join(VIEW_NAMES)}, optionally with '+nbr'")
    return view, suffix == "nbr"


def view_key(view: str) -> str:
    """The drug-table key a view is stored under ('ecfp' is the table's own bits)."""
    return "ecfp" if view == "ecfp" else f"view:{view}"


@functools.cache
def _generator(kind: str) -> Any:
    from rdkit.Chem import rdFingerprintGenerator as G

    if kind == "ecfp_counts":
        return G.GetMorganGenerator(radius=2, fpSize=COUNT_BITS)
    return G.GetAtomPairGenerator(fpSize=COUNT_BITS)


def physchem(mol: Any) -> np.ndarray:
    """The 103 physicochemical values of one sanitized molecule (see the module docstring)."""
    from rdkit.Chem import rdMolDescriptors as D

    from tools.dti.features import _descriptors

    values = [
        *D.CalcCrippenDescriptors(mol),
        *D.PEOE_VSA_(mol),
        *D.SMR_VSA_(mol),
        *D.SlogP_VSA_(mol),
        *D.MQNs_(mol),
        D.CalcKappa1(mol),
        D.CalcKappa2(mol),
        D.CalcKappa3(mol),
        D.CalcHallKierAlpha(mol),
    ]
    out = np.empty(PHYSCHEM_SIZE, dtype=np.float32)
    out[: len(values)] = values
    out[len(values) :] = _descriptors(mol)
    return out


def view_matrix(mols: Sequence[Any], view: str) -> np.ndarray:
    """(n, width) float32 matrix of one view for sanitized molecules."""
    if view == "ecfp":
        from tools.dti.features import ECFP_BITS, fingerprint

        return np.stack([fingerprint(m, "ecfp4", ECFP_BITS) for m in mols]).astype(np.float32)
    if view == "physchem":
        return np.stack([physchem(m) for m in mols]) if len(mols) else np.zeros((0, PHYSCHEM_SIZE), np.float32)
    gen = _generator(view)
    out = np.zeros((len(mols), COUNT_BITS), dtype=np.float32)
    for i, m in enumerate(mols):
        np.minimum(gen.GetCountFingerprintAsNumPy(m), 255, out=out[i], casting="unsafe")
    return out


def add_views(table: dict[str, np.ndarray], views: Sequence[str], mols: Sequence[Any] | None = None,
              smiles: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Add the missing views to a drug table, from its molecules or, when `mols` is None, from their
    canonical SMILES. Returns the table."""
    missing = [v for v in views if view_key(v) not in table]
    if not missing:
        return table
    if mols is None:
        from rdkit import Chem

        mols = [Chem.MolFromSmiles(s) for s in smiles or ()]
        bad = [s for s, m in zip(smiles or (), mols, strict=True) if m is None]
        if bad:
            raise ValueError(f"{len(bad)} drug-table SMILES do not parse (first: {bad[0]!r}); build tables with "
                             "tools.dti.train.build_tables, which keeps canonical SMILES only")
    for v in missing:
        table[view_key(v)] = view_matrix(mols, v)
    return table
