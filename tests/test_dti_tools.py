"""DTI tools as plain functions and through MCP in memory: validation, scoring, screening, explaining,
training with progress and cancel, the model card."""

import csv

import numpy as np
import pytest
from rdkit import Chem

from evals.shared_data import shared_data_path
from tools.dti.catalog import TOOLS
from tools.dti.provenance import file_sha256
from tools.dti.registry import SHIPPED, WEIGHTS_DIR
from tools.dti.scoring import PairIn, dti_explain, dti_featurize, dti_score, dti_screen, dti_validate
from tools.dti.training import dti_model_card, dti_train
from tools.errors import Cancelled, InvalidInput, LimitExceeded, NotFound
from tools.paths import sample_path
from tools.progress import Progress
from tools.settings import reload_settings

HUMAN_COLD_VAL = "dti/drugban/datasets/human/cold/val.csv"


@pytest.fixture(autouse=True)
def _output_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_DIR", str(tmp_path / "out"))
    monkeypatch.setenv("RESEARCH_MCP_ROOTS", f'["{tmp_path}"]')
    monkeypatch.setenv("RESEARCH_MCP_DTI__THREADS", "1")
    reload_settings()
    yield
    monkeypatch.delenv("RESEARCH_MCP_OUTPUT_DIR")
    monkeypatch.delenv("RESEARCH_MCP_ROOTS")
    monkeypatch.delenv("RESEARCH_MCP_DTI__THREADS")
    reload_settings()


def _target(i=0):
    with open(sample_path("dti/targets.csv")) as fh:
        return list(csv.DictReader(fh))[i]["sequence"]


def test_catalog_names_and_docstrings():
    names = [t.name for t in TOOLS]
    assert names == [
        "dti_validate",
        "dti_featurize",
        "dti_score",
        "dti_screen",
        "dti_explain",
        "dti_train",
        "dti_model_card",
    ]
    assert all(t.fn.__doc__ and t.fn.__doc__.strip() for t in TOOLS)


def test_validate_reports_each_item():
    r = dti_validate(
        smiles=["CCO", "C1CC", "CC(=O)[O-].[Na+]"], proteins=["MKTAYIAKQRQISF", "ATGCGTACGTAGCTAGCTAGCT", ""]
    )
    assert [m.ok for m in r.molecules] == [True, False, True]
    assert "could not be parsed" in r.molecules[1].error
    assert r.molecules[2].canonical == "CC(=O)[O-]" and "[Na+]" in r.molecules[2].note
    assert [p.ok for p in r.proteins] == [True, False, False]
    assert "nucleotide" in r.proteins[1].error and "Empty" in r.proteins[2].error
    f = dti_validate(path="sample://dti/screening_library_sample.sdf")
    assert f.molecules_checked == 60 and f.molecules_valid == 60


def test_featurize_writes_csv_matching_rdkit(tmp_path):
    r = dti_featurize(smiles=["CCO", "bad(("], drug_feature="maccs", proteins=["MKTAYIAKQRQISF"], protein_feature="aac")
    assert r.molecules == 1 and r.drug_dim == 167 and r.protein_dim == 20
    assert len(r.errors) == 1 and "bad((" in r.errors[0].input
    with open(r.drug_csv) as fh:
        row = next(csv.DictReader(fh))
    from rdkit.Chem import MACCSkeys

    ref = list(MACCSkeys.GenMACCSKeys(Chem.MolFromSmiles("CCO")))
    assert [int(row[f"maccs_{j}"]) for j in range(167)] == ref


def test_score_batch_reports_bad_rows_and_scores_the_rest():
    seq = _target()
    pairs = [
        PairIn(smiles="CC(=O)Oc1ccccc1C(=O)O", protein=seq, id="aspirin"),
        PairIn(smiles="not a smiles", protein=seq),
        PairIn(smiles="CCO", protein="HELLOWORLD!"),
        PairIn(smiles="CC(=O)Oc1ccccc1C(=O)[O-].[Na+]", protein=seq),
    ]
    r = dti_score(pairs=pairs)
    assert r.scored == 2 and r.rejected == 2
    s = r.scores
    assert 0 <= s[0].score <= 1 and s[1].score is None and "whitespace" in s[1].error
    assert s[2].score is None and "Not a protein" in s[2].error
    # the salt form is scored as its organic fragment, so the same as the free acid form with the charge
    assert "[Na+]" in s[3].note
    assert s[0].id == "aspirin"
    # a batch score equals the single-pair score
    one = dti_score(pairs=[pairs[0]]).scores[0].score
    assert one == pytest.approx(s[0].score, abs=1e-6)


def test_score_honours_a_cancel_between_blocks():
    p = Progress()
    p.cancel()
    with pytest.raises(Cancelled):
        dti_score(pairs=[PairIn(smiles="CCO", protein=_target())], progress=p)


def test_score_file_and_missing_columns(tmp_path):
    r = dti_score(path="sample://dti/bindingdb_pairs_test.csv")
    assert r.scored + r.rejected == 49 and r.scores_csv
    bad = tmp_path / "bad.csv"
    bad.write_text("compound,target\nCCO,MKTAYIAK\n")
    with pytest.raises(InvalidInput, match="lacks the column"):
        dti_score(path=str(bad))
    with pytest.raises(NotFound, match="Unknown DTI model"):
        dti_score(pairs=[PairIn(smiles="CCO", protein=_target())], model="defualt")


def test_screen_ranks_library_and_writes_files():
    r = dti_screen(target=_target(1), library="sample://dti/screening_library.smi", top_k=25)
    assert r.library_size == 1988 and r.scored + r.rejected == 1988
    scores = [h.score for h in r.top]
    assert scores == sorted(scores, reverse=True) and len(r.top) == 20
    with open(r.hits_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 25 and [int(x["rank"]) for x in rows] == list(range(1, 26))
    mols = [m for m in Chem.SDMolSupplier(r.hits_sdf)]
    assert len(mols) == 25 and float(mols[0].GetProp("score")) == pytest.approx(scores[0], rel=1e-5)
    # the screen's score of the best hit equals dti_score of that pair
    best = dti_score(pairs=[PairIn(smiles=r.top[0].smiles, protein=_target(1))]).scores[0].score
    assert best == pytest.approx(r.top[0].score, abs=1e-5)


def test_screen_errors():
    with pytest.raises(InvalidInput, match="Empty protein"):
        dti_screen(target="", library="sample://dti/screening_library.smi")
    with pytest.raises(LimitExceeded, match="top_k"):
        dti_screen(target=_target(), library="sample://dti/screening_library.smi", top_k=10**6)


def test_explain_deltas_are_recomputed_scores():
    smiles, seq = "CC(=O)Oc1ccccc1C(=O)O", _target()
    r = dti_explain(smiles=smiles, protein=seq, top_bits=5)
    base = dti_score(pairs=[PairIn(smiles=smiles, protein=seq)]).scores[0].score
    assert r.score == pytest.approx(base, abs=1e-6)
    assert len(r.bits) == 5 and abs(r.bits[0].delta) >= abs(r.bits[-1].delta)
    assert len(r.atom_weights) == Chem.MolFromSmiles(smiles).GetNumAtoms()
    # per-atom weights redistribute the bit deltas: their sum equals the sum of all bit deltas
    full = dti_explain(smiles=smiles, protein=seq, top_bits=100, draw=False)
    assert sum(full.atom_weights) == pytest.approx(sum(b.delta for b in full.bits), abs=1e-4)
    with open(r.svg) as fh:
        assert fh.read().startswith("<?xml")


def test_train_cancel_and_card(tmp_path):
    progress_seen = []
    res = dti_train(
        path="sample://dti/bindingdb_pairs_train.csv",
        name="bdb_small",
        epochs=3,
        pretrain_epochs=1,
        progress=Progress(lambda d, t, m: progress_seen.append((d, t, m))),
    )
    assert res.pairs_used + res.test_pairs <= 172 and res.test_auroc is not None and 0 <= res.test_auroc <= 1
    assert progress_seen and any("fine-tuning" in (m or "") for _, _, m in progress_seen)
    card = dti_model_card("bdb_small")
    assert card.card.name == "bdb_small" and "bdb_small" in card.available_models
    (f,) = card.card.training_files  # the card names the training file by content
    assert f["sha256"] == file_sha256(sample_path("dti/bindingdb_pairs_train.csv")) and f["rows"] == 172
    assert f["pairs"] == res.pairs_used and f["held_out_pairs"] == res.test_pairs
    assert dti_score(pairs=[PairIn(smiles="CCO", protein=_target())], model="bdb_small").scored == 1
    p = Progress()
    calls = []

    def cb(d, t, m):
        calls.append(d)
        if len(calls) == 3:
            p.cancel()

    p._callback = cb
    with pytest.raises(Cancelled):
        dti_train(path="sample://dti/bindingdb_pairs_train.csv", name="cancelled", epochs=5, progress=p)
    assert "cancelled" not in dti_model_card().available_models
    with pytest.raises(InvalidInput, match="not allowed"):
        dti_train(path="sample://dti/bindingdb_pairs_train.csv", name="../evil")


def test_shipped_model_card():
    c = dti_model_card().card
    assert c.name == "default" and len(c.modalities) >= 4 and c.metrics
    assert all("overlap_with_training" in v for v in c.metrics.values())
    assert any("auroc" in v for v in c.metrics.values())


@pytest.mark.shared_data(optional=True)  # the named files are checked where the shared data is present
@pytest.mark.parametrize("name", list(SHIPPED))
def test_every_shipped_model_states_its_training_files(name):
    card = dti_model_card(name)
    assert set(SHIPPED) <= set(card.available_models)
    c = card.card
    assert c.name == name and c.training_files
    for f in c.training_files:
        assert f["pairs"] > 0 and len(f["sha256"]) == 64
        local = shared_data_path("dti", f["file"])  # paths relative to the shared DTI data folder
        if local.exists():  # the file the card names is the one here, byte for byte
            assert file_sha256(local) == f["sha256"]
    assert (WEIGHTS_DIR / SHIPPED[name]).stat().st_size < 10e6
    for label, m in c.metrics.items():  # every reported figure comes with its overlap with the training pairs
        ov = m["overlap_with_training"]
        assert {"shared_pairs", "shared_drugs", "shared_targets"} <= set(ov)
        if ov["shared_pairs"] or ov["shared_drugs"] or ov["shared_targets"]:
            assert any(w.startswith(label) for w in c.overlap_warnings)


def test_human_random_model_warns_about_human_cold():
    c = dti_model_card("human_random").card
    assert any("human cold val" in w and "shares" in w for w in c.overlap_warnings)
    assert any("'human_cold' only" in w for w in c.overlap_warnings)
    cold = dti_model_card("human_cold").card.metrics["human cold val"]
    assert cold["overlap_with_training"]["shared_pairs"] == 0 and cold["overlap_with_training"]["shared_targets"] == 0


@pytest.mark.shared_data(HUMAN_COLD_VAL)
def test_real_metal_and_selenoprotein_rows_are_scored_with_notes():
    with open(shared_data_path(HUMAN_COLD_VAL)) as fh:
        rows = list(csv.DictReader(fh))
    picked = [next(r for r in rows if r["SMILES"] == smi) for smi in ("O.[Hg].[Hg]", "[90Sr+2]")]
    picked += [r for r in rows if "U" in r["Protein"]]
    pairs = [PairIn(smiles=r["SMILES"], protein=r["Protein"]) for r in picked]
    got = {m: dti_score(pairs=pairs, model=m) for m in ("default", "human_cold")}
    for r in got.values():
        assert r.scored == 3 and r.rejected == 0
        assert "inorganic" in r.scores[0].note and r.scores[0].smiles == "[Hg]"
        assert "selenocysteine U -> C" in r.scores[2].note
    assert got["default"].model == "default" and got["human_cold"].model == "human_cold"
    assert [s.score for s in got["default"].scores] != [s.score for s in got["human_cold"].scores]


@pytest.mark.anyio
async def test_tools_through_mcp_in_memory():
    pytest.importorskip("server.app")
    from mcp import Client

    from server.app import build_server

    async with Client(build_server(["dti"])) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"dti_score", "dti_screen", "dti_train", "dti_model_card"} <= names
        r = await c.call_tool(
            "dti_score", {"pairs": [{"smiles": "CCO", "protein": _target()}, {"smiles": "C1CC", "protein": _target()}]}
        )
        sc = r.structured_content
        assert sc["scored"] == 1 and sc["rejected"] == 1 and 0 <= sc["scores"][0]["score"] <= 1
        bad = await c.call_tool("dti_screen", {"target": "", "library": "sample://dti/screening_library.smi"})
        assert bad.is_error and "Empty protein" in bad.content[0].text


def test_scores_are_deterministic():
    seq = _target()
    a = dti_score(pairs=[PairIn(smiles="CCN(CC)CC", protein=seq)]).scores[0].score
    b = dti_score(pairs=[PairIn(smiles="CCN(CC)CC", protein=seq)]).scores[0].score
    assert a == b and np.isfinite(a)
