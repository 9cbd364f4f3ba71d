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
    plot_png: str | None = Field(None, description="PNG: score histograms of NIDs (members) vs GIDs (stand-ins) "
                                 "and the ROC of telling them apart.")


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
    scores_path: Annotated[str | None, Field(description="NPZ from nid_score.")] = None,
    scores: Annotated[list[list[float]] | None, Field(description="Or rows: the NID's score, then its GIDs'.")] = None,
    score: ScoreName = "loss",
    mode: Annotated[Literal["rank", "binary"], Field(description="rank: success if the NID is in the top r of c; "
                                                     "binary: Steinke et al.'s c=2 game with abstention.")] = "rank",
    c: Annotated[int | None, Field(description="Candidates per NID; default: all.")] = None,
    r: Annotated[int, Field(description="1 <= r < c.")] = 1,
    alpha: float = 0.05,
    delta: Annotated[float, Field(description="Of the (eps, delta)-DP claim audited.")] = 0.0,
    guesses: Annotated[int | None, Field(description="Binary: guess on this many largest-gap pairs; default: "
                                         "all.")] = None,
    plot: bool = True,
) -> AuditOutput:
    """Lower-bound a trained model's DP eps from one run, with NIDs as canaries (no retraining).

    After nid_score. The bound is for replacing one text (add/remove-one: compare with 2 eps).
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
    png = None
    if plot:
        from tools.nid.plots import audit_plot

        bound = res.eps_lower_bound
        png = str(audit_plot(table[:, 0], table[:, 1:cc], output_path("nid_audit", ".png"),
                             title=f"DP audit ({res.mode}, score {score}, {n} NIDs x {cc} candidates): "
                                   f"eps >= {bound:.3g} at alpha {alpha:g}"))
    return AuditOutput(eps_lower_bound=res.eps_lower_bound if math.isfinite(res.eps_lower_bound) else 1e9,
                       mode=res.mode, n_nids=n, guesses=res.guesses, correct=res.correct, candidates_per_nid=cc, r=r,
                       alpha=alpha, delta=delta, p_value_at_eps_zero=res.p_value_at_zero,
                       neighbouring="replace one candidate text by another (substitution)", plot_png=png)


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
    scores_path: Annotated[str, Field(description="NPZ from nid_score.")],
    folds: int = 5,
    seed: int = 0,
    plot: bool = True,
) -> InferenceOutput:
    """Test whether NIDs were in a model's training data, their GIDs being the held-out set.

    After nid_score: a KS p-value of the NIDs' out-of-fold ranks (reject at 0.01), a t-test and a histogram.
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


