"""The known-interaction neighbourhood modality: hand-computed features, leave-self-out, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from tools.dti.neighbours import FEATURE_NAMES, NeighbourIndex, kmer_profiles, tanimoto
from tools.dti.train import (
    Pairs,
    TrainConfig,
    build_tables,
    fit,
    load_checkpoint,
    predict,
    predict_parts,
    save_checkpoint,
)

DRUGS = ["CC(=O)Oc1ccccc1C(=O)O", "CC(=O)Nc1ccc(O)cc1", "c1ccccc1O", "CCN(CC)CC", "OC(=O)c1ccccc1O"]
P1 = (
    "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQHDFSAGEGLYTHMKALRPDEDRL"
    "SPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQIHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRH"
)
P2 = P1[10:] + P1[:10]  # a rotation: shares almost all 3-mers with P1
P3 = "GSHMLEDPVDAFQLGPAVTELRQAIDELRRRGYSEEEIHRAVAELVRQGRPEEEIVRLLRERG" * 3


def _feature(name: str) -> int:
    return FEATURE_NAMES.index(name)


def _index_and_tables(pairs: list[tuple[int, int, float]]):
    smiles = [DRUGS[d] for d, _, _ in pairs]
    seqs = [(P1, P2, P3)[t] for _, t, _ in pairs]
    tables, di, pi, errors = build_tables(smiles, seqs)
    assert not errors
    y = np.array([v for _, _, v in pairs])
    return tables, di, pi, y


def test_similarities_match_rdkit_and_a_direct_count():
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    mols = [Chem.MolFromSmiles(s) for s in DRUGS]
    fps = [gen.GetFingerprint(m) for m in mols]
    bits = np.array([gen.GetFingerprintAsNumPy(m) for m in mols])
    sim = tanimoto(bits, bits)
    for i in range(len(DRUGS)):
        for j in range(len(DRUGS)):
            assert sim[i, j] == pytest.approx(DataStructs.TanimotoSimilarity(fps[i], fps[j]), abs=1e-6)
    for k in (3, 5):
        prof = kmer_profiles([P1, P3], k).toarray()
        counts = [{}, {}]
        for seq, c in zip((P1, P3), counts, strict=True):
            for i in range(len(seq) - k + 1):
                c[seq[i : i + k]] = c.get(seq[i : i + k], 0) + 1
        assert prof[0].max() == pytest.approx(max(counts[0].values()) / np.sqrt(sum(c * c for c in counts[0].values())))
        assert np.linalg.norm(prof, axis=1) == pytest.approx([1.0, 1.0])
        dot = sum(n * counts[1].get(m, 0) for m, n in counts[0].items())
        norms = np.sqrt(sum(n * n for n in counts[0].values()) * sum(n * n for n in counts[1].values()))
        assert prof[0] @ prof[1] == pytest.approx(dot / norms, abs=1e-6)


def test_hand_computed_features_of_a_small_reference():
    # drugs 0..2 with target 0, drug 0 also with target 1; negatives for drug 3 and 4
    ref = [(0, 0, 1.0), (1, 0, 1.0), (2, 0, 0.0), (0, 1, 1.0), (3, 1, 0.0), (4, 2, 0.0), (3, 0, 0.0), (4, 0, 0.0)]
    tables, di, pi, y = _index_and_tables(ref)
    index = NeighbourIndex.from_tables(tables, di, pi, y)
    f = index.features_for_tables(tables, di, pi)
    bits = tables.drugs["ecfp"]
    s = tanimoto(bits, bits)
    st = (kmer_profiles(tables.sequences) @ kmer_profiles(tables.sequences).T).toarray()
    prior = y.mean()
    # pair (drug 0, target 0): the drug's other pairs are (0, 1) only, a positive
    d0, t0, t1 = di[0], pi[0], pi[3]
    assert f[0, _feature("drug_known")] == 1
    assert f[0, _feature("drug_other_positives_log")] == pytest.approx(np.log(2))
    assert f[0, _feature("drug_other_label_mean")] == pytest.approx((1 + prior) / 2)
    assert f[0, _feature("drug_partner_target_similarity")] == pytest.approx(st[t0, t1], abs=1e-6)
    # the target's other pairs: drug 1 (+), drug 2 (-), drug 3 (-), drug 4 (-)
    assert f[0, _feature("target_other_positives_log")] == pytest.approx(np.log(2))
    assert f[0, _feature("target_other_label_mean")] == pytest.approx((1 + prior) / 5)
    # its ligands are the positives only: drug 4 (salicylic acid) is nearer aspirin but a negative
    assert s[d0, di[5]] > s[d0, di[1]]
    assert f[0, _feature("target_ligand_similarity")] == pytest.approx(s[d0, di[1]], abs=1e-6)
    # cold block: pairs with neither drug 0 nor target 0 -> (3, 1, 0) and (4, 2, 0)
    w = s[d0] ** 3
    num = w[di[4]] * 0 + w[di[5]] * 0
    den = w[di[4]] + w[di[5]]
    assert f[0, _feature("similar_drugs_label_mean")] == pytest.approx((num + 1e-3 * prior) / (den + 1e-3), abs=1e-5)
    # kernel over known positives sharing neither end: none here
    assert f[0, _feature("similarity_kernel_log")] == pytest.approx(0.0, abs=1e-6)
    # pair (drug 4, target 2): the drug's other pair is a negative; the target has no other pair
    assert f[5, _feature("drug_known")] == 1 and f[5, _feature("drug_other_positives_log")] == 0
    assert f[5, _feature("drug_partner_target_similarity")] == 0 and f[5, _feature("target_known")] == 0
    # kernel for (drug 2, target 0): positive (0, 1) shares neither end
    k = 2
    want = s[di[k], d0] ** 3 * st[pi[k], t1] ** 3
    assert f[k, _feature("similarity_kernel_log")] == pytest.approx(np.log1p(want), abs=1e-5)


def test_kmer_size_sets_the_target_similarity_and_is_kept_in_the_state():
    ref = [(0, 0, 1.0), (0, 1, 1.0), (1, 2, 1.0), (2, 0, 0.0), (3, 1, 0.0)]
    tables, di, pi, y = _index_and_tables(ref)
    t0, t1 = pi[0], pi[1]
    col = _feature("drug_partner_target_similarity")
    for k in (3, 5):
        index = NeighbourIndex.from_tables(tables, di, pi, y, kmer=k)
        prof = kmer_profiles(tables.sequences, k)
        cosine = (prof[t0] @ prof[t1].T).toarray()[0, 0]
        assert index.features_for_tables(tables, di, pi)[0, col] == pytest.approx(cosine, abs=1e-6)
    # P3 is unrelated to P1: it shares fewer of its 5-mers with P1 than of its 3-mers
    p3, p5 = kmer_profiles([P1, P3], 3), kmer_profiles([P1, P3], 5)
    assert (p5[0] @ p5[1].T).toarray()[0, 0] < (p3[0] @ p3[1].T).toarray()[0, 0]
    index = NeighbourIndex.from_tables(tables, di, pi, y, kmer=5)
    back = NeighbourIndex.from_state(index.state())
    assert back.kmer == 5
    assert np.array_equal(back.features_for_tables(tables, di, pi), index.features_for_tables(tables, di, pi))
    legacy = NeighbourIndex.from_tables(tables, di, pi, y, kmer=3).state()
    del legacy["kmer"]  # saved before k was a setting
    old = NeighbourIndex.from_state(legacy)
    assert old.kmer == 3
    assert np.array_equal(
        old.features_for_tables(tables, di, pi),
        NeighbourIndex.from_tables(tables, di, pi, y, kmer=3).features_for_tables(tables, di, pi),
    )
    with pytest.raises(ValueError, match="2 to 5"):
        NeighbourIndex.from_tables(tables, di, pi, y, kmer=6)
    with pytest.raises(ValueError, match="target_kmer must be 2 to 5"):
        fit(tables, Pairs(di, pi, y), TrainConfig(target_kmer=7))


def test_training_pairs_see_what_an_unseen_pair_would():
    rng = np.random.default_rng(0)
    ref = sorted({(int(rng.integers(5)), int(rng.integers(3)), float(rng.random() < 0.4)) for _ in range(12)})
    ref = list({(d, t): (d, t, v) for d, t, v in ref}.values())
    tables, di, pi, y = _index_and_tables(ref)
    index = NeighbourIndex.from_tables(tables, di, pi, y)
    full = index.features_for_tables(tables, di, pi)
    # the label means are smoothed towards the reference's base rate; give the smaller references the same one
    without = []
    for i in range(len(y)):
        rest = np.arange(len(y)) != i
        alone = NeighbourIndex.from_tables(tables, di[rest], pi[rest], y[rest])
        alone.prior = index.prior
        # the drug and target blocks of a training pair are those of the pair left out of the reference
        got = alone.features_for_tables(tables, di[i : i + 1], pi[i : i + 1])[0]
        assert np.allclose(full[i, :8], got[:8], atol=1e-6)
        apart = (di != di[i]) & (pi != pi[i])
        if apart.any():
            cold = NeighbourIndex.from_tables(tables, di[apart], pi[apart], y[apart])
            cold.prior = index.prior
            got = cold.features_for_tables(tables, di[i : i + 1], pi[i : i + 1])[0]
            # the cold block of a pair is what a reference without its drug and its target gives
            assert np.allclose(full[i, 8:11], got[8:11], atol=1e-5)
            without.append(i)
    assert without


def test_another_spelling_of_a_reference_drug_is_matched_and_left_out():
    ref = [(0, 0, 1.0), (1, 0, 1.0), (0, 1, 0.0), (2, 1, 1.0)]
    tables, di, pi, y = _index_and_tables(ref)
    index = NeighbourIndex.from_tables(tables, di, pi, y)
    spelled = "OC(=O)c1ccccc1OC(C)=O"  # aspirin written another way
    q, qd, qp, _ = build_tables([spelled], [P1])
    assert q.smiles[0] == tables.smiles[di[0]]
    a = index.features_for_tables(q, qd, qp)
    assert np.allclose(a, index.features_for_tables(tables, di[:1], pi[:1]))
    assert a[0, _feature("max_drug_similarity")] < 1.0  # itself is not its own neighbour


def test_ensemble_with_neighbourhood_round_trips_and_averages_members(tmp_path):
    pairs = [(d, t) for d in range(5) for t in range(3)]
    smiles = [DRUGS[d] for d, _ in pairs] * 4
    seqs = [(P1, P2, P3)[t] for _, t in pairs] * 4
    y = np.array([float((d + t) % 2 == 0) for d, t in pairs] * 4)
    tables, di, pi, _ = build_tables(smiles, seqs)
    cfg = TrainConfig(epochs=3, batch_size=64, members=2, target_kmer=4)
    model, _ = fit(tables, Pairs(di, pi, y), cfg)
    assert len(model.members) == 2 and model.neighbours is not None and model.neighbours.kmer == 4
    p = predict(model, tables, di, pi)
    pn, pb = predict_parts(model, tables, di, pi)
    members = []
    for m in model.members:
        members.append(predict(m, tables, di, pi))
    assert np.allclose(pn, np.mean(members, axis=0), atol=1e-6)
    # the score blends the networks' mean with the boosted member by the model's weight
    assert model.boost_weight == 0.5 and np.allclose(p, 0.5 * pn + 0.5 * pb, atol=1e-12)
    back, _ = load_checkpoint(save_checkpoint(model, tmp_path / "e.pt", {"name": "e"}))
    assert back.neighbours is not None and len(back.neighbours.y) == len(y)
    assert np.allclose(predict(back, tables, di, pi), p, atol=2e-2)
    assert np.array_equal(back.neighbours.drug_bits, model.neighbours.drug_bits)
    assert back.neighbours.kmer == 4
    with pytest.raises(ValueError, match="neighbourhood"):
        model.members[0].interaction_logit(torch.zeros(1, 64), torch.zeros(1, 64))


def test_ensemble_members_share_their_frozen_sequence_encoders(tmp_path):
    smiles = [DRUGS[d] for d in range(5) for _ in range(3)] * 3
    seqs = [(P1, P2, P3)[t] for _ in range(5) for t in range(3)] * 3
    y = np.array([float(i % 2) for i in range(len(smiles))])
    tables, di, pi, _ = build_tables(smiles, seqs)
    model, _ = fit(tables, Pairs(di, pi, y), TrainConfig(epochs=2, batch_size=64, members=3))
    a, b = model.members[0], model.members[2]
    assert a.encoders["drug_smiles"] is b.encoders["drug_smiles"]
    assert a.encoders["protein_sequence"] is b.encoders["protein_sequence"]
    assert a.encoders["drug_ecfp"] is not b.encoders["drug_ecfp"]
    back, _ = load_checkpoint(save_checkpoint(model, tmp_path / "s.pt", {}))
    assert back.members[0].encoders["drug_smiles"] is back.members[1].encoders["drug_smiles"]
    assert np.allclose(predict(back, tables, di, pi), predict(model, tables, di, pi), atol=2e-2)
    # trained (not frozen) sequence encoders differ per member and are not shared
    cfg = TrainConfig(epochs=1, pretrain_epochs=1, batch_size=64, members=2)
    pre, _ = fit(tables, Pairs(di, pi, y), cfg)
    assert pre.members[0].encoders["drug_smiles"] is not pre.members[1].encoders["drug_smiles"]
