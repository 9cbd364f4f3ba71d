"""Molecules and proteins in: RDKit parsing and sanitization, salt stripping, sequence checks, size bounds.

`parse_smiles` returns the canonical SMILES of the largest organic fragment and says what it removed;
`check_protein` returns the cleaned sequence. Both raise `InvalidInput` / `LimitExceeded` with a
message that names the problem; the `try_*` forms return the message instead, for per-row reporting.
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
NUCLEOTIDES = frozenset("ACGTUN")
ORGANIC_ELEMENTS = frozenset({6})
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


@functools.cache
def _organic_query() -> Any:
    from rdkit import Chem

    return Chem.MolFromSmarts("[" + ",".join(f"#{z}" for z in sorted(ORGANIC_ELEMENTS)) + "]")


def _is_organic(mol: Any) -> bool:
    return mol.HasSubstructMatch(_organic_query())


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
    note = None
    if "." in text and len(Chem.GetMolFrags(mol)) > 1:
        frags = Chem.GetMolFrags(mol, asMols=True)
        organic = [f for f in frags if _is_organic(f)]
        if not organic:
            raise InvalidInput(
                f"SMILES {text[:80]!r} has no organic (carbon-containing) fragment.",
                hint="Drug-target scoring needs an organic molecule; inorganic salts are not scored.",
            )
        keep = max(organic, key=lambda f: (f.GetNumHeavyAtoms(), Chem.MolToSmiles(f)))
        removed = [Chem.MolToSmiles(f) for f in frags if f is not keep]
        mol = keep
        note = f"mixture/salt: kept the largest organic fragment, removed {', '.join(removed)}"
    heavy = mol.GetNumHeavyAtoms()
    if heavy == 0:
        raise InvalidInput(f"SMILES {text[:80]!r} has no heavy atoms.", hint="Give a molecule with heavy atoms.")
    if heavy > limits.max_heavy_atoms:
        raise LimitExceeded(
            f"Heavy-atom count of {text[:40]!r}", heavy, limits.max_heavy_atoms, "RESEARCH_MCP_DTI__MAX_HEAVY_ATOMS"
        )
    if not _is_organic(mol):
        raise InvalidInput(
            f"SMILES {text[:80]!r} has no carbon atom.",
            hint="Drug-target scoring needs an organic molecule; inorganic species are not scored.",
        )
    return ParsedMolecule(input=text, smiles=Chem.MolToSmiles(mol), heavy_atoms=heavy, note=note), mol


def try_parse_smiles(smiles: str) -> tuple[ParsedMolecule | None, str | None]:
    """`(parsed, None)` or `(None, error message)`, for per-row reporting in batches."""
    try:
        return parse_smiles(smiles), None
    except ResearchError as exc:
        return None, str(exc)


def check_protein(sequence: str) -> str:
    """Validate and clean a protein sequence (upper case, whitespace and a trailing '*' removed).

    Accepts the 20 standard amino-acid letters plus X; raises `InvalidInput` for an empty sequence,
    another letter, or a nucleotide sequence, and `LimitExceeded` outside the length bounds.
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
    bad = sorted({c for c in seq if c not in PROTEIN_ALPHABET})
    if bad:
        pos = next(i for i, c in enumerate(seq) if c not in PROTEIN_ALPHABET)
        raise InvalidInput(
            f"Not a protein sequence: character(s) {', '.join(repr(b) for b in bad)} (first at position {pos + 1}) "
            "are not among the 20 standard amino acids or X.",
            hint="Use one-letter codes ACDEFGHIKLMNPQRSTVWY, with X for unknown residues (B, Z, U, O -> X).",
        )
    if len(seq) >= 20 and set(seq) <= NUCLEOTIDES:
        raise InvalidInput(
            "This looks like a nucleotide (DNA/RNA) sequence, not a protein.",
            hint="Translate it to amino acids first, or pass the protein sequence.",
        )
    return seq


def try_check_protein(sequence: str) -> tuple[str | None, str | None]:
    """`(sequence, None)` or `(None, error message)`."""
    try:
        return check_protein(sequence), None
    except ResearchError as exc:
        return None, str(exc)
