"""Where the NID tools take identifiers from: inline text, a file, a bundled data set or a split file; bounds."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import Field

from tools.errors import InvalidInput, LimitExceeded
from tools.nid.formats import NID_TYPES, get_type
from tools.paths import resolve_input
from tools.settings import get_settings

DatasetName = Literal["tweets", "eth_tokens", "jsonlite_md5", "opacus_git_log", "serialversionuid"]
# Arguments of the training tools (nid_train_model, nid_finetune), described once.
ContextBefore = Annotated[int, Field(description="Context before each NID.")]
ContextAfter = Annotated[int, Field(description="Context after it.")]
DpEpsilon = Annotated[float | None, Field(description="DP-SGD to this eps (add/remove-one); default: plain training.")]
ClipNorm = Annotated[float, Field(description="DP-SGD clipping norm.")]
ScoreName = Literal["loss", "zlib", "min_k", "min_k_pp", "recall", "hinge"]
ALL_DATASETS: list[str] = ["tweets", "eth_tokens", "jsonlite_md5", "opacus_git_log", "serialversionuid"]


def limits():
    return get_settings().nid


def threads() -> int:
    return max(1, limits().torch_threads)


def check_types(types: list[str] | None) -> list[str] | None:
    if types:
        for t in types:
            get_type(t)
    return types or None


def read_text(text: str | None, path: str | None) -> str:
    if (text is None) == (path is None):
        raise InvalidInput("Give exactly one of text or path.", hint="Pass the text inline, or a file path.")
    if path is not None:
        p = resolve_input(path)
        if not p.is_file():
            raise InvalidInput(f"{path!r} is not a file.", hint="Pass a text file (or a sample:// URI).")
        size = p.stat().st_size
        if size > limits().max_text_chars * 4:
            raise LimitExceeded("file size (bytes)", size, limits().max_text_chars * 4,
                                "RESEARCH_MCP_NID__MAX_TEXT_CHARS")
        text = p.read_text(encoding="utf-8", errors="replace")
    assert text is not None
    if len(text) > limits().max_text_chars:
        raise LimitExceeded("text length (characters)", len(text), limits().max_text_chars,
                            "RESEARCH_MCP_NID__MAX_TEXT_CHARS")
    return text


def no_nids(types: list[str] | None) -> InvalidInput:
    which = ", ".join(types) if types else ", ".join(NID_TYPES)
    return InvalidInput(f"The text contains no natural identifiers of the types searched ({which}).",
                        hint="Pass text with e.g. hex digests, git commit ids, 0x addresses, t.co links, "
                        "serialVersionUID fields, UUIDs or sha512-... SRI hashes, or widen `types`.")



def dataset_identifiers(dataset: str, max_nids: int, seed: int) -> tuple[list[str], str]:
    import numpy as np

    from tools.nid.corpus import DATASETS, dataset_nids

    _, occ = dataset_nids(dataset)
    values = [o.detection.value for o in occ]
    if len(values) > max_nids:
        idx = np.sort(np.random.default_rng(seed).choice(len(values), max_nids, replace=False))
        values = [values[i] for i in idx]
    return values, DATASETS[dataset][1]



def occurrences_from(text: str | None, path: str | None, dataset: str | None, split: str | None,
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
        body = read_text(text, path)
        first, _ = dedupe(find_nids(body, check_types(types), plausible_only=True))
        if not first:
            raise no_nids(types)
        docs = [body]
        occ = [(0, d.start, d.end, d.type) for d in first]
    if len(occ) > max_nids:
        idx = np.sort(np.random.default_rng(seed).choice(len(occ), max_nids, replace=False))
        occ = [occ[i] for i in idx]
    return docs, occ

