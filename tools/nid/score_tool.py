"""The nid_score tool: membership scores of NIDs and their GIDs under a model, written as NPZ and CSV."""

from __future__ import annotations

import csv
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tools.atomic import atomic_output
from tools.errors import InvalidInput, LimitExceeded, NotConfigured
from tools.nid.sources import DatasetName, limits, occurrences_from, threads
from tools.paths import output_path, resolve_input
from tools.progress import Progress
from tools.settings import get_settings

# ------------------------------------------------------------------------------------------------ score


class ScoreSummary(BaseModel):
    score: str
    mean_normalized_rank: float = Field(description="Mean fraction of GIDs scoring above the NID (0.5 = no signal, "
                                        "0 = every NID above all its GIDs).")
    top1_fraction: float = Field(description="Fraction of NIDs scoring above all their GIDs.")


class ScoreResult(BaseModel):
    scorer: str
    n_nids: int
    candidates_per_nid: int
    scores_path: str = Field(description="NPZ with features (NIDs x candidates x scores; candidate 0 = the NID), "
                             "score_names, nids, types: input to nid_dp_audit and nid_dataset_inference.")
    csv_path: str = Field(description="CSV: one row per NID, its scores and its GIDs' mean scores.")
    summary: list[ScoreSummary]


def _open_scorer(model: str | None, endpoint: str | None, endpoint_model: str | None, progress: Progress | None):
    from tools.endpoints import check_caller_endpoint, configured_base_url, key_for
    from tools.nid.scorers import CompletionsScorer, HFScorer, open_model

    if (model is None) == (endpoint is None):
        raise InvalidInput("Give exactly one of model (a local path, or 'embedded') or endpoint (an OpenAI-compatible "
                           "base URL).", hint="Use model='embedded' for the bundled Gemma 3 270M, train a model with "
                           "nid_train_model, or pass endpoint='settings' to use OPENAI_BASE_URL.")
    if model == "embedded":
        return HFScorer.embedded(progress)
    if model is not None:
        return open_model(resolve_input(model))
    llm = get_settings().llm
    if endpoint == "settings":
        base = configured_base_url()
        if not base:
            raise NotConfigured("No completions endpoint is configured.",
                                hint="Set OPENAI_BASE_URL, or use model='embedded'.")
    else:
        # a caller-named URL: refused unless the operator allows it, and it never gets the server's key
        base = check_caller_endpoint(str(endpoint))
    return CompletionsScorer(base, endpoint_model or llm.model, api_key=key_for(base), timeout_s=llm.timeout_s)


def nid_score(
    model: Annotated[str | None, Field(description="'embedded' (Gemma 3 270M), a nid_train_model checkpoint, "
                                       "a nid_finetune adapter or a Hugging Face causal-LM folder.")] = None,
    endpoint: Annotated[str | None, Field(description="Or an OpenAI-compatible base URL whose /completions echoes "
                                          "prompt logprobs; 'settings': OPENAI_BASE_URL. Other URLs need "
                                          "RESEARCH_MCP_ALLOWED_ENDPOINTS and get no server key.")] = None,
    endpoint_model: str | None = None,
    dataset: Annotated[DatasetName | None, Field(description="Bundled NIDs.")] = None,
    split: Annotated[str | None, Field(description="Or a split file (nid_train_model, nid_finetune).")] = None,
    subset: Literal["members", "non_members"] = "members",
    text: Annotated[str | None, Field(description="Or a text holding NIDs.")] = None,
    path: Annotated[str | None, Field(description="Or a text file holding NIDs.")] = None,
    types: Annotated[list[str] | None, Field(description="Types taken from text/path.")] = None,
    n_gids: Annotated[int, Field(description="GIDs per NID.")] = 15,
    max_nids: Annotated[int, Field(description="Random subset size.")] = 200,
    prefix_chars: Annotated[int, Field(description="Context kept before the identifier.")] = 64,
    suffix_chars: Annotated[int, Field(description="Context kept after it.")] = 8,
    k: Annotated[float, Field(description="Min-K% fraction.")] = 0.2,
    recall: Annotated[bool, Field(description="Also ReCaLL (a second pass).")] = True,
    batch_size: int = 64,
    seed: int = 0,
    progress: Progress | None = None,
) -> ScoreResult:
    """Score each NID and its GIDs in one context with six membership scores (higher: member-like).

    loss, zlib, Min-K%, Min-K%++, ReCaLL, hinge, as an NPZ for nid_dp_audit / nid_dataset_inference, and a CSV.
    Bounded by max_nids and max_scored_contexts.
    """
    import numpy as np

    from tools.nid.pipeline import candidate_set, score_features
    from tools.nid.scores import SCORE_NAMES

    lim = limits()
    if not 1 <= n_gids < lim.max_candidates:
        raise InvalidInput(f"n_gids must lie in [1, {lim.max_candidates - 1}], got {n_gids}.", hint="Use e.g. 15.")
    if not 0 < k <= 1:
        raise InvalidInput(f"k must lie in (0, 1], got {k}.", hint="Use e.g. 0.2 for Min-20%.")
    if max_nids > lim.max_nids:
        raise LimitExceeded("max_nids", max_nids, lim.max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
    docs, occ = occurrences_from(text, path, dataset, split, subset, types, max_nids, seed)
    n_ctx = len(occ) * (n_gids + 1) * (2 if recall else 1)
    if n_ctx > lim.max_scored_contexts:
        raise LimitExceeded("contexts to score", n_ctx, lim.max_scored_contexts,
                            "RESEARCH_MCP_NID__MAX_SCORED_CONTEXTS")
    scorer = _open_scorer(model, endpoint, endpoint_model, progress)
    import torch

    sets = [candidate_set(docs[d], s, e, t, n_gids, seed=seed) for d, s, e, t in occ]
    old = torch.get_num_threads()
    torch.set_num_threads(threads())
    try:
        feats = score_features(scorer, sets, prefix_chars=prefix_chars, suffix_chars=suffix_chars, k=k,
                               recall=recall, batch_size=batch_size, progress=progress)
    finally:
        torch.set_num_threads(old)
    npz = output_path("nid_scores", ".npz")
    with atomic_output(npz) as tmp:
        np.savez_compressed(tmp, features=feats, score_names=np.array(SCORE_NAMES),
                            nids=np.array([s.nid for s in sets]), types=np.array([s.type for s in sets]))
    csv_file = npz.with_suffix(".csv")
    with atomic_output(csv_file) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["nid", "type", *SCORE_NAMES, *[f"gid_mean_{s}" for s in SCORE_NAMES]])
        for i, s in enumerate(sets):
            gid_mean = [float(np.mean(col[~np.isnan(col)])) if np.any(~np.isnan(col)) else float("nan")
                        for col in feats[i, 1:].T]
            w.writerow([s.nid, s.type, *[f"{x:.6g}" for x in feats[i, 0]], *[f"{x:.6g}" for x in gid_mean]])
    summary = []
    for j, name in enumerate(SCORE_NAMES):
        col = feats[:, :, j]
        if np.all(np.isnan(col)):
            continue
        above = np.mean(col[:, 1:] >= col[:, :1], axis=1)
        summary.append(ScoreSummary(score=name, mean_normalized_rank=float(np.mean(above)),
                                    top1_fraction=float(np.mean(above == 0))))
    return ScoreResult(scorer=scorer.name, n_nids=len(sets), candidates_per_nid=n_gids + 1, scores_path=str(npz),
                       csv_path=str(csv_file), summary=summary)


