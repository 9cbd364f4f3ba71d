"""Quality masks: Landsat QA_PIXEL (Collection 2) and BQA (Collection 1) bits, Sentinel-2 SCL classes,
threshold masks, and their combinations. A mask block is boolean, True where the pixel is flagged.

Landsat Collection-2 QA_PIXEL (Landsat 8-9 OLI/TIRS C2 L2 Science Product Guide LSDS-1619, and the L1
guide LSDS-1328): bit 0 fill, 1 dilated cloud, 2 cirrus (high confidence), 3 cloud, 4 cloud shadow,
5 snow, 6 clear, 7 water; confidence pairs (0 none, 1 low, 2 medium, 3 high) for cloud in bits 8-9,
cloud shadow 10-11, snow/ice 12-13, cirrus 14-15 (medium is defined for cloud only). The guide sets the
clear bit whenever the cloud and dilated-cloud bits are unset, so a pixel can be "clear" and cloud shadow
or cirrus at once; the class `clear` here is the clear bit with none of fill, dilated cloud, cirrus,
cloud or cloud shadow set (clear-sky land, water or snow).

Landsat Collection-1 BQA (OLI): bit 0 designated fill, 1 terrain occlusion, 4 cloud, confidence pairs
for cloud 5-6, cloud shadow 7-8, snow/ice 9-10, cirrus 11-12; shadow, snow and cirrus mean high confidence.

Sentinel-2 L2A scene classification (SCL): 0 no data, 1 saturated or defective, 2 dark area pixels
(topographic cast shadow from baseline 04.00), 3 cloud shadow, 4 vegetation, 5 not vegetated, 6 water,
7 unclassified, 8 cloud medium probability, 9 cloud high probability, 10 thin cirrus, 11 snow or ice;
`clear` is 4, 5, 6 or 11.

Fill (QA fill bit, SCL 0, or the quality file's own nodata) is always masked when a QA mask is applied.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tools.errors import InvalidInput

Rule = Callable[[np.ndarray], np.ndarray]


def _bit(b: int) -> Rule:
    return lambda q: (q >> b) & 1 == 1


def _conf(b: int, value: int) -> Rule:
    return lambda q: (q >> b) & 3 == value


def _none_of(bits: tuple[int, ...], then: int) -> Rule:
    clear = 1 << then
    any_bad = sum(1 << b for b in bits)
    return lambda q: ((q & clear) != 0) & ((q & any_bad) == 0)


QA_PIXEL_BITS = {"fill": 0, "dilated_cloud": 1, "cirrus": 2, "cloud": 3, "shadow": 4, "snow": 5, "clear": 6,
                 "water": 7}
QA_PIXEL_CONF_BITS = {"cloud": 8, "shadow": 10, "snow": 12, "cirrus": 14}
QA_PIXEL: dict[str, Rule] = {
    **{name: _bit(b) for name, b in QA_PIXEL_BITS.items() if name != "clear"},
    "clear": _none_of((0, 1, 2, 3, 4), then=6),
    **{f"{name}_low_confidence": _conf(b, 1) for name, b in QA_PIXEL_CONF_BITS.items()},
    "cloud_medium_confidence": _conf(8, 2),
    **{f"{name}_high_confidence": _conf(b, 3) for name, b in QA_PIXEL_CONF_BITS.items()},
}
BQA: dict[str, Rule] = {"fill": _bit(0), "terrain_occlusion": _bit(1), "cloud": _bit(4),
                        "cloud_high_confidence": _conf(5, 3), "shadow": _conf(7, 3), "snow": _conf(9, 3),
                        "cirrus": _conf(11, 3)}
SCL_CLASSES = {"fill": (0,), "saturated": (1,), "dark": (2,), "shadow": (3,), "vegetation": (4,), "bare": (5,),
               "water": (6,), "unclassified": (7,), "cloud_medium": (8,), "cloud_high": (9,), "cloud": (8, 9),
               "cirrus": (10,), "snow": (11,), "clear": (4, 5, 6, 11)}
TABLES: dict[str, dict[str, Rule]] = {
    "qa_pixel": QA_PIXEL,
    "qa_bqa": BQA,
    "scl": {name: (lambda q, v=values: np.isin(q, v)) for name, values in SCL_CLASSES.items()},
}
DEFAULT_CLOUD_CLASSES = ("cloud", "shadow", "cirrus", "dilated_cloud")
OPS = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal, "==": np.equal,
       "!=": np.not_equal}


def qa_classes(kind: str) -> list[str]:
    """The class names a QA layer supports: 'qa_pixel', 'qa_bqa' or 'scl'."""
    if kind not in TABLES:
        raise InvalidInput(f"{kind!r} is not a quality layer.", hint="Use qa_pixel, qa_bqa or scl.")
    return list(TABLES[kind])


def check_classes(kind: str, classes: list[str]) -> list[str]:
    """The normalised class names, or InvalidInput naming the known ones; dilated_cloud is dropped where the
    layer has no such flag (SCL, BQA: their cloud classes already cover it)."""
    known = qa_classes(kind)
    out = []
    for c in classes:
        name = c.strip().lower()
        if name == "dilated_cloud" and kind in ("scl", "qa_bqa"):
            continue
        if name not in known:
            raise InvalidInput(f"{kind} has no class {c!r}.", hint=f"Known classes: {', '.join(known)}.")
        out.append(name)
    return out


def qa_mask(kind: str, qa: np.ndarray, classes: list[str]) -> dict[str, np.ndarray]:
    """One boolean block per class; `qa` is the raw integer layer (NaN-free)."""
    table = TABLES[kind]
    q = qa.astype(np.int64)
    return {c: table[c](q) for c in classes}


def fill_mask(kind: str, qa: np.ndarray) -> np.ndarray:
    """True where the quality layer says fill or holds no value: NaN (its nodata, or outside it) or the fill
    bit / SCL class 0. `qa` is the layer as read, NaN where nodata."""
    good = np.isfinite(qa)
    return ~good | qa_mask(kind, np.where(good, qa, 0), ["fill"])["fill"]


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
