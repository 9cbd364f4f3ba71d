"""A spectral-index time series over many STAC items, computed window by window on Dask, with per-pixel trends.

No process holds the stack: each task reads one window of every item (`scene_from_stac_item`), evaluates
the index there (calibrated reflectance, QA classes masked to NaN when asked), and returns the window's
per-date sums and its per-pixel Mann-Kendall / Sen's slope / least-squares trend (`tools.eo.trends`).
The caller merges the per-date sums in window order into the series and writes the trend bands as one
GeoTIFF, window by window.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field

from tools.atomic import atomic_output
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import output_path, resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings

TREND_BANDS = ("sen_slope", "mk_z", "mk_p", "ols_slope", "valid_dates")
MAX_ITEMS = 2000


@dataclass(frozen=True)
class WindowTask:
    items: tuple[str, ...]  # STAC item paths, in date order
    times: tuple[float, ...]  # decimal years
    index: str
    constants: tuple[tuple[str, float], ...]
    mask_classes: tuple[str, ...]
    window: tuple[int, int, int, int]  # col, row, width, height


@dataclass(frozen=True)
class WindowResult:
    count: np.ndarray  # valid pixels per date
    total: np.ndarray  # sum of the index per date
    total_sq: np.ndarray
    trends: np.ndarray  # (len(TREND_BANDS), height, width) float32


@functools.lru_cache(maxsize=256)
def _inputs(item: str, index: str, constants: tuple[tuple[str, float], ...], mask_classes: tuple[str, ...]):
    """The readers of one item's index bands and the index plan, opened once per process."""
    from tools.eo import indices
    from tools.eo.products import scene_inputs, symbol_bands
    from tools.eo.stac import scene_from_stac_item

    scene = scene_from_stac_item(item)
    name = indices.resolve_name(index)
    available = scene.by_symbol()
    plan = indices.plan(name, lambda s: s in available, scene.platform, dict(constants),
                        lambda s: scene.symbol_band(s, name))
    ins = scene_inputs(scene, symbol_bands(scene, plan.bands, name), mask_classes=list(mask_classes) or None)
    return scene, plan, ins


def window_series(task: WindowTask) -> WindowResult:
    """The index of every item on one window, its per-date sums and its per-pixel trends."""
    from rasterio.windows import Window

    from tools.eo.trends import mann_kendall, ols_slope, sen_slope

    col, row, width, height = task.window
    w = Window(col, row, width, height)
    stack = np.empty((len(task.items), height * width), dtype=np.float64)
    for k, item in enumerate(task.items):
        _, plan, ins = _inputs(item, task.index, task.constants, task.mask_classes)
        values = np.asarray(plan.evaluate(ins.read(w)), dtype=np.float32).astype(np.float64).ravel()
        values[~np.isfinite(values)] = np.nan
        stack[k] = values
    ok = np.isfinite(stack)
    filled = np.where(ok, stack, 0.0)
    y = stack.T  # pixels x dates
    t = np.asarray(task.times)
    _, _, z, p = mann_kendall(y)
    trends = np.stack([sen_slope(t, y), z, p, ols_slope(t, y), ok.sum(axis=0).astype(np.float64)])
    return WindowResult(ok.sum(axis=1), filled.sum(axis=1), (filled * filled).sum(axis=1),
                        trends.reshape(len(TREND_BANDS), height, width).astype(np.float32))


# ------------------------------------------------------------------ the tool


class SeriesPoint(BaseModel):
    item: str = Field(description="STAC item file name.")
    datetime: str
    decimal_year: float
    mean: float | None = Field(description="Mean index over the valid pixels; null when none is valid.")
    std: float | None
    valid_pixels: int


class TimeSeriesResult(BaseModel):
    index: str
    items: int
    width: int
    height: int
    windows: int = Field(description="Windows computed (one Dask task each).")
    distributed: bool = Field(description="Whether the windows ran on a Dask cluster (else in this process).")
    series: list[SeriesPoint] = Field(description="The scene-mean index per date, in date order.")
    series_trend: dict[str, float | None] = Field(
        description="Trend of the mean series: ols_slope, ols_intercept, sen_slope, mk_s, mk_var_s, mk_z, mk_p.")
    series_csv: str = Field(description="CSV of the series.")
    trends_tif: str = Field(description="GeoTIFF, one band each: " + ", ".join(TREND_BANDS) + " (per year).")


def _items(paths: list[str]) -> list[Path]:
    from tools.eo.stac import is_stac_item

    out: list[Path] = []
    for given in paths:
        p = resolve_input(given)
        if p.is_dir():
            out += sorted(f for f in [*p.glob("*.json"), *p.glob("*/*.json")] if is_stac_item(f))
        else:
            out.append(p)
    if len(out) < 3:
        raise InvalidInput(f"A time series needs 3 or more STAC items; {len(out)} found.",
                           hint="Pass item JSON files, or folders holding them (directly or one level down).")
    if len(out) > MAX_ITEMS:
        raise InvalidInput(f"{len(out)} STAC items is over the {MAX_ITEMS} one call takes.",
                           hint="Split the series into several calls, e.g. by year.")
    return out


def eo_index_timeseries(
    items: Annotated[list[str], Field(description="STAC item JSON files or folders of them (one per date, same "
                                      "grid) in the roots.")],
    index: Annotated[str, Field(description="e.g. NDVI, NDWI, EVI.")] = "NDVI",
    constants: Annotated[dict[str, float] | None, Field(description="e.g. {'L': 0.5}.")] = None,
    mask_classes: Annotated[list[str] | None, Field(description="QA classes masked, e.g. ['cloud'].")] = None,
    window: Annotated[int, Field(ge=16, le=4096, description="Pixels per side of one task.")] = 512,
    progress: Progress | None = None,
) -> TimeSeriesResult:
    """A spectral-index time series over many STAC items, with per-pixel trends, on Dask.

    The mean series and trend, a CSV, and a GeoTIFF of per-pixel Sen's slope, Mann-Kendall Z and p.
    """
    from tools.eo.indices import resolve_name
    from tools.eo.rasters import Writer
    from tools.eo.trends import decimal_years, series_trend
    from tools.execution import map_partitions, will_distribute

    name = resolve_name(index)
    paths = _items(items)
    consts = tuple(sorted((constants or {}).items()))
    masks = tuple(mask_classes or ())
    scenes = [(p, _inputs(str(p), name, consts, masks)) for p in paths]
    dated = []
    for p, (scene, _, ins) in scenes:
        if not scene.acquired:
            raise InvalidInput(f"{p.name} has no acquisition date.", hint="Give items with a datetime property.")
        dated.append((scene.acquired, p, ins.grid))
    dated.sort(key=lambda d: d[0])
    grid = dated[0][2]
    for _, p, g in dated:
        if not g.same_as(grid):
            raise InvalidInput(f"{p.name} ({g.width} x {g.height}) is not on the grid of {dated[0][1].name} "
                               f"({grid.width} x {grid.height}).", hint="Give items of one tile, on one grid.")
    if grid.pixels * len(dated) > get_settings().eo.max_pixels * 50:
        raise LimitExceeded("Pixels x dates", grid.pixels * len(dated), get_settings().eo.max_pixels * 50,
                            "RESEARCH_MCP_EO__MAX_PIXELS")
    times = decimal_years([d[0] for d in dated])
    order = tuple(str(d[1]) for d in dated)
    wins = [(c, r, min(window, grid.width - c), min(window, grid.height - r))
            for r in range(0, grid.height, window) for c in range(0, grid.width, window)]
    tasks = (WindowTask(order, tuple(times.tolist()), name, consts, masks, w) for w in wins)
    n = len(dated)
    count, total, total_sq = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
    writer = Writer(f"eo_timeseries_{name}", grid, count=len(TREND_BANDS), descriptions=list(TREND_BANDS),
                    units="index per year")
    try:
        from rasterio.windows import Window

        for k, (w, res) in enumerate(zip(wins, map_partitions(window_series, tasks, progress=progress,
                                                              name="eo-timeseries"), strict=True)):
            count += res.count
            total += res.total
            total_sq += res.total_sq
            for b in range(len(TREND_BANDS)):
                writer.write(res.trends[b], Window(*w), band=b + 1)
            report(progress, k + 1, len(wins), "index and trends by window")
    except BaseException:
        writer.discard()
        raise
    tif = writer.close()
    mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    var = np.where(count > 0, total_sq / np.maximum(count, 1) - mean * mean, np.nan)
    series = [SeriesPoint(item=Path(d[1]).name, datetime=d[0], decimal_year=round(float(t), 6),
                          mean=None if not math.isfinite(m) else float(m),
                          std=None if not math.isfinite(v) else float(math.sqrt(max(v, 0.0))), valid_pixels=int(c))
              for d, t, m, v, c in zip(dated, times, mean, var, count, strict=True)]
    csv_path = output_path(f"eo_timeseries_{name}", ".csv")
    with atomic_output(csv_path) as tmp:
        lines = ["item,datetime,decimal_year,mean,std,valid_pixels"]
        lines += [f"{s.item},{s.datetime},{s.decimal_year},{'' if s.mean is None else repr(s.mean)},"
                  f"{'' if s.std is None else repr(s.std)},{s.valid_pixels}" for s in series]
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return TimeSeriesResult(
        index=name, items=n, width=grid.width, height=grid.height, windows=len(wins),
        distributed=will_distribute(len(wins)), series=series, series_trend=series_trend(times, mean),
        series_csv=str(csv_path), trends_tif=str(tif),
    )
