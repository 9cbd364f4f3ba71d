"""The bundled real data sets with natural identifiers, as documents, and the NIDs found in them.

| name | text | NID type |
|---|---|---|
| tweets | tweets of two accounts (FiveThirtyEight twitter-ratio data, CC BY 4.0) | tco |
| eth_tokens | ERC-20 token JSON files (ethereum-lists/tokens, MIT) | eth_address |
| jsonlite_md5 | the MD5 file of the CRAN package jsonlite 2.0.0 (MIT) | md5 |
| opacus_git_log | the git log of pytorch/opacus, one commit a document (Apache-2.0) | git_commit |
| serialversionuid | Java source around serialVersionUID fields (apache/commons-lang, Apache-2.0) | serial_version_uid |
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tools.errors import unknown_name
from tools.nid.detect import Detection, find_nids
from tools.paths import sample_path

DATASETS: dict[str, tuple[str, str]] = {
    "tweets": ("tweets.jsonl", "tco"),
    "eth_tokens": ("eth_tokens.jsonl", "eth_address"),
    "jsonlite_md5": ("jsonlite_MD5.txt", "md5"),
    "opacus_git_log": ("opacus_git_log.jsonl", "git_commit"),
    "serialversionuid": ("commons_lang_serialversionuid.jsonl", "serial_version_uid"),
}


@dataclass(frozen=True)
class Occurrence:
    """An NID found at `detection.start:end` of document `doc`."""

    doc: int
    detection: Detection


def _git_entry(rec: dict) -> str:
    body = "\n".join(("    " + ln) if ln else "" for ln in (rec.get("body") or "").splitlines())
    return f"commit {rec['commit']}\nDate:   {rec['committer_date']}\n\n    {rec['subject']}\n\n{body}\n"


def load_documents(name: str, root: Path | None = None) -> list[str]:
    """The documents of bundled data set `name` (from `root` instead of the bundled folder when given)."""
    if name not in DATASETS:
        raise unknown_name("data set", name, DATASETS)
    fname = DATASETS[name][0]
    path = (root / fname) if root is not None else sample_path(f"nid/{fname}")
    text = path.read_text(encoding="utf-8", errors="replace")
    if name == "jsonlite_md5":
        return [text]
    recs = [json.loads(line) for line in text.splitlines() if line.strip()]
    if name == "tweets":
        return [r["text"] for r in recs]
    if name == "eth_tokens":
        return [r["text"] for r in recs]
    if name == "opacus_git_log":
        return [_git_entry(r) for r in recs]
    return [r["context"] for r in recs]


def dataset_nids(name: str, documents: list[str] | None = None) -> tuple[list[str], list[Occurrence]]:
    """The documents and the first occurrence of each distinct, plausible NID of the data set's type."""
    docs = documents if documents is not None else load_documents(name)
    nid_type = DATASETS[name][1]
    seen: set[str] = set()
    occ: list[Occurrence] = []
    for i, doc in enumerate(docs):
        for d in find_nids(doc, [nid_type], plausible_only=True):
            if d.value not in seen:
                seen.add(d.value)
                occ.append(Occurrence(i, d))
    return docs, occ
