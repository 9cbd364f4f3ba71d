"""Boosted members per shift (`TrainConfig.for_shift`): every member reads the neighbourhood for unseen targets."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from tools.dti.train import UNSEEN_TARGET_MEMBERS, TrainConfig, build_tables
from tools.dti.views import VIEW_NAMES, parse_member
from tools.paths import sample_path


def _sample() -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    with open(sample_path("dti/bindingdb_pairs_train.csv")) as fh:
        rows = list(csv.DictReader(fh))
    tables, di, pi, errors = build_tables([r["SMILES"] for r in rows], [r["Protein"] for r in rows])
    assert not errors
    return tables, di, pi, np.array([float(r["Y"]) for r in rows])


def test_for_shift_gives_unseen_targets_every_view_with_the_neighbourhood():
    members = [parse_member(m) for m in UNSEEN_TARGET_MEMBERS]
    assert sorted(v for v, _ in members) == sorted(VIEW_NAMES) and all(nbr for _, nbr in members)
    cfg = TrainConfig.for_shift("target", seed=3)
    assert cfg.boost_members == UNSEEN_TARGET_MEMBERS and cfg.blend_group == "target" and cfg.seed == 3
    for shift in ("drug", "pair"):
        other = TrainConfig.for_shift(shift)
        assert other.boost_members == TrainConfig().boost_members and other.blend_group == shift
    # the default set keeps views without the neighbourhood (for unseen drugs): the two sets differ
    assert TrainConfig().boost_members != UNSEEN_TARGET_MEMBERS
    assert TrainConfig.for_shift("target", boost_members=("ecfp",)).boost_members == ("ecfp",)  # kwargs win
    with pytest.raises(ValueError, match="shift must be one of drug, target, pair"):
        TrainConfig.for_shift("protein")


def test_protocol_run_configures_each_split_for_its_shift(monkeypatch):
    import evals.dti.run as run

    tables, di, pi, y = _sample()
    smiles = [tables.smiles[i] for i in di]
    seqs = [tables.sequences[i] for i in pi]
    configs: dict[str, TrainConfig] = {}
    cfg_split: list[str] = []

    def fake_train_eval(tables, di, pi, y, tr, te, cfg):
        configs[cfg_split[0]] = cfg
        p = np.linspace(0, 1, len(te))
        return (*run.auroc_auprc(y[te], p), 0.0, p, None)

    monkeypatch.setattr(run, "_train_eval", fake_train_eval)
    monkeypatch.setattr(run, "gb_baseline", lambda *a, **k: np.linspace(0, 1, len(a[5])))
    monkeypatch.setattr(run, "gb_neighbour_baseline", lambda *a, **k: np.linspace(0, 1, len(a[5])))
    order = np.arange(len(y))
    rng = np.random.default_rng(0)
    rng.shuffle(order)
    tr, te = order[: len(y) * 3 // 4], order[len(y) * 3 // 4 :]

    def split_iter():
        for split in ("warm", "target_cold", "drug_cold", "both_cold"):
            cfg_split[:] = [split]
            yield split, 0, tr, te

    rows: list[dict] = []
    run.evaluate("sample", smiles, seqs, di, pi, y, split_iter, [0], {"threads": 1}, [], rows)
    assert configs["target_cold"].boost_members == UNSEEN_TARGET_MEMBERS
    assert configs["target_cold"].blend_group == "target"
    assert configs["drug_cold"].boost_members == TrainConfig().boost_members
    assert configs["warm"].blend_group == "pair"
    assert configs["both_cold"] == TrainConfig(threads=1)
    run.evaluate("sample", smiles, seqs, di, pi, y, split_iter, [0], {"threads": 1, "boost_members": ("ecfp",)}, [],
                 rows)
    assert configs["target_cold"].boost_members == ("ecfp",)  # --config wins over the split's set


def test_members_probe_scores_held_out_pairs_without_reading_their_labels():
    from evals.dti.members_probe import SETS, SPECS, held_out_probabilities

    assert set(SETS["default"]) == set(TrainConfig().boost_members)
    assert set(SETS["all four views + nbr"]) == set(UNSEEN_TARGET_MEMBERS)
    tables, di, pi, y = _sample()
    targets = np.unique(pi)
    held = np.isin(pi, targets[: len(targets) // 3])
    ref, query = np.flatnonzero(~held), np.flatnonzero(held)
    prob = held_out_probabilities(tables, di, pi, y, ref, query, iterations=10)
    assert set(prob) == set(SPECS)
    assert all(len(v) == len(query) and np.all((v >= 0) & (v <= 1)) for v in prob.values())
    flipped = y.copy()
    flipped[query] = 1 - flipped[query]  # the held-out labels are never read
    again = held_out_probabilities(tables, di, pi, flipped, ref, query, iterations=10)
    for spec in SPECS:
        np.testing.assert_array_equal(prob[spec], again[spec])


def test_dti_train_configures_each_split_for_its_shift(monkeypatch):
    import tools.dti.train as train
    from tools.dti.training import dti_train

    seen: dict[str, TrainConfig] = {}

    class Stop(Exception):
        pass

    def capture(tables, pairs, cfg, progress=None, val=None):
        seen[cfg.blend_group] = cfg
        raise Stop

    monkeypatch.setattr(train, "fit", capture)
    for split in ("target_cold", "drug_cold", "random"):
        with pytest.raises(Stop):
            dti_train(path="sample://dti/bindingdb_pairs_train.csv", name=f"bdb_{split}", split=split, epochs=1)
    assert seen["target"].boost_members == UNSEEN_TARGET_MEMBERS
    assert seen["drug"].boost_members == seen["pair"].boost_members == TrainConfig().boost_members
    assert seen["target"].epochs == 1  # the caller's fields are kept
