"""PNG quicklooks with a colorbar, drawn from a decimated read (bounded memory whatever the raster size)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tools.atomic import atomic_output
from tools.eo.rasters import open_raster
from tools.errors import InvalidInput
from tools.paths import output_path


def render(path: Path, title: str | None = None, cmap: str = "viridis", vmin: float | None = None,
           vmax: float | None = None, band: int = 1, max_size: int = 1024, label: str | None = None) -> Path:
    """Write a PNG of `band` of the raster at `path` and return its path."""
    import matplotlib
    from matplotlib import colormaps
    from matplotlib.figure import Figure

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
    matplotlib.rcParams["figure.max_open_warning"] = 0
    fig = Figure(figsize=(7, 6), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(np.ma.masked_invalid(a), cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
    ax.set_title(title or desc or path.stem, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    if units:
        cb.set_label(units)
    out = output_path(f"{path.stem}-quicklook", ".png")
    with atomic_output(out) as tmp:
        fig.savefig(tmp, bbox_inches="tight")
    return out
