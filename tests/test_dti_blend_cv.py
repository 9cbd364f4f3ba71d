"""The blend weight chosen by a drug-grouped cross-validation inside the training pairs (`cv_blend`)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import tools.dti.train as train
from tools.dti.train import BLEND_WEIGHTS, Pairs, TrainConfig, build_tables, group_folds, predict_parts
from tools.paths import sample_path

SMALL = {"epochs": 1, "batch_size": 64, "members": 1, "boost_iterations": 8, "boost_members": ("ecfp+nbr",)}


def _sample() -> tuple[train.Tables, Pairs]:
    with open(sample_path("dti/bindingdb_pairs_train.csv")) as fh:
        rows = list(csv.DictReader(fh))
    tables, di, pi, errors = build_tables([r["SMILES"] for r in rows], [r["Protein"] for r in rows])
    assert not errors
    return tables, Pairs(di, pi, np.array([float(r["Y"]) for r in rows]))


def test_group_folds_keep_each_id_in_one_fold_and_deal_ids_evenly():
    d = np.random.default_rng(3).integers(0, 40, size=500)
    fold = group_folds(d, 4, seed=11)
    for drug in np.unique(d):
        assert len(np.unique(fold[d == drug])) == 1
    per_fold = [len(np.unique(d[fold == f])) for f in range(4)]
    assert sum(per_fold) == len(np.unique(d)) and max(per_fold) - min(per_fold) <= 1
    assert np.array_equal(fold, group_folds(d, 4, seed=11))
    assert not np.array_equal(fold, group_folds(d, 4, seed=12))


def test_cv_blend_trains_each_fold_without_its_drugs_and_selects_the_best_mean_auroc(monkeypatch):
    tables, pairs = _sample()
    calls: list[tuple[Pairs, object]] = []
    real_fit = train.fit

    def recording_fit(tables, pairs, cfg, progress=None, val=None):
        model, hist = real_fit(tables, pairs, cfg, progress, val)
        calls.append((pairs, model))
        return model, hist

    monkeypatch.setattr(train, "fit", recording_fit)
    model, hist = train.fit(tables, pairs, TrainConfig(blend_folds=3, **SMALL))
    inner = calls[:-1]  # the outer call returns last
    assert len(inner) == 3 and calls[-1][0] is pairs
    cv = hist["blend_cv"]
    all_drugs = set(np.unique(pairs.d).tolist())
    held_sets = []
    for (fold_pairs, fold_model), scores in zip(inner, cv["per_fold"], strict=True):
        held = all_drugs - set(fold_pairs.d.tolist())
        held_sets.append(held)
        rows = np.flatnonzero(np.isin(pairs.d, list(held)))
        # the fold trained on every pair of the other drugs, and on nothing else
        assert len(fold_pairs) == len(pairs) - len(rows)
        pn, pb = predict_parts(fold_model, tables, pairs.d[rows], pairs.p[rows])
        for w in BLEND_WEIGHTS:
            assert scores[w] == pytest.approx(roc_auc_score(pairs.y[rows], (1 - w) * pn + w * pb), abs=1e-9)
    assert set().union(*held_sets) == all_drugs and sum(len(h) for h in held_sets) == len(all_drugs)
    mean = {w: np.mean([s[w] for s in cv["per_fold"]]) for w in BLEND_WEIGHTS}
    assert cv["auroc_by_weight"] == pytest.approx(mean)
    best = max(round(v, 4) for v in mean.values())
    tied = [w for w in BLEND_WEIGHTS if round(mean[w], 4) == best]
    assert model.boost_weight == min(tied, key=lambda w: abs(w - 0.5)) == hist["boost_weight"]


def test_validation_pairs_take_precedence_over_the_inner_cross_validation(monkeypatch):
    tables, pairs = _sample()
    calls = []
    real_fit = train.fit
    monkeypatch.setattr(train, "fit", lambda *a, **k: calls.append(1) or real_fit(*a, **k))
    val = pairs.subset(np.arange(0, len(pairs), 3))
    _, hist = train.fit(
        tables,
        pairs.subset(np.setdiff1d(np.arange(len(pairs)), np.arange(0, len(pairs), 3))),
        TrainConfig(blend_folds=3, **SMALL),
        val=val,
    )
    assert len(calls) == 1 and "validation" in hist and "blend_cv" not in hist
    trained = []
    monkeypatch.setattr(train, "_fit_member", lambda *a, **k: trained.append(1))
    with pytest.raises(ValueError, match="blend_group must be one of drug, target, pair"):
        train.fit(tables, pairs, TrainConfig(blend_folds=3, blend_group="protein", **SMALL))
    assert not trained  # refused before any training


def test_dti_train_reports_the_weight_its_cross_validation_chose_and_cancels_inside_a_fold():
    from tools.dti.training import dti_model_card, dti_train
    from tools.errors import Cancelled, InvalidInput
    from tools.progress import Progress

    res = dti_train(path="sample://dti/bindingdb_pairs_train.csv", name="bdb_cv", epochs=1, members=1, blend_folds=2)
    cv = res.card.config["blend_cv"]
    assert res.boost_weight == cv["selected"] == dti_model_card("bdb_cv").card.config["boost_weight"]
    assert cv["folds"] == 2 and len(cv["per_fold"]) == 2 and res.boost_weight in BLEND_WEIGHTS
    with pytest.raises(InvalidInput, match="blend_folds"):
        dti_train(path="sample://dti/bindingdb_pairs_train.csv", name="bdb_one", blend_folds=1)
    p = Progress()
    seen: list[str] = []

    def cancel_in_a_fold(done, total, msg):
        seen.append(msg or "")
        if "blend weight, fold" in (msg or ""):
            p.cancel()

    p._callback = cancel_in_a_fold
    with pytest.raises(Cancelled):
        dti_train(
            path="sample://dti/bindingdb_pairs_train.csv",
            name="bdb_cancel",
            epochs=1,
            members=1,
            blend_folds=2,
            progress=p,
        )
    assert "bdb_cancel" not in dti_model_card().available_models
