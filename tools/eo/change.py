"""The EO tools comparing dates: change maps, burn severity (dNBR) and per-pixel trends."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from tools.eo.arguments import CogArg, QuicklookArg, draw_quicklook, geo, load_scene, np, st, stats_model, tr
from tools.eo.results import BurnResult, ChangeResult, TrendResult
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings


def _nbr_raster(path: str, progress: Progress | None) -> Path:
    """An NBR raster: the file itself, or computed when `path` is a scene (folder or metadata file)."""
    from tools.eo.products import index_product
    from tools.eo.scenes import RASTER_SUFFIXES

    p = resolve_input(path)
    if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES:
        return p
    prod, _ = index_product(load_scene(path), "NBR", None, progress)
    return prod.path


def eo_burn_severity(
    pre: Annotated[str, Field(description="Pre-fire NBR GeoTIFF or scene.")],
    post: Annotated[str, Field(description="Post-fire NBR GeoTIFF or scene.")],
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> BurnResult:
    """Burn severity from dNBR = NBR_pre - NBR_post in the USGS FIREMON classes.

    Returns the dNBR and class GeoTIFFs and each class's area (m2).
    """
    from tools.eo.rasters import Reader, RunningStats, Writer, block_windows, close_all, common_grid, pixel_area_rows

    a, b = _nbr_raster(pre, progress), _nbr_raster(post, progress)
    grid = common_grid([a, b])
    readers = {"pre": Reader(a, grid), "post": Reader(b, grid)}
    areas = {label: 0.0 for *_, label in geo.DNBR_CLASSES}
    stats = RunningStats()
    w1 = Writer("dNBR", grid, descriptions=["dNBR = NBR_pre - NBR_post"])
    w2 = Writer("burn-severity", grid, dtype="uint8", nodata=0, descriptions=["FIREMON class 1-7"])
    try:
        wins = block_windows(grid)
        for i, w in enumerate(wins, start=1):
            d = readers["pre"].read(w) - readers["post"].read(w)
            cls = geo.dnbr_class(d)
            stats.update(d)
            rows = pixel_area_rows(grid, int(w.row_off), int(w.height))
            for _lo, _hi, code, label in geo.DNBR_CLASSES:
                areas[label] += float(((cls == code).sum(axis=1) * rows).sum())
            w1.write(d, w)
            w2.write(cls, w)
            report(progress, i, len(wins), "dNBR")
    except BaseException:
        w1.discard()
        w2.discard()
        raise
    finally:
        close_all(readers)
    if stats.count == 0:
        w1.discard()
        w2.discard()
        raise InvalidInput("The pre- and post-fire rasters share no valid pixel.", hint="Check that they overlap.")
    p1, p2 = w1.close(), w2.close()
    return BurnResult(output=str(p1), classes_output=str(p2),
                      quicklook=draw_quicklook(p1, quicklook, "RdYlGn_r", "dNBR"),
                      stats=stats_model(stats), class_areas_m2=areas)


def eo_change(
    before: Annotated[str, Field(description="Raster of the earlier date, e.g. NDVI.")],
    after: Annotated[str, Field(description="Raster of the later date, same CRS.")],
    method: Annotated[Literal["difference", "relative", "ratio"], Field(
        description="after - before, (after - before)/|before|, or after/before."),
    ] = "difference",
    threshold: Annotated[float | None, Field(description="Report the areas where change > threshold and < "
                         "-threshold (ratio: 1 +/- threshold).")] = None,
    resampling: Annotated[Literal["nearest", "bilinear", "cubic", "average"], Field(
        description="Onto the finer grid.")] = "bilinear",
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> ChangeResult:
    """Change map between two dates' rasters (same CRS; the finer grid is used).

    Returns the GeoTIFF, statistics and, with a threshold, the increase and decrease areas.
    """
    from tools.eo.products import run_raster
    from tools.eo.rasters import Reader, close_all, common_grid, grid_of, pixel_area_rows, resolve_raster

    pa, pb = resolve_raster(before), resolve_raster(after)
    grid = common_grid([pa, pb], [f"before ({pa.name})", f"after ({pb.name})"])
    resampled = not (grid_of(pa).same_as(grid) and grid_of(pb).same_as(grid))

    def change(a: dict[str, np.ndarray]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            if method == "difference":
                out = a["b"] - a["a"]
            elif method == "relative":
                out = (a["b"] - a["a"]) / np.abs(a["a"])
            else:
                out = a["b"] / a["a"]
        out[~np.isfinite(out)] = np.nan
        return out

    readers = {"a": Reader(pa, grid, resampling=resampling), "b": Reader(pb, grid, resampling=resampling)}
    path, stats = run_raster(readers,
                             grid, change, f"change-{method}", progress, cog=cog)
    inc = dec = None
    if threshold is not None:
        hi, lo = (1 + threshold, 1 - threshold) if method == "ratio" else (threshold, -threshold)
        r = {"c": Reader(path, grid_of(path))}
        inc = dec = 0.0
        try:
            from tools.eo.rasters import iter_blocks

            for w, a in iter_blocks(r, grid, progress, "change areas"):
                rows = pixel_area_rows(grid, int(w.row_off), int(w.height))
                with np.errstate(invalid="ignore"):
                    inc += float(((a["c"] > hi).sum(axis=1) * rows).sum())
                    dec += float(((a["c"] < lo).sum(axis=1) * rows).sum())
        finally:
            close_all(r)
    return ChangeResult(output=str(path), quicklook=draw_quicklook(path, quicklook, "RdBu", f"change ({method})"),
                        method=method, stats=stats_model(stats), resampled=resampled, increase_area_m2=inc,
                        decrease_area_m2=dec, threshold=threshold)


def eo_trend(
    rasters: Annotated[list[str], Field(description="One raster per date, same CRS.")],
    dates: Annotated[list[str], Field(description="ISO dates ('2020-07-01') or decimal years.")],
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05,
    region: Annotated[str | dict[str, Any] | None, Field(
        description="GeoJSON polygon(s) for the area mean; default: the whole raster.")] = None,
    progress: Progress | None = None,
) -> TrendResult:
    """Trend per pixel and of the area mean over dated rasters: OLS and Sen's slope, Mann-Kendall.

    A 5-band GeoTIFF (per year), the mean series and its trend. Bounded by max_dates.
    """
    from tools.eo.rasters import Reader, RunningStats, Writer, block_windows, close_all, common_grid, resolve_raster

    limit = get_settings().eo.max_dates
    if len(rasters) > limit:
        raise LimitExceeded("The number of dates", len(rasters), limit, "RESEARCH_MCP_EO__MAX_DATES")
    if len(rasters) != len(dates):
        raise InvalidInput(f"{len(rasters)} rasters but {len(dates)} dates.", hint="Give one date per raster.")
    if len(rasters) < 3:
        raise InvalidInput("A trend needs at least 3 dates.", hint="Give 3 or more rasters.")
    t = tr.decimal_years(dates)
    order = np.argsort(t)
    paths = [resolve_raster(rasters[i]) for i in order]
    ts = t[order]
    grid = common_grid(paths)
    geoms = st.project_features(st.load_geojson(region), grid) if region is not None else None
    readers = {str(i): Reader(p, grid) for i, p in enumerate(paths)}
    sums = np.zeros(len(paths))
    cnts = np.zeros(len(paths), dtype=np.int64)
    names = ["sen_slope", "ols_slope", "mk_z", "mk_p", "mk_s"]
    writer = Writer("trend", grid, count=5, descriptions=names, units="per year")
    sig = RunningStats()
    n_sig = 0
    try:
        wins = block_windows(grid)
        for k, w in enumerate(wins, start=1):
            stack = np.stack([readers[str(i)].read(w) for i in range(len(paths))], axis=-1)
            shape = stack.shape[:2]
            y = stack.reshape(-1, len(paths))
            ok = np.isfinite(y)
            if geoms is not None:
                ok &= st.region_mask(geoms, grid, w).reshape(-1, 1)
            sums += np.where(ok, y, 0.0).sum(axis=0)
            cnts += ok.sum(axis=0)
            s, _var, z, p = tr.mann_kendall(y)
            outs = [tr.sen_slope(ts, y), tr.ols_slope(ts, y), z, p, s]
            for j, o in enumerate(outs, start=1):
                writer.write(o.reshape(shape), w, band=j)
            sig.update(p)
            n_sig += int((p < alpha).sum())
            report(progress, k, len(wins), "trend")
    except BaseException:
        writer.discard()
        raise
    finally:
        close_all(readers)
    if sig.count == 0:
        writer.discard()
        raise InvalidInput("No pixel has 3 or more valid dates.", hint="Check that the rasters overlap.")
    path = writer.close()
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnts > 0, sums / np.maximum(cnts, 1), np.nan)
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return TrendResult(output=str(path), dates=[float(x) for x in t],
                       area_mean=[None if not math.isfinite(means[back[i]]) else float(means[back[i]])
                                  for i in range(len(t))],
                       area_trend=tr.series_trend(ts, means), significant_fraction=n_sig / sig.count, alpha=alpha)


