"""Windowed raster input and output: grids, aligned readers, tiled/compressed writers, running statistics.

All pixel work goes block by block over a common grid, so memory stays bounded whatever the raster's
size; rasters on another grid of the same CRS are resampled on the fly (GDAL warped VRT).
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tools.atomic import atomic_output, partial_name
from tools.errors import InvalidInput, LimitExceeded
from tools.paths import output_path, resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings


@dataclass(frozen=True)
class Grid:
    crs: Any  # rasterio CRS or None
    transform: Any  # affine.Affine
    width: int
    height: int

    @property
    def res(self) -> tuple[float, float]:
        return abs(self.transform.a), abs(self.transform.e)

    @property
    def pixels(self) -> int:
        return self.width * self.height

    def same_as(self, other: Grid) -> bool:
        return (self.width, self.height) == (other.width, other.height) and self.transform.almost_equals(
            other.transform) and self.crs == other.crs


_CACHE_SET = False


def bound_gdal_cache() -> None:
    """Cap GDAL's block cache (default 5% of RAM) at the configured size, once per process."""
    global _CACHE_SET
    if not _CACHE_SET:
        from rasterio.env import set_gdal_config

        set_gdal_config("GDAL_CACHEMAX", get_settings().eo.gdal_cache_mb * 1024 * 1024)
        _CACHE_SET = True


def open_raster(path: Path | str) -> Any:
    """rasterio.open with a clear error for a file GDAL cannot read."""
    import rasterio
    from rasterio.errors import RasterioIOError

    bound_gdal_cache()

    p = Path(path)
    if p.is_dir():
        raise InvalidInput(f"{p} is a folder, not a raster file.", hint="Pass a GeoTIFF (or other GDAL raster) file.")
    try:
        return rasterio.open(p)
    except RasterioIOError as exc:
        raise InvalidInput(
            f"{p.name} is not a raster GDAL can read ({str(exc).splitlines()[0][:200]}).",
            hint="Pass a GeoTIFF, JPEG2000 or other GDAL-readable raster.",
        ) from exc


def grid_of(path: Path) -> Grid:
    with open_raster(path) as src:
        return Grid(src.crs, src.transform, src.width, src.height)


def check_size(grid: Grid) -> None:
    limit = get_settings().eo.max_pixels
    if grid.pixels > limit:
        raise LimitExceeded("The raster size (pixels)", grid.pixels, limit, "RESEARCH_MCP_EO__MAX_PIXELS")


def common_grid(paths: list[Path], names: list[str] | None = None) -> Grid:
    """The finest grid among `paths`; every raster must share its CRS."""
    grids = [grid_of(p) for p in paths]
    names = names or [p.name for p in paths]
    ref = min(range(len(grids)), key=lambda i: grids[i].res[0] * grids[i].res[1])
    for g, name in zip(grids, names, strict=True):
        if g.crs != grids[ref].crs:
            raise InvalidInput(
                f"{name} is in {g.crs} but {names[ref]} is in {grids[ref].crs}: the rasters' CRS differ.",
                hint="Reproject one of them onto the other's CRS first (e.g. gdalwarp -t_srs).",
            )
    check_size(grids[ref])
    return grids[ref]


def working_grid(paths: list[Path], names: list[str] | None = None,
                 resolution: str | float = "finest") -> Grid:
    """The grid to compute on: the finest of `paths` ('finest'), the coarsest ('coarsest'), or `resolution`
    metres over the finest grid's extent (a projected CRS in metres). Every raster must share one CRS."""
    finest = common_grid(paths, names)
    if resolution == "finest":
        return finest
    if resolution == "coarsest":
        grid = max((grid_of(p) for p in paths), key=lambda g: g.res[0] * g.res[1])
        check_size(grid)
        return grid
    try:
        res = float(resolution)
    except (TypeError, ValueError):
        res = math.nan
    if not math.isfinite(res) or res <= 0:
        raise InvalidInput(f"resolution={resolution!r} is neither 'finest', 'coarsest' nor a positive number of "
                           "metres.", hint="e.g. resolution='coarsest' or resolution=20.")
    crs = finest.crs
    if crs is None or crs.is_geographic or (crs.linear_units_factor or ("", 1.0))[1] != 1.0:
        raise InvalidInput(f"A resolution in metres needs a projected CRS in metres; the bands are in {crs}.",
                           hint="Use resolution='finest' or 'coarsest'.")
    from affine import Affine

    t = finest.transform
    width_m, height_m = finest.width * abs(t.a), finest.height * abs(t.e)
    grid = Grid(crs, Affine(res, 0.0, t.c, 0.0, -res, t.f), max(1, math.ceil(width_m / res - 1e-9)),
                max(1, math.ceil(height_m / res - 1e-9)))
    check_size(grid)
    return grid


def resolve_raster(path: str) -> Path:
    p = resolve_input(path)
    with open_raster(p):
        pass
    return p


def block_windows(grid: Grid, block: int | None = None) -> list[Any]:
    from rasterio.windows import Window

    b = block or get_settings().eo.block_size
    return [Window(c, r, min(b, grid.width - c), min(b, grid.height - r))
            for r in range(0, grid.height, b) for c in range(0, grid.width, b)]


class Reader:
    """One band of one raster, aligned to `grid`, read per window as float64 with NaN for nodata."""

    def __init__(self, path: Path, grid: Grid, band: int = 1, resampling: str = "bilinear",
                 convert: Callable[[np.ndarray, float | None], np.ndarray] | None = None) -> None:
        from rasterio.enums import Resampling
        from rasterio.vrt import WarpedVRT

        self.path = path
        self.src = open_raster(path)
        if band < 1 or band > self.src.count:
            self.src.close()
            raise InvalidInput(f"{path.name} has {self.src.count} band(s); band {band} does not exist.",
                               hint="Pass a band number from 1 to the band count.")
        self.band = band
        self.nodata = self.src.nodata
        self.convert = convert
        own = Grid(self.src.crs, self.src.transform, self.src.width, self.src.height)
        self.dataset = self.src
        if not own.same_as(grid):
            if own.crs != grid.crs:
                self.src.close()
                raise InvalidInput(f"{path.name} is in {own.crs}, not in the working grid's {grid.crs}.",
                                   hint="Reproject it onto the same CRS first (e.g. gdalwarp -t_srs).")
            nodata = self.nodata if self.nodata is not None else (0 if self.src.dtypes[0][0] in "iu" else math.nan)
            # Interpolated and averaged values stay fractional (an integer working type would round them).
            extra = {} if resampling == "nearest" else {"dtype": "float64"}
            self.dataset = WarpedVRT(self.src, crs=grid.crs, transform=grid.transform, width=grid.width,
                                     height=grid.height, resampling=Resampling[resampling], src_nodata=nodata,
                                     nodata=nodata, **extra)
            self.nodata = nodata
        self.dtype = np.dtype(self.src.dtypes[band - 1])

    def raw(self, window: Any) -> np.ndarray:
        return self.dataset.read(self.band, window=window)

    def read(self, window: Any) -> np.ndarray:
        return self.calibrate(self.raw(window))

    def calibrate(self, raw: np.ndarray) -> np.ndarray:
        """Values `raw` (a block, or any part of one, from `raw`) as float64 with NaN for nodata."""
        if self.convert is not None:
            return self.convert(raw, self.nodata)
        out = raw.astype(np.float64)
        if self.nodata is not None:
            out[raw == self.nodata if not math.isnan(self.nodata) else np.isnan(raw)] = np.nan
        return out

    def close(self) -> None:
        if self.dataset is not self.src:
            self.dataset.close()
        self.src.close()


class Writer:
    """A tiled, compressed GeoTIFF (a COG on request) on `grid`, written window by window."""

    def __init__(self, name: str, grid: Grid, count: int = 1, dtype: str = "float32",
                 nodata: float | None = None, descriptions: list[str] | None = None, cog: bool = False,
                 units: str | None = None) -> None:
        import rasterio

        bound_gdal_cache()
        self.final = output_path(name, ".tif")
        self.cog = cog
        # The tiles go to a hidden partial file; only close() puts a complete file under the final name.
        self._output = contextlib.ExitStack()
        self.path = partial_name(self.final) if cog else self._output.enter_context(atomic_output(self.final))
        if nodata is None and np.dtype(dtype).kind == "f":
            nodata = math.nan
        predictor = 3 if np.dtype(dtype).kind == "f" else 2
        tile = 256 if max(grid.width, grid.height) < 4096 else 512
        self.dataset = rasterio.open(
            self.path, "w", driver="GTiff", width=grid.width, height=grid.height, count=count, dtype=dtype,
            crs=grid.crs, transform=grid.transform, nodata=nodata, tiled=True, blockxsize=tile, blockysize=tile,
            compress="deflate", predictor=predictor, zlevel=1, bigtiff="IF_SAFER", num_threads="ALL_CPUS",
        )
        for i, d in enumerate(descriptions or [], start=1):
            self.dataset.set_band_description(i, d)
        if units:
            self.dataset.update_tags(units=units)
        self.dtype = dtype
        self.nodata = nodata
        self._failure: BaseException | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=2)
        self._spare: queue.Queue[np.ndarray] = queue.Queue()
        self._given: set[int] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="eo-writer", daemon=True)
        self._thread.start()

    def buffer(self, shape: tuple[int, int]) -> np.ndarray:
        """An uninitialised array of the output type to fill and pass to `give`: one the
        writer has finished with when its shape fits, else a new one."""
        try:
            spare = self._spare.get_nowait()
        except queue.Empty:
            spare = None
        if spare is not None and spare.shape == shape:
            return spare
        return np.empty(shape, self.dtype)

    def write(self, array: np.ndarray, window: Any, band: int = 1) -> None:
        """Queue one window; a background thread encodes and writes it while the next block is computed."""
        if np.dtype(self.dtype).kind != "f" and self.nodata is not None and array.dtype.kind == "f":
            array = np.where(np.isnan(array), self.nodata, array)
        self._raise_failure()
        self._queue.put((array.astype(self.dtype, copy=False), window, band))

    def give(self, array: np.ndarray, window: Any, band: int = 1) -> None:
        """`write`, giving the array up: `buffer` may hand it out again once it is written."""
        with self._lock:
            self._given.add(id(array))
        self.write(array, window, band)

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._failure is None:
                try:
                    self.dataset.write(item[0], item[2], window=item[1])
                except BaseException as exc:  # re-raised in the calling thread
                    self._failure = exc
            with self._lock:
                given = id(item[0]) in self._given
                self._given.discard(id(item[0]))
            if given and self._spare.qsize() < self._queue.maxsize + 2:
                self._spare.put(item[0])

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _finish(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def tag(self, **tags: str) -> None:
        self.dataset.update_tags(**tags)

    def close(self) -> Path:
        """Finish the file and give it its final name (the COG conversion included); return that name."""
        try:
            self._finish()
            self.dataset.close()
            self._raise_failure()
            if self.cog:
                from rasterio.shutil import copy as rio_copy

                pred = 3 if np.dtype(self.dtype).kind == "f" else 2
                with atomic_output(self.final) as tmp:
                    rio_copy(self.path, tmp, driver="COG", compress="DEFLATE", predictor=pred,
                             num_threads="ALL_CPUS", bigtiff="IF_SAFER")
                self.path.unlink()
        except BaseException:
            self.discard()
            raise
        self._output.close()
        return self.final

    def discard(self) -> None:
        """Drop the unfinished file: nothing is left under the final name or the partial one."""
        self._finish()
        if not self.dataset.closed:
            self.dataset.close()
        dropped = RuntimeError(f"{self.final.name} was discarded")
        self._output.__exit__(RuntimeError, dropped, None)  # atomic_output removes its partial file
        self.path.unlink(missing_ok=True)


_RUN = 1 << 14


class RunningStats:
    """Count, mean, variance (Chan et al. pairwise merge), min and max over NaN-masked blocks."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.total = 0

    @staticmethod
    def summarize(block: np.ndarray, all_finite: bool = False, scratch: np.ndarray | None = None,
                  bounds: tuple[float, float] | None = None) -> tuple[int, int, float, float, float, float]:
        """(size, n, mean, m2, min, max) of one block's finite values; merge it with `merge`. `scratch`: a
        1-D array of the block's dtype and at least its size, to work in instead of a new one. `bounds`: the
        block's (min, max) when the caller has them already; with `all_finite` they must be finite."""
        v = block.ravel()
        if v.dtype.kind != "f":
            v = v.astype(np.float64)  # integer data: centred on the float mean, without wrap-around
        if v.size == 0:
            return block.size, 0, 0.0, 0.0, math.inf, -math.inf
        lo, hi = bounds if bounds is not None else (np.minimum.reduce(v), np.maximum.reduce(v))
        if not all_finite and not (math.isfinite(lo) and math.isfinite(hi)):  # a NaN or an inf is in the block
            v = v[np.isfinite(v)]
            if v.size == 0:
                return block.size, 0, 0.0, 0.0, math.inf, -math.inf
            lo, hi = np.minimum.reduce(v), np.maximum.reduce(v)
        n = v.size
        m = float(v.sum(dtype=np.float64)) / n
        if scratch is not None and scratch.dtype == v.dtype and scratch.size >= n:
            d = np.subtract(v, v.dtype.type(m), out=scratch[:n])
        else:
            d = v - v.dtype.type(m)
        # Dot products of short runs summed in float64: a float32 dot over a million values drifts by ~1e-6.
        m2 = math.fsum(float(np.dot(d[i:i + _RUN], d[i:i + _RUN])) for i in range(0, n, _RUN))
        return block.size, n, m, m2, float(lo), float(hi)

    def merge(self, part: tuple[int, int, float, float, float, float]) -> None:
        size, n, m, m2, lo, hi = part
        self.total += size
        if n == 0:
            return
        delta = m - self.mean
        tot = self.count + n
        self.mean += delta * n / tot
        self.m2 += m2 + delta * delta * self.count * n / tot
        self.count = tot
        self.min = min(self.min, lo)
        self.max = max(self.max, hi)

    def update(self, block: np.ndarray) -> None:
        self.merge(self.summarize(block))

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count) if self.count else math.nan

    def summary(self) -> dict[str, float | int | None]:
        ok = self.count > 0
        return {
            "valid_pixels": self.count, "nodata_pixels": self.total - self.count,
            "min": self.min if ok else None, "max": self.max if ok else None,
            "mean": self.mean if ok else None, "std": self.std if ok else None,
        }


def run_blocks(readers: dict[str, Reader], grid: Grid, compute: Callable[[dict[str, np.ndarray]], np.ndarray],
               writer: Writer | None, progress: Progress | None, label: str,
               stats: RunningStats | None = None) -> RunningStats:
    """Read every window, compute, write, keep statistics; report progress (and honour cancel) per block."""
    stats = stats or RunningStats()
    wins = block_windows(grid)
    report(progress, 0, len(wins), label)
    try:
        for i, w in enumerate(wins, start=1):
            arrays = {k: r.read(w) for k, r in readers.items()}
            out = compute(arrays)
            stats.update(out)
            if writer is not None:
                writer.write(out, w)
            report(progress, i, len(wins), label)
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    return stats


def iter_blocks(readers: dict[str, Reader], grid: Grid, progress: Progress | None,
                label: str) -> Iterator[tuple[Any, dict[str, np.ndarray]]]:
    """(window, arrays) for every block, with progress and cancellation between blocks."""
    wins = block_windows(grid)
    report(progress, 0, len(wins), label)
    for i, w in enumerate(wins, start=1):
        yield w, {k: r.read(w) for k, r in readers.items()}
        report(progress, i, len(wins), label)


def close_all(readers: dict[str, Reader]) -> None:
    for r in readers.values():
        r.close()


def pixel_area_rows(grid: Grid, row0: int, rows: int) -> np.ndarray:
    """Area (m2) of one pixel in each of `rows` rows from `row0`: from the projected CRS's units, or on the
    sphere of equal area (R = 6371007.2 m) for a geographic CRS."""
    t = grid.transform
    if grid.crs is None:
        raise InvalidInput("The raster has no CRS, so pixel areas are unknown.",
                           hint="Assign the raster its CRS (e.g. gdal_edit.py -a_srs EPSG:32633).")
    if grid.crs.is_geographic:
        r = 6371007.2
        lat_top = t.f + t.e * (row0 + np.arange(rows))
        lat_bot = lat_top + t.e
        dlon = math.radians(abs(t.a))
        return r * r * dlon * np.abs(np.sin(np.radians(lat_top)) - np.sin(np.radians(lat_bot)))
    factor = grid.crs.linear_units_factor[1] if grid.crs.linear_units_factor else 1.0
    return np.full(rows, abs(t.a * t.e - t.b * t.d) * factor * factor)


def parallel_blocks(open_state: Callable[[], Any], work: Callable[[Any, Any], Any], windows: list[Any],
                    progress: Progress | None, label: str) -> Iterator[tuple[Any, Any]]:
    """(window, result) for every window, in order, computed by `threads` workers that each hold their own
    readers (`open_state()`, closed with `.close()`); progress and cancellation are checked between blocks."""
    import concurrent.futures as cf

    workers = max(1, min(get_settings().eo.threads, len(windows)))
    local = threading.local()
    states: list[Any] = []
    lock = threading.Lock()

    def run(w: Any) -> Any:
        state = getattr(local, "state", None)
        if state is None:
            state = open_state()
            local.state = state
            with lock:
                states.append(state)
        return work(state, w)

    report(progress, 0, len(windows), label)
    pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="eo-block")
    pending: list[tuple[Any, cf.Future[Any]]] = []
    it = iter(windows)
    try:
        for w in it:
            pending.append((w, pool.submit(run, w)))
            if len(pending) > workers:
                break
        done = 0
        while pending:
            w, fut = pending.pop(0)
            result = fut.result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(run, nxt)))
            yield w, result
            done += 1
            report(progress, done, len(windows), label)
    finally:
        for _, fut in pending:
            fut.cancel()
        pool.shutdown(wait=True)
        for s in states:
            s.close()
