"""DTI tools that train or describe models: dti_train (retrain on a user's CSV), dti_model_card."""

from __future__ import annotations

import datetime as dt
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tools.dti.files import read_pairs
from tools.dti.registry import DEFAULT_MODEL, SHIPPED_HELP, check_model_name, load_model, model_names, user_models_dir
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings


class ModelCard(BaseModel):
    name: str
    created: str = Field(description="UTC date the weights were trained.")
    description: str
    modalities: list[str]
    training_data: list[str] = Field(description="Data sets (with sources) the weights were trained on.")
    training_files: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each training file: path, rows, pairs used, sha256 (check a test file against these).",
    )
    overlap_warnings: list[str] = Field(
        default_factory=list,
        description="Evaluation files that share pairs, drugs or targets with the training pairs: figures on "
        "them measure memory, not prediction.",
    )
    splits: str = Field(description="How train/test were split for the reported metrics.")
    metrics: dict[str, Any] = Field(description="Held-out metrics (AUROC, AUPRC) per evaluation.")
    config: dict[str, Any] = Field(description="Training hyper-parameters.")
    parameters: int
    limitations: list[str]


class ModelCardResult(BaseModel):
    card: ModelCard
    available_models: list[str]


def dti_model_card(
    model: Annotated[str, Field(description=f"{SHIPPED_HELP} or a dti_train model.")] = DEFAULT_MODEL,
) -> ModelCardResult:
    """Describe a DTI model and list the available ones.

    Training files, overlap warnings, held-out AUROC/AUPRC, limitations: pick a model whose training pairs exclude
    yours.
    """
    _, card = load_model(model)
    return ModelCardResult(card=ModelCard(**card), available_models=model_names())


class TrainResult(BaseModel):
    model: str = Field(description="Name to pass as `model` to dti_score / dti_screen / dti_explain.")
    pairs_used: int
    rows_rejected: int
    rejected_examples: list[str] = Field(description="First reasons for rejected rows.")
    split: str
    test_pairs: int
    test_auroc: float | None
    test_auprc: float | None
    boost_weight: float = Field(description="The boosted members' share of the score (see blend_folds).")
    seconds: float
    card: ModelCard


def dti_train(
    path: Annotated[
        str,
        Field(description="CSV/TSV with columns SMILES, Protein and Y (0/1); pIC50/pKi/activity used if present."),
    ],
    name: Annotated[str, Field(description="New model's name (letters, digits, _ - .).")],
    split: Annotated[
        Literal["random", "drug_cold", "target_cold"],
        Field(
            description="Test part: random pairs, unseen drugs or unseen targets. target_cold also gives every "
            "boosted member the neighbourhood features, which carry to unseen targets."
        ),
    ] = "random",
    test_fraction: Annotated[float, Field(ge=0.0, le=0.5)] = 0.2,
    epochs: Annotated[int, Field(ge=1)] = 10,
    pretrain_epochs: Annotated[int, Field(ge=0, le=50, description="GRAM-only epochs on the positives first.")] = 0,
    members: Annotated[int, Field(ge=1, le=10, description="Networks averaged (steadier, slower).")] = 3,
    blend_folds: Annotated[
        int,
        Field(
            ge=0,
            le=10,
            description="K >= 2: choose the boosted members' share of the score by a K-fold cross-validation "
            "over the training pairs, grouped as `split` (drug_cold: by drug; target_cold: by target; random: "
            "pairs), K extra trainings. 0: share 0.5.",
        ),
    ] = 0,
    seed: int = 0,
    progress: Progress | None = None,
) -> TrainResult:
    """Train a GRAM-DTI model on your own labelled pairs (long).

    Reports held-out AUROC/AUPRC; the model then serves dti_score / dti_screen / dti_explain. Bounded by
    max_train_pairs and max_train_epochs.
    """
    import numpy as np
    from sklearn.metrics import average_precision_score, roc_auc_score

    from tools.dti.provenance import file_record
    from tools.dti.train import Pairs, TrainConfig, build_tables, fit, predict, save_checkpoint

    t0 = time.time()
    lim = get_settings().dti
    name = check_model_name(name)
    if epochs > lim.max_train_epochs:
        raise LimitExceeded("epochs", epochs, lim.max_train_epochs, "RESEARCH_MCP_DTI__MAX_TRAIN_EPOCHS")
    if blend_folds == 1:
        raise InvalidInput("blend_folds=1 is not a cross-validation.", hint="Use 0 (share 0.5) or 2 to 10 folds.")
    recs, pcol, ycol, acol = read_pairs(resolve_input(path), require_label=True)
    if len(recs) > lim.max_train_pairs:
        raise LimitExceeded("Training pairs", len(recs), lim.max_train_pairs, "RESEARCH_MCP_DTI__MAX_TRAIN_PAIRS")
    y = np.full(len(recs), np.nan)
    act = np.full(len(recs), np.nan)
    bad_label = 0
    for k, r in enumerate(recs):
        if ycol:
            v = (r.fields.get(ycol) or "").strip()
            if v in ("0", "1", "0.0", "1.0"):
                y[k] = float(v)
            elif v:
                bad_label += 1
        if acol:
            try:
                act[k] = float(r.fields.get(acol) or "nan")
            except ValueError:
                act[k] = np.nan
    report(progress, 0, None, "featurizing")
    tables, di, pi, errors = build_tables([r.smiles for r in recs], [r.fields.get(pcol) or "" for r in recs])
    ok = np.flatnonzero((di >= 0) & (~np.isnan(y) | ~np.isnan(act)))
    if len(ok) < 20 or np.nansum(y[ok]) < 2 or np.nansum(1 - y[ok]) < 2:
        raise InvalidInput(
            f"Too few usable labelled pairs ({len(ok)} valid, {int(np.nansum(y[ok]))} positives).",
            hint="Training needs at least 20 valid pairs with both labels 0 and 1 present (Y column).",
        )
    rng = np.random.default_rng(seed)
    test = np.zeros(len(recs), dtype=bool)
    if test_fraction > 0:
        if split == "random":
            test[rng.choice(ok, size=max(1, round(test_fraction * len(ok))), replace=False)] = True
        else:
            ids = di if split == "drug_cold" else pi
            uniq = np.unique(ids[ok])
            held = rng.choice(uniq, size=max(1, round(test_fraction * len(uniq))), replace=False)
            test = np.isin(ids, held)
    tr = ok[~test[ok]]
    te = ok[test[ok]]
    has_act = bool(np.any(~np.isnan(act[ok])))
    cfg = TrainConfig.for_shift(
        {"random": "pair", "drug_cold": "drug", "target_cold": "target"}[split],
        epochs=epochs,
        pretrain_epochs=pretrain_epochs,
        members=members,
        blend_folds=blend_folds,
        seed=seed,
        threads=lim.threads,
    )
    pairs = Pairs(di[tr], pi[tr], y[tr], act[tr] if has_act else np.zeros(0, np.float32))

    def prog(done: float, total: float, msg: str) -> None:
        report(progress, done, total, msg)

    net, hist = fit(tables, pairs, cfg, progress=prog)
    auroc = auprc = None
    te_l = te[~np.isnan(y[te])]
    if len(te_l) and len(np.unique(y[te_l])) == 2:
        p = predict(net, tables, di[te_l], pi[te_l], threads=lim.threads)
        auroc = float(roc_auc_score(y[te_l], p))
        auprc = float(average_precision_score(y[te_l], p))
    card = ModelCard(
        name=name,
        created=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        description="GRAM-DTI-style multimodal model retrained on a user's pairs.",
        modalities=list(net.modalities),
        training_data=[
            f"{resolve_input(path).name}: {len(tr)} training pairs"
            + (", activity column used as weak supervision" if has_act else "")
        ],
        training_files=[file_record(resolve_input(path), len(recs), len(tr), held_out_pairs=len(te))],
        splits=f"{split} hold-out of {test_fraction:.0%} (seed {seed}); {len(te_l)} labelled test pairs",
        metrics={"test": {"auroc": auroc, "auprc": auprc, "pairs": len(te_l)}} if auroc is not None else {},
        config=cfg.to_dict()
        | {"steps": hist["steps"], "boost_weight": net.boost_weight, "blend_cv": hist.get("blend_cv")},
        parameters=sum(p.numel() for p in net.parameters()),
        limitations=[
            "Scores are comparable within one model only.",
            "Trained on the given file only; out-of-domain molecules and targets are extrapolations.",
        ],
    )
    save_checkpoint(net, user_models_dir() / f"{name}.pt", card.model_dump())
    bad = sorted(errors.items())[:5]
    return TrainResult(
        model=name,
        pairs_used=len(tr),
        rows_rejected=len(errors) + bad_label,
        rejected_examples=[f"row {recs[k].row}: {e}" for k, e in bad],
        split=split,
        test_pairs=len(te_l),
        test_auroc=auroc,
        test_auprc=auprc,
        boost_weight=net.boost_weight,
        seconds=round(time.time() - t0, 2),
        card=card,
    )
