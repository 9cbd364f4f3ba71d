"""The DTI model: Gramian volume against geometry, the GRAM loss, adaptive modality dropout, training."""

import math

import numpy as np
import pytest
import torch

from tools.dti.model import (
    MODALITIES,
    AdaptiveModalityDropout,
    CNNEncoder,
    DTIModel,
    gram_contrastive_loss,
    gram_volume,
)
from tools.dti.train import Pairs, TrainConfig, build_tables, fit, load_checkpoint, predict, save_checkpoint

torch.set_num_threads(1)


def test_gram_volume_matches_geometry():
    e = torch.eye(4)
    # orthonormal vectors span a unit cube
    assert gram_volume([e[:1], e[1:2], e[2:3]]).item() == pytest.approx(1.0, abs=1e-5)
    # two unit vectors at angle theta span a parallelogram of area sin(theta)
    theta = 0.3
    u = torch.tensor([[1.0, 0.0, 0.0]])
    v = torch.tensor([[math.cos(theta), math.sin(theta), 0.0]])
    assert gram_volume([u, v]).item() == pytest.approx(math.sin(theta), abs=1e-4)
    # collinear vectors span no volume (up to the stabilising epsilon)
    assert gram_volume([u, 3 * u, -u]).item() < 2e-3
    # random vectors: sqrt(det(A A^T)) computed independently with numpy
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 16))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    ref = math.sqrt(np.linalg.det(a @ a.T))
    got = gram_volume([torch.tensor(a[i : i + 1], dtype=torch.float64) for i in range(5)]).item()
    assert got == pytest.approx(ref, rel=1e-3)


def test_gram_loss_prefers_aligned_modalities():
    g = torch.Generator().manual_seed(0)
    base = torch.randn(32, 16, generator=g)
    aligned = {m: base + 0.3 * torch.randn(32, 16, generator=g) for m in ("a", "b", "c")}
    perm = torch.randperm(32, generator=g)
    shuffled = {"a": aligned["a"], "b": aligned["b"][perm], "c": aligned["c"][perm]}
    la = gram_contrastive_loss(aligned, "a", 0.05).item()
    ls = gram_contrastive_loss(shuffled, "a", 0.05).item()
    assert la < 0.5 * ls
    # matching samples span a smaller volume than an anchor with another sample's modalities
    own = gram_volume([aligned[m] for m in ("a", "b", "c")])
    other = gram_volume([aligned["a"], aligned["b"][perm], aligned["c"][perm]])
    assert own.mean() < 0.5 * other.mean()


def test_adaptive_dropout_targets_the_dominant_modality():
    drop = AdaptiveModalityDropout(("d1", "d2"), ("p1",), p_base=0.2, p_max=0.6)
    embs = {m: torch.zeros(8, 4, requires_grad=True) for m in ("d1", "d2", "p1")}
    (embs["d1"].sum() * 10 + embs["d2"].sum() + embs["p1"].sum()).backward()
    for _ in range(50):
        drop.observe(embs)
    p = drop.probabilities()
    assert p["d1"] > p["d2"] and p["d1"] > p["p1"] and p["d1"] <= 0.6
    gen = torch.Generator().manual_seed(1)
    for _ in range(100):
        keep = drop.sample_batch(gen)
        assert keep & {"d1", "d2"} and "p1" in keep  # one modality per side always survives
    masks = drop.sample_masks(500, 500, gen)
    assert torch.all(masks["d1"] + masks["d2"] >= 1) and torch.all(masks["p1"] == 1)
    assert masks["d1"].mean() < masks["d2"].mean()
    uniform = AdaptiveModalityDropout(("d1",), ("p1",), p_base=0.2, adaptive=False)
    assert uniform.probabilities() == {"d1": 0.2, "p1": 0.2}


def test_ngram_cnn_pooling_matches_hand_computation():
    enc = CNNEncoder(vocab=5, n=2, channels=3, dim=4)
    tokens = torch.tensor([[1, 2, 3, 4, 0, 0], [2, 2, 1, 0, 0, 0]])
    # every complete window's activation is relu(E[n-gram id]); windows touching padding are left out
    with torch.no_grad():
        emb = enc.gram.weight
        ids = tokens[:, :-1] * 5 + tokens[:, 1:]
        valid = (tokens[:, :-1] != 0) & (tokens[:, 1:] != 0)
        h = torch.relu(emb[ids]) * valid[..., None]
        n_valid = valid.sum(1, keepdim=True)
        ref = enc.proj(torch.cat([h.max(1).values, h.sum(1) / n_valid], 1))
        enc.eval()
        assert torch.allclose(enc(tokens), ref, atol=1e-6)


SEQ_A = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ"
SEQ_B = "MSDNGPQNQRNAPRITFGGPSDSTGSNQNGERSGARSKQRRPQGLPNNTASWFTALTQHGKEDLKF"


def _toy_task(n_drugs=60, seed=0):
    """Binding iff (drug has a carboxylic acid) == (target is A): a rule both sides must be read for."""
    rng = np.random.default_rng(seed)
    acids = [f"{'C' * k}C(=O)O" for k in range(1, 16)] + [f"c1ccc(cc1){'C' * k}C(=O)O" for k in range(0, 15)]
    amines = [f"{'C' * k}N" for k in range(1, 16)] + [f"c1ccc(cc1){'C' * k}N" for k in range(0, 15)]
    drugs = (acids + amines)[:n_drugs]
    prots = [SEQ_A[i:] + SEQ_A[:i] for i in range(0, 20, 4)] + [SEQ_B[i:] + SEQ_B[:i] for i in range(0, 20, 4)]
    smiles, seqs, y = [], [], []
    for d in drugs:
        for p in prots:
            smiles.append(d)
            seqs.append(p)
            y.append(float(("C(=O)O" in d) == (p in prots[:5])))
    order = rng.permutation(len(y))
    return [smiles[i] for i in order], [seqs[i] for i in order], np.array(y)[order]


def test_training_learns_a_two_sided_rule_and_checkpoint_round_trips(tmp_path):
    smiles, seqs, y = _toy_task()
    tables, di, pi, errors = build_tables(smiles, seqs)
    assert not errors and len(tables.smiles) == 60 and len(tables.sequences) == 10
    tr = np.arange(len(y)) % 4 != 0
    cfg = TrainConfig(epochs=25, pretrain_epochs=1, batch_size=64, seed=0)
    model, hist = fit(tables, Pairs(di[tr], pi[tr], y[tr]), cfg)
    p = predict(model, tables, di[~tr], pi[~tr])
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(y[~tr], p) > 0.95
    assert hist["pretrain_loss"] and hist["loss"][-1] < hist["loss"][0]
    path = save_checkpoint(model, tmp_path / "m.pt", {"name": "toy"})
    back, card = load_checkpoint(path)
    assert card == {"name": "toy"}
    assert np.allclose(predict(back, tables, di[~tr], pi[~tr]), p, atol=2e-2)


def test_activity_weak_supervision_trains_the_activity_head():
    smiles, seqs, y = _toy_task(n_drugs=30)
    tables, di, pi, _ = build_tables(smiles, seqs)
    act = np.where(y > 0, 7.0, 4.0) + np.random.default_rng(0).normal(0, 0.1, len(y))
    act[::3] = np.nan  # activity present on two thirds of the pairs only
    cfg = TrainConfig(
        epochs=15, pretrain_epochs=0, gram_weight=0.0, batch_size=64, activity_weight=1.0, members=1, neighbours=False
    )
    model, _ = fit(tables, Pairs(di, pi, y, act), cfg)
    assert model.activity_mean == pytest.approx(np.nanmean(act))
    with torch.no_grad():
        from tools.dti.train import embed_table

        dv = embed_table(model, tables.drugs, model.drug_modalities)
        pv = embed_table(model, tables.proteins, model.protein_modalities)
        pred = model.activity_head(model.pair_features(dv[torch.from_numpy(di)], pv[torch.from_numpy(pi)])).squeeze(1)
    ok = ~np.isnan(act)
    assert np.corrcoef(pred.numpy()[ok], act[ok])[0, 1] > 0.8


def test_model_modalities_and_size():
    m = DTIModel()
    assert m.modalities == MODALITIES and len(MODALITIES) >= 4
    one = DTIModel(modalities=("drug_ecfp", "protein_composition"))
    assert one.drug_modalities == ("drug_ecfp",) and one.protein_modalities == ("protein_composition",)
    assert sum(p.numel() for p in m.parameters()) < 1_500_000


def test_gated_fusion_starts_at_the_primary_modality_and_opens_per_gate():
    m = DTIModel(dim=8, fusion="gated")
    assert m.primary == ("drug_ecfp", "protein_composition")
    g = torch.Generator().manual_seed(0)
    embs = {k: torch.randn(5, 8, generator=g) for k in m.drug_modalities}
    # gates start at 0: the fused drug vector is exactly the ECFP embedding
    assert torch.equal(m.fuse(embs), embs["drug_ecfp"])
    with torch.no_grad():
        m.gates["drug_descriptors"].fill_(0.5)
    want = embs["drug_ecfp"] + math.tanh(0.5) * embs["drug_descriptors"]
    assert torch.allclose(m.fuse(embs), want, atol=1e-6)
    # a masked-out modality contributes nothing for that sample only
    mask = {k: torch.ones(5) for k in embs} | {"drug_descriptors": torch.tensor([0.0, 1, 1, 1, 1])}
    fused = m.fuse(embs, mask)
    assert torch.allclose(fused[0], embs["drug_ecfp"][0]) and torch.allclose(fused[1:], want[1:], atol=1e-6)
    # mean fusion is the plain average
    mean = DTIModel(dim=8)
    assert torch.allclose(mean.fuse(embs), torch.stack(list(embs.values())).mean(0), atol=1e-6)
    with pytest.raises(ValueError):
        DTIModel(fusion="max")


def test_modality_dropout_never_drops_kept_modalities():
    drop = AdaptiveModalityDropout(("d1", "d2"), ("p1", "p2"), p_base=0.3, p_max=0.9, keep=("d1", "p1"))
    embs = {m: torch.zeros(8, 4, requires_grad=True) for m in ("d1", "d2", "p1", "p2")}
    (embs["d1"].sum() * 50 + embs["d2"].sum() + embs["p1"].sum() * 50 + embs["p2"].sum() * 3).backward()
    for _ in range(50):
        drop.observe(embs)
    p = drop.probabilities()
    assert p["d1"] == 0.0 and p["p1"] == 0.0 and 0 < p["d2"] < p["p2"] <= 0.9
    gen = torch.Generator().manual_seed(0)
    masks = drop.sample_masks(400, 400, gen)
    assert torch.all(masks["d1"] == 1) and torch.all(masks["p1"] == 1)
    assert 0 < masks["p2"].mean() < masks["d2"].mean() < 1
    assert all({"d1", "p1"} <= drop.sample_batch(gen) for _ in range(50))
