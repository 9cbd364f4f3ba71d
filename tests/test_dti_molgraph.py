"""The molecular graph encoder: featurization against RDKit, invariances, cancellation, pretraining, weights."""

import numpy as np
import pytest
import torch
from rdkit import Chem

from evals.dti.pretrain_drugs import CORPUS_FILES, EVALUATION_FILES, build_corpus, pretrain
from evals.shared_data import shared_data_path
from tools.dti.molgraph import (
    ATOM_DIM,
    BOND_DIM,
    WEIGHTS,
    MolGraphEncoder,
    embed_mols,
    graph_arrays,
    load_encoder,
    read_checkpoint,
)

torch.set_num_threads(1)


SMILES = [
    "CC(=O)Oc1ccccc1C(=O)O",
    "N[C@@H](C/C=C\\C)C(=O)O",
    "C[C@H](N)C(=O)[O-]",
    "C[N+](C)(C)CCO",
    "O=C1CCCN1c1ccc(F)cc1Cl",
    "CC1(C)S[C@@H]2[C@H](NC(=O)Cc3ccccc3)C(=O)N2[C@H]1C(=O)O",
    "[Na+]",
    "FC(F)(F)c1ccc(Br)cc1I",
]


@pytest.fixture(scope="module")
def mols():
    return [Chem.MolFromSmiles(s) for s in SMILES]


@pytest.fixture(scope="module")
def encoder():
    return load_encoder()


def test_graph_arrays_counts_match_rdkit(mols):
    g = graph_arrays(mols)
    atoms = [m.GetNumAtoms() for m in mols]
    bonds = [m.GetNumBonds() for m in mols]
    assert g["x"].shape == (sum(atoms), ATOM_DIM)
    assert g["edge_index"].shape == (2, 2 * sum(bonds))
    assert g["edge_attr"].shape == (2 * sum(bonds), BOND_DIM)
    assert g["atom_counts"].tolist() == atoms
    assert np.bincount(g["graph"], minlength=len(mols)).tolist() == atoms
    # every edge joins two atoms of the same molecule, and each bond appears once in each direction
    src, dst = g["edge_index"]
    assert np.array_equal(g["graph"][src], g["graph"][dst])
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == sorted(zip(dst.tolist(), src.tolist(), strict=True))
    # the degree of each atom is its number of outgoing edges
    degrees = np.concatenate([[a.GetDegree() for a in m.GetAtoms()] for m in mols])
    assert np.array_equal(np.bincount(src, minlength=len(degrees)), degrees)


def test_enantiomers_differ_in_features_and_embedding(encoder):
    r, s = Chem.MolFromSmiles("C[C@@H](N)C(=O)O"), Chem.MolFromSmiles("C[C@H](N)C(=O)O")
    assert not np.array_equal(graph_arrays([r])["x"], graph_arrays([s])["x"])
    e = embed_mols([r, s], encoder)
    assert np.abs(e[0] - e[1]).max() > 1e-4


def test_batch_equals_each_alone(mols, encoder):
    together = embed_mols(mols, encoder)
    assert together.shape == (len(mols), 128) and together.dtype == np.float32
    alone = np.vstack([embed_mols([m], encoder) for m in mols])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    # and in batches of 3 (a batch boundary inside the list)
    np.testing.assert_allclose(embed_mols(mols, encoder, batch=3), together, atol=1e-5)


def test_atom_order_does_not_matter(mols, encoder):
    rng = np.random.default_rng(0)
    for mol in mols:
        ref = embed_mols([mol], encoder)
        for _ in range(3):
            seed = int(rng.integers(1 << 30))
            Chem.rdBase.SeedRandomNumberGenerator(seed)
            other = Chem.MolFromSmiles(Chem.MolToSmiles(mol, doRandom=True))
            np.testing.assert_allclose(embed_mols([other], encoder), ref, atol=1e-5)


def test_ion_without_bonds_embeds_finite(encoder):
    for smi in ("[Na+]", "[Cl-]", "[Pt+2]"):
        mol = Chem.MolFromSmiles(smi)
        g = graph_arrays([mol])
        assert g["edge_index"].shape == (2, 0)
        assert np.isfinite(embed_mols([mol], encoder)).all()
    assert np.isfinite(embed_mols([mol], MolGraphEncoder())).all()


def test_invalid_molecule_is_named_by_index(mols):
    with pytest.raises(ValueError, match="molecule 2"):
        embed_mols([mols[0], mols[1], None])
    with pytest.raises(ValueError, match="molecule 1: the molecule has no atoms"):
        graph_arrays([mols[0], Chem.Mol()])
    with pytest.raises(ValueError, match=r"molecule 0: .*sanitize"):
        graph_arrays([Chem.MolFromSmiles("c1ccccc1", sanitize=False)])


def test_cancellation_stops_between_batches(mols, encoder):
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError, match="cancelled"):
        embed_mols(mols, encoder, batch=2, check=check)
    assert len(calls) == 2  # the remaining two batches never ran


@pytest.mark.shared_data(f"dti/{CORPUS_FILES[0]}")
def test_short_pretraining_lowers_the_loss_and_is_deterministic():
    from tools.dti.chem import try_parse_smiles

    smiles = []
    with open(shared_data_path("dti", CORPUS_FILES[0])) as fh:
        next(fh)
        for line in fh:
            parsed, _ = try_parse_smiles(line.rstrip("\n").split("\t")[1])
            if parsed is not None and parsed.smiles not in smiles:
                smiles.append(parsed.smiles)
            if len(smiles) == 64:
                break
    encoder, history = pretrain(smiles, epochs=6, batch=32, progress=None)
    assert len(history["loss"]) == 6
    assert history["loss"][-1] < 0.8 * history["loss"][0]
    assert history["gram"][-1] < history["gram"][0]
    assert not encoder.training
    # seeded: a second run retraces the first
    again, history2 = pretrain(smiles, epochs=6, batch=32, progress=None)
    assert history2["loss"] == history["loss"]
    for key, value in encoder.state_dict().items():
        assert torch.equal(value, again.state_dict()[key])


def test_shipped_weights_and_their_corpus_record():
    assert WEIGHTS.stat().st_size < 2_000_000
    ckpt = read_checkpoint()
    assert set(ckpt) == {"state_dict", "config", "corpus"}
    record = ckpt["corpus"]
    used = [f["file"] for f in record["files"]]
    assert used == list(CORPUS_FILES)
    assert not set(used) & set(EVALUATION_FILES)
    assert not any(name.endswith(("val.csv", "test.csv")) for name in used)
    assert record["left_out_evaluation_molecules"] > 0
    assert record["molecules"] > 10_000 and len(record["smiles_sha256"]) == 64
    loss = record["training"]["loss"]
    assert loss[-1] < loss[0]
    enc = load_encoder()
    assert enc.config() == ckpt["config"] and not enc.training


def test_corpus_leaves_out_evaluation_molecules(tmp_path):
    # a miniature data folder: every training file holds aspirin, ethanol written two ways and a
    # validation molecule; the validation and test files hold caffeine
    caffeine = "Cn1cnc2c1c(=O)n(C)c(=O)n2C"
    train = ["CC(=O)Oc1ccccc1C(=O)O", "OCC", "C(O)C", caffeine]
    for rel in CORPUS_FILES:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.startswith("dtiam"):
            path.write_text("id\tsmiles\n" + "".join(f"d{i}\t{s}\n" for i, s in enumerate(train)))
        else:
            path.write_text("SMILES,Protein,Y\n" + "".join(f"{s},MKV,1\n" for s in train))
    for rel in EVALUATION_FILES:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SMILES,Protein,Y\n{caffeine},MKV,0\n")
    corpus, record = build_corpus(tmp_path)
    assert corpus == sorted([Chem.CanonSmiles("CC(=O)Oc1ccccc1C(=O)O"), "CCO"])
    assert record["molecules"] == 2
    assert record["evaluation_molecules"] == 1 and record["left_out_evaluation_molecules"] == 1
