"""Scene -> raster products, block by block: calibrated band readers, QA masks, spectral index rasters."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tools.eo import indices, masks
from tools.eo.radiometry import Calibration, calibration
from tools.eo.rasters import (
    Grid,
    Reader,
    RunningStats,
    Writer,
    block_windows,
    close_all,
    grid_of,
    parallel_blocks,
    run_blocks,
    working_grid,
)
from tools.eo.scenes import Band, Scene
from tools.errors import InvalidInput
from tools.progress import Progress


def band_reader(scene: Scene, band: Band, grid: Grid, quantity: str = "auto") -> tuple[Reader, Calibration, str | None]:
    """A calibrated reader of `band` on `grid`, its calibration, and a note saying how it was resampled (None when
    the band is on `grid` already). Onto a finer grid: bilinear; onto a coarser one: the average of the pixels
    it covers; quality layers and raw DN: nearest neighbour."""
    cal = calibration(scene, band, quantity)
    own = grid_of(band.path)
    note = None
    if own.same_as(grid):
        resampling = "nearest"
    else:
        (ox, oy), (gx, gy) = own.res, grid.res
        if band.spec.kind == "qa" or cal.quantity == "dn":
            resampling, how = "nearest", "nearest neighbour"
        elif ox * oy < gx * gy * (1 - 1e-9):
            resampling, how = "average", "averaging the pixels each covers"
        else:
            resampling, how = "bilinear", "bilinear interpolation"
        note = f"{band.key} ({ox:g} m) resampled to the {gx:g} m grid by {how}."
    return Reader(band.path, grid, resampling=resampling, convert=cal.apply), cal, note


def qa_layer(scene: Scene) -> tuple[Band, str]:
    """The scene's quality layer and its kind (qa_pixel, qa_bqa or scl)."""
    for key, kind in (("QA_PIXEL", "qa_pixel"), ("BQA", "qa_bqa"), ("SCL", "scl")):
        if key in scene.bands:
            return scene.bands[key], kind
    raise InvalidInput(
        f"This {scene.product} scene has no quality layer (QA_PIXEL, BQA or SCL) to mask clouds with.",
        hint="Add the product's QA_PIXEL/BQA/SCL file, or mask by thresholds instead (eo_cloud_mask thresholds).",
    )


@dataclass
class SceneInputs:
    """Readers for several scene bands on their common grid, plus an optional QA mask."""

    grid: Grid
    readers: dict[str, Reader]
    calibrations: dict[str, Calibration]
    files: dict[str, str]
    qa_kind: str | None = None
    qa_classes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def read(self, window: object) -> dict[str, np.ndarray]:
        return self.calibrate(self.read_raw(window))

    def read_raw(self, window: object) -> dict[str, np.ndarray]:
        """The stored values of every band (and the QA layer) in `window`, uncalibrated."""
        return {k: r.raw(window) for k, r in self.readers.items()}

    def calibrate(self, raws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Calibrated, QA-masked float64 bands from `read_raw` output (a whole window or the same rows of each)."""
        arrays = {k: self.readers[k].calibrate(v) for k, v in raws.items() if k != "__qa__"}
        if self.qa_kind:
            qa = self.readers["__qa__"].calibrate(raws["__qa__"])
            flagged = masks.fill_mask(self.qa_kind, qa)  # fill is masked whether or not it was asked for
            good = ~flagged
            for m in masks.qa_mask(self.qa_kind, np.where(good, qa, 0), self.qa_classes).values():
                flagged |= m & good
            for a in arrays.values():
                a[flagged] = np.nan
        return arrays

    def close(self) -> None:
        close_all(self.readers)


def scene_inputs(scene: Scene, wanted: dict[str, Band], quantity: str = "auto",
                 mask_classes: list[str] | None = None, resolution: str | float = "finest") -> SceneInputs:
    """Readers for `wanted` (name -> band) on one grid (see `working_grid`: the finest by default); QA classes
    (and QA fill) masked to NaN if given; `notes` say which band was resampled and how."""
    bands = dict(wanted)
    qa_kind = None
    classes: list[str] = []
    if mask_classes:
        qa_band, qa_kind = qa_layer(scene)
        classes = masks.check_classes(qa_kind, mask_classes)
    paths = [b.path for b in bands.values()]
    grid = working_grid(paths, [f"{b.key} ({b.path.name})" for b in bands.values()], resolution)
    readers: dict[str, Reader] = {}
    cals: dict[str, Calibration] = {}
    notes: list[str] = []
    try:
        for name, band in bands.items():
            readers[name], cals[name], note = band_reader(scene, band, grid, quantity)
            if note and note not in notes:
                notes.append(note)
        if qa_kind:
            readers["__qa__"], _, note = band_reader(scene, qa_band, grid, "dn")
            if note:
                notes.append(note)
    except BaseException:
        close_all(readers)
        raise
    files = {name: band.path.name for name, band in bands.items()}
    return SceneInputs(grid, readers, cals, files, qa_kind, classes, notes)


class _Borrowed:
    """Another owner's inputs, used by one worker thread and closed by their owner."""

    def __init__(self, ins: SceneInputs) -> None:
        self.ins = ins

    def read_raw(self, window: object) -> dict[str, np.ndarray]:
        return self.ins.read_raw(window)

    def calibrate(self, raws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.ins.calibrate(raws)

    def close(self) -> None:
        pass


def symbol_bands(scene: Scene, symbols: list[str], what: str) -> dict[str, Band]:
    return {s: scene.symbol_band(s, what) for s in symbols}


@dataclass
class Product:
    path: Path
    stats: RunningStats
    grid: Grid
    files: dict[str, str]
    formulas: dict[str, str]
    notes: list[str]


_BAND_PIXELS = 1 << 16


def map_scene(scene: Scene, wanted: dict[str, Band], compute: Callable[[dict[str, np.ndarray]], np.ndarray],
              name: str, progress: Progress | None, *, mask_classes: list[str] | None = None, cog: bool = False,
              units: str | None = None, description: str | None = None, dtype: str = "float32",
              resolution: str | float = "finest") -> Product:
    """Compute one raster from scene bands window by window and write it as a tiled, compressed GeoTIFF.

    `compute` works pixel by pixel (each output pixel from the same pixel of the inputs): it is called on
    bands of rows of each window."""
    ins = scene_inputs(scene, wanted, mask_classes=mask_classes, resolution=resolution)
    try:
        writer = Writer(name, ins.grid, dtype=dtype, descriptions=[description or name], cog=cog, units=units)
        stats = RunningStats()
        first = [True]

        def open_state() -> SceneInputs:
            if first[0]:  # the first worker reuses the readers opened above
                first[0] = False
                return _Borrowed(ins)
            return scene_inputs(scene, wanted, mask_classes=mask_classes, resolution=resolution)

        scratch = threading.local()

        def work(state: SceneInputs, w: Any) -> tuple[np.ndarray, tuple]:
            raws = state.read_raw(w)
            out = writer.buffer((w.height, w.width))
            # Row bands of ~64k pixels keep the float64 temporaries of calibration and formula in cache.
            step = max(1, _BAND_PIXELS // max(1, w.width))
            for r0 in range(0, w.height, step):
                out[r0:r0 + step] = compute(state.calibrate({k: v[r0:r0 + step] for k, v in raws.items()}))
            if out.dtype.kind != "f":
                return out, RunningStats.summarize(out)
            flat = out.ravel()
            lo, hi = np.minimum.reduce(flat), np.maximum.reduce(flat)  # NaN or +-inf anywhere shows here
            if not (math.isfinite(lo) and math.isfinite(hi)):
                out[np.isinf(out)] = np.nan  # +-inf from a zero denominator
                return out, RunningStats.summarize(out)
            buf = getattr(scratch, "buf", None)
            if buf is None or buf.size < out.size:
                buf = scratch.buf = np.empty(out.size, out.dtype)
            return out, RunningStats.summarize(out, all_finite=True, scratch=buf, bounds=(lo, hi))

        try:
            with closing(parallel_blocks(open_state, work, block_windows(ins.grid), progress, name)) as blocks:
                for w, (out, part) in blocks:
                    stats.merge(part)
                    writer.give(out, w)
        except BaseException:
            writer.discard()
            raise
        if stats.count == 0:
            writer.discard()
            raise InvalidInput(
                f"Every pixel of the {name} result is nodata: the inputs ({', '.join(ins.files.values())}) hold "
                "only fill/nodata values" + (" or masked pixels" if mask_classes else "") + ".",
                hint="Check that the files cover the area and are not empty; relax the mask if one was given.",
            )
        path = writer.close()
    finally:
        ins.close()
    notes = [n for c in ins.calibrations.values() for n in c.notes] + list(scene.notes) + ins.notes
    return Product(path, stats, ins.grid, ins.files, {k: c.formula for k, c in ins.calibrations.items()}, notes)


def index_product(scene: Scene, name: str, constants: dict[str, float] | None, progress: Progress | None,
                  mask_classes: list[str] | None = None, cog: bool = False,
                  resolution: str | float = "finest") -> tuple[Product, indices.Plan]:
    """The spectral index `name` of a scene as a GeoTIFF."""
    canonical = indices.resolve_name(name)
    available = scene.by_symbol()
    pl = indices.plan(canonical, lambda s: s in available, scene.platform, constants,
                      lambda s: scene.symbol_band(s, canonical))
    wanted = symbol_bands(scene, pl.bands, canonical)
    product = map_scene(scene, wanted, pl.evaluate, canonical, progress, mask_classes=mask_classes, cog=cog,
                        units="index", description=f"{canonical}: {indices.catalogue()[canonical].formula}",
                        resolution=resolution)
    return product, pl


def run_raster(readers: dict[str, Reader], grid: Grid, compute: Callable[[dict[str, np.ndarray]], np.ndarray],
               name: str, progress: Progress | None, cog: bool = False, units: str | None = None,
               dtype: str = "float32") -> tuple[Path, RunningStats]:
    """Like `map_scene` for plain rasters: readers on one grid -> one GeoTIFF."""
    writer = Writer(name, grid, dtype=dtype, descriptions=[name], cog=cog, units=units)
    stats = run_blocks(readers, grid, compute, writer, progress, name)
    if stats.count == 0:
        writer.discard()
        raise InvalidInput(f"Every pixel of the {name} result is nodata.",
                           hint="Check that the inputs overlap and hold valid values.")
    return writer.close(), stats
