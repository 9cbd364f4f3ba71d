"""Quality masks: Landsat QA_PIXEL (Collection 2) and BQA (Collection 1) bits, Sentinel-2 SCL classes,
threshold masks, and their combinations. A mask block is boolean, True where the pixel is flagged."""

from __future__ import annotations

import numpy as np

from tools.errors import InvalidInput

# Landsat Collection-2 QA_PIXEL (LSDS-1619/1328): single bits and 2-bit confidences (3 = high).
QA_PIXEL_BITS = {"fill": 0, "dilated_cloud": 1, "cirrus": 2, "cloud": 3, "shadow": 4, "snow": 5, "clear": 6,
                 "water": 7}
QA_PIXEL_CONF = {"cloud_high_confidence": 8, "shadow_high_confidence": 10, "snow_high_confidence": 12,
                 "cirrus_high_confidence": 14}
# Landsat Collection-1 BQA (OLI): bit 0 fill, bit 4 cloud, 2-bit confidences at 5, 7, 9, 11.
BQA_BITS = {"fill": 0, "terrain_occlusion": 1, "cloud": 4}
BQA_CONF = {"cloud_high_confidence": 5, "shadow": 7, "snow": 9, "cirrus": 11}
# Sentinel-2 L2A scene classification (SCL) values.
SCL_CLASSES = {"fill": (0,), "saturated": (1,), "dark": (2,), "shadow": (3,), "vegetation": (4,), "bare": (5,),
               "water": (6,), "unclassified": (7,), "cloud_medium": (8,), "cloud_high": (9,), "cloud": (8, 9),
               "cirrus": (10,), "snow": (11,)}
DEFAULT_CLOUD_CLASSES = ("cloud", "shadow", "cirrus", "dilated_cloud")
OPS = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal, "==": np.equal,
       "!=": np.not_equal}


def qa_classes(kind: str) -> list[str]:
    """The class names a QA layer supports: 'qa_pixel', 'qa_bqa' or 'scl'."""
    if kind == "qa_pixel":
        return [*QA_PIXEL_BITS, *QA_PIXEL_CONF]
    if kind == "qa_bqa":
        return [*BQA_BITS, *BQA_CONF]
    if kind == "scl":
        return list(SCL_CLASSES)
    raise InvalidInput(f"{kind!r} is not a quality layer.", hint="Use qa_pixel, qa_bqa or scl.")


def check_classes(kind: str, classes: list[str]) -> list[str]:
    known = qa_classes(kind)
    out = []
    for c in classes:
        name = c.strip().lower()
        if name == "dilated_cloud" and kind in ("scl", "qa_bqa"):
            continue  # no such flag there: the cloud classes already cover it
        if name not in known:
            raise InvalidInput(f"{kind} has no class {c!r}.", hint=f"Known classes: {', '.join(known)}.")
        out.append(name)
    return out


def qa_mask(kind: str, qa: np.ndarray, classes: list[str]) -> dict[str, np.ndarray]:
    """One boolean block per class; `qa` is the raw integer layer (NaN-free)."""
    q = qa.astype(np.int64)
    out: dict[str, np.ndarray] = {}
    for c in classes:
        if kind == "qa_pixel":
            if c in QA_PIXEL_BITS:
                out[c] = (q >> QA_PIXEL_BITS[c]) & 1 == 1
            else:
                out[c] = (q >> QA_PIXEL_CONF[c]) & 3 == 3
        elif kind == "qa_bqa":
            if c in BQA_BITS:
                out[c] = (q >> BQA_BITS[c]) & 1 == 1
            else:
                out[c] = (q >> BQA_CONF[c]) & 3 == 3
        else:
            out[c] = np.isin(q, SCL_CLASSES[c])
    return out


def threshold(values: np.ndarray, op: str, value: float) -> np.ndarray:
    """True where `values op value`; NaN pixels are never flagged."""
    if op not in OPS:
        raise InvalidInput(f"Unknown comparison {op!r}.", hint=f"Use one of {', '.join(OPS)}.")
    with np.errstate(invalid="ignore"):
        return OPS[op](values, value) & np.isfinite(values)


def combine(parts: list[np.ndarray], how: str = "any") -> np.ndarray:
    """Union ('any') or intersection ('all') of boolean blocks."""
    if how not in ("any", "all"):
        raise InvalidInput(f"Unknown combination {how!r}.", hint="Use 'any' (union) or 'all' (intersection).")
    if not parts:
        raise InvalidInput("No mask to combine.", hint="Give QA classes or thresholds.")
    out = parts[0].copy()
    for p in parts[1:]:
        out = (out | p) if how == "any" else (out & p)
    return out
