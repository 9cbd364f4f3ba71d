"""A molecular graph network for drugs: RDKit atom/bond featurization, a GINE-style encoder, embeddings.

`graph_arrays(mols)` turns RDKit molecules into one batched graph (numpy arrays); `MolGraphEncoder` maps a
batched graph to one 128-d embedding per molecule; `embed_mols(mols)` embeds molecules with the shipped
self-supervised weights (`tools/dti/molgraph.pt`, pretrained by `python -m evals.dti.pretrain_drugs`).

The featurization depends only on the molecular graph, never on atom order: chirality is read as the CIP
label (R/S) and double-bond stereo as E/Z, not as RDKit's order-relative CW/CCW or cis/trans tags, so two
SMILES of one molecule give the same embedding (up to float rounding). The encoder has no batch
statistics (LayerNorm per atom), so a molecule embeds the same alone or in any batch.

Example::

    from rdkit import Chem
    from tools.dti.molgraph import embed_mols
    emb = embed_mols([Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)O"), Chem.MolFromSmiles("[Na+]")])
    emb.shape  # (2, 128), float32
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

WEIGHTS = Path(__file__).with_name("molgraph.pt")

ELEMENTS = (
    "C", "N", "O", "S", "F", "Cl", "Br", "I", "P", "B", "Si", "Se", "As",
    "H", "Na", "K", "Li", "Ca", "Mg", "Zn", "Fe", "Cu", "Pt", "Co",
)  # fmt: skip
_ELEMENT_INDEX = {e: i for i, e in enumerate(ELEMENTS)}
OTHER_ELEMENT = len(ELEMENTS)
N_ELEMENT_CLASSES = len(ELEMENTS) + 1
MAX_DEGREE = 5
CHARGES = (-2, -1, 0, 1, 2)
MAX_HS = 4
HYBRIDIZATIONS = ("S", "SP", "SP2", "SP3", "SP3D", "SP3D2")
# atom feature blocks, in column order: element (+other), degree 0..5 (+more), formal charge -2..2 (clipped),
# total Hs 0..4 (clipped), aromatic, in ring, hybridization (+other), chirality none/R/S/other, masked flag
ATOM_BLOCKS = (
    ("element", N_ELEMENT_CLASSES),
    ("degree", MAX_DEGREE + 2),
    ("charge", len(CHARGES)),
    ("hydrogens", MAX_HS + 1),
    ("aromatic", 1),
    ("in_ring", 1),
    ("hybridization", len(HYBRIDIZATIONS) + 1),
    ("chirality", 4),
    ("masked", 1),
)
ATOM_DIM = sum(n for _, n in ATOM_BLOCKS)
MASK_COLUMN = ATOM_DIM - 1
# bond feature blocks: type single/double/triple/aromatic/other, conjugated, in ring, stereo none/E/Z/other
BOND_TYPES = ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC")
BOND_DIM = len(BOND_TYPES) + 1 + 2 + 4
SUM_SCALE = 0.1  # the sum readout of a drug-sized molecule is then of the order of the mean and max readouts

_OFFSETS = {name: int(sum(n for _, n in ATOM_BLOCKS[:i])) for i, (name, _) in enumerate(ATOM_BLOCKS)}


def _atom_row(atom: Any) -> list[int]:
    """Column indices that are 1 for one atom."""
    element = _ELEMENT_INDEX.get(atom.GetSymbol(), OTHER_ELEMENT)
    charge = min(max(atom.GetFormalCharge(), CHARGES[0]), CHARGES[-1]) - CHARGES[0]
    hyb = str(atom.GetHybridization())
    hyb_i = HYBRIDIZATIONS.index(hyb) if hyb in HYBRIDIZATIONS else len(HYBRIDIZATIONS)
    chir = 0
    if int(atom.GetChiralTag()) != 0:
        cip = atom.GetProp("_CIPCode") if atom.HasProp("_CIPCode") else ""
        chir = 1 if cip == "R" else 2 if cip == "S" else 3
    cols = [
        _OFFSETS["element"] + element,
        _OFFSETS["degree"] + min(atom.GetDegree(), MAX_DEGREE + 1),
        _OFFSETS["charge"] + charge,
        _OFFSETS["hydrogens"] + min(atom.GetTotalNumHs(), MAX_HS),
        _OFFSETS["hybridization"] + hyb_i,
        _OFFSETS["chirality"] + chir,
    ]
    if atom.GetIsAromatic():
        cols.append(_OFFSETS["aromatic"])
    if atom.IsInRing():
        cols.append(_OFFSETS["in_ring"])
    return cols


def _bond_row(bond: Any) -> list[int]:
    """Column indices that are 1 for one bond."""
    kind = str(bond.GetBondType())
    n = len(BOND_TYPES) + 1
    cols = [BOND_TYPES.index(kind) if kind in BOND_TYPES else n - 1]
    if bond.GetIsConjugated():
        cols.append(n)
    if bond.IsInRing():
        cols.append(n + 1)
    stereo = str(bond.GetStereo())
    cols.append(n + 2 + {"STEREONONE": 0, "STEREOE": 1, "STEREOZ": 2}.get(stereo, 3))
    return cols


def mol_arrays(mol: Any) -> dict[str, np.ndarray]:
    """Graph arrays of one molecule: 'x' (atoms, ATOM_DIM) float32, 'edge_index' (2, 2*bonds) int64 with
    each bond in both directions, 'edge_attr' (2*bonds, BOND_DIM) float32. Raises ValueError when the
    molecule has no atoms or RDKit cannot read its atoms and bonds (an unsanitized molecule)."""
    if mol is None or not hasattr(mol, "GetAtoms"):
        raise ValueError(f"expected an RDKit molecule, got {type(mol).__name__}")
    n = mol.GetNumAtoms()
    if n == 0:
        raise ValueError("the molecule has no atoms")
    if mol.NeedsUpdatePropertyCache():
        raise ValueError("its valences are not computed; sanitize it first (Chem.SanitizeMol)")
    try:
        x = np.zeros((n, ATOM_DIM), np.float32)
        for atom in mol.GetAtoms():
            x[atom.GetIdx(), _atom_row(atom)] = 1.0
        m = mol.GetNumBonds()
        edge_index = np.zeros((2, 2 * m), np.int64)
        edge_attr = np.zeros((2 * m, BOND_DIM), np.float32)
        for k, bond in enumerate(mol.GetBonds()):
            a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
            edge_index[:, 2 * k] = (a, b)
            edge_index[:, 2 * k + 1] = (b, a)
            edge_attr[2 * k, _bond_row(bond)] = 1.0
            edge_attr[2 * k + 1] = edge_attr[2 * k]
    except RuntimeError as exc:  # RDKit raises RuntimeError-derived errors for unsanitized molecules
        raise ValueError(f"RDKit could not read it ({str(exc).strip().splitlines()[0]}); sanitize it first") from None
    return {"x": x, "edge_index": edge_index, "edge_attr": edge_attr}


def collate(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One batched graph of per-molecule `mol_arrays`: atom rows and edges concatenated (edge indices
    shifted), plus 'graph' (atoms,) the molecule index of each atom and 'atom_counts' (molecules,)."""
    counts = np.array([len(p["x"]) for p in parts], np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(parts) else counts
    return {
        "x": np.concatenate([p["x"] for p in parts]) if parts else np.zeros((0, ATOM_DIM), np.float32),
        "edge_index": np.concatenate([p["edge_index"] + s for p, s in zip(parts, starts, strict=True)], axis=1)
        if parts
        else np.zeros((2, 0), np.int64),
        "edge_attr": np.concatenate([p["edge_attr"] for p in parts]) if parts else np.zeros((0, BOND_DIM), np.float32),
        "graph": np.repeat(np.arange(len(parts), dtype=np.int64), counts),
        "atom_counts": counts,
    }


def graph_arrays(mols: Sequence[Any]) -> dict[str, np.ndarray]:
    """Batched graph arrays of RDKit molecules (see `collate`); a ValueError names the first molecule index
    that cannot be featurized. Molecules without bonds (single ions such as [Na+]) have no edges."""
    return collate(_mol_parts(mols))


def _mol_parts(mols: Sequence[Any]) -> list[dict[str, np.ndarray]]:
    """`mol_arrays` of each molecule; a ValueError names the first molecule index that fails."""
    parts = []
    for i, mol in enumerate(mols):
        try:
            parts.append(mol_arrays(mol))
        except ValueError as exc:
            raise ValueError(f"molecule {i}: {exc}") from None
    return parts


def to_tensors(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The arrays of `graph_arrays` / `collate` as torch tensors (shared memory), the encoder's input."""
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}


class _GINELayer(nn.Module):
    """h_i <- h_i + MLP((1 + eps) z_i + sum_j ReLU(z_j + W e_ij)), z = LayerNorm(h)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.edge = nn.Linear(BOND_DIM, dim)
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        z = self.norm(h)
        msg = F.relu(z[src] + self.edge(e))
        agg = torch.zeros_like(z).index_add_(0, dst, msg)
        return h + self.mlp((1 + self.eps) * z + agg)


class MolGraphEncoder(nn.Module):
    """GINE message passing over atom/bond features, sum+mean+max readout, projection to `out_dim`.

    `forward(batch)` takes the tensors of `graph_arrays` (see `to_tensors`) and returns (molecules,
    out_dim); `forward(batch, nodes=True)` also returns the final per-atom states (atoms, dim).
    """

    def __init__(self, dim: int = 128, layers: int = 4, out_dim: int = 128) -> None:
        super().__init__()
        self.dim, self.n_layers, self.out_dim = dim, layers, out_dim
        self.atom_in = nn.Linear(ATOM_DIM, dim)
        self.layers = nn.ModuleList(_GINELayer(dim) for _ in range(layers))
        self.out_norm = nn.LayerNorm(dim)
        self.project = nn.Sequential(nn.Linear(3 * dim, dim), nn.ReLU(), nn.Linear(dim, out_dim))

    def config(self) -> dict[str, int]:
        return {"dim": self.dim, "layers": self.n_layers, "out_dim": self.out_dim}

    def forward(self, batch: dict[str, torch.Tensor], nodes: bool = False) -> Any:
        x, graph, counts = batch["x"], batch["graph"], batch["atom_counts"]
        src, dst = batch["edge_index"][0], batch["edge_index"][1]
        h = self.atom_in(x)
        for layer in self.layers:
            h = layer(h, src, dst, batch["edge_attr"])
        h = self.out_norm(h)
        n = len(counts)
        total = h.new_zeros(n, self.dim).index_add_(0, graph, h)
        mean = total / counts.clamp_min(1).to(h.dtype)[:, None]
        index = graph[:, None].expand(-1, self.dim)
        peak = h.new_zeros(n, self.dim).scatter_reduce(0, index, h, reduce="amax", include_self=False)
        emb = self.project(torch.cat([SUM_SCALE * total, mean, peak], dim=1))
        return (emb, h) if nodes else emb


def save_encoder(encoder: MolGraphEncoder, path: Path, corpus: dict[str, Any] | None = None) -> None:
    """Write the encoder's state_dict, config and corpus record to a temporary name, then rename."""
    from tools.atomic import atomic_output

    state = {k: v.detach().clone() for k, v in encoder.state_dict().items()}
    with atomic_output(Path(path)) as tmp:
        torch.save({"state_dict": state, "config": encoder.config(), "corpus": corpus or {}}, tmp)


def read_checkpoint(path: Path = WEIGHTS) -> dict[str, Any]:
    """The checkpoint dict ('state_dict', 'config', 'corpus') of a saved encoder."""
    return torch.load(Path(path), map_location="cpu", weights_only=True)


@functools.lru_cache(maxsize=4)
def load_encoder(path: str = str(WEIGHTS)) -> MolGraphEncoder:
    """The encoder saved at `path` (default: the shipped weights), in eval mode; cached per path, so callers
    share one module and must not train it (build a `MolGraphEncoder` and `load_state_dict` for that)."""
    ckpt = read_checkpoint(Path(path))
    encoder = MolGraphEncoder(**ckpt["config"])
    encoder.load_state_dict(ckpt["state_dict"])
    return encoder.eval()


def embed_mols(
    mols: Sequence[Any],
    encoder: MolGraphEncoder | None = None,
    batch: int = 256,
    check: Callable[[], None] | None = None,
) -> np.ndarray:
    """Embeddings (n, out_dim) float32 of RDKit molecules, `batch` molecules at a time.

    `encoder` defaults to the shipped pretrained weights. `check()` is called before each batch and may
    raise to cancel. All molecules are featurized first, so a ValueError naming the molecule index comes
    before any embedding work.
    """
    if encoder is None:
        encoder = load_encoder()
    parts = _mol_parts(mols)
    out = np.zeros((len(parts), encoder.out_dim), np.float32)
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            for s in range(0, len(parts), max(1, batch)):
                if check is not None:
                    check()
                block = to_tensors(collate(parts[s : s + batch]))
                out[s : s + len(block["atom_counts"])] = encoder(block).numpy()
    finally:
        encoder.train(was_training)
    return out
