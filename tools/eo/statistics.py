"""Masked raster statistics computed in blocks: moments, exact percentiles, histograms, threshold areas,
zonal statistics by polygon or by zone raster."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tools.eo.masks import threshold
from tools.eo.rasters import Grid, Reader, RunningStats, block_windows, pixel_area_rows
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings

_BINS = 65536
_COLLECT_MAX = 20_000_000


def _valid(block: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    ok = np.isfinite(block)
    if mask is not None:
        ok &= ~mask
    return ok


def _blocks(reader: Reader, grid: Grid, mask_reader: Reader | None, progress: Progress | None, step: str,
            passes: tuple[int, int]):
    wins = block_windows(grid)
    total = len(wins) * passes[1]
    for i, w in enumerate(wins):
        v = reader.read(w)
        m = None
        if mask_reader is not None:
            mv = mask_reader.read(w)
            m = np.isfinite(mv) & (mv != 0)  # excluded where the exclusion raster is non-zero
        yield w, v, m
        report(progress, passes[0] * len(wins) + i + 1, total, step)


def moments(reader: Reader, grid: Grid, mask_reader: Reader | None, progress: Progress | None,
            passes: tuple[int, int] = (0, 1)) -> RunningStats:
    st = RunningStats()
    for _, v, m in _blocks(reader, grid, mask_reader, progress, "moments", passes):
        if m is not None:
            v = np.where(m, np.nan, v)
        st.update(v)
    return st


TRANSFORMS = ("none", "abs")


class TransformedReader:
    """A reader whose blocks pass through `transform` ('none' or 'abs'): statistics of |change| and the like."""

    def __init__(self, reader: Reader, transform: str) -> None:
        if transform not in TRANSFORMS:
            raise InvalidInput(f"Unknown transform {transform!r}.", hint=f"Use one of {', '.join(TRANSFORMS)}.")
        self.reader = reader
        self.transform = transform
        self.dataset = reader.dataset

    def read(self, window: Any) -> np.ndarray:
        v = self.reader.read(window)
        return np.abs(v) if self.transform == "abs" else v

    def close(self) -> None:
        self.reader.close()


def signed_moments(reader: Reader, grid: Grid, mask_reader: Reader | None, progress: Progress | None,
                   passes: tuple[int, int] = (0, 1), transform: str = "none"
                   ) -> tuple[RunningStats, RunningStats, RunningStats]:
    """In one pass: the statistics of the transformed values, and of the positive and negative raw values."""
    whole, pos, neg = RunningStats(), RunningStats(), RunningStats()
    for _, v, m in _blocks(reader, grid, mask_reader, progress, "moments", passes):
        if m is not None:
            v = np.where(m, np.nan, v)
        whole.update(np.abs(v) if transform == "abs" else v)
        with np.errstate(invalid="ignore"):
            pos.update(np.where(v > 0, v, np.nan))
            neg.update(np.where(v < 0, v, np.nan))
    return whole, pos, neg


def exact_percentiles(reader: Reader, grid: Grid, mask_reader: Reader | None, st: RunningStats, qs: list[float],
                      progress: Progress | None, passes: tuple[int, int]) -> tuple[dict[str, float], bool]:
    """Percentiles equal to numpy.percentile(values, q) (linear), with two bounded passes: a 65536-bin
    histogram locates each rank's bin, then only the values of those bins are gathered and sorted."""
    n = st.count
    if n == 0 or not qs:
        return {}, True
    for q in qs:
        if not 0 <= q <= 100:
            raise InvalidInput(f"Percentile {q} is outside 0-100.", hint="Give percentiles between 0 and 100.")
    lo, hi = st.min, st.max
    if hi == lo:
        return {f"p{q:g}": lo for q in qs}, True
    counts = np.zeros(_BINS, dtype=np.int64)
    scale = _BINS / (hi - lo)
    for _, v, m in _blocks(reader, grid, mask_reader, progress, "percentile histogram", passes):
        x = v[_valid(v, m)]
        idx = np.minimum(((x - lo) * scale).astype(np.int64), _BINS - 1)
        counts += np.bincount(idx, minlength=_BINS)
    cum = np.cumsum(counts)
    ranks: set[int] = set()
    for q in qs:
        pos = q / 100.0 * (n - 1)
        ranks.update({math.floor(pos), min(math.floor(pos) + 1, n - 1)})
    bin_of = {r: int(np.searchsorted(cum, r, side="right")) for r in ranks}
    need = sorted(set(bin_of.values()))
    if counts[need].sum() > _COLLECT_MAX:
        values = {r: lo + (bin_of[r] + 0.5) / scale for r in ranks}
        exact = False
    else:
        gathered: dict[int, list[np.ndarray]] = {b: [] for b in need}
        for _, v, m in _blocks(reader, grid, mask_reader, progress, "percentile values", (passes[0] + 1, passes[1])):
            x = v[_valid(v, m)]
            idx = np.minimum(((x - lo) * scale).astype(np.int64), _BINS - 1)
            for b in need:
                sel = x[idx == b]
                if sel.size:
                    gathered[b].append(sel)
        sorted_bins = {b: np.sort(np.concatenate(gathered[b])) for b in need}
        values = {}
        for r in ranks:
            b = bin_of[r]
            before = int(cum[b - 1]) if b > 0 else 0
            values[r] = float(sorted_bins[b][r - before])
        exact = True
    out = {}
    for q in qs:
        pos = q / 100.0 * (n - 1)
        k = math.floor(pos)
        frac = pos - k
        out[f"p{q:g}"] = values[k] + (values[min(k + 1, n - 1)] - values[k]) * frac
    return out, exact


def histogram(reader: Reader, grid: Grid, mask_reader: Reader | None, bins: int, lo: float, hi: float,
              progress: Progress | None, passes: tuple[int, int]) -> tuple[list[int], list[float]]:
    edges = np.linspace(lo, hi, bins + 1)
    counts = np.zeros(bins, dtype=np.int64)
    for _, v, m in _blocks(reader, grid, mask_reader, progress, "histogram", passes):
        counts += np.histogram(v[_valid(v, m)], bins=edges)[0]
    return counts.tolist(), edges.tolist()


@dataclass
class Zone:
    """Running sums of one zone."""

    key: str
    properties: dict[str, Any] = field(default_factory=dict)
    stats: RunningStats = field(default_factory=RunningStats)
    area_m2: float = 0.0
    pixels: int = 0

    def add(self, values: np.ndarray, inside: np.ndarray, row_area: np.ndarray) -> None:
        self.stats.update(values[inside])
        self.pixels += int(inside.sum())
        ok = inside & np.isfinite(values)
        self.area_m2 += float((ok.sum(axis=1) * row_area).sum())


def load_geojson(zones: str | dict[str, Any]) -> list[dict[str, Any]]:
    """Features of a GeoJSON given inline (object or text) or as a path; geometries alone are allowed."""
    data: Any = zones
    if isinstance(zones, str):
        text = zones.strip()
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise InvalidInput(f"The GeoJSON text is not valid JSON: {exc}.") from exc
        else:
            p: Path = resolve_input(text)
            try:
                data = json.loads(p.read_text())
            except (OSError, ValueError) as exc:
                raise InvalidInput(f"{p.name} is not a GeoJSON file: {exc}.") from exc
    if not isinstance(data, dict) or "type" not in data:
        raise InvalidInput("The zones are not GeoJSON.", hint="Give a FeatureCollection, a Feature or a geometry.")
    if data["type"] == "FeatureCollection":
        feats = data.get("features") or []
    elif data["type"] == "Feature":
        feats = [data]
    else:
        feats = [{"type": "Feature", "geometry": data, "properties": {}}]
    crs = (data.get("crs") or {}).get("properties", {}).get("name")
    out = []
    for f in feats:
        g = f.get("geometry")
        if not g or g.get("type") not in ("Polygon", "MultiPolygon"):
            raise InvalidInput("Every zone must be a Polygon or MultiPolygon.", hint="Drop points and lines.")
        out.append({"geometry": g, "properties": f.get("properties") or {}, "crs": crs})
    if not out:
        raise InvalidInput("The GeoJSON holds no features.", hint="Give at least one polygon.")
    limit = get_settings().eo.max_zones
    if len(out) > limit:
        raise LimitExceeded("The number of zones", len(out), limit, "RESEARCH_MCP_EO__MAX_ZONES")
    return out


def _coords(geom: dict[str, Any]) -> np.ndarray:
    rings = geom["coordinates"] if geom["type"] == "Polygon" else [r for poly in geom["coordinates"] for r in poly]
    return np.asarray([pt[:2] for ring in rings for pt in ring], dtype=np.float64)


def project_features(features: list[dict[str, Any]], grid: Grid) -> list[dict[str, Any]]:
    """The features' geometries in the raster's CRS (GeoJSON is EPSG:4326 unless it names a CRS)."""
    from rasterio.warp import transform_geom

    out = []
    for i, f in enumerate(features):
        src_crs = f["crs"] or "EPSG:4326"
        try:
            out.append(transform_geom(src_crs, grid.crs, f["geometry"]) if grid.crs is not None else f["geometry"])
        except Exception as exc:
            raise InvalidInput(f"Zone {i} cannot be transformed from {src_crs} to the raster CRS: {exc}.",
                               hint="Check the polygon coordinates (GeoJSON is lon/lat, EPSG:4326).") from exc
    return out


def region_mask(geoms: list[dict[str, Any]], grid: Grid, window: Any) -> np.ndarray:
    """True inside any of `geoms` (pixel centres) for one window of the grid."""
    from rasterio.features import geometry_mask
    from rasterio.windows import transform as window_transform

    shape = (int(window.height), int(window.width))
    return geometry_mask(geoms, out_shape=shape, transform=window_transform(window, grid.transform), invert=True)


def polygon_zones(reader: Reader, grid: Grid, features: list[dict[str, Any]], progress: Progress | None,
                  all_touched: bool = False) -> list[Zone]:
    """Statistics of the raster inside each polygon (GeoJSON in EPSG:4326 unless it names a CRS)."""
    from rasterio.features import geometry_mask
    from rasterio.windows import from_bounds

    zones, geoms, wins = [], [], []
    full = block_windows(grid, max(grid.width, grid.height))[0]
    for i, (f, g) in enumerate(zip(features, project_features(features, grid), strict=True)):
        xy = _coords(g)
        w = from_bounds(xy[:, 0].min(), xy[:, 1].min(), xy[:, 0].max(), xy[:, 1].max(), grid.transform)
        w = w.round_offsets().round_lengths()
        try:
            w = w.intersection(full)
        except Exception:
            w = None
        key = str(f["properties"].get("id", f["properties"].get("name", i)))
        zones.append(Zone(key, {k: v for k, v in list(f["properties"].items())[:8]}))
        geoms.append(g)
        wins.append(w)
    for i, (z, g, w) in enumerate(zip(zones, geoms, wins, strict=True)):
        if w is not None and w.width > 0 and w.height > 0:
            for sub in _sub_windows(w):
                if progress is not None:
                    progress.check()
                values = reader.read(sub)
                t = reader.dataset.window_transform(sub)
                inside = geometry_mask([g], out_shape=values.shape, transform=t, invert=True,
                                       all_touched=all_touched)
                z.add(values, inside, pixel_area_rows(grid, int(sub.row_off), int(sub.height)))
        report(progress, i + 1, len(zones), "zones")
    return zones


def _sub_windows(w: Any) -> list[Any]:
    from rasterio.windows import Window

    b = get_settings().eo.block_size
    c0, r0 = int(w.col_off), int(w.row_off)
    return [Window(c, r, min(b, c0 + int(w.width) - c), min(b, r0 + int(w.height) - r))
            for r in range(r0, r0 + int(w.height), b) for c in range(c0, c0 + int(w.width), b)]


def raster_zones(reader: Reader, zone_reader: Reader, grid: Grid, progress: Progress | None) -> list[Zone]:
    """Statistics of the raster per integer value of a zone raster (0 and nodata are not zones)."""
    limit = get_settings().eo.max_zones
    zones: dict[int, Zone] = {}
    wins = block_windows(grid)
    for i, w in enumerate(wins, start=1):
        v = reader.read(w)
        z = zone_reader.read(w)
        area = pixel_area_rows(grid, int(w.row_off), int(w.height))
        ids = np.unique(z[np.isfinite(z) & (z != 0)])
        for zid in ids:
            key = int(zid)
            if key not in zones:
                if len(zones) >= limit:
                    raise LimitExceeded("The number of zones", len(zones) + 1, limit, "RESEARCH_MCP_EO__MAX_ZONES")
                zones[key] = Zone(str(key))
            zones[key].add(v, z == zid, area)
        report(progress, i, len(wins), "zones")
    return [zones[k] for k in sorted(zones)]


def threshold_areas(reader: Reader, grid: Grid, rules: list[tuple[str, float]], mask_reader: Reader | None,
                    progress: Progress | None) -> tuple[list[tuple[int, float]], int, float, int, float]:
    """Per rule (op, value): (pixels, m2) meeting it; plus valid pixels/area and total pixels/area."""
    hits = [[0, 0.0] for _ in rules]
    valid_px, valid_area, total_px, total_area = 0, 0.0, 0, 0.0
    for w, v, m in _blocks(reader, grid, mask_reader, progress, "areas", (0, 1)):
        area = pixel_area_rows(grid, int(w.row_off), int(w.height))
        ok = _valid(v, m)
        total_px += v.size
        total_area += float(area.sum() * v.shape[1])
        valid_px += int(ok.sum())
        valid_area += float((ok.sum(axis=1) * area).sum())
        vv = np.where(ok, v, np.nan)
        for h, (op, value) in zip(hits, rules, strict=True):
            t = threshold(vv, op, value)
            h[0] += int(t.sum())
            h[1] += float((t.sum(axis=1) * area).sum())
    return [(int(a), float(b)) for a, b in hits], valid_px, valid_area, total_px, total_area
