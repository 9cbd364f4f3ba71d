"""DTI features against independent references: RDKit's legacy APIs and hand-computed protein features."""

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import AllChem, Descriptors, MACCSkeys

from tools.dti import features as F


def _legacy_morgan(smiles, radius=2, n=1024):
    fp = AllChem.GetMorganFingerprintAsBitVect(Chem.MolFromSmiles(smiles), radius, nBits=n)
    arr = np.zeros(n, dtype=np.uint8)
    DataStructs.ConvertToNumpyArray(fp, arr)
    return arr


@pytest.mark.parametrize("smiles", ["CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "C[C@H](N)C(=O)O"])
def test_ecfp_matches_rdkit_legacy_morgan(smiles):
    feats = F.drug_features(smiles)
    assert np.array_equal(np.sort(feats.ecfp_on), np.flatnonzero(_legacy_morgan(smiles)))
    mol = Chem.MolFromSmiles(smiles)
    assert np.array_equal(F.fingerprint(mol, "ecfp6", 2048), _legacy_morgan(smiles, 3, 2048))
    assert F.fingerprint(mol, "maccs").tolist() == list(MACCSkeys.GenMACCSKeys(mol))


def test_descriptors_match_rdkit_descriptors_module():
    mol = Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)O")
    d = dict(zip(F.DESCRIPTOR_NAMES, F.fingerprint(mol, "descriptors"), strict=True))
    assert d["exact_mol_wt"] == pytest.approx(Descriptors.ExactMolWt(mol), rel=1e-5)
    assert d["tpsa"] == pytest.approx(Descriptors.TPSA(mol), rel=1e-5)
    assert d["heavy_atoms"] == 13 and d["aromatic_rings"] == 1 and d["rings"] == 1
    assert d["lipinski_hbd"] == 1 and d["lipinski_hba"] == 4
    assert d["fraction_csp3"] == pytest.approx(1 / 9)


def test_feature_cache_is_keyed_by_canonical_smiles():
    s1, s2 = "OCC(O)CO.", "C(C(CO)O)O"
    before = dict(F.cache_stats)
    a = F.drug_features("C(O)C(O)CO")
    mid = dict(F.cache_stats)
    b = F.drug_features(s2)
    after = dict(F.cache_stats)
    assert a is b  # the same cached object for two spellings
    assert after["hits"] - mid["hits"] == 1
    assert mid["misses"] - before["misses"] <= 1
    assert s1  # a trailing '.' spelling is not needed for the check


def test_smiles_tokens_split_two_letter_halogens():
    ids = F.smiles_tokens("ClCBr")
    vocab = F.SMILES_VOCAB
    assert [vocab[i] for i in ids[:3]] == ["Cl", "C", "Br"] and ids[3] == 0


def test_amino_acid_and_dipeptide_composition_by_hand():
    seq = "AACDA"
    aac = F.amino_acid_composition(seq)
    assert aac[F.AMINO_ACIDS.index("A")] == pytest.approx(3 / 5)
    assert aac[F.AMINO_ACIDS.index("C")] == pytest.approx(1 / 5)
    assert aac.sum() == pytest.approx(1.0)
    dp = F.dipeptide_composition(seq)
    idx = {a: i for i, a in enumerate(F.AMINO_ACIDS)}
    # pairs AA, AC, CD, DA
    for pair in ("AA", "AC", "CD", "DA"):
        assert dp[idx[pair[0]] * 20 + idx[pair[1]]] == pytest.approx(1 / 4)
    assert dp.sum() == pytest.approx(1.0)
    # X residues are skipped in both
    assert F.amino_acid_composition("AXA")[idx["A"]] == 1.0
    assert F.dipeptide_composition("AXA").sum() == 0.0


def test_ctd_hydrophobicity_by_hand():
    # hydrophobicity groups: polar RKEDQN (1), neutral GASTPHY (2), hydrophobic CLVIMFW (3)
    seq = "RRGLLL"  # groups 1 1 2 3 3 3
    v = F.ctd(seq)[:21]
    assert v[:3] == pytest.approx([2 / 6, 1 / 6, 3 / 6])
    # transitions between different groups over 5 neighbour pairs: 1-2 once, 1-3 never, 2-3 once
    assert v[3:6] == pytest.approx([1 / 5, 0.0, 1 / 5])
    # distribution of group 3 (positions 4,5,6): first, 25%, 50%, 75%, 100% -> 4, 4, 4, 5, 6 (over 6)
    assert v[16:21] == pytest.approx([4 / 6, 4 / 6, 4 / 6, 5 / 6, 6 / 6])
    assert len(F.ctd("ACDEFGHIKLMNPQRSTVWY")) == 147


def test_protein_features_shapes():
    tokens, comp = F.protein_features("MKTAYIAKQRQISFVKSHFSRQ")
    assert comp.shape == (F.PROTEIN_COMPOSITION_DIM,) == (567,)
    assert tokens[0] == 1 + F.AMINO_ACIDS.index("M") and tokens[22] == 0
