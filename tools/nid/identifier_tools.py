"""The NID tools that need no model: detect identifiers, generate same-format GIDs, the blind filter."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tools.errors import InvalidInput, LimitExceeded
from tools.nid.formats import NID_TYPES, ambiguous_types, classify, generate_gid_lists, generate_gids, get_type
from tools.nid.sources import DatasetName, check_types, dataset_identifiers, limits, no_nids, read_text, threads

# ---------------------------------------------------------------------------------------------- detect


class FoundNID(BaseModel):
    type: str
    value: str
    start: int = Field(description="Character offset of the first occurrence.")
    end: int
    casing: str = Field(description="lower, upper, checksum (valid EIP-55), mixed or mixed_invalid.")
    plausible: bool = Field(description="False when the value cannot be a random draw (serialVersionUID = 1L).")
    occurrences: int
    ambiguous_with: list[str] = Field(default_factory=list, description="Other types whose format this value matches "
                                      "exactly (an MD5 digest that is also a valid undashed UUID); empty when none.")


class DetectResult(BaseModel):
    total_occurrences: int
    unique: int
    by_type: dict[str, int] = Field(description="Distinct identifiers per type.")
    ambiguous: int = Field(0, description="Distinct identifiers whose type is ambiguous (see ambiguous_with).")
    identifiers: list[FoundNID]
    truncated: bool = Field(description="True when more identifiers exist than max_results; raise it to see them.")
    note: str | None = Field(None, description="What an ambiguous type means, when there is one.")


def nid_detect(
    text: Annotated[str | None, Field(description="Text to scan, or give `path`.")] = None,
    path: Annotated[str | None, Field(description="A text file in the roots, or sample://nid/<file>.")] = None,
    types: Annotated[list[str] | None, Field(description="Types to look for; default: all.")] = None,
    plausible_only: Annotated[bool, Field(description="Drop values that cannot be random (1L, 20100212L).")] = True,
    max_results: Annotated[int, Field(description="Most listed (counts cover all).")] = 200,
) -> DetectResult:
    """Find natural identifiers (digests, commit ids, addresses, short URLs...) in a text: use it first.

    Types: git_commit, sha512, sha256, sha1, md5, eth_address, serial_version_uid, tco, uuid, sri, bitly, goo_gl,
    tinyurl, owly, isgd, buffly, aws_access_key, uuid_hex; each with its span and count. Bounded by
    max_text_chars.
    """
    from tools.nid.detect import dedupe, find_nids

    types = check_types(types)
    body = read_text(text, path)
    found = find_nids(body, types, plausible_only=plausible_only)
    if not found:
        raise no_nids(types)
    first, counts = dedupe(found)
    by_type: dict[str, int] = {}
    for d in first:
        by_type[d.type] = by_type.get(d.type, 0) + 1
    items = [FoundNID(type=d.type, value=d.value, start=d.start, end=d.end, casing=d.casing, plausible=d.plausible,
                      occurrences=counts[(d.type, d.value)], ambiguous_with=list(d.ambiguous_with))
             for d in first[: max(0, max_results)]]
    n_amb = sum(bool(d.ambiguous_with) for d in first)
    return DetectResult(total_occurrences=len(found), unique=len(first), by_type=by_type, ambiguous=n_amb,
                        identifiers=items, truncated=len(first) > len(items), note=_AMBIGUOUS_NOTE if n_amb else None)


_AMBIGUOUS_NOTE = ("Some values have the same characters in two formats (32 hex digits: an MD5 digest, or an "
                   "undashed UUID whose version and variant nibbles are valid); the text alone cannot decide. "
                   "Their GIDs keep those nibbles, so they stand in under either reading.")


# -------------------------------------------------------------------------------------------- generate


class GenerateResult(BaseModel):
    identifier: str
    type: str
    casing: str
    gids: list[str]
    seed: int
    ambiguous_with: list[str] = Field(default_factory=list, description="Other types this identifier's format "
                                      "matches exactly (md5 / uuid_hex); the GIDs fit either.")


def nid_generate(
    identifier: Annotated[str, Field(description="The identifier alone, e.g. a t.co code's 10 characters or "
                                     "123L.")],
    type: Annotated[str | None, Field(description="Default: inferred from the format.")] = None,
    n: int = 8,
    seed: int = 0,
) -> GenerateResult:
    """Draw GIDs: same-format, same-length, same-casing stand-ins for an NID (non-member canaries).

    Distinct, never the NID. At most max_candidates - 1.
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
    limit = limits().max_candidates - 1
    if n < 1:
        raise InvalidInput(f"n must be at least 1, got {n}.", hint="Ask for one or more GIDs.")
    if n > limit:
        raise LimitExceeded("number of GIDs", n, limit, "RESEARCH_MCP_NID__MAX_CANDIDATES")
    return GenerateResult(identifier=ident, type=t.name, casing=t.casing(ident),
                          gids=generate_gids(ident, t.name, n, seed=seed), seed=seed,
                          ambiguous_with=ambiguous_types(ident, t.name))


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



def nid_blind_filter(
    dataset: Annotated[DatasetName | None, Field(description="Bundled NIDs.")] = None,
    identifiers: Annotated[list[str] | None, Field(description="Or these NIDs (with `type`).")] = None,
    type: str | None = None,
    n_gids: Annotated[int, Field(description="GIDs per NID (>= 1/extreme - 1 to drop any).")] = 63,
    max_nids: Annotated[int, Field(description="Random subset size.")] = 500,
    extreme: Annotated[float, Field(description="Drop an NID whose rank p-value among its GIDs is at most "
                                    "this.")] = 0.02,
    gid_casing: Annotated[Literal["match", "lower", "upper"], Field(
        description="match: the correct generator; a wrong casing checks the filter.")] = "match",
    seed: int = 0,
) -> BlindFilterOutput:
    """Check that NIDs cannot be told from their GIDs by characters alone; drop those that can.

    Returns the n-gram classifier's out-of-fold AUC (0.5: blind) and the NIDs kept and dropped.
    """
    from threadpoolctl import threadpool_limits

    from tools.nid.blind import blind_filter

    if (dataset is None) == (identifiers is None):
        raise InvalidInput("Give exactly one of dataset or identifiers.", hint="E.g. dataset='eth_tokens'.")
    if dataset is not None:
        values, nid_type = dataset_identifiers(dataset, max_nids, seed)
    else:
        assert identifiers is not None
        if type is None:
            raise InvalidInput("identifiers need their `type`.", hint=f"One of {', '.join(NID_TYPES)}.")
        nid_type = get_type(type).name
        values = list(dict.fromkeys(v.strip() for v in identifiers))
        if len(values) > max_nids:
            raise LimitExceeded("number of identifiers", len(values), max_nids, "max_nids (a parameter)")
    if len(values) > limits().max_nids:
        raise LimitExceeded("number of NIDs", len(values), limits().max_nids, "RESEARCH_MCP_NID__MAX_NIDS")
    if not 1 <= n_gids < limits().max_candidates:
        raise InvalidInput(f"n_gids must lie in [1, {limits().max_candidates - 1}], got {n_gids}.",
                           hint="Use e.g. 16.")
    gids = [_casing_override(g, gid_casing) for g in generate_gid_lists(values, nid_type, n_gids, seed=seed)]
    with threadpool_limits(threads()):
        res = blind_filter(values, gids, extreme=extreme, seed=seed)
    verdict = ("blind: the classifier cannot tell NIDs from GIDs" if 0.45 <= res.auc <= 0.55 else
               "distinguishable: GIDs differ from the NIDs in characters" if res.auc >= 0.6 else
               "borderline: AUC a little away from 0.5")
    return BlindFilterOutput(auc=res.auc, n_nids=len(values), gids_per_nid=n_gids, kept=len(res.kept),
                             dropped=[values[i] for i in res.dropped[:100]], verdict=verdict)


