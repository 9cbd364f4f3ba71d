"""The NID family's tools: detection, generation, blind filter, scoring, DP audit, dataset inference, training."""

from __future__ import annotations

import csv
import json
import math
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tools.errors import InvalidInput, LimitExceeded, NotConfigured, ResearchError
from tools.nid.formats import NID_TYPES, classify, generate_gid_lists, generate_gids, get_type
from tools.paths import output_path, resolve_input
from tools.progress import Progress
from tools.settings import get_settings

DatasetName = Literal["tweets", "eth_tokens", "jsonlite_md5", "opacus_git_log", "serialversionuid"]
ScoreName = Literal["loss", "zlib", "min_k", "min_k_pp", "recall", "hinge"]
ALL_DATASETS: list[str] = ["tweets", "eth_tokens", "jsonlite_md5", "opacus_git_log", "serialversionuid"]


def _limits():
    return get_settings().nid


def _threads() -> int:
    return max(1, _limits().torch_threads)


def _check_types(types: list[str] | None) -> list[str] | None:
    if types:
        for t in types:
            get_type(t)
    return types or None


def _read_text(text: str | None, path: str | None) -> str:
    if (text is None) == (path is None):
        raise InvalidInput("Give exactly one of text or path.", hint="Pass the text inline, or a file path.")
    if path is not None:
        p = resolve_input(path)
        if not p.is_file():
            raise InvalidInput(f"{path!r} is not a file.", hint="Pass a text file (or a sample:// URI).")
        size = p.stat().st_size
        if size > _limits().max_text_chars * 4:
            raise LimitExceeded("file size (bytes)", size, _limits().max_text_chars * 4,
                                "RESEARCH_MCP_NID__MAX_TEXT_CHARS")
        text = p.read_text(encoding="utf-8", errors="replace")
    assert text is not None
    if len(text) > _limits().max_text_chars:
        raise LimitExceeded("text length (characters)", len(text), _limits().max_text_chars,
                            "RESEARCH_MCP_NID__MAX_TEXT_CHARS")
    return text


def _no_nids(types: list[str] | None) -> InvalidInput:
    which = ", ".join(types) if types else ", ".join(NID_TYPES)
    return InvalidInput(f"The text contains no natural identifiers of the types searched ({which}).",
                        hint="Pass text with e.g. hex digests, git commit ids, 0x addresses, t.co links, "
                        "serialVersionUID fields, UUIDs or sha512-... SRI hashes, or widen `types`.")


# ---------------------------------------------------------------------------------------------- detect


class FoundNID(BaseModel):
    type: str
    value: str
    start: int = Field(description="Character offset of the first occurrence.")
    end: int
    casing: str = Field(description="lower, upper, checksum (valid EIP-55), mixed or mixed_invalid.")
    plausible: bool = Field(description="False when the value cannot be a random draw (serialVersionUID = 1L).")
    occurrences: int


class DetectResult(BaseModel):
    total_occurrences: int
    unique: int
    by_type: dict[str, int] = Field(description="Distinct identifiers per type.")
    identifiers: list[FoundNID]
    truncated: bool = Field(description="True when more identifiers exist than max_results; raise it to see them.")


def nid_detect(
    text: Annotated[str | None, Field(description="Text to scan (give this or path).")] = None,
    path: Annotated[str | None, Field(description="A text file inside the roots, or sample://nid/<file>.")] = None,
    types: Annotated[list[str] | None, Field(description="NID types to look for; all when omitted.")] = None,
    plausible_only: Annotated[bool, Field(description="Drop values that cannot be random (1L, 20100212L).")] = True,
    max_results: Annotated[int, Field(description="Most identifiers listed (counts cover all).")] = 200,
) -> DetectResult:
    """Find natural identifiers (hex digests, commit ids, Ethereum addresses, short URLs...) in a text, deduplicated.

    Identifiers: hex digests, git commit ids, Ethereum addresses, serialVersionUIDs, t.co codes, UUIDs, SRI hashes.
    Use it first, to see which identifiers a document holds before generating GIDs or scoring a model. Returns
    each distinct identifier with its type, first span, casing and count. Types: git_commit, sha512, sha256,
    sha1, md5, eth_address, serial_version_uid, tco, uuid, sri. Text up to RESEARCH_MCP_NID__MAX_TEXT_CHARS.
    An error is returned when nothing is found.
    """
    from tools.nid.detect import dedupe, find_nids

    types = _check_types(types)
    body = _read_text(text, path)
    found = find_nids(body, types, plausible_only=plausible_only)
    if not found:
        raise _no_nids(types)
    first, counts = dedupe(found)
    by_type: dict[str, int] = {}
    for d in first:
        by_type[d.type] = by_type.get(d.type, 0) + 1
    items = [FoundNID(type=d.type, value=d.value, start=d.start, end=d.end, casing=d.casing, plausible=d.plausible,
                      occurrences=counts[(d.type, d.value)]) for d in first[: max(0, max_results)]]
    return DetectResult(total_occurrences=len(found), unique=len(first), by_type=by_type, identifiers=items,
                        truncated=len(first) > len(items))


# -------------------------------------------------------------------------------------------- generate


class GenerateResult(BaseModel):
    identifier: str
    type: str
    casing: str
    gids: list[str]
    seed: int


def nid_generate(
    identifier: Annotated[str, Field(description="The natural identifier (only the identifier, e.g. the 10 "
                                     "characters of a t.co code, or 123L for a serialVersionUID).")],
    type: Annotated[str | None, Field(description="Its NID type; inferred from the format when omitted.")] = None,
    n: Annotated[int, Field(description="How many GIDs to draw.")] = 8,
    seed: Annotated[int, Field(description="Seed; the same seed and identifier give the same GIDs.")] = 0,
) -> GenerateResult:
    """Draw generated identifiers (GIDs): same-format, same-length, same-casing stand-ins for an NID.

    Use it to make non-member canaries: Ethereum addresses get a valid EIP-55 checksum (Keccak-256), a
    serialVersionUID is a uniform signed 64-bit integer plus L, a t.co code 10 base62 characters. GIDs are
    distinct and never equal the NID. At most RESEARCH_MCP_NID__MAX_CANDIDATES - 1 per call.
    """
    ident = identifier.strip()
    if type is None:
        matches = classify(ident)
        if not matches:
            raise InvalidInput(f"{identifier!r} matches no known NID format.",
                               hint=f"Pass `type` explicitly (one of {', '.join(NID_TYPES)}) or check the value.")
        type = matches[0]
    t = get_type(type)
    from tools.nid.formats import ID_PATTERNS

    if not ID_PATTERNS[t.name].fullmatch(ident):
        raise InvalidInput(f"{identifier!r} is not a {t.name} identifier ({t.description}).",
                           hint="Pass only the identifier itself, or the right type.")
    limit = _limits().max_candidates - 1
    if n < 1:
        raise InvalidInput(f"n must be at least 1, got {n}.", hint="Ask for one or more GIDs.")
    if n > limit:
        raise LimitExceeded("number of GIDs", n, limit, "RESEARCH_MCP_NID__MAX_CANDIDATES")
    return GenerateResult(identifier=ident, type=t.name, casing=t.casing(ident),
                          gids=generate_gids(ident, t.name, n, seed=seed), seed=seed)


# ---------------------------------------------------------------------------------------- blind filter


class BlindFilterOutput(BaseModel):
    auc: float = Field(description="Out-of-fold AUC of a character n-gram classifier, NIDs vs GIDs (0.5 = blind).")
    n_nids: int
    gids_per_nid: int
    kept: int
    dropped: list[str] = Field(description="NIDs ranked at the extreme among their GIDs (first 100).")
    verdict: str


def _casing_override(values: list[str], how: str) -> list[str]:
    if how == "lower":
        return [v.lower() for v in values]
    if how == "upper":
        return [v.upper() for v in values]
    return values


def _dataset_identifiers(dataset: str, max_nids: int, seed: int) -> tuple[list[str], str]:
    import numpy as np

    from tools.nid.corpus import DATASETS, dataset_nids

    _, occ = dataset_nids(dataset)
    values = [o.detection.value for o in occ]
    if len(values) > max_nids:
        idx = np.sort(np.random.default_rng(seed).choice(len(values), max_nids, replace=False))
        values = [values[i] for i in idx]
    return values, DATASETS[dataset][1]


def nid_blind_filter(
    dataset: Annotated[DatasetName | None, Field(description="A bundled data set to take NIDs from.")] = None,
    identifiers: Annotated[list[str] | None, Field(description="NIDs to test instead (give type too).")] = None,
    type: Annotated[str | None, Field(description="NID type of `identifiers`.")] = None,
    n_gids: Annotated[int, Field(description="GIDs per NID (at least 1/extreme - 1 for any NID to be dropped).")] = 63,
    max_nids: Annotated[int, Field(description="Random subset of at most this many NIDs.")] = 500,
    extreme: Annotated[float, Field(description="Drop an NID when its rank p-value among its GIDs, (1 + #GIDs "
                                    "above or below it) / (n_gids + 1), is at most this.")] = 0.02,
    gid_casing: Annotated[Literal["match", "lower", "upper"], Field(
        description="'match' (the correct generator) or a deliberately wrong casing, to check the filter.")] = "match",
    seed: Annotated[int, Field(description="Seed for GIDs and folds.")] = 0,
) -> BlindFilterOutput:
    """Check that NIDs cannot be told from their GIDs by characters alone, and drop the NIDs that can.

    Use it before an audit: a character n-gram classifier is fitted out of fold (an NID and its GIDs share a
    fold). AUC near 0.5 means the generator matches the real format; near 1 means it does not (try
    gid_casing='lower' to see). Returns the AUC, how many NIDs are kept and which are dropped.
    """
    from threadpoolctl import threadpool_limits

    from tools.nid.blind import blind_filter

    if (dataset is None) == (identifiers is None):
        raise InvalidInput("Give exactly one of dataset or identifiers.", hint="E.g. dataset='eth_tokens'.")
    if dataset is not None:
        values, nid_type = _dataset_identifiers(dataset, max_nids, seed)
    else:
        assert identifiers is not None
        if type is None:
            raise InvalidInput("identifiers need their `type`.", hint=f"One of {', '.join(NID_TYPES)}.")
        nid_type = get_type(type).name
        values = list(dict.fromkeys(v.strip() for v in identifiers))
        if len(values) > max_nids:
            raise LimitExceeded("number of identifiers", len(values), max_nids, "max_nids (a parameter)")
    if len(values) > _limits().max_nids:
        raise LimitExceeded("number of NIDs", len(values), _limits().max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
    if not 1 <= n_gids < _limits().max_candidates:
        raise InvalidInput(f"n_gids must lie in [1, {_limits().max_candidates - 1}], got {n_gids}.",
                           hint="Use e.g. 16.")
    gids = [_casing_override(g, gid_casing) for g in generate_gid_lists(values, nid_type, n_gids, seed=seed)]
    with threadpool_limits(_threads()):
        res = blind_filter(values, gids, extreme=extreme, seed=seed)
    verdict = ("blind: the classifier cannot tell NIDs from GIDs" if 0.45 <= res.auc <= 0.55 else
               "distinguishable: GIDs differ from the NIDs in characters" if res.auc >= 0.6 else
               "borderline: AUC a little away from 0.5")
    return BlindFilterOutput(auc=res.auc, n_nids=len(values), gids_per_nid=n_gids, kept=len(res.kept),
                             dropped=[values[i] for i in res.dropped[:100]], verdict=verdict)


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


def _open_scorer(model: str | None, endpoint: str | None, endpoint_model: str | None):
    from tools.nid.scorers import CompletionsScorer, open_model

    if (model is None) == (endpoint is None):
        raise InvalidInput("Give exactly one of model (a local path) or endpoint (an OpenAI-compatible base URL).",
                           hint="Train a model with nid_train_model, or pass endpoint='settings' to use "
                           "OPENAI_BASE_URL.")
    if model is not None:
        p = resolve_input(model)
        return open_model(p)
    llm = get_settings().llm
    base = llm.base_url if endpoint == "settings" else endpoint
    if not base:
        raise NotConfigured("No completions endpoint is configured.",
                            hint="Set OPENAI_BASE_URL or pass endpoint='http://host:port/v1'.")
    key = llm.api_key.get_secret_value() if llm.api_key else None
    return CompletionsScorer(base, endpoint_model or llm.model, api_key=key, timeout_s=llm.timeout_s)


def _occurrences_from(text: str | None, path: str | None, dataset: str | None, split: str | None,
                      subset: str, types: list[str] | None, max_nids: int, seed: int):
    """(documents, [(doc index, start, end, type)]) from exactly one source."""
    import numpy as np

    from tools.nid.corpus import DATASETS, dataset_nids, load_documents
    from tools.nid.detect import dedupe, find_nids

    given = sum(x is not None for x in (text, path, dataset, split))
    if given != 1:
        raise InvalidInput("Give exactly one of text, path, dataset or split.",
                           hint="E.g. dataset='tweets', or the split file nid_train_model wrote.")
    if split is not None:
        p = resolve_input(split)
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
            items = rec[subset]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{split!r} is not a split file with a {subset!r} list ({exc}).",
                               hint="Pass the split_path nid_train_model returned.") from exc
        docs: list[str] = []
        occ = []
        cache: dict[str, list[str]] = {}
        for it in items[:max_nids]:
            name = it["dataset"]
            if name not in cache:
                cache[name] = load_documents(name)
            docs.append(cache[name][it["doc"]])
            occ.append((len(docs) - 1, it["start"], it["end"], DATASETS[name][1]))
        return docs, occ
    if dataset is not None:
        docs, found = dataset_nids(dataset)
        occ = [(o.doc, o.detection.start, o.detection.end, o.detection.type) for o in found]
    else:
        body = _read_text(text, path)
        first, _ = dedupe(find_nids(body, _check_types(types), plausible_only=True))
        if not first:
            raise _no_nids(types)
        docs = [body]
        occ = [(0, d.start, d.end, d.type) for d in first]
    if len(occ) > max_nids:
        idx = np.sort(np.random.default_rng(seed).choice(len(occ), max_nids, replace=False))
        occ = [occ[i] for i in idx]
    return docs, occ


def nid_score(
    model: Annotated[str | None, Field(description="Local model: a byte-LM checkpoint from nid_train_model or a "
                                       "Hugging Face causal-LM folder.")] = None,
    endpoint: Annotated[str | None, Field(description="OpenAI-compatible base URL whose /completions echoes "
                                          "prompt logprobs (vLLM); 'settings' uses OPENAI_BASE_URL.")] = None,
    endpoint_model: Annotated[str | None, Field(description="Model name at the endpoint.")] = None,
    dataset: Annotated[DatasetName | None, Field(description="A bundled data set to take NIDs from.")] = None,
    split: Annotated[str | None, Field(description="A split file from nid_train_model.")] = None,
    subset: Annotated[Literal["members", "non_members"], Field(description="Which part of the split.")] = "members",
    text: Annotated[str | None, Field(description="Or a text holding NIDs.")] = None,
    path: Annotated[str | None, Field(description="Or a text file holding NIDs.")] = None,
    types: Annotated[list[str] | None, Field(description="NID types to use from text/path.")] = None,
    n_gids: Annotated[int, Field(description="GIDs per NID (candidates = n_gids + 1).")] = 15,
    max_nids: Annotated[int, Field(description="Random subset of at most this many NIDs.")] = 200,
    prefix_chars: Annotated[int, Field(description="Context characters kept before the identifier.")] = 64,
    suffix_chars: Annotated[int, Field(description="Context characters kept after it.")] = 8,
    k: Annotated[float, Field(description="Fraction of lowest tokens for Min-K% and Min-K%++.")] = 0.2,
    recall: Annotated[bool, Field(description="Also compute ReCaLL (a second pass with a non-member prefix).")] = True,
    batch_size: Annotated[int, Field(description="Contexts per model call.")] = 64,
    seed: Annotated[int, Field(description="Seed for GIDs and subsets.")] = 0,
    progress: Progress | None = None,
) -> ScoreResult:
    """Score each NID and its GIDs in the same context with six membership scores on the identifier's tokens.

    Scores: loss, zlib, Min-K%, Min-K%++, ReCaLL, hinge; higher = more member-like. Use it to turn a model and a
    set of NIDs into the features the audit and dataset inference take. The
    model is a local checkpoint/folder or an OpenAI-compatible completions endpoint with prompt logprobs.
    Writes an NPZ (features) and a CSV; returns their paths and, per score, how NIDs rank among GIDs.
    Bounds: RESEARCH_MCP_NID__MAX_NIDS NIDs, RESEARCH_MCP_NID__MAX_SCORED_CONTEXTS contexts.
    """
    import numpy as np

    from tools.nid.pipeline import candidate_set, score_features
    from tools.nid.scores import SCORE_NAMES

    lim = _limits()
    if not 1 <= n_gids < lim.max_candidates:
        raise InvalidInput(f"n_gids must lie in [1, {lim.max_candidates - 1}], got {n_gids}.", hint="Use e.g. 15.")
    if not 0 < k <= 1:
        raise InvalidInput(f"k must lie in (0, 1], got {k}.", hint="Use e.g. 0.2 for Min-20%.")
    if max_nids > lim.max_nids:
        raise LimitExceeded("max_nids", max_nids, lim.max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
    docs, occ = _occurrences_from(text, path, dataset, split, subset, types, max_nids, seed)
    n_ctx = len(occ) * (n_gids + 1) * (2 if recall else 1)
    if n_ctx > lim.max_scored_contexts:
        raise LimitExceeded("contexts to score", n_ctx, lim.max_scored_contexts,
                            "RESEARCH_MCP_NID__MAX_SCORED_CONTEXTS")
    scorer = _open_scorer(model, endpoint, endpoint_model)
    import torch

    sets = [candidate_set(docs[d], s, e, t, n_gids, seed=seed) for d, s, e, t in occ]
    old = torch.get_num_threads()
    torch.set_num_threads(_threads())
    try:
        feats = score_features(scorer, sets, prefix_chars=prefix_chars, suffix_chars=suffix_chars, k=k,
                               recall=recall, batch_size=batch_size, progress=progress)
    finally:
        torch.set_num_threads(old)
    npz = output_path("nid_scores", ".npz")
    np.savez_compressed(npz, features=feats, score_names=np.array(SCORE_NAMES), nids=np.array([s.nid for s in sets]),
                        types=np.array([s.type for s in sets]))
    csv_file = npz.with_suffix(".csv")
    with csv_file.open("w", newline="", encoding="utf-8") as fh:
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
    if n > _limits().max_nids:
        raise LimitExceeded("number of NIDs", n, _limits().max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
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
    with threadpool_limits(_threads()):
        res = dataset_inference(feats[:, :, keep], folds=folds, seed=seed)
    png = None
    if plot:
        from tools.nid.plots import rank_histogram

        png = str(rank_histogram(res.ranks, res.candidates_per_nid, output_path("nid_ranks", ".png"),
                                 title=f"NID ranks among GIDs (KS p = {res.p_value_ks:.2g})"))
    return InferenceOutput(p_value_ks=res.p_value_ks, reject=res.p_value_ks < 0.01, ks_statistic=res.ks_statistic,
                           p_value_ttest=res.p_value_ttest, mean_normalized_rank=res.mean_normalized_rank,
                           n_nids=res.n_nids, candidates_per_nid=res.candidates_per_nid, histogram_png=png)


# ------------------------------------------------------------------------------------------------ train


class TrainOutput(BaseModel):
    checkpoint: str = Field(description="Byte-LM checkpoint; pass it to nid_score as model.")
    split_path: str = Field(description="JSON listing member and non-member NIDs; pass it to nid_score as split.")
    members: int
    non_members: int
    epochs: int
    steps: int
    final_loss: float = Field(description="Training loss, nats per byte.")
    parameters: int
    dp_epsilon: float | None = Field(description="Opacus RDP accountant eps (add/remove one text), when DP-SGD ran.")
    dp_delta: float | None
    noise_multiplier: float | None
    seconds: float


def build_split(datasets: list[str], per_dataset: int, holdout: float, seed: int) -> dict:
    """Pick up to `per_dataset` NIDs per data set; a `holdout` fraction of them are non-members."""
    import numpy as np

    from tools.nid.corpus import DATASETS, dataset_nids

    rng = np.random.default_rng(seed)
    split: dict = {"members": [], "non_members": [], "seed": seed}
    for name in datasets:
        if name not in DATASETS:
            from tools.errors import unknown_name

            raise unknown_name("data set", name, DATASETS)
        _, occ = dataset_nids(name)
        idx = rng.permutation(len(occ))[: per_dataset]
        n_out = round(holdout * len(idx))
        for j, i in enumerate(idx):
            o = occ[int(i)]
            item = {"dataset": name, "doc": o.doc, "start": o.detection.start, "end": o.detection.end,
                    "nid": o.detection.value}
            split["non_members" if j < n_out else "members"].append(item)
    return split


def nid_train_model(
    datasets: Annotated[list[DatasetName] | None, Field(description="Bundled data sets to build the corpus from; "
                                                         "all five when omitted.")] = None,
    per_dataset: Annotated[int, Field(description="NIDs taken per data set (members + non-members).")] = 80,
    holdout: Annotated[float, Field(description="Fraction of NIDs held out as non-members.")] = 0.5,
    epochs: Annotated[int, Field(description="Training epochs.")] = 30,
    batch_size: Annotated[int, Field(description="Batch size (expected batch size under DP).")] = 32,
    lr: Annotated[float, Field(description="Peak learning rate (AdamW, cosine decay).")] = 3e-3,
    d_model: Annotated[int, Field(description="Width of the transformer.")] = 64,
    n_layer: Annotated[int, Field(description="Transformer layers.")] = 2,
    prefix_chars: Annotated[int, Field(description="Context characters before each NID in a training text.")] = 64,
    suffix_chars: Annotated[int, Field(description="Context characters after it.")] = 8,
    dp_epsilon: Annotated[float | None, Field(description="Train with DP-SGD (Opacus) to this eps under add/remove-"
                                              "one; plain training when omitted.")] = None,
    dp_delta: Annotated[float, Field(description="delta for DP-SGD.")] = 1e-5,
    max_grad_norm: Annotated[float, Field(description="Per-example clipping norm for DP-SGD.")] = 1.0,
    seed: Annotated[int, Field(description="Seed for the split, initialisation and batches.")] = 0,
    progress: Progress | None = None,
) -> TrainOutput:
    """Train a small byte-level causal LM on texts around real NIDs (members), optionally with DP-SGD (Opacus).

    Audits then run end to end without downloaded weights. Use it to get a model whose training set is known:
    each training text is one NID's context; a held-out
    part of the NIDs are non-members. Long-running: reports progress per epoch and stops when cancelled.
    Returns the checkpoint (for nid_score), the split file and, with DP, the accountant's eps. Bounds:
    RESEARCH_MCP_NID__MAX_TRAIN_EXAMPLES texts, __MAX_TRAIN_EPOCHS, __MAX_MODEL_DIM, __MAX_MODEL_LAYERS.
    """
    import torch

    from tools.nid.bytelm import ByteLMConfig
    from tools.nid.contexts import make_context
    from tools.nid.corpus import load_documents
    from tools.nid.train import TrainConfig, train_byte_lm

    lim = _limits()
    names = list(datasets) if datasets else list(ALL_DATASETS)
    if not 0 <= holdout < 1:
        raise InvalidInput(f"holdout must lie in [0, 1), got {holdout}.", hint="Use e.g. 0.5.")
    if epochs < 1 or epochs > lim.max_train_epochs:
        raise LimitExceeded("epochs", epochs, lim.max_train_epochs, "RESEARCH_MCP_NID__MAX_TRAIN_EPOCHS")
    if d_model > lim.max_model_dim or d_model < 8 or d_model % 4:
        raise InvalidInput(f"d_model must be a multiple of 4 in [8, {lim.max_model_dim}], got {d_model}.",
                           hint="Use e.g. 64; raise RESEARCH_MCP_NID__MAX_MODEL_DIM for larger.")
    if not 1 <= n_layer <= lim.max_model_layers:
        raise InvalidInput(f"n_layer must lie in [1, {lim.max_model_layers}], got {n_layer}.", hint="Use 2.")
    if dp_epsilon is not None and dp_epsilon <= 0:
        raise InvalidInput(f"dp_epsilon must be positive, got {dp_epsilon}.", hint="E.g. 8.0, or omit it.")
    if per_dataset < 2:
        raise InvalidInput(f"per_dataset must be at least 2, got {per_dataset}.", hint="Use e.g. 80.")
    split = build_split(names, per_dataset, holdout, seed)
    if len(split["members"]) > lim.max_train_examples:
        raise LimitExceeded("training texts", len(split["members"]), lim.max_train_examples,
                            "RESEARCH_MCP_NID__MAX_TRAIN_EXAMPLES")
    if not split["members"]:
        raise InvalidInput("No member NIDs were selected.", hint="Lower holdout or raise per_dataset.")
    docs = {name: load_documents(name) for name in names}
    texts = [make_context(docs[it["dataset"]][it["doc"]], it["start"], it["end"], prefix_chars=prefix_chars,
                          suffix_chars=suffix_chars).text for it in split["members"]]
    block = max(32, max(len(t.encode("utf-8")) for t in texts) + 1)
    cfg = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, dp_epsilon=dp_epsilon,
                      dp_delta=dp_delta, max_grad_norm=max_grad_norm,
                      model=ByteLMConfig(block_size=block, d_model=d_model, n_layer=n_layer, n_head=4))
    ckpt = output_path("nid_bytelm", ".pt")
    old = torch.get_num_threads()
    torch.set_num_threads(_threads())
    try:
        res = train_byte_lm(texts, ckpt, cfg, progress=progress)
    except ResearchError:
        raise
    except ValueError as exc:
        raise InvalidInput(f"Training could not start: {exc}", hint="Check epochs, batch size and dp_epsilon.") from exc
    finally:
        torch.set_num_threads(old)
    split.update({"prefix_chars": prefix_chars, "suffix_chars": suffix_chars, "checkpoint": str(ckpt)})
    split_path = ckpt.with_suffix(".split.json")
    split_path.write_text(json.dumps(split, indent=1), encoding="utf-8")
    return TrainOutput(checkpoint=str(res.checkpoint), split_path=str(split_path), members=len(split["members"]),
                       non_members=len(split["non_members"]), epochs=epochs, steps=res.steps,
                       final_loss=res.final_loss, parameters=res.parameters, dp_epsilon=res.epsilon,
                       dp_delta=res.delta, noise_multiplier=res.noise_multiplier, seconds=res.seconds)

