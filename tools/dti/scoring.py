"""DTI tools that read: validate inputs, featurize, score pairs, screen a library, explain a score."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tools.atomic import atomic_output
from tools.dti.chem import check_protein, protein_note, try_check_protein, try_parse_smiles
from tools.dti.files import read_molecules, read_pairs, write_csv
from tools.dti.files import write_sdf as write_sdf_file
from tools.dti.registry import DEFAULT_MODEL, SHIPPED_HELP, load_model
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import output_path, resolve_input
from tools.progress import Progress, checkpoint, report
from tools.settings import get_settings

ModelName = Annotated[
    str,
    Field(
        description=f"{SHIPPED_HELP} or a dti_train model."
    ),
]


def _limits():
    return get_settings().dti


def _check_batch(n: int, what: str) -> None:
    lim = _limits().max_batch
    if n > lim:
        raise LimitExceeded(what, n, lim, "RESEARCH_MCP_DTI__MAX_BATCH")


# ------------------------------------------------------------------ dti_validate


class ItemCheck(BaseModel):
    index: int = Field(description="0-based position of the item (or file row number for files).")
    input: str = Field(description="The item as given (truncated to 80 characters).")
    ok: bool
    canonical: str | None = Field(
        None, description="Canonical SMILES of the kept fragment, or cleaned sequence length."
    )
    note: str | None = Field(
        None, description="What was changed (water, salt or mixture stripped; inorganic; residues mapped)."
    )
    error: str | None = Field(None, description="Why the item is invalid and how to fix it.")


class ValidateResult(BaseModel):
    molecules_checked: int
    molecules_valid: int
    proteins_checked: int
    proteins_valid: int
    molecules: list[ItemCheck] = Field(description="Per-molecule results (inline up to the row bound).")
    proteins: list[ItemCheck]
    report_csv: str | None = Field(None, description="CSV with every row's result when there are more rows.")


def dti_validate(
    smiles: list[str] | None = None,
    proteins: Annotated[list[str] | None, Field(description="One-letter sequences.")] = None,
    path: Annotated[str | None, Field(description="Molecule file (.sdf, .smi, .csv with SMILES) or sample://.")]
    = None,
) -> ValidateResult:
    """Check molecules and protein sequences before scoring: parse, sanitize, strip salts, bound sizes.

    Says what dti_score / dti_screen would reject or change (all rows in report_csv past max_inline_rows).
    """
    items: list[str] = list(smiles or [])
    rows = list(range(len(items)))
    if path:
        recs = read_molecules(resolve_input(path))
        items += [r.smiles for r in recs]
        rows += [r.row for r in recs]
    _check_batch(len(items), "Molecules to validate")
    _check_batch(len(proteins or []), "Proteins to validate")
    if not items and not proteins:
        raise InvalidInput("Nothing to validate.", hint="Pass smiles, proteins or path.")
    mols = []
    for i, s in zip(rows, items, strict=True):
        parsed, err = try_parse_smiles(s)
        mols.append(
            ItemCheck(
                index=i,
                input=s[:80],
                ok=parsed is not None,
                canonical=parsed.smiles if parsed else None,
                note=parsed.note if parsed else None,
                error=err,
            )
        )
    prots = []
    for i, q in enumerate(proteins or []):
        clean, err = try_check_protein(q)
        prots.append(
            ItemCheck(
                index=i,
                input=q[:80],
                ok=clean is not None,
                canonical=f"{len(clean)} residues" if clean else None,
                note=protein_note(q) if clean else None,
                error=err,
            )
        )
    cap = _limits().max_inline_rows
    csv_path = None
    if len(mols) > cap or len(prots) > cap:
        csv_path = str(
            write_csv(
                output_path("dti_validate", ".csv"),
                ["kind", "index", "input", "ok", "canonical", "note", "error"],
                [("molecule", m.index, m.input, m.ok, m.canonical, m.note, m.error) for m in mols]
                + [("protein", p.index, p.input, p.ok, p.canonical, None, p.error) for p in prots],
            )
        )
    return ValidateResult(
        molecules_checked=len(mols),
        molecules_valid=sum(m.ok for m in mols),
        proteins_checked=len(prots),
        proteins_valid=sum(p.ok for p in prots),
        molecules=mols[:cap],
        proteins=prots[:cap],
        report_csv=csv_path,
    )


def no_valid_item(result: dict[str, Any]) -> str | None:
    """Why a `dti_validate` result holds nothing usable: a kind of item given, none of it valid."""
    bad = [f"0 of {result[f'{kind}_checked']} {kind} valid" for kind in ("molecules", "proteins")
           if result[f"{kind}_checked"] and not result[f"{kind}_valid"]]
    return "; ".join(bad) + " (each item's error says why)" if bad else None


# ------------------------------------------------------------------ dti_featurize

DrugFeatureKind = Literal[
    "ecfp4", "ecfp6", "fcfp4", "maccs", "atompair", "torsion", "rdkit", "descriptors", "smiles_tokens"
]
ProteinFeatureKind = Literal["aac", "dipeptide", "ctd", "composition", "tokens"]


class FeaturizeResult(BaseModel):
    drug_feature: str | None
    protein_feature: str | None
    molecules: int = Field(description="Molecules featurized (valid ones).")
    proteins: int
    drug_dim: int | None = None
    protein_dim: int | None = None
    drug_csv: str | None = Field(None, description="CSV: id, canonical SMILES, one column per feature.")
    protein_csv: str | None = None
    errors: list[ItemCheck] = Field(default_factory=list, description="Rejected items (first max_inline_rows).")
    preview: dict[str, list[float]] = Field(
        default_factory=dict, description="First item's non-zero features (index: value, at most 40)."
    )


def dti_featurize(
    smiles: list[str] | None = None,
    path: Annotated[str | None, Field(description="Molecule file (.sdf, .csv, .smi) or sample://.")] = None,
    drug_feature: DrugFeatureKind = "ecfp4",
    n_bits: Annotated[int, Field(ge=64, le=8192, description="Length of hashed fingerprints.")] = 2048,
    proteins: list[str] | None = None,
    protein_feature: Annotated[
        ProteinFeatureKind,
        Field(description="aac (20), dipeptide (400), ctd (147), composition: all three (567), or tokens."),
    ] = "composition",
) -> FeaturizeResult:
    """Compute molecular fingerprints/descriptors and protein sequence features as CSV files.

    Returns the paths, dimensions, a preview and the rejected items.
    """
    import numpy as np

    from tools.dti.chem import sanitize_smiles
    from tools.dti.features import DESCRIPTOR_NAMES, fingerprint, protein_features, smiles_tokens
    from tools.errors import ResearchError

    items: list[tuple[str, str]] = [(f"mol{i}", s) for i, s in enumerate(smiles or [])]
    if path:
        items += [(r.id, r.smiles) for r in read_molecules(resolve_input(path))]
    _check_batch(len(items), "Molecules to featurize")
    _check_batch(len(proteins or []), "Proteins to featurize")
    if not items and not proteins:
        raise InvalidInput("Nothing to featurize.", hint="Pass smiles, path or proteins.")
    errors: list[ItemCheck] = []
    rows = []
    for i, (mid, s) in enumerate(items):
        checkpoint()
        try:
            parsed, mol = sanitize_smiles(s)
        except ResearchError as exc:
            errors.append(ItemCheck(index=i, input=s[:80], ok=False, error=str(exc)))
            continue
        vec = (
            smiles_tokens(parsed.smiles) if drug_feature == "smiles_tokens" else fingerprint(mol, drug_feature, n_bits)
        )
        rows.append((mid, parsed.smiles, np.asarray(vec, dtype=np.float64)))
    preview: dict[str, list[float]] = {}
    result = FeaturizeResult(
        drug_feature=drug_feature if items else None,
        protein_feature=protein_feature if proteins else None,
        molecules=len(rows),
        proteins=0,
    )
    if rows:
        dim = len(rows[0][2])
        names = list(DESCRIPTOR_NAMES) if drug_feature == "descriptors" else [f"{drug_feature}_{j}" for j in range(dim)]
        result.drug_dim = dim
        result.drug_csv = str(
            write_csv(
                output_path(f"dti_{drug_feature}", ".csv"),
                ["id", "smiles", *names],
                (
                    [mid, smi, *[float(x) if drug_feature == "descriptors" else int(x) for x in v]]
                    for mid, smi, v in rows
                ),
            )
        )
        nz = np.flatnonzero(rows[0][2])[:40]
        preview["first_molecule"] = [float(j) for j in nz]
    prow = []
    for i, q in enumerate(proteins or []):
        clean, err = try_check_protein(q)
        if clean is None:
            errors.append(ItemCheck(index=i, input=q[:80], ok=False, error=err))
            continue
        tokens, comp = protein_features(clean)
        vec = {"aac": comp[:20], "dipeptide": comp[20:420], "ctd": comp[420:], "composition": comp, "tokens": tokens}[
            protein_feature
        ]
        prow.append((f"protein{i}", vec))
    if prow:
        result.proteins = len(prow)
        result.protein_dim = len(prow[0][1])
        result.protein_csv = str(
            write_csv(
                output_path(f"dti_{protein_feature}", ".csv"),
                ["id", *[f"{protein_feature}_{j}" for j in range(result.protein_dim)]],
                ([pid, *[float(x) for x in v]] for pid, v in prow),
            )
        )
    result.errors = errors[: _limits().max_inline_rows]
    result.preview = preview
    return result


# ------------------------------------------------------------------ dti_score


class PairIn(BaseModel):
    smiles: str
    protein: str
    id: str | None = Field(None, description="Echoed back.")


class PairScore(BaseModel):
    index: int = Field(description="0-based position (file row number for files).")
    id: str | None = None
    score: float | None = Field(None, description="Interaction probability in [0, 1]; null for a rejected row.")
    smiles: str | None = Field(None, description="Canonical SMILES that was scored.")
    note: str | None = Field(
        None, description="What was changed before scoring (salt stripped, inorganic, residues mapped)."
    )
    error: str | None = Field(None, description="Why this row was not scored, and how to fix it.")


class ScoreResult(BaseModel):
    model: str
    scored: int
    rejected: int
    scores: list[PairScore] = Field(description="Per-pair results (inline up to max_inline_rows).")
    scores_csv: str | None = Field(
        None, description="CSV with every pair when there are more rows (or a file was given)."
    )
    seconds: float


def dti_score(
    pairs: list[PairIn] | None = None,
    path: Annotated[str | None, Field(description="Or a CSV/TSV with columns SMILES, Protein (and id).")] = None,
    model: ModelName = DEFAULT_MODEL,
    progress: Progress | None = None,
) -> ScoreResult:
    """Score drug-target pairs with the multimodal GRAM-aligned model: interaction probability per pair.

    Pick a `model` trained without your pairs. Bad rows get a reason. Scores inline up to max_inline_rows, all in a
    CSV.
    """
    import numpy as np

    from tools.dti.train import build_tables, predict

    t0 = time.time()
    items: list[tuple[int, str | None, str, str]] = [(i, p.id, p.smiles, p.protein) for i, p in enumerate(pairs or [])]
    from_file = bool(path)
    if path:
        recs, pcol, _, _ = read_pairs(resolve_input(path))
        items += [(r.row, r.id, r.smiles, r.fields.get(pcol) or "") for r in recs]
    if not items:
        raise InvalidInput("No pairs to score.", hint="Pass pairs=[{smiles, protein}] or a CSV path.")
    _check_batch(len(items), "Pairs to score")
    net, _card = load_model(model)
    report(progress, 0, len(items), "featurizing")
    tables, di, pi, errors = build_tables([it[2] for it in items], [it[3] for it in items])
    ok = np.flatnonzero(di >= 0)
    report(progress, len(items) // 2, len(items), "scoring")
    check = progress.check if progress is not None else None
    probs = predict(net, tables, di[ok], pi[ok], threads=_limits().threads, check=check) if len(ok) else np.zeros(0)
    score_of = dict(zip(ok.tolist(), probs.tolist(), strict=True))
    out = []
    for k, (i, pid, smi, seq) in enumerate(items):
        if progress is not None and k % 4096 == 0:
            progress.check()
        parsed, _err = try_parse_smiles(smi) if k in score_of else (None, None)
        notes = [n for n in ((parsed.note if parsed else None), protein_note(seq) if parsed else None) if n]
        out.append(
            PairScore(
                index=i,
                id=pid,
                score=score_of.get(k),
                smiles=parsed.smiles if parsed else None,
                note="; ".join(notes) or None,
                error=errors.get(k),
            )
        )
    cap = _limits().max_inline_rows
    csv_path = None
    if len(out) > cap or from_file:
        csv_path = str(
            write_csv(
                output_path("dti_scores", ".csv"),
                ["index", "id", "smiles", "score", "note", "error"],
                [(s.index, s.id, s.smiles, s.score, s.note, s.error) for s in out],
            )
        )
    report(progress, len(items), len(items), "done")
    return ScoreResult(
        model=model,
        scored=len(ok),
        rejected=len(items) - len(ok),
        scores=out[:cap],
        scores_csv=csv_path,
        seconds=round(time.time() - t0, 3),
    )


def no_row_scored(result: dict[str, Any]) -> str | None:
    """Why a `dti_score` or `dti_screen` result holds nothing usable: no row could be scored."""
    if result["scored"]:
        return None
    return f"0 of {result['rejected']} rows could be scored (each row's error says why)"


# ------------------------------------------------------------------ dti_screen


class Hit(BaseModel):
    rank: int
    id: str = Field(description="Input id of the best-scoring record of this molecule.")
    ids: list[str] = Field(description="Every input id of this molecule (the same InChIKey), in file order.")
    smiles: str
    inchikey: str | None = None
    score: float


class ScreenResult(BaseModel):
    model: str
    library_size: int = Field(description="Records read from the library.")
    scored: int
    rejected: int
    top: list[Hit] = Field(description="Best-ranked hits inline (at most 20).")
    hits_csv: str = Field(description="CSV of the top_k hits: rank, id, ids, smiles, inchikey, score, note.")
    hits_sdf: str | None = Field(None, description="SDF of the top_k hits with score properties (if asked).")
    scores_parquet: str = Field(
        description="Parquet of every record: row, id, input, smiles, formula, score (null if rejected), note, error "
        "(InChIKeys are computed for the hits only: see hits_csv)."
    )
    rejected_csv: str | None = Field(None, description="CSV of the rejected records with reasons.")
    hits_png: str | None = Field(None, description="PNG grid of the top 8 hits, the atoms that drive each score "
                                 "highlighted (red: supports binding, blue: against).")
    partitions: int = Field(description="Partitions the library was streamed in (one Dask task each).")
    distributed: bool = Field(description="Whether the partitions ran on a Dask cluster (else in this process).")
    seconds: float
    molecules_per_second: float


def dti_screen(
    target: Annotated[str, Field(description="Protein sequence.")],
    library: Annotated[str, Field(description=".smi/.csv/.tsv/.sdf (gz too) or .parquet, e.g. "
                                  "sample://dti/screening_library.smi.")],
    top_k: Annotated[int, Field(ge=1)] = 100,
    model: ModelName = DEFAULT_MODEL,
    write_sdf: bool = True,
    progress: Progress | None = None,
) -> ScreenResult:
    """Screen a molecule library of any size against one target on Dask: score, rank, write the top-k.

    Returns the top 20 (one per InChIKey), hits CSV/SDF, a PNG grid of the top 8, a Parquet of all scores. Bounded
    by max_screen_rows.
    """
    from tools.dti.library import library_kind, screen_library
    from tools.execution import will_distribute

    t0 = time.time()
    lim = _limits()
    if top_k > lim.max_top_k:
        raise LimitExceeded("top_k", top_k, lim.max_top_k, "RESEARCH_MCP_DTI__MAX_TOP_K")
    seq = check_protein(target)
    lib_path = resolve_input(library)
    library_kind(lib_path)
    load_model(model)
    summary = screen_library(
        lib_path, seq, model, top_k, output_path("dti_screen_scores", ".parquet"),
        output_path("dti_screen_rejected", ".csv"), lim.screen_partition_rows, lim.max_screen_rows, progress,
    )
    hits = [
        Hit(rank=r, id=c.id, ids=ids, smiles=c.smiles, inchikey=c.inchikey, score=c.score)
        for r, (c, ids) in enumerate(summary.hits, start=1)
    ]
    notes = [c.note for c, _ in summary.hits]
    csv_path = output_path("dti_screen_hits", ".csv")
    with atomic_output(csv_path) as tmp:
        write_csv(tmp, ["rank", "id", "ids", "smiles", "inchikey", "score", "note"],
                  [(h.rank, h.id, ";".join(h.ids), h.smiles, h.inchikey, h.score, n) for h, n in zip(hits, notes,
                                                                                                  strict=True)])
    sdf_path = None
    if write_sdf:
        sdf_path = output_path("dti_screen_hits", ".sdf")
        with atomic_output(sdf_path) as tmp:
            write_sdf_file(tmp, [(h.id, h.smiles, {"rank": h.rank, "score": h.score, "ids": ";".join(h.ids),
                                                   "inchikey": h.inchikey or ""}) for h in hits])
    png_path = hit_grid(hits[:GRID_HITS], seq, model) if hits else None
    secs = time.time() - t0
    return ScreenResult(
        model=model,
        library_size=summary.records,
        scored=summary.scored,
        rejected=summary.rejected,
        top=hits[:20],
        hits_csv=str(csv_path),
        hits_sdf=str(sdf_path) if sdf_path else None,
        scores_parquet=str(summary.scores_parquet),
        rejected_csv=str(summary.rejected_csv) if summary.rejected_csv else None,
        hits_png=str(png_path) if png_path else None,
        partitions=summary.partitions,
        distributed=will_distribute(summary.partitions),
        seconds=round(secs, 3),
        molecules_per_second=round(summary.records / max(secs, 1e-9), 1),
    )


GRID_HITS = 8


def hit_grid(hits: list[Hit], seq: str, model: str) -> Path:
    """A PNG grid of `hits`, each molecule with the atoms that drive its score highlighted (bit occlusion)."""
    from tools.dti.depiction import draw_grid
    from tools.dti.occlusion import occlude

    found = [occlude(h.smiles, seq, model) for h in hits]
    legends = [f"#{h.rank} {h.id[:18]}  {h.score:.3f}" for h in hits]
    return draw_grid([o.mol for o in found], [o.weights for o in found], legends,
                     output_path("dti_screen_hits", ".png"))


# ------------------------------------------------------------------ dti_explain


class BitContribution(BaseModel):
    bit: int = Field(description="ECFP4 bit (1024-bit Morgan radius 2, as the model sees it).")
    delta: float = Field(description="Score drop when this bit is switched off (positive = supports binding).")
    atoms: list[int] = Field(description="Atoms whose environments set the bit.")
    substructure: str | None = Field(None, description="SMILES of the first environment that sets the bit.")


class ExplainResult(BaseModel):
    model: str
    smiles: str
    score: float
    bits: list[BitContribution] = Field(description="On-bits ranked by |delta|.")
    atom_weights: list[float] = Field(
        description="Per-atom contribution (sum of bit deltas shared over the atoms "
        "of each environment), in the canonical SMILES' atom order."
    )
    top_atoms: list[int]
    svg: str | None = Field(None, description="SVG drawing with atoms coloured by contribution.")
    png: str | None = Field(None, description="PNG of the same drawing.")


def dti_explain(
    smiles: str,
    protein: Annotated[str, Field(description="Protein sequence.")],
    model: ModelName = DEFAULT_MODEL,
    top_bits: Annotated[int, Field(ge=1, le=100)] = 10,
    draw: Annotated[bool, Field(description="Also draw it, atoms coloured by contribution (PNG, SVG).")] = True,
) -> ExplainResult:
    """Explain a drug-target score: the ECFP4 bits and atoms that drive it (bit occlusion).

    Returns ranked bits, per-atom weights, and the molecule drawn with those atoms highlighted (PNG and SVG).
    """
    from tools.dti.occlusion import occlude

    parsed, err = try_parse_smiles(smiles)
    if parsed is None:
        raise InvalidInput(err or "Invalid SMILES.")
    seq = check_protein(protein)
    load_model(model)
    occ = occlude(parsed.smiles, seq, model)
    svg_path = png_path = None
    if draw:
        from tools.dti.depiction import draw_png, draw_svg

        svg_path = str(draw_svg(occ.mol, occ.weights, output_path("dti_explain", ".svg")))
        png_path = str(draw_png(occ.mol, occ.weights, f"score {occ.score:.3f} under {model} (red: supports "
                                "binding, blue: against)", output_path("dti_explain", ".png")))
    return ExplainResult(
        model=model,
        smiles=parsed.smiles,
        score=occ.score,
        bits=[BitContribution(bit=e.bit, delta=e.delta, atoms=e.atoms, substructure=e.substructure)
              for e in occ.bits[:top_bits]],
        atom_weights=[round(float(w), 6) for w in occ.weights],
        top_atoms=occ.top_atoms[:5],
        svg=svg_path,
        png=png_path,
    )
