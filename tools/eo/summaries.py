"""The EO tools summarising rasters: statistics, thresholded areas, zonal statistics, quicklooks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tools.eo.arguments import RasterArg, crs_name, st, stats_model
from tools.eo.results import (
    AreaResult,
    AreaRow,
    QuicklookResult,
    SignedPart,
    StatisticsResult,
    ZonalResult,
    ZoneRow,
)
from tools.errors import InvalidInput, LimitExceeded
from tools.progress import Progress
from tools.settings import get_settings


def _mask_reader(mask: str | None, grid: Any) -> Any:
    from tools.eo.rasters import Reader, resolve_raster

    if mask is None:
        return None
    p = resolve_raster(mask)
    r = Reader(p, grid, resampling="nearest")
    return r


def _single(raster: str, band: int = 1) -> tuple[Any, Any, Path]:
    from tools.eo.rasters import Reader, check_size, grid_of, resolve_raster

    p = resolve_raster(raster)
    grid = grid_of(p)
    check_size(grid)
    return Reader(p, grid, band=band), grid, p


ExcludeArg = Annotated[str | None, Field(description="Leave out the non-zero pixels of this raster (e.g. "
                                         "eo_cloud_mask's).")]


def eo_statistics(
    raster: RasterArg,
    band: Annotated[int, Field(ge=1)] = 1,
    percentiles: Annotated[list[float] | None, Field(description="0-100, exact; default: 2, 5, 25, 50, 75, 95, "
                                                     "98.")] = None,
    bins: Annotated[int, Field(ge=1)] = 20,
    value_range: Annotated[list[float] | None, Field(description="Histogram [low, high]; default: min-max.")] = None,
    exclude: ExcludeArg = None,
    transform: Annotated[Literal["none", "abs"], Field(description="abs: of absolute values, e.g. |change|.")]
    = "none",
    progress: Progress | None = None,
) -> StatisticsResult:
    """Statistics of a raster band's valid pixels: count, min, max, mean, std, percentiles, histogram.

    Also of its positive and negative parts (a change raster's increases and decreases). Bounded by max_bins.
    """
    limit = get_settings().eo.max_bins
    if bins > limit:
        raise LimitExceeded("The number of histogram bins", bins, limit, "RESEARCH_MCP_EO__MAX_BINS")
    raw, grid, p = _single(raster, band)
    reader = st.TransformedReader(raw, transform)
    m = _mask_reader(exclude, grid)
    try:
        mom, pos, neg = st.signed_moments(raw, grid, m, progress, (0, 4), transform)
        if mom.count == 0:
            raise InvalidInput(f"{p.name} band {band} holds only nodata pixels.",
                               hint="Check the raster (or the exclusion mask).")
        qs = [2, 5, 25, 50, 75, 95, 98] if percentiles is None else percentiles
        if len(qs) > 101:
            raise InvalidInput(f"{len(qs)} percentiles were asked for; at most 101 are returned.",
                               hint="Ask for fewer percentiles.")
        pct, exact = st.exact_percentiles(reader, grid, m, mom, qs, progress, (1, 4))
        if value_range is not None and (len(value_range) != 2 or not value_range[1] > value_range[0]):
            raise InvalidInput("value_range must be [low, high] with high > low.", hint="e.g. [-1, 1].")
        lo, hi = value_range if value_range is not None else (mom.min, mom.max if mom.max > mom.min else mom.min + 1)
        counts, edges = st.histogram(reader, grid, m, bins, lo, hi, progress, (3, 4))
    finally:
        reader.close()
        if m is not None:
            m.close()
    def part(r: Any) -> SignedPart:
        ok = r.count > 0
        return SignedPart(pixels=r.count, fraction_of_valid=r.count / mom.count, sum=r.mean * r.count if ok else 0.0,
                          mean=r.mean if ok else None, std=r.std if ok else None, min=r.min if ok else None,
                          max=r.max if ok else None)

    return StatisticsResult(raster=p.name, band=band, transform=transform, stats=stats_model(mom), percentiles=pct,
                            percentiles_exact=exact, histogram_counts=counts, histogram_edges=edges,
                            positive=part(pos), negative=part(neg), zero_pixels=mom.count - pos.count - neg.count)


class AreaRule(BaseModel):
    op: Literal[">", ">=", "<", "<=", "==", "!="]
    value: float


def eo_area(
    raster: RasterArg,
    rules: Annotated[list[AreaRule], Field(description="e.g. [{'op': '>', 'value': 0.3}].")],
    band: Annotated[int, Field(ge=1)] = 1,
    exclude: ExcludeArg = None,
    progress: Progress | None = None,
) -> AreaResult:
    """Area meeting each threshold rule (m2, km2, % of valid and of total area).

    E.g. water (MNDWI > 0), vegetation (NDVI > 0.3), heat (LST > 310).
    """
    if not rules:
        raise InvalidInput("No rule given.", hint="e.g. rules=[{'op': '>', 'value': 0.3}].")
    reader, grid, p = _single(raster, band)
    m = _mask_reader(exclude, grid)
    try:
        hits, vpx, varea, _tpx, tarea = st.threshold_areas(reader, grid, [(r.op, r.value) for r in rules], m,
                                                           progress)
    finally:
        reader.close()
        if m is not None:
            m.close()
    if vpx == 0:
        raise InvalidInput(f"{p.name} holds only nodata pixels.", hint="Check the raster.")
    rows = [AreaRow(rule=f"value {r.op} {r.value:g}", pixels=n, area_m2=a, area_km2=a / 1e6,
                    percent_of_valid=100.0 * a / varea if varea else None, percent_of_total=100.0 * a / tarea)
            for r, (n, a) in zip(rules, hits, strict=True)]
    return AreaResult(raster=p.name, rows=rows, valid_area_m2=varea, total_area_m2=tarea, crs=crs_name(grid))


def eo_zonal_statistics(
    raster: RasterArg,
    zones: Annotated[str | dict[str, Any] | None, Field(description="GeoJSON polygons (object, text or path), "
                     "EPSG:4326 unless named; names from properties.id/name.")] = None,
    zone_raster: Annotated[str | None, Field(description="Or an integer raster of zone ids (0: none), same "
                           "CRS.")] = None,
    band: Annotated[int, Field(ge=1)] = 1,
    all_touched: Annotated[bool, Field(description="Count every pixel a polygon touches.")] = False,
    progress: Progress | None = None,
) -> ZonalResult:
    """Statistics of a raster per zone: GeoJSON polygons, or the values of a zone raster.

    Per zone: pixels, valid pixels, mean, std, min, max, valid area (m2). Bounded by max_zones.
    """
    from tools.eo.rasters import Reader, resolve_raster

    if (zones is None) == (zone_raster is None):
        raise InvalidInput("Give exactly one of zones (GeoJSON) and zone_raster.",
                           hint="Pass polygons or a zone raster.")
    reader, grid, p = _single(raster, band)
    try:
        if zones is not None:
            result = st.polygon_zones(reader, grid, st.load_geojson(zones), progress, all_touched)
        else:
            zr = Reader(resolve_raster(zone_raster), grid, resampling="nearest")
            try:
                result = st.raster_zones(reader, zr, grid, progress)
            finally:
                zr.close()
    finally:
        reader.close()

    def clean(v: Any) -> Any:
        return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)

    rows = []
    for z in result:
        s = z.stats.summary()
        rows.append(ZoneRow(zone=z.key, properties={k: clean(v) for k, v in z.properties.items()}, pixels=z.pixels,
                            valid_pixels=s["valid_pixels"], mean=s["mean"], std=s["std"], min=s["min"], max=s["max"],
                            valid_area_m2=z.area_m2))
    return ZonalResult(raster=p.name, zones=rows)



def eo_quicklook(
    raster: RasterArg,
    band: Annotated[int, Field(ge=1)] = 1,
    cmap: Annotated[str, Field(description="matplotlib colormap.")] = "viridis",
    vmin: Annotated[float | None, Field(description="Default: 2nd percentile.")] = None,
    vmax: Annotated[float | None, Field(description="Default: 98th percentile.")] = None,
    title: Annotated[str | None, Field(description="Default: the band description.")] = None,
) -> QuicklookResult:
    """Draw a PNG quicklook of a raster band with a colorbar (decimated to at most 1024 px on a side)."""
    from tools.eo.quicklook import render
    from tools.eo.rasters import resolve_raster

    p = resolve_raster(raster)
    return QuicklookResult(png=str(render(p, title=title, cmap=cmap, vmin=vmin, vmax=vmax, band=band)))
