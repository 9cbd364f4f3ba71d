"""One worked call per tool family on the bundled samples: what `research-mcp demo` runs and the README shows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Example:
    """One demo call; where its answer is known, `answer` reads it from the result and `expected` says what it
    must be (checked by `check`, which defaults to a case-insensitive containment of `expected`)."""

    family: str
    tool: str
    arguments: dict[str, Any]
    what: str
    answer: Callable[[dict[str, Any]], Any] | None = None
    expected: str | None = None
    check: Callable[[Any], bool] | None = None

    def verdict(self, result: dict[str, Any]) -> tuple[str, bool | None]:
        """(the answer as shown, whether it is right); None when this call has no known answer."""
        if self.answer is None:
            return "", None
        try:
            got = self.answer(result)
        except (KeyError, TypeError, IndexError):
            return "(no answer in the result)", False
        ok = self.check(got) if self.check else str(self.expected).lower() in str(got).lower()
        return str(got), bool(ok)


EXAMPLES: list[Example] = [
    Example("graph", "graph_solve",
            {"task": "shortest_path", "graph": {"edges": [[0, 1], [1, 2], [2, 3], [0, 4], [4, 3]]},
             "source": 0, "target": 3},
            "exact shortest path with its witness",
            answer=lambda r: r["answer"], expected="[0, 4, 3]", check=lambda a: a == [0, 4, 3]),
    Example("graph", "graph_check_answer",
            {"task": "shortest_path", "graph": {"edges": [[0, 1], [1, 2], [2, 3], [0, 4], [4, 3]]},
             "source": 0, "target": 3, "answer": "The shortest path is 0 -> 4 -> 3."},
            "check a model's free-text answer against the graph"),
    Example("eo", "eo_spectral_index", {"scene": "sample://eo/landsat8_c1_l1t", "index": "NDVI"},
            "NDVI GeoTIFF + quicklook from the Landsat 8 sample (TOA, sun-corrected)",
            answer=lambda r: round(r["stats"]["mean"], 4), expected="0.5306 (mean NDVI)",
            check=lambda a: abs(a - 0.5306) <= 0.001),
    Example("eo", "eo_land_surface_temperature", {"scene": "sample://eo/landsat8_c1_l1t"},
            "land surface temperature from TIRS band 10"),
    Example("nid", "nid_detect", {"path": "sample://nid/jsonlite_MD5.txt"},
            "natural identifiers (MD5 digests) in a real R package manifest"),
    Example("nid", "nid_generate", {"identifier": "0x0D8775F648430679A709E98d2b0Cb6250d2887EF", "n": 4},
            "same-format stand-ins (GIDs) for an Ethereum address, with valid EIP-55 checksums"),
    Example("longctx", "longctx_chunk", {"path": "sample://longctx/alice.txt", "chunk_tokens": 2000},
            "token-aware chunks of a whole book, covering every character"),
    Example("longctx", "longctx_answer",
            {"path": "sample://longctx/alice_chapter1.txt", "task": "What did the Rabbit take out of its "
             "waistcoat-pocket?", "chunk_tokens": 1000},
            "chunked QA over a chapter: workers read 1,000-token chunks, a manager answers (a real model: the "
            "embedded Qwen2.5-Coder 1.5B unless an endpoint is configured; about two minutes on two cores)",
            answer=lambda r: f"{r['answer']} ({r['model']})", expected="watch"),
    Example("dti", "dti_score", {"path": "sample://dti/bindingdb_pairs_test.csv"},
            "drug-target interaction scores for 49 BindingDB pairs with the shipped model",
            answer=lambda r: f"{r['scored']} of 49 pairs scored", expected="49 of 49"),
]
