"""The leak-proof evaluation protocol: overlap by canonical pairs, refusal, provenance; the boosted member."""

import csv
import json

import numpy as np
import pytest

from evals.dti.protocol import SHIFT_BLEND_FOLDS, OverlapRefused, detect_shift, run_protocol, shift_config
from evals.dti.run import main, unseen_test
from tools.dti.boost import BoostedTrees, fit_trees
from tools.dti.provenance import file_sha256, overlap, pair_keys, pairs_sha256
from tools.paths import sample_path

TINY = {"epochs": 1, "members": 1, "boost_iterations": 25}
TRAIN = sample_path("dti/bindingdb_pairs_train.csv")
TEST = sample_path("dti/bindingdb_pairs_test.csv")


def _rows(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def _write(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["SMILES", "Protein", "Y"])
        w.writeheader()
        w.writerows({k: r[k] for k in ("SMILES", "Protein", "Y")} for r in rows)
    return path


@pytest.fixture
def leaky_test(tmp_path):
    """The sample test file plus 3 training pairs, one of them spelled differently (Kekulé SMILES, lower-case
    sequence), so only a canonical comparison finds all three."""
    from rdkit import Chem

    train = _rows(TRAIN)
    extra = [dict(r) for r in train[:3]]
    mol = Chem.MolFromSmiles(extra[0]["SMILES"])
    Chem.Kekulize(mol, clearAromaticFlags=True)
    extra[0]["SMILES"] = Chem.MolToSmiles(mol, kekuleSmiles=True, doRandom=True)
    extra[0]["Protein"] = extra[0]["Protein"].lower()
    assert extra[0]["SMILES"] != train[0]["SMILES"]
    return _write(tmp_path / "leaky.csv", _rows(TEST) + extra)


def test_overlap_counts_by_hand():
    train = [("CCO", "MKT"), ("CCN", "MKT"), ("CCC", "AAA"), None]
    test = [("CCO", "MKT"), ("CCO", "MKT"), ("CCO", "AAA"), ("CCCl", "WWW"), None]
    assert overlap(train, test) == {
        "test_pairs": 3,
        "shared_pairs": 1,
        "shared_pair_rows": 2,
        "shared_pair_fraction": 0.5,
        "test_drugs": 2,
        "shared_drugs": 1,
        "test_targets": 3,
        "shared_targets": 2,
    }


def test_pair_keys_are_canonical_and_hash_is_order_free():
    seq = "MKTAYIAKQRQISFVKSHFSRQ"
    keys = pair_keys(["OCC", "C(C)O", "xyz"], [seq.lower(), seq, seq])
    assert keys[0] == keys[1] == ("CCO", seq) and keys[2] is None
    a = pairs_sha256([("CCO", seq), ("CCN", seq)], [1, 0])
    assert a == pairs_sha256([("CCN", seq), ("CCO", seq)], [0, 1]) != pairs_sha256([("CCO", seq), ("CCN", seq)], [0, 1])


def test_unseen_test_leaves_out_what_the_split_promises_unseen():
    # drugs 0..3, targets 0..2; train pairs (0,0), (1,1); test pairs below
    di = np.array([0, 1, 0, 2, 1, 3])
    pi = np.array([0, 1, 0, 1, 2, 2])
    tr, te = np.array([0, 1]), np.array([2, 3, 4, 5])
    keep, why = unseen_test(di, pi, tr, te, "warm")
    assert keep.tolist() == [3, 4, 5] and why == {"removed": 1, "shared_pairs": 1, "seen_drug": 0, "seen_target": 0}
    keep, why = unseen_test(di, pi, tr, te, "drug_cold")  # drugs 0 and 1 are training drugs
    assert keep.tolist() == [3, 5] and why["seen_drug"] == 2
    keep, _ = unseen_test(di, pi, tr, te, "both_cold")  # target 1 is a training target as well
    assert keep.tolist() == [5]


def test_boosted_trees_in_numpy_match_sklearn():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    x[rng.random(x.shape) < 0.05] = np.nan
    y = ((np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 1]) * x[:, 2] > 0) | np.isnan(x[:, 3])).astype(float)
    clf = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(x, y)
    trees = BoostedTrees.from_sklearn(clf)
    np.testing.assert_allclose(trees.decision_function(x), clf.decision_function(x), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(trees.predict_proba(x), clf.predict_proba(x)[:, 1], rtol=1e-10)
    again = BoostedTrees.from_state(trees.state())
    np.testing.assert_array_equal(again.decision_function(x), trees.decision_function(x))
    seen = []
    fit_trees(x, y, seed=0, iterations=60, check=lambda d, t: seen.append((d, t)))
    assert seen == [(25, 60), (50, 60), (60, 60)]


def test_a_test_set_sharing_pairs_is_refused_with_the_overlap(leaky_test, tmp_path):
    with pytest.raises(OverlapRefused, match=r"shares 3 of its 52 distinct pairs") as exc:
        run_protocol(TRAIN, [leaky_test], seeds=[0], cfg_kwargs=TINY)
    assert "--allow-overlap" in str(exc.value) and "--drop-overlap" in str(exc.value)
    # through the command line: the same refusal, before any training, and no report written
    with pytest.raises(SystemExit, match="Refused"):
        main(["--train", str(TRAIN), "--test", str(leaky_test), "--seeds", "1", "--json", str(tmp_path / "r.json")])
    assert not (tmp_path / "r.json").exists()


def test_drop_and_allow_overlap_are_reported(leaky_test, tmp_path):
    rep, _ = run_protocol(TRAIN, [leaky_test], seeds=[0], cfg_kwargs=TINY, drop_overlap=True)
    t = rep["tests"][0]
    assert t["dropped_shared_rows"] == 3 and t["pairs_evaluated"] == 49
    assert t["overlap_with_train"]["shared_pairs"] == 3
    rep, rows = run_protocol(TRAIN, [leaky_test], seeds=[0], cfg_kwargs=TINY, allow_overlap=True)
    assert rep["tests"][0]["overlap_allowed"] is True and rep["tests"][0]["pairs_evaluated"] == 52
    assert {r["overlap_policy"] for r in rows} == {"allow"}


def test_train_val_test_command_writes_a_report_with_provenance(tmp_path):
    train = _rows(TRAIN)
    tr = _write(tmp_path / "train.csv", train[:140])
    va = _write(tmp_path / "val.csv", train[140:])
    out = tmp_path / "report.json"
    argv = ["--train", str(tr), "--val", str(va), "--test", str(TEST), "--seeds", "2", "--json", str(out)]
    argv += ["--out", str(tmp_path), "--config", "epochs=1", "members=1", "boost_iterations=25"]
    assert main(argv) == 0
    rep = json.loads(out.read_text())
    assert rep["train"] == {"file": str(tr), "rows": 140, "pairs": 140, "sha256": file_sha256(tr)}
    assert rep["val"]["pairs"] == 32 and rep["seeds"] == [0, 1]
    res = rep["tests"][0]["results"]
    assert {"GRAM-DTI (this project)", "GB baseline (ECFP4 + AAC)"} <= set(res)
    for r in res.values():
        assert len(r["per_seed"]) == 2 and 0 <= r["auroc_mean"] <= 1
        assert r["auroc_mean"] == pytest.approx(np.mean([s["auroc"] for s in r["per_seed"]]))
    md = (tmp_path / "dti_results.md").read_text()
    assert "GB baseline (ECFP4 + AAC)" in md
    # auto shift: read from the val and test rows' structures; with a val file no CV is added
    used = rep["shift"]["used"]
    assert rep["shift"]["asked"] == "auto" and used in ("drug", "target", "pair")
    assert rep["config"]["blend_group"] == used and rep["config"]["blend_folds"] == 0


def test_the_shift_is_read_from_unseen_drugs_then_targets():
    # training pairs: drugs 0-3, targets 0-3
    di = np.array([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 1, 2])
    pi = np.array([0, 1, 2, 3, 0, 1, 2, 7, 8, 9, 3, 0])
    tr = np.arange(4)
    shift, shares = detect_shift(di, pi, tr, np.array([4, 5, 6, 7]))  # drugs 4, 5, 6 new (3 of 4 rows)
    assert shift == "drug" and shares == {"unseen_drug_rows": 0.75, "unseen_target_rows": 0.25}
    shift, shares = detect_shift(di, pi, tr, np.array([7, 8, 9, 10]))  # known drugs, targets 7-9 new
    assert shift == "target" and shares == {"unseen_drug_rows": 0.0, "unseen_target_rows": 0.75}
    shift, shares = detect_shift(di, pi, tr, np.array([10, 11, 4]))  # new pairs of known drugs and targets, mostly
    assert shift == "pair" and shares["unseen_drug_rows"] == pytest.approx(1 / 3, abs=1e-4)
    assert detect_shift(di, pi, tr, np.array([4, 5]))[0] == "drug"
    assert detect_shift(di, pi, tr, np.array([4, 11]))[0] == "pair"  # exactly half new is not most


def test_the_shift_config_and_what_wins_over_it():
    from tools.dti.train import UNSEEN_TARGET_MEMBERS, TrainConfig

    assert shift_config("none", {"epochs": 2}, has_val=False) == {"epochs": 2}
    cfg = TrainConfig(**shift_config("target", {}, has_val=False))
    assert (cfg.blend_group, cfg.blend_folds, cfg.boost_members) == ("target", SHIFT_BLEND_FOLDS,
                                                                     tuple(UNSEEN_TARGET_MEMBERS))
    cfg = TrainConfig(**shift_config("drug", {"blend_folds": 0}, has_val=False))
    assert (cfg.blend_group, cfg.blend_folds) == ("drug", 0)
    assert "blend_folds" not in shift_config("pair", {}, has_val=True)
    with pytest.raises(SystemExit, match="--shift must be one of"):
        run_protocol(TRAIN, [TEST], seeds=[0], cfg_kwargs=TINY, shift="cold")
