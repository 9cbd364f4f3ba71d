"""EO outputs appear only when complete (GeoTIFF, COG, PNG): a failure mid-write leaves neither the final file
nor a partial one; and block loops stop at a cancel (change areas, polygon zones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.atomic import is_partial
from tools.eo import api, rasters
from tools.errors import Cancelled
from tools.paths import MARKER
from tools.progress import Progress
from tools.settings import get_settings, reload_settings

SCENE = "sample://eo/landsat8_c1_l1t"


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_EO__BLOCK_SIZE", "128")  # 25 blocks on the 627 x 603 sample
    reload_settings()


def outputs() -> list[Path]:
    out = Path(get_settings().output_dir)
    marker = out / MARKER
    return sorted(p for p in out.rglob("*") if p.is_file() and p != marker) if out.exists() else []


def test_failure_mid_write_leaves_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    real = rasters.Writer.write
    calls = [0]

    def failing(self: rasters.Writer, array, window, band=1) -> None:
        calls[0] += 1
        assert not self.final.exists()  # while blocks are written, nothing is under the final name (a kill is safe)
        if calls[0] == 5:
            raise OSError("disk full")
        real(self, array, window, band)

    monkeypatch.setattr(rasters.Writer, "write", failing)
    with pytest.raises(OSError, match="disk full"):
        api.eo_spectral_index(SCENE, "NDVI", quicklook=False)
    assert calls[0] == 5 and outputs() == []


def test_cancel_mid_write_leaves_no_partial_file() -> None:
    progress = Progress()
    progress._callback = lambda done, total, msg: progress.cancel() if done >= 3 else None
    with pytest.raises(Cancelled):
        api.eo_spectral_index(SCENE, "NDVI", quicklook=False, progress=progress)
    assert outputs() == []


def test_failed_cog_conversion_and_quicklook_leave_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.figure
    import rasterio.shutil

    def half_copy(src, dst, **kw) -> None:
        Path(dst).write_bytes(b"II*\x00 half a COG")
        raise OSError("killed during the COG copy")

    with monkeypatch.context() as m:
        m.setattr(rasterio.shutil, "copy", half_copy)
        with pytest.raises(OSError, match="COG copy"):
            api.eo_spectral_index(SCENE, "NDVI", cog=True, quicklook=False)
    assert outputs() == []

    def half_png(self, fname, **kw) -> None:  # into a file or an in-memory buffer, then killed
        if hasattr(fname, "write"):
            fname.write(b"\x89PNG half")
        else:
            Path(fname).write_bytes(b"\x89PNG half")
        raise OSError("killed while drawing")

    with monkeypatch.context() as m:
        m.setattr(matplotlib.figure.Figure, "savefig", half_png)
        with pytest.raises(OSError, match="drawing"):
            api.eo_quicklook(api.eo_spectral_index(SCENE, "NDVI", quicklook=False).output)
    assert [p.suffix for p in outputs()] == [".tif"]  # the finished NDVI raster only

    done = api.eo_spectral_index(SCENE, "NDVI", cog=True, quicklook=True)
    names = {Path(done.output), Path(done.quicklook)}
    assert names <= set(outputs()) and not any(is_partial(p) for p in outputs())
    with rasterio.open(done.output) as src:
        assert src.overviews(1)  # a real COG, with overviews


def test_change_area_loop_and_polygon_zones_honour_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    ndvi = api.eo_spectral_index(SCENE, "NDVI", quicklook=False).output
    nbr = api.eo_spectral_index(SCENE, "NBR", quicklook=False).output
    progress = Progress()
    progress._callback = lambda done, total, msg: (
        progress.cancel() if msg.startswith("change-") and done == total else None)
    with pytest.raises(Cancelled):  # raised by the threshold-area pass that follows the change raster
        api.eo_change(ndvi, nbr, threshold=0.1, quicklook=False, progress=progress)

    reads = [0]
    real = rasters.Reader.read

    def counted(self: rasters.Reader, window):
        reads[0] += 1
        return real(self, window)

    monkeypatch.setattr(rasters.Reader, "read", counted)
    stopped = Progress()
    stopped.cancel()
    whole = {"type": "Polygon", "coordinates": [[[452475, 3390555], [471285, 3390555], [471285, 3408645],
                                                  [452475, 3408645], [452475, 3390555]]]}
    zones = {"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32616"}},
             "features": [{"type": "Feature", "properties": {"id": "all"}, "geometry": whole}]}
    with pytest.raises(Cancelled):
        api.eo_zonal_statistics(ndvi, zones=zones, progress=stopped)
    assert reads[0] == 0  # one polygon over 25 blocks: stopped before its first block, not after its last
