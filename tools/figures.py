"""PNG pictures the tools draw: a matplotlib `Figure` saved compactly, written atomically.

A colour-mapped picture holds few distinct colours, so a 256-colour palette PNG shows it the same at a third of
the size of a full-colour one; the smaller of the two is written. Pictures are drawn on `matplotlib.figure.Figure`
(not pyplot), so drawing in several worker threads at once is safe.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from tools.atomic import write_bytes

DPI = 100


def figure(width_in: float, height_in: float) -> Any:
    """A new matplotlib `Figure` of the given size in inches at `DPI` (pyplot is not involved)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), dpi=DPI)


def png_bytes(fig: Any, *, tight: bool = True, palette: bool = True) -> bytes:
    """The figure as PNG bytes; with `palette`, a 256-colour palette image when that is smaller than the full-colour
    one (worth it for a colour-mapped raster, not for a line drawing, which is small already)."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight" if tight else None, facecolor="white")
    full = buf.getvalue()
    if not palette:
        return full
    image = Image.open(io.BytesIO(full)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, dither=Image.Dither.NONE).save(out, format="PNG", optimize=True)
    small = out.getvalue()
    return small if len(small) < len(full) else full


def save_png(fig: Any, path: str | Path, *, tight: bool = True, palette: bool = True) -> Path:
    """Write `fig` to `path` as a compact PNG (under a temporary name, renamed when complete)."""
    return write_bytes(path, png_bytes(fig, tight=tight, palette=palette))
