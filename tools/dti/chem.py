"""Molecules and proteins in: RDKit parsing and sanitization, salt stripping, sequence checks, size bounds.

`parse_smiles` returns the canonical SMILES of the species that is scored and says what it changed:

- hydrate water is removed;
- a mixture or salt with an organic (carbon-containing) fragment keeps its largest organic fragment;
- an inorganic compound (metal ions, metals, oxides, inorganic salts such as `[Mg+2]`, `[Zn]`,
  `Cl[Pt]Cl`) is kept whole (identical fragments once) and scored, with a note that the model has
  seen few such compounds.

`clean_protein` returns the cleaned sequence and a note: the non-standard residue letters are mapped as
UniProt and IUPAC define them, selenocysteine `U` -> `C` (its sulfur analogue, so composition, CTD and
k-mer features read it as a cysteine), pyrrolysine `O` -> `K` (a lysine derivative), and the ambiguity
codes `B` (D/N), `Z` (E/Q) and `J` (L/I) -> `X` (unknown). `check_protein` returns the sequence only.
They raise `InvalidInput` / `LimitExceeded` with a message that names the problem; the `try_*` forms
return the message instead, for per-row reporting.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from tools.errors import InvalidInput, LimitExceeded, ResearchError
from tools.settings import get_settings

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
PROTEIN_ALPHABET = frozenset(AMINO_ACIDS + "X")
# non-standard one-letter codes -> the letter the features read (see the module docstring)
RESIDUE_MAP = {"U": "C", "O": "K", "B": "X", "Z": "X", "J": "X"}
RESIDUE_NAMES = {
    "U": "selenocysteine",
    "O": "pyrrolysine",
    "B": "Asx (D or N)",
    "Z": "Glx (E or Q)",
    "J": "Xle (L or I)",
}
_RESIDUE_TABLE = str.maketrans(RESIDUE_MAP)
NUCLEOTIDES = frozenset("ACGTUN")
ORGANIC_ELEMENTS = frozenset({6})
INORGANIC_NOTE = (
    "inorganic (no carbon atom): scored from its element-level fingerprint and descriptors, "
    "with less training support than organic molecules"
)
_WHITESPACE = re.compile(r"\s")


@dataclass(frozen=True)
class ParsedMolecule:
    """A sanitized molecule: canonical SMILES of the kept fragment and what was done to the input."""

    input: str
    smiles: str
    heavy_atoms: int
    note: str | None = None


@functools.cache
def _quiet_rdkit() -> None:
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")


def _is_organic(mol: Any) -> bool:
    return any(atom.GetAtomicNum() in ORGANIC_ELEMENTS for atom in mol.GetAtoms())


@functools.lru_cache(maxsize=100_000)
def parse_smiles(smiles: str) -> ParsedMolecule:
    """Parse, sanitize and canonicalise a SMILES; keep the largest organic fragment of a mixture or salt.

    Raises `InvalidInput` for an empty or unparsable SMILES and `LimitExceeded` past the size bounds.
    """
    return sanitize_smiles(smiles)[0]


def sanitize_smiles(smiles: str) -> tuple[ParsedMolecule, Any]:
    """`parse_smiles` uncached, also returning the sanitized RDKit molecule of the kept fragment."""
    from rdkit import Chem

    _quiet_rdkit()
    limits = get_settings().dti
    text = (smiles or "").strip()
    if not text:
        raise InvalidInput("Empty SMILES.", hint="Give a SMILES string such as 'CC(=O)Oc1ccccc1C(=O)O'.")
    if len(text) > limits.max_smiles_length:
        raise LimitExceeded("SMILES length", len(text), limits.max_smiles_length, "RESEARCH_MCP_DTI__MAX_SMILES_LENGTH")
    if _WHITESPACE.search(text):
        raise InvalidInput(
            f"SMILES {text[:60]!r} contains whitespace.", hint="Pass one SMILES per item, without names or spaces."
        )
    mol = Chem.MolFromSmiles(text, sanitize=False)
    if mol is None:
        raise InvalidInput(
            f"Invalid SMILES {text[:80]!r}: it could not be parsed (check brackets, ring closures and atom symbols).",
            hint="Fix the syntax or drop the item.",
        )
    try:
        Chem.SanitizeMol(mol)
    except Exception as exc:  # RDKit raises its own exception classes for valence and aromaticity errors
        raise InvalidInput(
            f"Invalid SMILES {text[:80]!r}: RDKit sanitization failed ({str(exc).strip().splitlines()[0]}).",
            hint="Check valences, charges and aromatic rings.",
        ) from None
    notes: list[str] = []
    frags = Chem.GetMolFrags(mol, asMols=True) if "." in text else (mol,)
    if len(frags) > 1:
        mol, notes = _kept_species(Chem, list(frags))
    heavy = mol.GetNumHeavyAtoms()
    if heavy == 0:
        raise InvalidInput(f"SMILES {text[:80]!r} has no heavy atoms.", hint="Give a molecule with heavy atoms.")
    if heavy > limits.max_heavy_atoms:
        raise LimitExceeded(
            f"Heavy-atom count of {text[:40]!r}", heavy, limits.max_heavy_atoms, "RESEARCH_MCP_DTI__MAX_HEAVY_ATOMS"
        )
    if not _is_organic(mol):
        notes.append(INORGANIC_NOTE)
    note = "; ".join(notes) or None
    return ParsedMolecule(input=text, smiles=Chem.MolToSmiles(mol), heavy_atoms=heavy, note=note), mol


def _is_water(frag: Any) -> bool:
    if frag.GetNumHeavyAtoms() != 1:
        return False
    atom = frag.GetAtomWithIdx(0)
    return atom.GetAtomicNum() == 8 and atom.GetTotalNumHs() == 2 and atom.GetFormalCharge() == 0


def _kept_species(Chem: Any, frags: list[Any]) -> tuple[Any, list[str]]:
    """The fragment(s) of a mixture that are scored, and notes on what was removed."""
    notes = []
    water = [f for f in frags if _is_water(f)]
    if water and len(water) < len(frags):
        frags = [f for f in frags if not _is_water(f)]
        notes.append(f"hydrate: removed {len(water)} water")
    organic = [f for f in frags if _is_organic(f)]
    if organic:
        keep = max(organic, key=lambda f: (f.GetNumHeavyAtoms(), Chem.MolToSmiles(f)))
        removed = [Chem.MolToSmiles(f) for f in frags if f is not keep]
        if removed:
            notes.append(f"mixture/salt: kept the largest organic fragment, removed {', '.join(removed)}")
        return keep, notes
    distinct = sorted({Chem.MolToSmiles(f) for f in frags})
    if len(distinct) == 1:
        if len(frags) > 1:
            notes.append(f"kept one of {len(frags)} identical fragments {distinct[0]}")
        return frags[0], notes
    # an inorganic salt or complex is the species itself: keep every (non-water) fragment
    whole = frags[0]
    for f in frags[1:]:
        whole = Chem.CombineMols(whole, f)
    Chem.SanitizeMol(whole)
    notes.append("inorganic mixture/salt: scored as a whole")
    return whole, notes


def try_parse_smiles(smiles: str) -> tuple[ParsedMolecule | None, str | None]:
    """`(parsed, None)` or `(None, error message)`, for per-row reporting in batches."""
    try:
        return parse_smiles(smiles), None
    except ResearchError as exc:
        return None, str(exc)


def clean_protein(sequence: str) -> tuple[str, str | None]:
    """Validate and clean a protein sequence: `(sequence, note)`.

    Upper-cases, removes whitespace and a trailing '*', maps U -> C, O -> K and B, Z, J -> X (the note
    says which and how many); accepts the 20 standard amino-acid letters plus X. Raises `InvalidInput`
    for an empty sequence, another letter, or a nucleotide sequence, and `LimitExceeded` outside the
    length bounds.
    """
    limits = get_settings().dti
    if not isinstance(sequence, str):
        raise InvalidInput("The protein sequence must be a string.", hint="Give one-letter amino-acid codes.")
    seq = "".join(sequence.split()).upper()
    if seq.startswith(">"):
        raise InvalidInput(
            "The protein sequence starts with '>' (a FASTA header).", hint="Pass the sequence lines only."
        )
    seq = seq.rstrip("*")
    if not seq:
        raise InvalidInput("Empty protein sequence.", hint="Give the amino-acid sequence in one-letter codes.")
    if len(seq) > limits.max_protein_length:
        raise LimitExceeded(
            "Protein length", len(seq), limits.max_protein_length, "RESEARCH_MCP_DTI__MAX_PROTEIN_LENGTH"
        )
    if len(seq) < limits.min_protein_length:
        raise InvalidInput(
            f"Protein sequence {seq!r} has {len(seq)} residues, fewer than {limits.min_protein_length}.",
            hint="Give a full protein sequence (set RESEARCH_MCP_DTI__MIN_PROTEIN_LENGTH to accept peptides).",
        )
    if len(seq) >= 20 and set(seq) <= NUCLEOTIDES:
        raise InvalidInput(
            "This looks like a nucleotide (DNA/RNA) sequence, not a protein.",
            hint="Translate it to amino acids first, or pass the protein sequence.",
        )
    mapped = [f"{seq.count(c)} {RESIDUE_NAMES[c]} {c} -> {RESIDUE_MAP[c]}" for c in RESIDUE_MAP if c in seq]
    seq = seq.translate(_RESIDUE_TABLE)
    bad = sorted({c for c in seq if c not in PROTEIN_ALPHABET})
    if bad:
        pos = next(i for i, c in enumerate(seq) if c not in PROTEIN_ALPHABET)
        raise InvalidInput(
            f"Not a protein sequence: character(s) {', '.join(repr(b) for b in bad)} (first at position {pos + 1}) "
            "are not amino-acid codes.",
            hint="Use one-letter codes ACDEFGHIKLMNPQRSTVWY, X for unknown residues; U, O, B, Z and J are "
            "accepted and mapped (U -> C, O -> K, B/Z/J -> X).",
        )
    return seq, ("protein residues mapped: " + ", ".join(mapped)) if mapped else None


def check_protein(sequence: str) -> str:
    """The cleaned sequence of `clean_protein` (its note dropped)."""
    return clean_protein(sequence)[0]


def try_check_protein(sequence: str) -> tuple[str | None, str | None]:
    """`(sequence, None)` or `(None, error message)`."""
    try:
        return check_protein(sequence), None
    except ResearchError as exc:
        return None, str(exc)


def protein_note(sequence: str) -> str | None:
    """The note of `clean_protein` for a sequence (None when nothing was mapped or it is invalid)."""
    try:
        return clean_protein(sequence)[1]
    except ResearchError:
        return None
