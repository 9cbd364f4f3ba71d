"""DTI inputs: SMILES sanitization and salt stripping, protein checks, files in and out, bounds."""

import csv

import numpy as np
import pytest
from rdkit import Chem

from evals.shared_data import shared_data_path
from tools.dti.chem import INORGANIC_NOTE, check_protein, clean_protein, parse_smiles, try_parse_smiles
from tools.dti.files import read_molecules, read_pairs, write_csv, write_sdf
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import sample_path
from tools.settings import reload_settings

HUMAN_COLD_VAL = "dti/drugban/datasets/human/cold/val.csv"


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setenv("RESEARCH_MCP_DTI__MAX_HEAVY_ATOMS", "10")
    monkeypatch.setenv("RESEARCH_MCP_DTI__MAX_PROTEIN_LENGTH", "50")
    parse_smiles.cache_clear()
    reload_settings()
    yield
    monkeypatch.delenv("RESEARCH_MCP_DTI__MAX_HEAVY_ATOMS")
    monkeypatch.delenv("RESEARCH_MCP_DTI__MAX_PROTEIN_LENGTH")
    parse_smiles.cache_clear()
    reload_settings()


def test_canonical_matches_rdkit_for_other_spellings():
    for a, b in [("OC(=O)c1ccccc1OC(C)=O", "CC(=O)Oc1ccccc1C(O)=O"), ("C1=CC=CC=C1O", "Oc1ccccc1")]:
        assert parse_smiles(a).smiles == parse_smiles(b).smiles == Chem.MolToSmiles(Chem.MolFromSmiles(b))


def test_salt_stripped_keeps_largest_organic_fragment_and_says_so():
    p = parse_smiles("CC(=O)Oc1ccccc1C(=O)[O-].[Na+]")
    assert p.smiles == Chem.MolToSmiles(Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)[O-]"))
    assert "[Na+]" in p.note and "largest organic fragment" in p.note
    # hydrochloride of a larger amine: the amine is kept, chloride reported
    q = parse_smiles("Cl.CN(C)CCCN1c2ccccc2CCc2ccccc21")
    assert q.smiles == Chem.MolToSmiles(Chem.MolFromSmiles("CN(C)CCCN1c2ccccc2CCc2ccccc21"))
    assert "Cl" in q.note
    assert parse_smiles("CCO").note is None


@pytest.mark.parametrize(
    ("smiles", "needle"),
    [
        ("C1CC", "could not be parsed"),
        ("c1cccc1", "sanitization failed"),
        ("CC(C)(C)(C)C", "sanitization failed"),
        ("", "Empty SMILES"),
        ("[2H]", "no heavy atoms"),
        ("CC O", "whitespace"),
        ("xyz", "could not be parsed"),
    ],
)
def test_invalid_smiles_have_clear_messages(smiles, needle):
    p, err = try_parse_smiles(smiles)
    assert p is None and needle in err
    with pytest.raises(InvalidInput):
        parse_smiles(smiles)


def test_size_limits(small_limits):
    with pytest.raises(LimitExceeded, match="RESEARCH_MCP_DTI__MAX_HEAVY_ATOMS"):
        parse_smiles("CCCCCCCCCCCC")
    assert parse_smiles("CCCCCCCCCC").heavy_atoms == 10
    with pytest.raises(LimitExceeded, match="MAX_PROTEIN_LENGTH"):
        check_protein("A" * 51)


def test_protein_checks():
    assert check_protein(" mkt ayiak qrqisfvksh\nfsrq* ") == "MKTAYIAKQRQISFVKSHFSRQ"
    assert check_protein("MKTAYIAKXXQRQISF") == "MKTAYIAKXXQRQISF"
    with pytest.raises(InvalidInput, match="Empty protein"):
        check_protein("   ")
    with pytest.raises(InvalidInput, match=r"'1', '@'.*position 4"):
        check_protein("MKT1AYIAK@QRQ")
    with pytest.raises(InvalidInput, match="nucleotide"):
        check_protein("ATGGCGTACGTTAGCATGCATGCAAT")
    with pytest.raises(InvalidInput, match="FASTA"):
        check_protein(">sp|P12345\nMKTAYIAK")
    with pytest.raises(InvalidInput, match="fewer than"):
        check_protein("MKT")


def test_read_sample_files_all_kinds():
    smi = read_molecules(sample_path("dti/screening_library.smi"))
    sdf = read_molecules(sample_path("dti/screening_library_sample.sdf"))
    assert len(smi) == 1988 and len(sdf) == 60
    # the SDF holds the first molecules of the library, by the same ids
    assert [r.id for r in sdf[:5]] == [r.id for r in smi[:5]]
    for a, b in zip(sdf[:20], smi[:20], strict=True):
        assert parse_smiles(a.smiles).smiles == parse_smiles(b.smiles).smiles
    recs, pcol, ycol, _ = read_pairs(sample_path("dti/bindingdb_pairs_train.csv"), require_label=True)
    with open(sample_path("dti/bindingdb_pairs_train.csv")) as fh:
        ref = list(csv.DictReader(fh))
    assert len(recs) == len(ref) == 172 and pcol == "Protein" and ycol == "Y"
    assert recs[3].smiles == ref[3]["SMILES"]


def test_csv_without_needed_columns(tmp_path):
    p = tmp_path / "pairs.csv"
    p.write_text("smiles,target_name\nCCO,EGFR\n")
    with pytest.raises(InvalidInput, match="lacks the column"):
        read_pairs(p)
    q = tmp_path / "mols.csv"
    q.write_text("name,weight\naspirin,180\n")
    with pytest.raises(InvalidInput, match="no SMILES column"):
        read_molecules(q)


def test_million_row_file_is_refused_before_work(tmp_path):
    p = tmp_path / "big.smi"
    p.write_text("CCO\n" * 1_000_000)
    with pytest.raises(LimitExceeded, match="RESEARCH_MCP_DTI__MAX_FILE_ROWS"):
        read_molecules(p)


def test_unknown_extension(tmp_path):
    p = tmp_path / "mols.xlsx"
    p.write_text("x")
    with pytest.raises(InvalidInput, match="Unknown file type"):
        read_molecules(p)


def test_bad_sdf_record_is_kept_as_an_error_row(tmp_path):
    good = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO"))
    p = tmp_path / "mix.sdf"
    p.write_text(good + "$$$$\nbroken\n  junk\n\nM  END\n$$$$\n" + good + "$$$$\n")
    recs = read_molecules(p)
    assert len(recs) == 3
    assert recs[1].smiles == "" and "_error" in recs[1].fields
    assert parse_smiles(recs[2].smiles).smiles == "CCO"


def test_write_csv_and_sdf_round_trip(tmp_path):
    rows = [("m1", "CCO", 0.5), ("m2", "c1ccccc1", 0.25)]
    c = write_csv(tmp_path / "o.csv", ["id", "smiles", "score"], rows)
    with open(c) as fh:
        back = list(csv.DictReader(fh))
    assert [(r["id"], r["smiles"], float(r["score"])) for r in back] == rows
    s = write_sdf(tmp_path / "o.sdf", [(i, smi, {"score": sc}) for i, smi, sc in rows])
    mols = list(Chem.SDMolSupplier(str(s)))
    assert [m.GetProp("_Name") for m in mols] == ["m1", "m2"]
    assert [float(m.GetProp("score")) for m in mols] == [0.5, 0.25]
    assert Chem.MolToSmiles(mols[1]) == "c1ccccc1"


@pytest.mark.parametrize(
    ("smiles", "kept", "notes"),
    [
        ("[Mg+2]", "[Mg+2]", [INORGANIC_NOTE]),
        ("[Zn]", "[Zn]", [INORGANIC_NOTE]),
        ("O.O.[Zn]", "[Zn]", ["hydrate: removed 2 water", INORGANIC_NOTE]),
        ("O.[Hg].[Hg]", "[Hg]", ["hydrate: removed 1 water", "kept one of 2 identical fragments [Hg]", INORGANIC_NOTE]),
        ("Cl[Pt]Cl", "Cl[Pt]Cl", [INORGANIC_NOTE]),
        ("[Na+].[Cl-]", "[Cl-].[Na+]", ["inorganic mixture/salt: scored as a whole", INORGANIC_NOTE]),
        ("CC(=O)O.O", "CC(=O)O", ["hydrate: removed 1 water"]),
        ("O", "O", [INORGANIC_NOTE]),  # water alone is the species, not a hydrate
    ],
)
def test_inorganic_and_hydrates_are_scored_with_notes(smiles, kept, notes):
    p = parse_smiles(smiles)
    assert p.smiles == Chem.MolToSmiles(Chem.MolFromSmiles(kept))
    assert p.note == "; ".join(notes)


def test_nonstandard_residues_are_mapped_and_noted():
    seq, note = clean_protein("mktuayiakoqrqbzjx")
    assert seq == "MKTCAYIAKKQRQXXXX"
    assert note == (
        "protein residues mapped: 1 selenocysteine U -> C, 1 pyrrolysine O -> K, 1 Asx (D or N) B -> X, "
        "1 Glx (E or Q) Z -> X, 1 Xle (L or I) J -> X"
    )
    assert clean_protein("MKTAYIAKQRQISF") == ("MKTAYIAKQRQISF", None)
    # a selenoprotein is read as its cysteine form: identical features
    from tools.dti.features import protein_features

    u = "MKTAYIAKQRQU" + "ISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAV" * 3 + "UCG"
    c = u.replace("U", "C")
    assert clean_protein(u)[0] == c
    np.testing.assert_array_equal(protein_features(clean_protein(u)[0])[1], protein_features(c)[1])


@pytest.mark.shared_data(HUMAN_COLD_VAL)
def test_real_human_rows_with_metals_and_selenocysteine_pass_the_checks():
    from tools.dti.chem import try_check_protein

    with open(shared_data_path(HUMAN_COLD_VAL)) as fh:
        rows = list(csv.DictReader(fh))
    metal = [r for r in rows if r["SMILES"] in ("O.[Hg].[Hg]", "[90Sr+2]")]
    seleno = [r for r in rows if "U" in r["Protein"]]
    assert len(metal) == 2 and len(seleno) == 1
    for r in metal:
        p, err = try_parse_smiles(r["SMILES"])
        assert err is None and INORGANIC_NOTE in p.note
    seq, err = try_check_protein(seleno[0]["Protein"])
    assert err is None and "U" not in seq and len(seq) == len(seleno[0]["Protein"])
    # every row of the file now passes both checks (before, 14 of 155 were refused)
    assert all(try_parse_smiles(r["SMILES"])[1] is None and try_check_protein(r["Protein"])[1] is None for r in rows)
