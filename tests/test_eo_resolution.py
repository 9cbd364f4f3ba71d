"""Indices mixing 10 m and 20 m Sentinel-2 bands on a chosen grid (finest, coarsest, metres), with notes saying
which band was resampled how; radiance-layer LST counting the pixels whose surface radiance is not positive."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api
from tools.eo.detection import open_scene
from tools.errors import InvalidInput

SAFE = "S2B_MSIL2A_20230105T101329_N0509_R022_T32TQM_20230105T114000.SAFE"  # baseline 05.09: offset -1000
NIR = np.array([[3000, 3400, 5000, 5200],
                [3800, 4200, 5400, 6000],
                [2000, 2100, 7000, 7100],
                [2300, 2400, 7200, 7300]], dtype=np.uint16)
SWIR = np.array([[2500, 2600],
                 [3100, 2900]], dtype=np.uint16)


def write(path: Path, data: np.ndarray, res: float, nodata: float | None = 0, crs: str = "EPSG:32632") -> None:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[1], height=data.shape[0], count=1,
                       dtype=data.dtype, crs=crs, transform=from_origin(600000, 5000000, res, res),
                       nodata=nodata) as dst:
        dst.write(data, 1)


def read(path: str, band: int = 1) -> np.ndarray:
    with rasterio.open(path) as src:
        return src.read(band).astype(np.float64)


@pytest.fixture
def scene(tmp_path: Path) -> str:
    folder = tmp_path / SAFE
    folder.mkdir()
    write(folder / "T32TQM_20230105T101329_B08_10m.tif", NIR, 10.0)
    write(folder / "T32TQM_20230105T101329_B11_20m.tif", SWIR, 20.0)
    return str(folder)


def refl(dn: np.ndarray) -> np.ndarray:
    return (dn.astype(np.float64) - 1000.0) / 10000.0


def test_ndmi_on_the_coarsest_grid_averages_the_10m_band(scene: str) -> None:
    n20 = refl(NIR).reshape(2, 2, 2, 2).mean(axis=(1, 3))  # each 20 m pixel: the mean of its four 10 m pixels
    s1 = refl(SWIR)
    expected = (n20 - s1) / (n20 + s1)
    r = api.eo_spectral_index(scene, "NDMI", resolution="coarsest", quicklook=False)
    assert (r.width, r.height) == (2, 2)
    np.testing.assert_allclose(read(r.output), expected, rtol=0, atol=1e-6)
    assert "B08 (10 m) resampled to the 20 m grid by averaging the pixels each covers." in r.notes
    assert not any(n.startswith("B11") for n in r.notes)
    metres = api.eo_spectral_index(scene, "NDMI", resolution=20, quicklook=False)
    np.testing.assert_allclose(read(metres.output), expected, rtol=0, atol=1e-6)
    n40, s40 = refl(NIR).mean(), refl(SWIR).mean()
    one = api.eo_spectral_index(scene, "NDMI", resolution=40.0, quicklook=False)
    assert (one.width, one.height) == (1, 1)
    assert read(one.output)[0, 0] == pytest.approx((n40 - s40) / (n40 + s40), abs=1e-6)
    assert {n.split(" ")[0] for n in one.notes if "resampled" in n} == {"B08", "B11"}


def test_finest_grid_interpolates_the_20m_band_and_says_so(scene: str) -> None:
    r = api.eo_spectral_index(scene, "NDMI", quicklook=False)
    assert (r.width, r.height) == (4, 4)
    assert "B11 (20 m) resampled to the 10 m grid by bilinear interpolation." in r.notes
    c = api.eo_radiometric_correction(scene, bands=["B08", "B11"])
    assert c.notes[-1] == "B11 (20 m) resampled to the 10 m grid by bilinear interpolation."
    np.testing.assert_allclose(read(c.output, 1), refl(NIR), rtol=0, atol=1e-6)  # the 10 m band is untouched
    s1 = read(c.output, 2)
    assert refl(SWIR).min() - 1e-6 <= s1.min() and s1.max() <= refl(SWIR).max() + 1e-6  # bilinear stays in range
    coarse = api.eo_radiometric_correction(scene, bands=["B08", "B11"], resolution="coarsest")
    np.testing.assert_allclose(read(coarse.output, 2), refl(SWIR), rtol=0, atol=1e-6)


def test_bad_resolutions(scene: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="positive number of metres"):
        api.eo_spectral_index(scene, "NDMI", resolution=-10, quicklook=False)
    with pytest.raises(InvalidInput, match="neither 'finest', 'coarsest'"):
        api.eo_spectral_index(scene, "NDMI", resolution="medium", quicklook=False)  # type: ignore[arg-type]
    geo = tmp_path / "geo" / SAFE
    geo.mkdir(parents=True)
    write(geo / "T32TQM_20230105T101329_B08_10m.tif", NIR, 0.0001, crs="EPSG:4326")
    write(geo / "T32TQM_20230105T101329_B11_20m.tif", SWIR, 0.0002, crs="EPSG:4326")
    with pytest.raises(InvalidInput, match="projected CRS in metres"):
        api.eo_spectral_index(str(geo), "NDMI", resolution=20, quicklook=False)
    assert open_scene(str(geo)).product == "sentinel-2-l2a"


# ------------------------------------------------------------------------------------ radiance-layer LST
C2 = "LC09_L2SP_042034_20230610_20230612_02_T1"


def test_radiance_layer_lst_counts_non_positive_radiance(tmp_path: Path) -> None:
    folder = tmp_path / "c2"
    folder.mkdir()
    shape = (6, 8)
    write(folder / f"{C2}_SR_B4.TIF", np.full(shape, 20000, dtype=np.uint16), 30.0)
    write(folder / f"{C2}_ST_B10.TIF", np.full(shape, 44000, dtype=np.uint16), 30.0)
    trad = np.full(shape, 9000, dtype=np.int16)  # scaled by 0.001: 9.0 W/(m2 sr um)
    trad[2, :7] = 1200  # below URAD: Ls < 0
    trad[4, 0] = 1510  # above URAD, but the reflected sky term makes Ls < 0 too
    layers = {"TRAD": trad, "URAD": 1500, "DRAD": 2500, "ATRAN": 8000, "EMIS": 9800}
    for k, v in layers.items():
        write(folder / f"{C2}_ST_{k}.TIF", np.broadcast_to(np.asarray(v, dtype=np.int16), shape).copy(), 30.0,
              nodata=-9999)
    (folder / f"{C2}_MTL.json").write_text(json.dumps({"LANDSAT_METADATA_FILE": {
        "PRODUCT_CONTENTS": {"COLLECTION_NUMBER": "02", "PROCESSING_LEVEL": "L2SP"},
        "IMAGE_ATTRIBUTES": {"SPACECRAFT_ID": "LANDSAT_9", "SENSOR_ID": "OLI_TIRS", "DATE_ACQUIRED": "2023-06-10"},
        "LEVEL1_THERMAL_CONSTANTS": {"K1_CONSTANT_BAND_10": "799.0284", "K2_CONSTANT_BAND_10": "1329.2405"}}}))
    assert (1.51 - 1.5) / (0.8 * 0.98) - (0.02 / 0.98) * 2.5 < 0
    r = api.eo_land_surface_temperature(str(folder), method="radiance_layers", quicklook=False)
    ls = (9.0 - 1.5) / (0.8 * 0.98) - (0.02 / 0.98) * 2.5
    out = read(r.output)
    assert out[0, 0] == pytest.approx(1329.2405 / math.log(799.0284 / ls + 1), abs=1e-3)
    assert np.isnan(out[2, :7]).all() and not np.isnan(out[2, 7])
    assert np.isnan(out[4, 0])
    assert r.stats.valid_pixels == 48 - 8
    assert any(n.startswith("8 pixel(s) have a non-positive surface radiance") for n in r.notes)
