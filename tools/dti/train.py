"""Training and inference of the DTI model: GRAM pretraining, fine-tuning, prediction, checkpoints.

Pairs are held as indices into tables of unique drugs and proteins, so each entity is encoded once per
step however many pairs it takes part in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tools.dti.chem import try_check_protein, try_parse_smiles
from tools.dti.features import drug_features, protein_features, stack_drugs
from tools.dti.model import INPUT_OF, MODALITIES

ProgressFn = Callable[[float, float, str], None]


@dataclass
class TrainConfig:
    """Hyper-parameters of one training run (defaults: the shipped model's)."""

    dim: int = 64
    modalities: tuple[str, ...] = MODALITIES
    pretrain_epochs: int = 0  # optional GRAM-only stage before supervised training
    epochs: int = 10
    batch_size: int = 2048
    pretrain_batch_size: int = 256
    lr: float = 3e-3
    weight_decay: float = 1e-5
    gram_weight: float = 0.02  # weight of the GRAM volume loss beside the supervised loss
    temperature: float = 0.1
    modality_dropout: str = "adaptive"  # adaptive | uniform | none
    fusion: str = "gated"  # gated | mean (primary modality per side plus gated others)
    freeze_sequence_encoders: bool = True
    dropout_base: float = 0.15
    activity_weight: float = 0.2
    neighbours: bool = True  # the pair-level known-interaction neighbourhood modality
    target_kmer: int = 5  # k of the protein k-mer profiles whose cosine is the neighbourhood's target similarity
    ecfp_input_dropout: float = 0.0  # dropout on the ECFP4 input bits (less memorising of seen drugs)
    cold_simulation: float = 0.5  # per pair and side, chance its neighbourhood block is dropped (unseen drug/target)
    neighbour_head: bool = True  # a second head on the neighbourhood embedding alone, added to the logit
    members: int = 3  # networks trained from consecutive seeds; their probabilities are averaged
    boost: bool = True  # a gradient-boosted member (tools/dti/boost.py) blended with the networks
    boost_weight: float = 0.5  # its share of the blended probability (chosen on validation pairs when given)
    # with no validation pairs and K >= 2: the weight chosen by a K-fold CV inside the training pairs, its folds
    # grouped by `blend_group` (drug | target | pair): the shift the model will meet (unseen drugs, targets, pairs)
    blend_folds: int = 0
    blend_group: str = "drug"
    boost_iterations: int = 100
    boost_cold_simulation: float = 0.5  # the boosted member's cold simulation (see tools/dti/boost.py)
    # one tree ensemble per drug view, '+nbr' where it also reads the neighbourhood (tools/dti/views.py)
    boost_members: tuple[str, ...] = ("ecfp+nbr", "ecfp_counts", "atompair_counts", "physchem+nbr")
    seed: int = 0
    threads: int = 1

    @classmethod
    def for_shift(cls, shift: str, **kwargs: Any) -> TrainConfig:
        """The config for a model that will meet `shift` (`pair`, `drug` or `target`: unseen pairs, drugs or
        targets): its blend CV grouped that way and, for unseen targets, `UNSEEN_TARGET_MEMBERS`. Fields in
        `kwargs` win."""
        if shift not in BLEND_GROUPS:
            raise ValueError(f"shift must be one of {', '.join(BLEND_GROUPS)}; got {shift!r}")
        base: dict[str, Any] = {"blend_group": shift}
        if shift == "target":
            base["boost_members"] = UNSEEN_TARGET_MEMBERS
        return cls(**(base | kwargs))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modalities"] = list(self.modalities)
        return d


@dataclass
class Tables:
    """Unique drugs and proteins with their model inputs; pairs index into them."""

    smiles: list[str]
    sequences: list[str]
    drugs: dict[str, np.ndarray]
    proteins: dict[str, np.ndarray]


@dataclass
class Pairs:
    d: np.ndarray
    p: np.ndarray
    y: np.ndarray  # 0/1 float; NaN where unknown
    activity: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # NaN where absent

    def __len__(self) -> int:
        return len(self.d)

    def subset(self, idx: np.ndarray) -> Pairs:
        act = self.activity[idx] if len(self.activity) else self.activity
        return Pairs(self.d[idx], self.p[idx], self.y[idx], act)


def protein_table(seqs: Sequence[str]) -> dict[str, np.ndarray]:
    """Model inputs ('ptokens', 'comp') of validated protein sequences."""
    feats = [protein_features(s) for s in seqs]
    if not feats:
        return {"ptokens": np.zeros((0, 1), np.int64), "comp": np.zeros((0, 1), np.float32)}
    return {"ptokens": np.stack([f[0] for f in feats]), "comp": np.stack([f[1] for f in feats])}


def build_tables(
    smiles: Sequence[str], sequences: Sequence[str]
) -> tuple[Tables, np.ndarray, np.ndarray, dict[int, str]]:
    """Parse and featurize pair inputs. Returns tables, drug and protein indices (-1 where invalid) and
    the error message of each invalid pair position."""
    errors: dict[int, str] = {}
    d_index: dict[str, int] = {}
    p_index: dict[str, int] = {}
    dfeats = []
    seqs: list[str] = []
    smi_out: list[str] = []
    di = np.full(len(smiles), -1, dtype=np.int64)
    pi = np.full(len(smiles), -1, dtype=np.int64)
    smi_cache: dict[str, tuple[int, str | None]] = {}
    seq_cache: dict[str, tuple[int, str | None]] = {}
    for k, (s, q) in enumerate(zip(smiles, sequences, strict=True)):
        if s not in smi_cache:
            parsed, err = try_parse_smiles(s)
            if parsed is None:
                smi_cache[s] = (-1, err)
            else:
                if parsed.smiles not in d_index:
                    d_index[parsed.smiles] = len(dfeats)
                    dfeats.append(drug_features(s))
                    smi_out.append(parsed.smiles)
                smi_cache[s] = (d_index[parsed.smiles], None)
        if q not in seq_cache:
            clean, err = try_check_protein(q)
            if clean is None:
                seq_cache[q] = (-1, err)
            else:
                if clean not in p_index:
                    p_index[clean] = len(seqs)
                    seqs.append(clean)
                seq_cache[q] = (p_index[clean], None)
        (a, ea), (b, eb) = smi_cache[s], seq_cache[q]
        if a < 0 or b < 0:
            errors[k] = "; ".join(e for e in (ea, eb) if e)
        else:
            di[k], pi[k] = a, b
    tables = Tables(smi_out, seqs, stack_drugs(dfeats), protein_table(seqs))
    return tables, di, pi, errors


def _torch(threads: int) -> Any:
    import torch

    torch.set_num_threads(max(1, threads))
    return torch


def _inputs(torch: Any, table: dict[str, np.ndarray], idx: np.ndarray) -> dict[str, Any]:
    return {k: torch.from_numpy(np.ascontiguousarray(v[idx])) for k, v in table.items()}


BLEND_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def fit(
    tables: Tables,
    pairs: Pairs,
    cfg: TrainConfig,
    progress: ProgressFn | None = None,
    val: Pairs | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Train a model on labelled pairs: `cfg.members` networks from seeds seed, seed+1, ... (an ensemble
    that averages their probabilities when more than one), sharing one neighbourhood reference, and with
    `cfg.boost` a gradient-boosted member blended in with weight `cfg.boost_weight`, or, when labelled
    validation pairs `val` are given, the weight of `BLEND_WEIGHTS` with the best validation AUROC, or, with
    `cfg.blend_folds` >= 2 and no `val`, the weight with the best mean AUROC over a cross-validation inside
    `pairs` grouped by `cfg.blend_group` (`cv_blend`: honest when the validation file is also reported).

    Each network: optional GRAM pretraining on the positives, then fine-tuning, which minimises binary
    cross-entropy of the interaction logit, plus `gram_weight` x the GRAM loss on the batch's positives,
    plus `activity_weight` x the squared error of the activity head on pairs with an activity value
    (weak supervision). `progress(done, total, msg)` is called per step and may raise to cancel.
    """
    from tools.dti.model import DTIEnsemble
    from tools.dti.neighbours import KMERS, NeighbourIndex

    if cfg.blend_folds >= 2 and cfg.blend_group not in BLEND_GROUPS:
        raise ValueError(f"blend_group must be one of {', '.join(BLEND_GROUPS)}; got {cfg.blend_group!r}")
    if cfg.neighbours and cfg.target_kmer not in KMERS:
        raise ValueError(f"target_kmer must be {KMERS.start} to {KMERS.stop - 1}; got {cfg.target_kmer}")
    index, nbr_all = None, None
    if cfg.neighbours:
        if progress:
            progress(0, 1, "neighbourhood features")
        index = NeighbourIndex.from_tables(tables, pairs.d, pairs.p, pairs.y, cfg.target_kmer)
        nbr_all = index.features_for_tables(tables, pairs.d, pairs.p)
    n = max(1, cfg.members)
    models, history = [], {}
    for k in range(n):

        def member_progress(done: float, total: float, msg: str, k: int = k) -> None:
            if progress:
                progress(k * total + done, n * total, f"member {k + 1}/{n}: {msg}" if n > 1 else msg)

        model, history = _fit_member(tables, pairs, replace(cfg, seed=cfg.seed + k), member_progress, index, nbr_all)
        models.append(model)
    if n == 1:
        net = models[0]
    else:
        net = DTIEnsemble(models)
        net.activity_mean = models[0].activity_mean  # type: ignore[attr-defined]
        net.activity_std = models[0].activity_std  # type: ignore[attr-defined]
    net.boost, net.boost_weight = None, 0.0
    if cfg.boost:
        _fit_boost(net, tables, pairs, cfg, nbr_all, progress)
        net.boost_weight = cfg.boost_weight
        if val is not None:
            net.boost_weight, history["validation"] = select_blend(net, tables, val, cfg.threads)
        elif cfg.blend_folds >= 2:
            net.boost_weight, history["blend_cv"] = cv_blend(tables, pairs, cfg, progress)
    history["boost_weight"] = net.boost_weight
    return net, history


def _fit_boost(
    net: Any, tables: Tables, pairs: Pairs, cfg: TrainConfig, nbr_all: np.ndarray | None, progress: ProgressFn | None
) -> None:
    from tools.dti.boost import BoostedViews, boost_features, fit_trees
    from tools.dti.neighbours import COLD_DRUG, COLD_TARGET
    from tools.dti.views import add_views, parse_member, view_key

    members = [parse_member(m) for m in cfg.boost_members]
    add_views(tables.drugs, [v for v, _ in members], smiles=tables.smiles)
    lab = np.flatnonzero(~np.isnan(pairs.y))
    nbr = None
    if nbr_all is not None:
        rng = np.random.default_rng(cfg.seed + 7919)
        nbr = nbr_all[lab].copy()
        nbr[rng.random(len(lab)) < cfg.boost_cold_simulation, COLD_DRUG] = 0.0
        nbr[rng.random(len(lab)) < cfg.boost_cold_simulation, COLD_TARGET] = 0.0
    d, p = pairs.d[lab], pairs.p[lab]
    comp = tables.proteins["comp"][p]
    total = cfg.boost_iterations * len(members)
    trees = []
    for k, (view, use_nbr) in enumerate(members):

        def check(done: int, _total: int, k: int = k, view: str = view) -> None:
            if progress:
                msg = f"gradient-boosted member {k + 1}/{len(members)} ({view})"
                progress(k * cfg.boost_iterations + done, total, msg)

        x = boost_features(tables.drugs[view_key(view)][d], comp, nbr if use_nbr else None)
        trees.append(fit_trees(x, pairs.y[lab], cfg.seed + k, cfg.boost_iterations, threads=cfg.threads, check=check))
    net.boost = BoostedViews([v for v, _ in members], [u and nbr is not None for _, u in members], trees)


def select_blend(net: Any, tables: Tables, val: Pairs, threads: int = 1) -> tuple[float, dict[str, Any]]:
    """The blend weight of `BLEND_WEIGHTS` with the highest AUROC on labelled validation pairs (ties go to
    the weight nearest 0.5), and the validation AUROC of each weight."""
    keep = ~np.isnan(val.y)
    d, p, y = val.d[keep], val.p[keep], val.y[keep]
    if len(np.unique(y)) < 2:
        return net.boost_weight, {"pairs": len(y), "note": "one class only: default weight kept"}
    scores = _auroc_by_weight(y, *predict_parts(net, tables, d, p, threads=threads))
    best = _best_weight(scores)
    return best, {"pairs": len(y), "auroc_by_weight": scores, "selected": best}


def _auroc_by_weight(y: np.ndarray, pn: np.ndarray, pb: np.ndarray) -> dict[float, float]:
    from sklearn.metrics import roc_auc_score

    return {w: float(roc_auc_score(y, (1 - w) * pn + w * pb)) for w in BLEND_WEIGHTS}


def _best_weight(scores: dict[float, float]) -> float:
    return max(BLEND_WEIGHTS, key=lambda w: (round(scores[w], 4), -abs(w - 0.5)))


BLEND_GROUPS = ("drug", "target", "pair")
# For unseen targets every boosted member reads the neighbourhood: in a target-grouped CV inside the training
# pairs of a Yamanishi 08 target-cold fold (python -m evals.dti.members_probe), a drug view without it scores
# AUROC 0.851-0.861 on held-out targets, with it 0.933-0.937; the four together 0.940 against 0.923 for the
# default set, which keeps two views without it for unseen drugs.
UNSEEN_TARGET_MEMBERS = ("ecfp+nbr", "ecfp_counts+nbr", "atompair_counts+nbr", "physchem+nbr")


def group_folds(ids: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold number (0..k-1) of each pair, all pairs of one id (drug or target index) in one fold; ids dealt at
    random, so folds differ by at most one id."""
    uniq = np.unique(ids)
    fold_of = np.empty(int(uniq.max()) + 1 if len(uniq) else 0, dtype=np.int64)
    fold_of[np.random.default_rng(seed).permutation(uniq)] = np.arange(len(uniq)) % k
    return fold_of[ids]


def cv_blend(
    tables: Tables, pairs: Pairs, cfg: TrainConfig, progress: ProgressFn | None = None
) -> tuple[float, dict[str, Any]]:
    """The blend weight of `BLEND_WEIGHTS` with the best mean AUROC over a `cfg.blend_folds`-fold
    cross-validation inside the training pairs, grouped by `cfg.blend_group`: each fold's model (networks,
    boosted members and neighbourhood reference) is trained on the other folds' pairs only, so with
    'drug' it scores drugs it never saw, as on a cold split. Costs `cfg.blend_folds` extra trainings;
    returns the weight and the AUROC of each weight per fold. Folds with one class only are skipped; with
    none left the configured weight is kept."""
    k = cfg.blend_folds
    ids = {"drug": pairs.d, "target": pairs.p, "pair": np.arange(len(pairs))}[cfg.blend_group]
    fold = group_folds(ids, k, cfg.seed + 104729)
    inner = replace(cfg, blend_folds=0)
    per_fold: list[dict[float, float]] = []
    for f in range(k):
        held = np.flatnonzero((fold == f) & ~np.isnan(pairs.y))
        if len(np.unique(pairs.y[held])) < 2:
            continue

        def fold_progress(done: float, total: float, msg: str, f: int = f) -> None:
            if progress:
                progress(done, total, f"blend weight, fold {f + 1}/{k}: {msg}")

        model, _ = fit(tables, pairs.subset(np.flatnonzero(fold != f)), inner, fold_progress)
        parts = predict_parts(model, tables, pairs.d[held], pairs.p[held], threads=cfg.threads)
        per_fold.append(_auroc_by_weight(pairs.y[held], *parts))
    if not per_fold:
        return cfg.boost_weight, {"folds": k, "note": "no fold with both classes: default weight kept"}
    mean = {w: float(np.mean([s[w] for s in per_fold])) for w in BLEND_WEIGHTS}
    best = _best_weight(mean)
    return best, {
        "folds": k,
        "grouped_by": cfg.blend_group,
        "auroc_by_weight": mean,
        "per_fold": per_fold,
        "selected": best,
    }


def _fit_member(
    tables: Tables,
    pairs: Pairs,
    cfg: TrainConfig,
    progress: ProgressFn,
    index: Any,
    nbr_all: np.ndarray | None,
) -> tuple[Any, dict[str, Any]]:
    torch = _torch(cfg.threads)
    from torch.nn import functional as F

    from tools.dti.model import AdaptiveModalityDropout, DTIModel, gram_contrastive_loss
    from tools.dti.neighbours import COLD_DRUG, COLD_TARGET, FEATURE_NAMES

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    model = DTIModel(
        dim=cfg.dim,
        modalities=cfg.modalities,
        fusion=cfg.fusion,
        neighbour_features=len(FEATURE_NAMES) * cfg.neighbours,
        ecfp_input_dropout=cfg.ecfp_input_dropout,
        neighbour_head=cfg.neighbour_head,
    )
    _fit_standardizers(model, tables, pairs)
    if nbr_all is not None:
        model.neighbours = index
        norm = model.neighbour_encoder[0].norm
        norm.mean.copy_(torch.from_numpy(nbr_all.mean(0)))
        norm.std.copy_(torch.from_numpy(nbr_all.std(0) + 1e-3))
    labelled = ~np.isnan(pairs.y)
    has_act = len(pairs.activity) == len(pairs) and bool(np.any(~np.isnan(pairs.activity)))
    act_mean = float(np.nanmean(pairs.activity)) if has_act else 0.0
    act_std = float(np.nanstd(pairs.activity)) + 1e-6 if has_act else 1.0
    model.activity_mean = act_mean  # type: ignore[attr-defined]
    model.activity_std = act_std  # type: ignore[attr-defined]
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    drop = AdaptiveModalityDropout(
        model.drug_modalities,
        model.protein_modalities,
        p_base=cfg.dropout_base,
        adaptive=cfg.modality_dropout == "adaptive",
        keep=model.primary,
    )
    use_drop = cfg.modality_dropout != "none"
    temperature = cfg.temperature
    pos = np.flatnonzero(labelled & (np.nan_to_num(pairs.y) > 0.5))
    lab = np.flatnonzero(labelled | (~np.isnan(pairs.activity) if has_act else False))
    # small data sets get smaller batches: at least ~20 fine-tuning and ~10 pretraining steps an epoch
    batch_size = min(cfg.batch_size, max(64, math.ceil(len(lab) / 20)))
    pre_batch = min(cfg.pretrain_batch_size, max(32, math.ceil(len(pos) / 10)))
    pre_steps = math.ceil(len(pos) / pre_batch) * cfg.pretrain_epochs
    ft_steps = math.ceil(len(lab) / batch_size) * cfg.epochs
    total = pre_steps + ft_steps
    history: dict[str, Any] = {"pretrain_loss": [], "loss": [], "dropout_p": [], "seconds": 0.0}
    step = 0
    t0 = time.time()

    cached: dict[str, Any] = {}  # frozen sequence encoders' outputs per table row (stage 2)

    def embed_side(table: dict[str, np.ndarray], rows: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
        idx = torch.from_numpy(rows)
        live = [m for m in names if m not in cached]
        out = model.embed(_inputs(torch, table, rows), live) if live else {}
        for m in names:
            if m in cached:
                out[m] = model.norms[m](cached[m][idx])
        return {m: out[m] for m in names}

    def encode(batch_d: np.ndarray, batch_p: np.ndarray) -> tuple[dict, dict, np.ndarray, np.ndarray]:
        ud, dinv = np.unique(batch_d, return_inverse=True)
        up, pinv = np.unique(batch_p, return_inverse=True)
        de = embed_side(tables.drugs, ud, model.drug_modalities)
        pe = embed_side(tables.proteins, up, model.protein_modalities)
        for v in (*de.values(), *pe.values()):
            v.retain_grad()
        return de, pe, dinv, pinv

    def neighbourhood(b: np.ndarray) -> Any:
        if nbr_all is None:
            return None
        x = nbr_all[b].copy()
        # cold simulation: the pair sees its drug (or target) as if unseen in the reference
        x[rng.random(len(b)) < cfg.cold_simulation, COLD_DRUG] = 0.0
        x[rng.random(len(b)) < cfg.cold_simulation, COLD_TARGET] = 0.0
        return torch.from_numpy(x)

    def bce_loss(b: np.ndarray, de: dict, pe: dict, dinv: np.ndarray, pinv: np.ndarray, masks: dict | None) -> Any:
        dm = {m: masks[m] for m in de} if masks else None
        pm = {m: masks[m] for m in pe} if masks else None
        feats = model.pair_features(model.fuse(de, dm)[dinv], model.fuse(pe, pm)[pinv], neighbourhood(b))
        y = torch.from_numpy(pairs.y[b].astype(np.float32))
        ok = ~torch.isnan(y)
        loss = torch.zeros(())
        if bool(ok.any()):
            logit = model.logit(feats)
            loss = loss + F.binary_cross_entropy_with_logits(logit[ok], y[ok])
        if has_act:
            a = torch.from_numpy(((pairs.activity[b] - act_mean) / act_std).astype(np.float32))
            aok = ~torch.isnan(a)
            if bool(aok.any()):
                pred = model.activity_head(feats).squeeze(1)
                loss = loss + cfg.activity_weight * F.mse_loss(pred[aok], a[aok])
        return loss

    model.train()
    # Stage 1: all encoders trainable. GRAM pretraining on interacting pairs (or, with gram_weight 0, the
    # same number of steps of supervised training on labelled batches).
    use_gram = cfg.gram_weight > 0
    for _ in range(cfg.pretrain_epochs):
        order = rng.permutation(pos) if use_gram else rng.permutation(lab)[: len(pos)]
        for s in range(0, len(order), pre_batch):
            b = order[s : s + pre_batch]
            if len(b) < 2:
                continue
            de, pe, dinv, pinv = encode(pairs.d[b], pairs.p[b])
            if use_gram:
                keep = drop.sample_batch(gen) if use_drop else set(model.modalities)
                embs = {m: de[m][dinv] for m in de if m in keep} | {m: pe[m][pinv] for m in pe if m in keep}
                anchor = next(m for m in model.modalities if m in embs)
                loss = gram_contrastive_loss(embs, anchor, temperature)
            else:
                masks = (
                    drop.sample_masks(len(next(iter(de.values()))), len(next(iter(pe.values()))), gen)
                    if use_drop
                    else None
                )
                loss = bce_loss(b, de, pe, dinv, pinv, masks)
            opt.zero_grad()
            loss.backward()
            opt.step()
            drop.observe(de | pe)
            history["pretrain_loss"].append(loss.item())
            step += 1
            if progress:
                progress(step, total, f"encoder pretraining, loss {loss.item():.3f}")
    # Stage 2: the sequence CNN encoders are frozen (their outputs cached once per drug and protein, as
    # GRAM-DTI freezes its pretrained encoders); the MLP encoders, per-modality norms and heads train on.
    if cfg.freeze_sequence_encoders:
        model.eval()
        with torch.no_grad():
            for m in ("drug_smiles", "protein_sequence"):
                if m in model.modalities:
                    table = tables.drugs if m == "drug_smiles" else tables.proteins
                    rows = np.arange(len(next(iter(table.values()))))
                    parts = [
                        model.encoders[m](_inputs(torch, table, rows[i : i + 2048])[INPUT_OF[m]])
                        for i in range(0, len(rows), 2048)
                    ]
                    cached[m] = torch.cat(parts)
                    model.encoders[m].requires_grad_(False)
        model.train()
    for _ in range(cfg.epochs):
        order = rng.permutation(lab)
        for s in range(0, len(order), batch_size):
            b = order[s : s + batch_size]
            de, pe, dinv, pinv = encode(pairs.d[b], pairs.p[b])
            masks = (
                drop.sample_masks(len(next(iter(de.values()))), len(next(iter(pe.values()))), gen) if use_drop else None
            )
            loss = bce_loss(b, de, pe, dinv, pinv, masks)
            if cfg.gram_weight > 0:
                pb = np.flatnonzero(np.nan_to_num(pairs.y[b]) > 0.5)
                if len(pb) >= 2:
                    embs = {m: de[m][dinv[pb]] for m in de} | {m: pe[m][pinv[pb]] for m in pe}
                    loss = loss + cfg.gram_weight * gram_contrastive_loss(embs, model.modalities[0], temperature)
            opt.zero_grad()
            loss.backward()
            opt.step()
            drop.observe(de | pe)
            history["loss"].append(loss.item())
            step += 1
            if progress:
                progress(step, total, f"fine-tuning, loss {loss.item():.3f}")
        history["dropout_p"].append(drop.probabilities())
    model.eval()
    history["seconds"] = time.time() - t0
    history["steps"] = step
    return model, history


def _fit_standardizers(model: Any, tables: Tables, pairs: Pairs) -> None:
    import torch

    used_d = np.unique(pairs.d)
    used_p = np.unique(pairs.p)
    for name, table, key, used in (
        ("drug_descriptors", tables.drugs, "desc", used_d),
        ("protein_composition", tables.proteins, "comp", used_p),
    ):
        if name in model.encoders and len(used):
            x = table[key][used].astype(np.float64)
            norm = model.encoders[name].norm
            norm.mean.copy_(torch.from_numpy(x.mean(0)).float())
            norm.std.copy_(torch.from_numpy(x.std(0) + 1e-3).float())


def embed_table(
    model: Any, table: dict[str, np.ndarray], names: Sequence[str], chunk: int = 2048, threads: int = 1
) -> Any:
    """Fused embeddings (n, dim) of every row of a drug or protein table, in chunks, without gradients."""
    torch = _torch(threads)
    n = len(next(iter(table.values())))
    out = []
    with torch.no_grad():
        for s in range(0, n, chunk):
            idx = np.arange(s, min(n, s + chunk))
            out.append(model.fuse(model.embed(_inputs(torch, table, idx), names)))
    return torch.cat(out) if out else torch.zeros(0, model.dim)


def library_neighbourhood(model: Any, ecfp: np.ndarray, smiles: Sequence[str], sequence: str) -> Any:
    """Neighbourhood features (torch, n x 13) of n molecules (ECFP bits, canonical SMILES) against one
    target, or None for a model without the neighbourhood modality."""
    if model.neighbours is None:
        return None
    import torch

    n = len(smiles)
    x = model.neighbours.features(ecfp, smiles, [sequence], np.arange(n), np.zeros(n, dtype=np.int64))
    return torch.from_numpy(x)


def predict_parts(
    model: Any, tables: Tables, d: np.ndarray, p: np.ndarray, threads: int = 1, check: Callable[[], None] | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Probabilities of pairs (indices into the tables) from the networks and from the boosted member
    (None for a model without one). `check()` runs between blocks and may raise to cancel."""
    torch = _torch(threads)
    dv = embed_table(model, tables.drugs, model.drug_modalities, threads=threads)
    pv = embed_table(model, tables.proteins, model.protein_modalities, threads=threads)
    nbr = model.neighbours.features_for_tables(tables, d, p) if model.neighbours is not None else None
    boost = getattr(model, "boost", None)
    if boost is not None:
        from tools.dti.views import add_views

        add_views(tables.drugs, boost.views, smiles=tables.smiles)
    out = np.zeros(len(d), dtype=np.float64)
    out_b = np.zeros(len(d), dtype=np.float64) if boost is not None else None
    with torch.no_grad():
        for s in range(0, len(d), 8192):
            if check is not None:
                check()
            sl = slice(s, s + 8192)
            x = torch.from_numpy(nbr[sl]) if nbr is not None else None
            logit = model.interaction_logit(dv[torch.from_numpy(d[sl])], pv[torch.from_numpy(p[sl])], x)
            out[sl] = torch.sigmoid(logit).double().numpy()
            if out_b is not None:
                out_b[sl] = boost.predict_proba(
                    tables.drugs, d[sl], tables.proteins["comp"][p[sl]], nbr[sl] if nbr is not None else None
                )
    return out, out_b


def blend_block(model: Any, logit: Any, drugs: dict[str, np.ndarray], sequence: str, nbr: Any) -> np.ndarray:
    """Scores of a block of drugs (a `stack_drugs` or `drug_table` table holding the boosted members' views,
    see `tools.dti.views.add_views`) against one target from the networks' logits (torch), blended with the
    boosted members when the model has them."""
    import torch

    net_prob = torch.sigmoid(logit).double().numpy()
    if getattr(model, "boost", None) is None:
        return net_prob
    from tools.dti.features import protein_features

    row = protein_features(sequence)[1]
    comp = np.broadcast_to(row, (len(net_prob), len(row)))
    nb = nbr.numpy() if nbr is not None else None
    return blend(model, net_prob, model.boost.predict_proba(drugs, np.arange(len(net_prob)), comp, nb))


def blend(model: Any, net_prob: np.ndarray, boost_prob: np.ndarray | None) -> np.ndarray:
    """The model's score: networks and boosted member mixed by the model's blend weight."""
    if boost_prob is None or getattr(model, "boost", None) is None:
        return net_prob
    w = float(getattr(model, "boost_weight", 0.0))
    return (1.0 - w) * net_prob + w * boost_prob


def predict(
    model: Any, tables: Tables, d: np.ndarray, p: np.ndarray, threads: int = 1, check: Callable[[], None] | None = None
) -> np.ndarray:
    """Interaction probabilities of pairs (indices into the tables): the blend of `predict_parts`."""
    return blend(model, *predict_parts(model, tables, d, p, threads=threads, check=check))


def save_checkpoint(model: Any, path: Path, card: dict[str, Any]) -> Path:
    """Write weights (float16 where lossless enough), config, model card and the neighbourhood reference
    (training pairs, packed drug fingerprints, sequences) to one .pt file, byte for byte the same for the same
    model."""
    import torch

    state = {k: (v.half() if v.is_floating_point() and v.numel() > 1000 else v) for k, v in model.state_dict().items()}
    extra = {
        "activity_mean": getattr(model, "activity_mean", 0.0),
        "activity_std": getattr(model, "activity_std", 1.0),
        "boost_weight": float(getattr(model, "boost_weight", 0.0)),
    }
    blob = {"config": model.config(), "state_dict": state, "card": card, "extra": extra}
    if getattr(model, "boost", None) is not None:
        trees = model.boost.state()
        blob["boost"] = {
            "specs": trees["specs"],
            "members": [
                {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v for k, v in m.items()}
                for m in trees["members"]
            ],
        }
    if model.neighbours is not None:
        blob["neighbours"] = {
            k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
            for k, v in model.neighbours.state().items()
        }
    import io

    from tools.atomic import write_bytes

    # Serialized in memory, not to the temporary file: torch names the archive after the file it writes, so the
    # temporary name would make each checkpoint's bytes differ; these are the same for the same training.
    buffer = io.BytesIO()
    torch.save(blob, buffer)
    write_bytes(path, buffer.getvalue())
    return Path(path)


def load_checkpoint(path: Path) -> tuple[Any, dict[str, Any]]:
    """A model in eval mode and its model card from a checkpoint written by `save_checkpoint`."""
    import torch

    from tools.dti.model import DTIEnsemble, DTIModel

    blob = torch.load(path, map_location="cpu", weights_only=True)
    config = blob["config"]
    state = {k: v.float() if v.is_floating_point() else v for k, v in blob["state_dict"].items()}
    if "members" in config:
        members = [DTIModel(**c) for c in config["members"]]
        for k, m in enumerate(members):
            prefix = f"members.{k}."
            m.load_state_dict({key[len(prefix) :]: v for key, v in state.items() if key.startswith(prefix)})
        model = DTIEnsemble(members)  # shares the encoders whose loaded weights are identical
    else:
        model = DTIModel(**config)
        model.load_state_dict(state)
    model.activity_mean = blob.get("extra", {}).get("activity_mean", 0.0)
    model.activity_std = blob.get("extra", {}).get("activity_std", 1.0)
    if "neighbours" in blob:
        from tools.dti.neighbours import NeighbourIndex

        state = {k: v.numpy() if isinstance(v, torch.Tensor) else v for k, v in blob["neighbours"].items()}
        model.neighbours = NeighbourIndex.from_state(state)
    model.boost, model.boost_weight = None, 0.0
    if "boost" in blob:
        from tools.dti.boost import BoostedViews

        def arrays(d: dict[str, Any]) -> dict[str, Any]:
            return {k: v.numpy() if isinstance(v, torch.Tensor) else v for k, v in d.items()}

        b = blob["boost"]
        model.boost = BoostedViews.from_state(
            {"specs": b["specs"], "members": [arrays(m) for m in b["members"]]} if "members" in b else arrays(b)
        )
        model.boost_weight = float(blob.get("extra", {}).get("boost_weight", 0.5))
    model.eval()
    return model, blob["card"]
