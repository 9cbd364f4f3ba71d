"""Finding natural identifiers in text: one regex per type, overlaps resolved by type priority, deduplication."""

from __future__ import annotations

from dataclasses import dataclass

from tools.nid.formats import NID_TYPES, ambiguous_types, get_type


@dataclass(frozen=True)
class Detection:
    """One occurrence of an identifier: its type, value and character span in the text."""

    type: str
    value: str
    start: int
    end: int
    casing: str
    plausible: bool
    ambiguous_with: tuple[str, ...] = ()  # other types whose format the value matches exactly (md5 / uuid_hex)


def find_nids(text: str, types: list[str] | None = None, *, plausible_only: bool = False) -> list[Detection]:
    """Every identifier occurrence in `text`, in text order.

    Types are tried in the order of `NID_TYPES` (git commit ids before bare SHA-1 digests, longer digests
    before shorter ones); a span already claimed by an earlier type is not reported again.
    `plausible_only` drops values that cannot be random draws of their format (serialVersionUID = 1L).
    """
    names = list(NID_TYPES) if not types else [get_type(t).name for t in types]
    ordered = [n for n in NID_TYPES if n in names]
    taken: list[tuple[int, int]] = []
    found: list[Detection] = []
    for name in ordered:
        t = NID_TYPES[name]
        for m in t.pattern.finditer(text):
            s, e = m.span("id")
            if any(s < te and ts < e for ts, te in taken):
                continue
            value = m.group("id")
            ok = t.plausible(value)
            if plausible_only and not ok:
                continue
            taken.append((s, e))
            found.append(Detection(name, value, s, e, t.casing(value), ok, tuple(ambiguous_types(value, name))))
    found.sort(key=lambda d: d.start)
    return found


def dedupe(detections: list[Detection]) -> tuple[list[Detection], dict[tuple[str, str], int]]:
    """The first occurrence of each (type, value), and how often each occurred."""
    counts: dict[tuple[str, str], int] = {}
    first: list[Detection] = []
    for d in detections:
        key = (d.type, d.value)
        if key not in counts:
            first.append(d)
            counts[key] = 0
        counts[key] += 1
    return first, counts
