"""Argument types, lazy module handles and result helpers shared by the EO tool modules.

NumPy and the numeric EO modules are reached through `Deferred` handles, imported on first use, so that
listing the tools imports none of them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from tools.eo.results import RasterStats


class Deferred:
    """A module imported on first attribute access, so that listing the tools does not import NumPy & co."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


np = Deferred("numpy")
geo = Deferred("tools.eo.geophysics")
idx = Deferred("tools.eo.indices")
mk = Deferred("tools.eo.masks")
st = Deferred("tools.eo.statistics")
tr = Deferred("tools.eo.trends")

SceneArg = Annotated[
    str | list[str],
    Field(description="Scene folder, metadata file or band files, e.g. sample://eo/landsat8_c1_l1t."),
]
ResolutionArg = Annotated[
    Literal["finest", "coarsest"] | float,
    Field(description="Grid if bands differ: finest, coarsest or metres."),
]
ProductArg = Annotated[
    Literal["landsat-c1-l1", "landsat-c2-l1", "landsat-c2-l2", "sentinel-2-l1c", "sentinel-2-l2a"] | None,
    Field(description="Default: detected."),
]
RasterArg = Annotated[str, Field(description="GeoTIFF (any GDAL raster).")]
CogArg = Annotated[bool, Field(description="Cloud-Optimized GeoTIFF.")]
QuicklookArg = bool  # also draw a PNG
MaskArg = Annotated[
    list[str] | None,
    Field(description="QA classes to mask, as eo_cloud_mask's."),
]


def stats_model(s: Any) -> RasterStats:
    """The result model of a `RunningStats` (or anything with a matching `summary()`)."""
    return RasterStats(**s.summary())


def crs_name(grid: Any) -> str | None:
    """The grid's CRS as text (EPSG:32633, WKT...), or None when it has none."""
    return grid.crs.to_string() if grid.crs is not None else None


def load_scene(scene: str | list[str], product: str | None = None) -> Any:
    """The `Scene` named by a tool's `scene` argument (folder, metadata file, STAC item or band files)."""
    from tools.eo.detection import open_scene

    return open_scene(scene, product)


def scene_caption(scene: Any) -> str:
    """The scene's name, platform and acquisition date, for a picture's caption."""
    parts = [scene.scene_id or scene.root.name, scene.platform.replace("_", " ").title(), scene.acquired]
    return " · ".join(p for p in parts if p)


def draw_quicklook(path: Path, draw: bool, cmap: str, title: str, label: str | None = None,
                   scene: Any = None) -> str | None:
    """The PNG quicklook path of the raster at `path` when `draw` (captioned with `scene`'s name and date), else
    None."""
    if not draw:
        return None
    from tools.eo.quicklook import render

    caption = scene_caption(scene) if scene is not None else None
    return str(render(path, title=title, cmap=cmap, label=label, caption=caption))

