"""Bad input gets clear errors: a missing band, mismatched CRS, a file outside the roots, a file that is not a
raster, an all-nodata scene, an unknown index, unknown QA classes; and cancellation between blocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api
from tools.errors import AccessDenied, Cancelled, InvalidInput, NotFound
from tools.paths import SAMPLE_DIR
from tools.progress import Progress
from tools.settings import get_settings


def write(path: Path, data: np.ndarray, crs: str = "EPSG:32633", res: float = 30.0, nodata: float | None = None) -> str:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[1], height=data.shape[0], count=1,
                       dtype=data.dtype, crs=crs, transform=from_origin(500000, 4600000, res, res),
                       nodata=nodata) as dst:
        dst.write(data, 1)
    return str(path)


def test_missing_band_named_in_message(tmp_path: Path) -> None:
    folder = tmp_path / "partial"
    folder.mkdir()
    for b in (3, 4):  # no NIR
        (folder / f"l8_B{b}.tif").write_bytes(Path(SAMPLE_DIR, "eo/landsat8_c1_l1t", f"l8_B{b}.tif").read_bytes())
    (folder / "l8_MTL.txt").write_text(Path(SAMPLE_DIR, "eo/landsat8_c1_l1t/l8_MTL.txt").read_text())
    with pytest.raises(InvalidInput, match=r"NDVI needs band N \(Near-Infrared"):
        api.eo_spectral_index(str(folder), "NDVI")


def test_mismatched_crs_is_refused(tmp_path: Path) -> None:
    a = write(tmp_path / "a.tif", np.ones((10, 10), dtype="float32"))
    b = write(tmp_path / "b.tif", np.ones((10, 10), dtype="float32"), crs="EPSG:32634")
    with pytest.raises(InvalidInput, match="CRS differ") as err:
        api.eo_change(a, b, quicklook=False)
    assert "gdalwarp" in str(err.value)


def test_file_outside_roots_is_refused() -> None:
    with pytest.raises(AccessDenied, match="outside the allowed folders"):
        api.eo_statistics("/etc/hostname")


def test_not_a_raster(tmp_path: Path) -> None:
    p = tmp_path / "notes.tif"
    p.write_text("this is not a GeoTIFF")
    with pytest.raises(InvalidInput, match="not a raster GDAL can read"):
        api.eo_statistics(str(p))
    with pytest.raises(InvalidInput, match="not a raster"):
        api.eo_quicklook(str(p))


def test_all_nodata_scene(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    stem = "LC08_L2SP_042034_20200101_20200110_02_T1"
    for b in range(1, 8):
        write(folder / f"{stem}_SR_B{b}.TIF", np.zeros((16, 16), dtype="uint16"), nodata=0)
    with pytest.raises(InvalidInput, match="Every pixel of the NDVI result is nodata"):
        api.eo_spectral_index(str(folder), "NDVI")
    assert not list((tmp_path / "out").glob("NDVI-*.tif"))  # the partial output was removed
    nan = write(tmp_path / "nan.tif", np.full((8, 8), np.nan, dtype="float32"))
    with pytest.raises(InvalidInput, match="only nodata"):
        api.eo_statistics(nan)


def test_unknown_index_and_classes() -> None:
    with pytest.raises(NotFound, match=r"Did you mean 'EVI'"):
        api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "EVl")
    with pytest.raises(InvalidInput, match="no quality layer"):
        api.eo_cloud_mask("sample://eo/sentinel2_l1c")
    with pytest.raises(InvalidInput, match="neither a spectral index nor a band"):
        api.eo_cloud_mask("sample://eo/sentinel2_l1c", thresholds=[api.ThresholdRule(layer="XYZ", op=">", value=1)])
    with pytest.raises(InvalidInput, match="thermal"):
        api.eo_land_surface_temperature("sample://eo/sentinel2_l1c")


def test_not_a_scene(tmp_path: Path) -> None:
    write(tmp_path / "random.tif", np.ones((4, 4), dtype="uint8"))
    with pytest.raises(InvalidInput, match="Cannot tell which product"):
        api.eo_describe_scene(str(tmp_path))


def test_cancellation_stops_between_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_EO__BLOCK_SIZE", "128")
    from tools.settings import reload_settings

    reload_settings()
    seen: list[float] = []
    progress = Progress(lambda done, total, msg: seen.append(done))

    def cancel_after_three(done: float, total: float | None, msg: str | None) -> None:
        seen.append(done)
        if done >= 3:
            progress.cancel()

    progress._callback = cancel_after_three
    with pytest.raises(Cancelled):
        api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDVI", quicklook=False, progress=progress)
    assert 3 <= max(seen) < 25  # 25 blocks of 128 px: stopped early
    assert not list(Path(get_settings().output_dir).glob("NDVI-*.tif"))
