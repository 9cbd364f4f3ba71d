"""Drug views of the boosted members: each view against RDKit, the members' mean, checkpoints, and the
screening and attribution paths scoring as training-time prediction does."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem
from rdkit.Chem import Crippen, rdMolDescriptors

from tools.dti.boost import BoostedTrees, BoostedViews, boost_features, fit_trees
from tools.dti.features import _descriptors
from tools.dti.views import COUNT_BITS, PHYSCHEM_SIZE, add_views, parse_member, view_matrix

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
DRUGS = [ASPIRIN, "CC(=O)Nc1ccc(O)cc1", "c1ccccc1O", "CCN(CC)CC", "OC(=O)c1ccccc1O", "[Na+]",
         "Cn1cnc2c1c(=O)n(C)c(=O)n2C"]
P1 = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRL"
P2 = "GSHMLEDPVDAFQLGPAVTELRQAIDELRRRGYSEEEIHRAVAELVRQGRPEEEIVRLLRERG" * 2


def _mols(smiles=DRUGS):
    return [Chem.MolFromSmiles(s) for s in smiles]


def test_ecfp_counts_equal_rdkit_hashed_morgan_counts() -> None:
    from rdkit.Chem import AllChem

    for mol, row in zip(_mols(), view_matrix(_mols(), "ecfp_counts"), strict=True):
        ref = np.zeros(COUNT_BITS)
        for bit, n in AllChem.GetHashedMorganFingerprint(mol, 2, nBits=COUNT_BITS).GetNonzeroElements().items():
            ref[bit] = n
        assert np.array_equal(row, ref)


def test_atom_pair_counts_count_every_pair_of_heavy_atoms_once() -> None:
    mols = _mols()
    for mol, row in zip(mols, view_matrix(mols, "atompair_counts"), strict=True):
        n = mol.GetNumHeavyAtoms()
        assert row.sum() == n * (n - 1) // 2


def test_physchem_columns_are_rdkit_values() -> None:
    mols = _mols()
    m = view_matrix(mols, "physchem")
    assert m.shape == (len(mols), PHYSCHEM_SIZE) and np.isfinite(m).all()
    for mol, row in zip(mols, m, strict=True):
        assert row[0] == pytest.approx(Crippen.MolLogP(mol), rel=1e-5, abs=1e-5)
        assert row[1] == pytest.approx(Crippen.MolMR(mol), rel=1e-5, abs=1e-5)
        assert np.array_equal(row[38:80], np.array(rdMolDescriptors.MQNs_(mol), dtype=np.float32))
        assert np.array_equal(row[-19:], _descriptors(mol))
    assert m[0, 38] == 9  # the first molecular quantum number counts carbons: aspirin has 9


def test_add_views_from_smiles_equals_from_molecules_and_keeps_what_is_there() -> None:
    a = add_views({}, ["ecfp", "physchem"], mols=_mols())
    b = add_views({"ecfp": a["ecfp"] * 0}, ["ecfp", "physchem"], smiles=DRUGS)
    assert np.array_equal(a["view:physchem"], b["view:physchem"])
    assert not b["ecfp"].any()  # an existing table entry is never recomputed
    with pytest.raises(ValueError, match="do not parse"):
        add_views({}, ["physchem"], smiles=["c1ccccc1", "C1CC"])


def test_unknown_member_names_the_choices() -> None:
    assert parse_member("physchem+nbr") == ("physchem", True) and parse_member("ecfp") == ("ecfp", False)
    for bad in ("maccs", "ecfp+nbrs", "ecfp+"):
        with pytest.raises(ValueError, match="ecfp_counts, atompair_counts, physchem"):
            parse_member(bad)


def test_boosted_views_average_their_members_and_round_trip() -> None:
    rng = np.random.default_rng(0)
    mols = _mols()
    table = add_views({}, ["ecfp", "atompair_counts"], mols=mols)
    rows = rng.integers(0, len(mols), 80)
    comp = rng.random((80, 20))
    nbr = rng.random((80, 13)).astype(np.float32)
    y = (rng.random(80) < 0.5).astype(float)
    t1 = fit_trees(boost_features(table["ecfp"][rows], comp, nbr), y, 0, 25)
    t2 = fit_trees(boost_features(table["view:atompair_counts"][rows], comp, None), y, 1, 25)
    bv = BoostedViews(["ecfp", "atompair_counts"], [True, False], [t1, t2])
    p = bv.predict_proba(table, rows, comp, nbr)
    ref = (t1.predict_proba(boost_features(table["ecfp"][rows], comp, nbr))
           + t2.predict_proba(boost_features(table["view:atompair_counts"][rows], comp, None))) / 2
    assert np.allclose(p, ref, atol=1e-12)
    back = BoostedViews.from_state(bv.state())
    assert back.specs == ["ecfp+nbr", "atompair_counts"]
    assert np.allclose(back.predict_proba(table, rows, comp, nbr), p, atol=1e-12)
    legacy = BoostedViews.from_state(t1.state())  # a single tree state of an earlier checkpoint
    assert legacy.specs == ["ecfp+nbr"] and isinstance(legacy.trees[0], BoostedTrees)


def test_screen_and_explain_score_as_prediction_does(tmp_path, monkeypatch) -> None:
    from tools.dti.library import ScreenTask, screen_partition
    from tools.dti.train import Pairs, TrainConfig, build_tables, fit, load_checkpoint, predict, save_checkpoint
    from tools.paths import output_dir

    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_DIR", str(tmp_path / "out"))
    from tools.settings import reload_settings

    reload_settings()
    drugs = DRUGS[:5]
    pairs = [(d, t) for d in range(5) for t in range(2)] * 3
    y = np.array([float((d + t) % 2 == 0) for d, t in pairs])
    tables, di, pi, _ = build_tables([drugs[d] for d, _ in pairs], [(P1, P2)[t] for _, t in pairs])
    model, _ = fit(tables, Pairs(di, pi, y), TrainConfig(epochs=1, batch_size=64, members=1, boost_iterations=25))
    assert model.boost.specs == ["ecfp+nbr", "ecfp_counts", "atompair_counts", "physchem+nbr"]
    path = save_checkpoint(model, output_dir() / "dti_models" / "views_test.pt", {"name": "views_test"})
    back, _ = load_checkpoint(path)
    assert back.boost.specs == model.boost.specs
    q_tables, qd, qp, _ = build_tables(drugs, [P1] * 5)
    expected = predict(back, q_tables, qd, qp)
    part = screen_partition(ScreenTask("views_test", P1, 10, [(k + 1, f"m{k}", s, None) for k, s in enumerate(drugs)]))
    assert np.allclose(part.scores, expected, atol=1e-5)

    from tools.dti.scoring import dti_explain

    r = dti_explain(smiles=drugs[0], protein=P1, model="views_test")
    assert r.score == pytest.approx(float(expected[0]), abs=1e-5)
