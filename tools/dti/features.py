"""Drug and protein features: RDKit fingerprints and descriptors, SMILES tokens; protein tokens, AAC, dipeptide, CTD.

Drug features are cached by canonical SMILES (ECFP on-bits stored sparse), so a molecule seen twice, or
written two ways, is featurized once.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from tools.dti.chem import AMINO_ACIDS, sanitize_smiles

ECFP_BITS = 1024
ECFP_RADIUS = 2
SMILES_MAX_TOKENS = 120
PROTEIN_MAX_TOKENS = 1000

# Fast RDKit descriptors (C++ calls), in this order.
DESCRIPTOR_NAMES = (
    "exact_mol_wt",
    "tpsa",
    "lipinski_hbd",
    "lipinski_hba",
    "rotatable_bonds",
    "rings",
    "aromatic_rings",
    "aliphatic_rings",
    "saturated_rings",
    "fraction_csp3",
    "heavy_atoms",
    "heteroatoms",
    "labute_asa",
    "amide_bonds",
    "formal_charge",
    "stereocenters",
    "heterocycles",
    "bridgehead_atoms",
    "spiro_atoms",
)

_SMILES_TOKEN = re.compile(r"Cl|Br|[A-Za-z]|\d|[()\[\]=#\-+/\\@%.:*$~]")
SMILES_VOCAB = ["<pad>", "<unk>", *list("CNOSPFIBHcnospbKL"), "Cl", "Br", *list("0123456789()[]=#-+/\\@%.:")]
_SMILES_INDEX = {t: i for i, t in enumerate(SMILES_VOCAB)}

PROTEIN_VOCAB = ["<pad>", *AMINO_ACIDS, "X"]
_AA_INDEX = np.full(128, 21, dtype=np.int64)
for _i, _a in enumerate(AMINO_ACIDS):
    _AA_INDEX[ord(_a)] = _i
# CTD groups for 7 physicochemical attributes (Dubchak et al. 1995; PROFEAT), groups 1/2/3.
CTD_GROUPS = {
    "hydrophobicity": ("RKEDQN", "GASTPHY", "CLVIMFW"),
    "vdw_volume": ("GASTPDC", "NVEQIL", "MHKFRYW"),
    "polarity": ("LIFWCMVY", "PGAST", "HQRKNED"),
    "polarizability": ("GASDT", "CPNVEQIL", "KMHFRYW"),
    "charge": ("KR", "ANCQGHILMFPSTWYV", "DE"),
    "secondary_structure": ("EALMQKRH", "VIYCWFT", "GNPSD"),
    "solvent_accessibility": ("ALFCGIVW", "RKQEND", "MPSTHY"),
}
_CTD_MAP = np.zeros((len(CTD_GROUPS), 22), dtype=np.int64)  # attribute x aa index -> group 1..3, 0 for X
for _k, _groups in enumerate(CTD_GROUPS.values()):
    for _g, _letters in enumerate(_groups, start=1):
        for _a in _letters:
            _CTD_MAP[_k, AMINO_ACIDS.index(_a)] = _g
PROTEIN_COMPOSITION_DIM = 20 + 400 + 21 * len(CTD_GROUPS)


@dataclass(frozen=True)
class DrugFeatures:
    """Per-molecule features: ECFP on-bits (sparse), descriptor vector, SMILES token ids."""

    smiles: str
    ecfp_on: np.ndarray
    descriptors: np.ndarray
    tokens: np.ndarray


def _descriptors(mol: Any) -> np.ndarray:
    from rdkit import Chem
    from rdkit.Chem import rdMolDescriptors as D

    return np.array(
        [
            D.CalcExactMolWt(mol),
            D.CalcTPSA(mol),
            D.CalcNumLipinskiHBD(mol),
            D.CalcNumLipinskiHBA(mol),
            D.CalcNumRotatableBonds(mol, D.NumRotatableBondsOptions.NonStrict),
            D.CalcNumRings(mol),
            D.CalcNumAromaticRings(mol),
            D.CalcNumAliphaticRings(mol),
            D.CalcNumSaturatedRings(mol),
            D.CalcFractionCSP3(mol),
            mol.GetNumHeavyAtoms(),
            D.CalcNumHeteroatoms(mol),
            D.CalcLabuteASA(mol),
            D.CalcNumAmideBonds(mol),
            Chem.GetFormalCharge(mol),
            D.CalcNumAtomStereoCenters(mol),
            D.CalcNumHeterocycles(mol),
            D.CalcNumBridgeheadAtoms(mol),
            D.CalcNumSpiroAtoms(mol),
        ],
        dtype=np.float32,
    )


def smiles_tokens(smiles: str, max_len: int = SMILES_MAX_TOKENS) -> np.ndarray:
    """Token ids of a SMILES (character level with Cl/Br; unknown characters map to <unk>), padded."""
    ids = [_SMILES_INDEX.get(t, 1) for t in _SMILES_TOKEN.findall(smiles)[:max_len]]
    out = np.zeros(max_len, dtype=np.int64)
    out[: len(ids)] = ids
    return out


@functools.cache
def _morgan_generator(radius: int = ECFP_RADIUS, n_bits: int = ECFP_BITS, features: bool = False) -> Any:
    from rdkit.Chem import rdFingerprintGenerator as G

    if features:
        return G.GetMorganGenerator(
            radius=radius, fpSize=n_bits, atomInvariantsGenerator=G.GetMorganFeatureAtomInvGen()
        )
    return G.GetMorganGenerator(radius=radius, fpSize=n_bits)


class _LRU(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)


_FEATURE_CACHE = _LRU(300_000)
_INPUT_TO_CANON = _LRU(300_000)
cache_stats = {"hits": 0, "misses": 0}


def drug_features_from_mol(mol: Any, canonical: str) -> DrugFeatures:
    """Features of a sanitized molecule, cached under its canonical SMILES."""
    hit = _FEATURE_CACHE.get(canonical)
    if hit is not None:
        cache_stats["hits"] += 1
        return hit
    cache_stats["misses"] += 1
    fp = _morgan_generator().GetFingerprintAsNumPy(mol)
    feats = DrugFeatures(
        smiles=canonical,
        ecfp_on=np.flatnonzero(fp).astype(np.int16),
        descriptors=_descriptors(mol),
        tokens=smiles_tokens(canonical).astype(np.uint8),
    )
    _FEATURE_CACHE.put(canonical, feats)
    return feats


def drug_features(smiles: str) -> DrugFeatures:
    """Parse (salt-stripping) a SMILES and return its features; raises `InvalidInput` for a bad SMILES."""
    canon = _INPUT_TO_CANON.get(smiles)
    if canon is not None and canon in _FEATURE_CACHE:
        cache_stats["hits"] += 1
        return _FEATURE_CACHE[canon]
    parsed, mol = sanitize_smiles(smiles)
    _INPUT_TO_CANON.put(smiles, parsed.smiles)
    return drug_features_from_mol(mol, parsed.smiles)


# SMILES bytes -> token id (the tokens of `_SMILES_TOKEN`): Cl and Br are first rewritten to one byte each
_TWO_LETTER = {"Cl": "\x01", "Br": "\x02"}
_TOKEN_BYTES = bytes(
    _SMILES_INDEX["Cl"] if c == 1 else _SMILES_INDEX["Br"] if c == 2
    else _SMILES_INDEX.get(chr(c), 1) if _SMILES_TOKEN.fullmatch(chr(c)) else 0
    for c in range(256)
)
_NOT_TOKENS = bytes(c for c in range(256) if c not in (1, 2) and not _SMILES_TOKEN.fullmatch(chr(c)))


def smiles_token_matrix(smiles: list[str], max_len: int = SMILES_MAX_TOKENS) -> np.ndarray:
    """`smiles_tokens` of many ASCII SMILES at once (n, max_len) int64, without a regex per molecule.

    Every "Cl" and "Br" in a SMILES is a token (a "C" or "B" always starts one), so replacing them first
    and then mapping byte by byte gives the regex's tokens.
    """
    out = np.zeros((len(smiles), max_len), dtype=np.int64)
    for i, s in enumerate(smiles):
        for two, one in _TWO_LETTER.items():
            if two in s:
                s = s.replace(two, one)
        ids = s.encode("ascii", "replace").translate(_TOKEN_BYTES, _NOT_TOKENS)[:max_len]
        out[i, : len(ids)] = np.frombuffer(ids, dtype=np.uint8)
    return out


def drug_table(mols: list[Any], smiles: list[str]) -> dict[str, np.ndarray]:
    """Model inputs of sanitized molecules with their canonical SMILES, computed in one batch: the same
    arrays as `stack_drugs` of `drug_features_from_mol` of each, without per-molecule feature objects
    or the feature cache (a screen sees each molecule once)."""
    n = len(mols)
    ecfp = np.zeros((n, ECFP_BITS), dtype=np.float32)
    if n:  # '0'/'1' text of every fingerprint in one buffer: the fastest way out of RDKit's bit vectors
        text = "".join(fp.ToBitString() for fp in _morgan_generator().GetFingerprints(mols, numThreads=1))
        np.subtract(np.frombuffer(text.encode("ascii"), dtype=np.uint8).reshape(n, ECFP_BITS), ord("0"), out=ecfp)
    desc = np.zeros((n, len(DESCRIPTOR_NAMES)), dtype=np.float32)
    for i, mol in enumerate(mols):
        desc[i] = _descriptors(mol)
    return {"ecfp": ecfp, "desc": desc, "tokens": smiles_token_matrix(smiles)}


def stack_drugs(feats: list[DrugFeatures]) -> dict[str, np.ndarray]:
    """Dense model inputs for a list of drugs: 'ecfp' (n, 1024), 'desc' (n, D), 'tokens' (n, L)."""
    n = len(feats)
    ecfp = np.zeros((n, ECFP_BITS), dtype=np.float32)
    if n:
        rows = np.repeat(np.arange(n), [len(f.ecfp_on) for f in feats])
        cols = np.concatenate([f.ecfp_on for f in feats]).astype(np.int64)
        ecfp[rows, cols] = 1.0
    desc = np.stack([f.descriptors for f in feats]) if n else np.zeros((0, len(DESCRIPTOR_NAMES)), np.float32)
    tokens = np.stack([f.tokens for f in feats]).astype(np.int64) if n else np.zeros((0, SMILES_MAX_TOKENS), np.int64)
    return {"ecfp": ecfp, "desc": desc, "tokens": tokens}


# ---------------------------------------------------------------- other fingerprints (dti_featurize)

FINGERPRINTS = ("ecfp4", "ecfp6", "fcfp4", "maccs", "atompair", "torsion", "rdkit", "descriptors")


def fingerprint(mol: Any, kind: str, n_bits: int = 2048) -> np.ndarray:
    """One fingerprint of a molecule as a dense uint8/float vector."""
    from rdkit.Chem import MACCSkeys

    if kind == "ecfp4":
        return _morgan_generator(2, n_bits).GetFingerprintAsNumPy(mol)
    if kind == "ecfp6":
        return _morgan_generator(3, n_bits).GetFingerprintAsNumPy(mol)
    if kind == "fcfp4":
        return _morgan_generator(2, n_bits, True).GetFingerprintAsNumPy(mol)
    if kind == "maccs":
        return np.array(list(MACCSkeys.GenMACCSKeys(mol)), dtype=np.uint8)
    if kind == "atompair":
        return _generator("atompair", n_bits).GetFingerprintAsNumPy(mol)
    if kind == "torsion":
        return _generator("torsion", n_bits).GetFingerprintAsNumPy(mol)
    if kind == "rdkit":
        return _generator("rdkit", n_bits).GetFingerprintAsNumPy(mol)
    if kind == "descriptors":
        return _descriptors(mol)
    raise ValueError(kind)  # callers validate kind first


@functools.cache
def _generator(kind: str, n_bits: int) -> Any:
    from rdkit.Chem import rdFingerprintGenerator as G

    if kind == "atompair":
        return G.GetAtomPairGenerator(fpSize=n_bits)
    if kind == "torsion":
        return G.GetTopologicalTorsionGenerator(fpSize=n_bits)
    return G.GetRDKitFPGenerator(fpSize=n_bits)


def ecfp_bit_atoms(mol: Any) -> dict[int, list[tuple[int, int]]]:
    """For each ECFP on-bit of the model's fingerprint, the (center atom, radius) environments that set it."""
    from rdkit.Chem import rdFingerprintGenerator as G

    ao = G.AdditionalOutput()
    ao.AllocateBitInfoMap()
    _morgan_generator().GetFingerprint(mol, additionalOutput=ao)
    return {int(b): [(int(a), int(r)) for a, r in envs] for b, envs in ao.GetBitInfoMap().items()}


# ---------------------------------------------------------------- proteins


def protein_indices(seq: str) -> np.ndarray:
    """Residue indices 0..19 for the standard amino acids, 20 for X (sequence already validated)."""
    codes = np.frombuffer(seq.encode("ascii"), dtype=np.uint8)
    idx = _AA_INDEX[codes]
    idx[idx == 21] = 20
    return idx


def protein_tokens(seq: str, max_len: int = PROTEIN_MAX_TOKENS) -> np.ndarray:
    """Token ids (1..21, 0 = padding) of the first `max_len` residues."""
    idx = protein_indices(seq[:max_len]) + 1
    out = np.zeros(max_len, dtype=np.int64)
    out[: len(idx)] = idx
    return out


def amino_acid_composition(seq: str) -> np.ndarray:
    """Fraction of each of the 20 standard amino acids (X residues excluded from numerator and total)."""
    idx = protein_indices(seq)
    idx = idx[idx < 20]
    counts = np.bincount(idx, minlength=20).astype(np.float32)
    return counts / max(1, len(idx))


def dipeptide_composition(seq: str) -> np.ndarray:
    """Fraction of each of the 400 ordered residue pairs (pairs with X skipped)."""
    idx = protein_indices(seq)
    a, b = idx[:-1], idx[1:]
    ok = (a < 20) & (b < 20)
    counts = np.bincount(a[ok] * 20 + b[ok], minlength=400).astype(np.float32)
    return counts / max(1, int(ok.sum()))


def ctd(seq: str) -> np.ndarray:
    """Composition, transition and distribution (21 values) for each of 7 attributes: 147 values."""
    idx = protein_indices(seq)
    idx = idx[idx < 20]
    out = []
    n = len(idx)
    for k in range(len(CTD_GROUPS)):
        g = _CTD_MAP[k, idx]
        comp = [(g == c).mean() if n else 0.0 for c in (1, 2, 3)]
        pairs = g[:-1] * 4 + g[1:]
        trans = []
        for x, y in ((1, 2), (1, 3), (2, 3)):
            trans.append(((pairs == x * 4 + y) | (pairs == y * 4 + x)).sum() / max(1, n - 1))
        dist = []
        for c in (1, 2, 3):
            pos = np.flatnonzero(g == c) + 1
            if len(pos) == 0:
                dist.extend([0.0] * 5)
                continue
            picks = [pos[0]] + [pos[max(0, int(np.floor(q * len(pos))) - 1)] for q in (0.25, 0.5, 0.75, 1.0)]
            dist.extend([p / n for p in picks])
        out.extend(comp + trans + dist)
    return np.asarray(out, dtype=np.float32)


@functools.lru_cache(maxsize=20_000)
def protein_features(seq: str) -> tuple[np.ndarray, np.ndarray]:
    """`(tokens, composition)` of a validated sequence; composition = AAC (20) + dipeptide (400) + CTD (147)."""
    comp = np.concatenate([amino_acid_composition(seq), dipeptide_composition(seq), ctd(seq)])
    return protein_tokens(seq), comp
