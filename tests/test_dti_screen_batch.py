"""The batch paths of the screen give the per-molecule paths' values bit for bit, and hits are grouped by the
InChIKey that RDKit computes, although InChI runs only for the hits."""

from __future__ import annotations

import csv

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from rdkit import Chem

from tools.dti import features as F
from tools.dti.chem import sanitize_smiles
from tools.dti.library import heavy_formula
from tools.dti.neighbours import tanimoto
from tools.dti.registry import load_model
from tools.paths import sample_path

# 2-pyridone and 2-hydroxypyridine: two canonical SMILES, one standard InChI (mobile hydrogen)
TAUTOMERS = ("O=c1cccc[nH]1", "Oc1ccccn1")


def _sample(n: int = 400) -> tuple[list, list[str]]:
    mols, smiles = [], []
    for line in sample_path("dti/screening_library.smi").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        try:
            parsed, mol = sanitize_smiles(line.split()[0])
        except Exception:
            continue
        mols.append(mol)
        smiles.append(parsed.smiles)
        if len(mols) == n:
            break
    return mols, smiles


def test_drug_table_equals_per_molecule_features() -> None:
    mols, smiles = _sample()
    F._FEATURE_CACHE.clear()
    one_by_one = F.stack_drugs([F.drug_features_from_mol(m, s) for m, s in zip(mols, smiles, strict=True)])
    batch = F.drug_table(mols, smiles)
    assert one_by_one.keys() == batch.keys()
    for k in batch:
        assert batch[k].dtype == one_by_one[k].dtype and np.array_equal(batch[k], one_by_one[k]), k


@pytest.mark.parametrize("smiles", ["ClCBr", "BrBr", "C(Cl)Br", "OB(O)c1ccc(Cl)cc1", "C~C*", "[Na+].[Cl-]", "C" * 130])
def test_token_matrix_equals_the_regex_tokens(smiles: str) -> None:
    assert np.array_equal(F.smiles_token_matrix([smiles])[0], F.smiles_tokens(smiles))


def test_cnn_inference_path_equals_the_training_path() -> None:
    net, _ = load_model("default")
    _, smiles = _sample()
    tokens = torch.from_numpy(F.smiles_token_matrix([*smiles, "C", "O"]))
    enc = net.members[0].encoders["drug_smiles"]
    assert not enc.training
    with torch.enable_grad():
        reference = enc(tokens).detach()
    with torch.no_grad():
        fast = enc(tokens)
    assert torch.equal(fast, reference)


def test_reference_similarity_equals_dense_tanimoto() -> None:
    index = load_model("default")[0].neighbours
    mols, smiles = _sample(200)
    bits = F.drug_table(mols, smiles)["ecfp"]
    assert np.array_equal(index.similarity(bits), tanimoto(bits, index.drug_bits))


def test_heavy_formula_drops_hydrogens_and_charge_only() -> None:
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula

    forms = [CalcMolFormula(Chem.MolFromSmiles(s)) for s in ("CC(=O)O", "CC(=O)[O-]", "C[NH3+]", "CN")]
    assert [heavy_formula(f) for f in forms] == ["C2O2", "C2O2", "CN", "CN"]
    assert heavy_formula("C2H6Hg") == heavy_formula("C2H5Hg+")


def test_screen_groups_tautomers_by_inchikey(tmp_path, monkeypatch) -> None:
    from tools.dti.scoring import dti_screen

    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "inline")
    monkeypatch.setenv("RESEARCH_MCP_DTI__SCREEN_PARTITION_ROWS", "50")
    from tools.settings import reload_settings

    reload_settings()
    rows = [ln.split()[:2] for ln in sample_path("dti/screening_library.smi").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")][:120]
    rows[5] = [TAUTOMERS[0], "pyridone"]
    rows[90] = [TAUTOMERS[1], "hydroxypyridine"]
    path = tmp_path / "lib.smi"
    path.write_text("".join(f"{s} {i}\n" for s, i in rows))
    with open(sample_path("dti/targets.csv")) as fh:
        target = next(csv.DictReader(fh))["sequence"]
    r = dti_screen(target=target, library=str(path), top_k=1000, write_sdf=False)
    table = pq.read_table(r.scores_parquet).to_pylist()
    with open(r.hits_csv) as fh:
        hits = list(csv.DictReader(fh))
    # independent grouping: RDKit's InChIKey of every scored record, best score per key
    best: dict[str, tuple[float, int, list[str]]] = {}
    for rec in table:
        if rec["score"] is None:
            continue
        key = Chem.MolToInchiKey(Chem.MolFromSmiles(rec["smiles"])) or f"smiles:{rec['smiles']}"
        score, row, ids = best.get(key, (-1.0, 0, []))
        ids.append(rec["id"])
        best[key] = (score, row, ids) if score >= rec["score"] else (rec["score"], rec["row"], ids)
    expected = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    assert [h["inchikey"] or f"smiles:{h['smiles']}" for h in hits] == [k for k, _ in expected]
    assert [h["ids"].split(";") for h in hits] == [v[2] for _, v in expected]
    pyridone = next(h for h in hits if "pyridone" in h["ids"].split(";"))
    assert {"pyridone", "hydroxypyridine"} <= set(pyridone["ids"].split(";"))
    assert all(rec["formula"] for rec in table if rec["score"] is not None)
