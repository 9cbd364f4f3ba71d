"""The NID audit tools: the one-run DP audit (eps lower bound) and dataset inference, from nid_score's features."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tools.errors import InvalidInput, LimitExceeded
from tools.nid.sources import ScoreName, limits, threads
from tools.paths import output_path, resolve_input

# ---------------------------------------------------------------------------------------------- audit


class AuditOutput(BaseModel):
    eps_lower_bound: float = Field(description="Largest eps rejected at level alpha (0 = no evidence of leakage).")
    mode: str
    n_nids: int
    guesses: int
    correct: int = Field(description="NIDs ranked in the top r (rank mode) or right guesses (binary mode).")
    candidates_per_nid: int
    r: int
    alpha: float
    delta: float
    p_value_at_eps_zero: float
    neighbouring: str


def _load_features(scores_path: str | None, scores: list[list[float]] | None, score: str):
    """(n, c) scores of one membership score, from an NPZ of nid_score or an inline table."""
    import numpy as np

    if (scores_path is None) == (scores is None):
        raise InvalidInput("Give exactly one of scores_path (from nid_score) or scores (rows: NID then GIDs).",
                           hint="Run nid_score first, or pass a small table inline.")
    if scores is not None:
        rows = [list(map(float, r)) for r in scores]
        if not rows:
            raise InvalidInput("scores is empty.", hint="Pass one row per NID: its score, then its GIDs' scores.")
        width = {len(r) for r in rows}
        if len(width) != 1:
            raise InvalidInput(f"All rows need the same number of candidates; got lengths {sorted(width)}.",
                               hint="Give every NID the same number of GIDs.")
        return np.array(rows, dtype=float)
    p = resolve_input(scores_path)  # type: ignore[arg-type]
    try:
        with np.load(p, allow_pickle=False) as z:
            names = [str(x) for x in z["score_names"]]
            feats = z["features"]
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidInput(f"{scores_path!r} is not a scores file from nid_score ({exc}).",
                           hint="Pass the scores_path nid_score returned.") from exc
    if score not in names:
        from tools.errors import unknown_name

        raise unknown_name("score", score, names)
    out = feats[:, :, names.index(score)]
    if np.isnan(out).all():
        raise InvalidInput(f"The score {score!r} was not computed in this file.", hint="Pick another score.")
    return out


def nid_dp_audit(
    scores_path: Annotated[str | None, Field(description="NPZ written by nid_score.")] = None,
    scores: Annotated[list[list[float]] | None, Field(description="Or inline rows: NID score, then its GIDs' "
                                                      "(higher = more member-like).")] = None,
    score: Annotated[ScoreName, Field(description="Which membership score ranks the candidates.")] = "loss",
    mode: Annotated[Literal["rank", "binary"], Field(description="rank: NID among c candidates, success if in the "
                                                     "top r; binary: Steinke et al.'s c=2, r=1 game with "
                                                     "abstention.")] = "rank",
    c: Annotated[int | None, Field(description="Candidates per NID (the NID + c-1 GIDs); all when omitted.")] = None,
    r: Annotated[int, Field(description="Top-r threshold, 1 <= r < c.")] = 1,
    alpha: Annotated[float, Field(description="Significance level, in (0, 1).")] = 0.05,
    delta: Annotated[float, Field(description="delta of the (eps, delta)-DP claim being audited.")] = 0.0,
    guesses: Annotated[int | None, Field(description="Binary mode: guess only on this many pairs with the largest "
                                         "score gap (abstain on the rest); all when omitted.")] = None,
) -> AuditOutput:
    """Lower-bound the privacy loss eps of a trained model from one run, with NIDs as canaries (no retraining).

    Use it after nid_score on NIDs that were in the training data. Each NID is ranked among c candidates; v
    NIDs land in the top r. Under eps-DP, P[V >= v] <= P[sum Bernoulli(r e^eps/(c-1+e^eps)) >= v] (+ a delta
    term); the bound is the largest eps whose p-value stays below alpha. It holds for DP with respect to
    replacing one training text (a candidate) by another; for add/remove-one (eps, delta)-DP compare against
    2 eps and (1 + e^eps) delta. Returns the bound, v and the p-value at eps = 0.
    """
    import numpy as np

    from tools.nid.audit import binary_audit, rank_audit

    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"alpha must lie strictly between 0 and 1, got {alpha}.", hint="Use e.g. 0.05.")
    table = _load_features(scores_path, scores, score)
    n, width = table.shape
    if n > limits().max_nids:
        raise LimitExceeded("number of NIDs", n, limits().max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
    cc = width if c is None else c
    if cc < 2:
        raise InvalidInput(f"c must be at least 2 (the NID and one GID); got {cc}.", hint="Use c = 2 or more.")
    if cc > width:
        raise InvalidInput(f"c = {cc} but the scores hold only {width} candidates per NID.",
                           hint=f"Use c <= {width}, or score with more GIDs.")
    table = np.nan_to_num(table[:, :cc], nan=-np.inf)
    if mode == "binary":
        res = binary_audit(table[:, 0], table[:, 1], guesses=guesses, alpha=alpha, delta=delta)
        cc, r = 2, 1
    else:
        if not 1 <= r < cc:
            raise InvalidInput(f"r must satisfy 1 <= r < c; got r = {r}, c = {cc}.",
                               hint="Use r = 1 (the NID must rank first).")
        res = rank_audit(table, r=r, alpha=alpha, delta=delta)
    return AuditOutput(eps_lower_bound=res.eps_lower_bound if math.isfinite(res.eps_lower_bound) else 1e9,
                       mode=res.mode, n_nids=n, guesses=res.guesses, correct=res.correct, candidates_per_nid=cc, r=r,
                       alpha=alpha, delta=delta, p_value_at_eps_zero=res.p_value_at_zero,
                       neighbouring="replace one candidate text by another (substitution)")


# ---------------------------------------------------------------------------------- dataset inference


class InferenceOutput(BaseModel):
    p_value_ks: float = Field(description="One-sided KS test of the NIDs' normalized ranks against Uniform(0, 1).")
    reject: bool = Field(description="p_value_ks < 0.01: the NIDs were (at least partly) trained on.")
    ks_statistic: float
    p_value_ttest: float = Field(description="Maini et al.'s variant: one-sided Welch t-test, NIDs vs GIDs.")
    mean_normalized_rank: float = Field(description="0.5 under the null; smaller = NIDs look more member-like.")
    n_nids: int
    candidates_per_nid: int
    histogram_png: str | None


def nid_dataset_inference(
    scores_path: Annotated[str, Field(description="NPZ written by nid_score (all scores are features).")],
    folds: Annotated[int, Field(description="Grouped K-fold splits.")] = 5,
    seed: Annotated[int, Field(description="Seed for fold assignment and tie breaking.")] = 0,
    plot: Annotated[bool, Field(description="Write a PNG histogram of the NIDs' ranks.")] = True,
) -> InferenceOutput:
    """Test whether a set of NIDs was in a model's training data, with their GIDs as the held-out set.

    Use it after nid_score. Gradient-boosted trees learn NID vs GID from all membership scores out of fold
    (an NID and its GIDs share a fold); each NID's rank among its GIDs is uniform if the NIDs were not trained
    on. A one-sided KS test rejects at p < 0.01. Also returns Maini et al.'s t-test p-value and a rank histogram.
    """
    import numpy as np
    from threadpoolctl import threadpool_limits

    from tools.nid.inference import dataset_inference

    p = resolve_input(scores_path)
    try:
        with np.load(p, allow_pickle=False) as z:
            feats = z["features"]
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidInput(f"{scores_path!r} is not a scores file from nid_score ({exc}).",
                           hint="Pass the scores_path nid_score returned.") from exc
    if not 2 <= folds <= 20:
        raise InvalidInput(f"folds must lie in [2, 20], got {folds}.", hint="Use 5.")
    keep = ~np.all(np.isnan(feats), axis=(0, 1))
    with threadpool_limits(threads()):
        res = dataset_inference(feats[:, :, keep], folds=folds, seed=seed)
    png = None
    if plot:
        from tools.nid.plots import rank_histogram

        png = str(rank_histogram(res.ranks, res.candidates_per_nid, output_path("nid_ranks", ".png"),
                                 title=f"NID ranks among GIDs (KS p = {res.p_value_ks:.2g})"))
    return InferenceOutput(p_value_ks=res.p_value_ks, reject=res.p_value_ks < 0.01, ks_statistic=res.ks_statistic,
                           p_value_ttest=res.p_value_ttest, mean_normalized_rank=res.mean_normalized_rank,
                           n_nids=res.n_nids, candidates_per_nid=res.candidates_per_nid, histogram_png=png)


