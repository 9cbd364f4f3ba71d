"""PNG quicklooks with a colorbar, drawn from a decimated read (bounded memory whatever the raster size)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tools.eo.rasters import open_raster
from tools.errors import InvalidInput
from tools.paths import output_path


def render(path: Path, title: str | None = None, cmap: str = "viridis", vmin: float | None = None,
           vmax: float | None = None, band: int = 1, max_size: int = 1024, label: str | None = None,
           caption: str | None = None) -> Path:
    """Write a PNG of `band` of the raster at `path` and return its path.

    The title names the quantity, `caption` (a second line) the scene and its date; the colour bar spans the 2nd
    to 98th percentile unless `vmin`/`vmax` are given. The picture is at most about 800 x 700 pixels.
    """
    from matplotlib import colormaps

    from tools.figures import figure, save_png

    if cmap not in colormaps:
        raise InvalidInput(f"Unknown colormap {cmap!r}.", hint="Use a matplotlib name: viridis, RdYlGn, inferno...")
    with open_raster(path) as src:
        if band < 1 or band > src.count:
            raise InvalidInput(f"{path.name} has {src.count} band(s).", hint="Pick an existing band.")
        f = min(1.0, max_size / max(src.width, src.height))
        shape = (max(1, round(src.height * f)), max(1, round(src.width * f)))
        a = src.read(band, out_shape=shape, masked=True).astype(np.float64).filled(np.nan)
        units = src.tags().get("units") or label or ""
        desc = src.descriptions[band - 1] if src.descriptions else None
    ok = np.isfinite(a)
    if not ok.any():
        raise InvalidInput(f"{path.name} holds only nodata pixels: nothing to draw.", hint="Check the input.")
    lo = float(np.percentile(a[ok], 2)) if vmin is None else vmin
    hi = float(np.percentile(a[ok], 98)) if vmax is None else vmax
    if hi <= lo:
        hi = lo + 1e-9
    fig = figure(7, 6)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(np.ma.masked_invalid(a), cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
    heading = title or desc or path.stem
    ax.set_title(f"{heading}\n{caption}" if caption else heading, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    if units:
        cb.set_label(units)
    return save_png(fig, output_path(f"{path.stem}-quicklook", ".png"))
