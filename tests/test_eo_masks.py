"""QA classes by the product guides' bit definitions (Landsat C2 QA_PIXEL, Sentinel-2 SCL), checked on hand-built
QA values, and QA fill masked whether or not a mask lists it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api, masks
from tools.errors import InvalidInput

# Landsat 8-9 Collection-2 QA_PIXEL values, decoded by hand from the bit table of LSDS-1619 (bit 0 fill,
# 1 dilated cloud, 2 cirrus, 3 cloud, 4 cloud shadow, 5 snow, 6 clear, 7 water; pairs 8-9 cloud, 10-11
# shadow, 12-13 snow, 14-15 cirrus confidence). "low" = 01 in a pair, "high" = 11.
CLEAR_LOW = 64 + 256 + 1024 + 4096 + 16384  # 21824: clear, every confidence low
WATER = CLEAR_LOW + 128  # 21952: clear water
CLOUD_HIGH = 8 + 256 + 512 + 1024 + 4096 + 16384  # 22280: cloud, cloud confidence high
CLOUD_MEDIUM = 8 + 512 + 1024 + 4096 + 16384  # 22024: cloud, cloud confidence medium (10)
SHADOW = 16 + 64 + 256 + 1024 + 2048 + 4096 + 16384  # 23888: clear bit AND cloud shadow, shadow conf high
CIRRUS = 4 + 64 + 256 + 1024 + 4096 + 16384 + 32768  # 54596: clear bit AND cirrus, cirrus conf high
SNOW = 32 + 64 + 256 + 1024 + 4096 + 8192 + 16384  # 30048: clear bit and snow, snow conf high
DILATED = 2 + 256 + 1024 + 4096 + 16384  # 21762: dilated cloud (no clear bit)
FILL = 1


def test_landsat_c2_qa_pixel_classes_follow_the_bit_table() -> None:
    assert (CLEAR_LOW, WATER, CLOUD_HIGH, SHADOW, CIRRUS, SNOW) == (21824, 21952, 22280, 23888, 54596, 30048)
    values = np.array([CLEAR_LOW, WATER, CLOUD_HIGH, CLOUD_MEDIUM, SHADOW, CIRRUS, SNOW, DILATED, FILL])
    names = ["clear", "water", "cloud", "cloud_high_confidence", "cloud_medium_confidence", "cloud_low_confidence",
             "shadow", "shadow_high_confidence", "cirrus", "cirrus_high_confidence", "snow", "snow_high_confidence",
             "dilated_cloud", "fill"]
    got = {k: np.flatnonzero(v).tolist() for k, v in masks.qa_mask("qa_pixel", values, names).items()}
    assert got["clear"] == [0, 1, 6]  # not the shadow (4) or cirrus (5) pixels that carry the clear bit
    assert got["water"] == [1]
    assert got["cloud"] == [2, 3]
    assert got["cloud_high_confidence"] == [2] and got["cloud_medium_confidence"] == [3]
    assert got["cloud_low_confidence"] == [0, 1, 4, 5, 6, 7]
    assert got["shadow"] == [4] and got["shadow_high_confidence"] == [4]
    assert got["cirrus"] == [5] and got["cirrus_high_confidence"] == [5]
    assert got["snow"] == [6] and got["snow_high_confidence"] == [6]
    assert got["dilated_cloud"] == [7] and got["fill"] == [8]
    # fill_mask: the fill bit, or no QA value at all (the file's nodata read as NaN)
    qa = np.array([FILL, CLEAR_LOW, np.nan, SHADOW])
    assert masks.fill_mask("qa_pixel", qa).tolist() == [True, False, True, False]


def test_sentinel2_scl_classes() -> None:
    scl = np.arange(12)
    s = masks.qa_mask("scl", scl, ["clear", "fill", "dark", "unclassified", "cloud_medium", "cloud_high", "cloud"])
    assert np.flatnonzero(s["clear"]).tolist() == [4, 5, 6, 11]  # vegetation, not vegetated, water, snow
    assert [np.flatnonzero(s[k]).tolist() for k in ("fill", "dark", "unclassified")] == [[0], [2], [7]]
    assert np.flatnonzero(s["cloud"]).tolist() == [8, 9]
    assert masks.fill_mask("scl", np.array([0.0, 4.0, np.nan])).tolist() == [True, False, True]
    with pytest.raises(InvalidInput, match="Known classes"):
        masks.check_classes("qa_pixel", ["cloudy"])


# ------------------------------------------------------------------------------------------- scenes
C2 = "LC08_L2SP_042034_20230610_20230612_02_T1"


def write(path: Path, data: np.ndarray, res: float = 30.0, nodata: float | None = None) -> None:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[1], height=data.shape[0], count=1,
                       dtype=data.dtype, crs="EPSG:32633", transform=from_origin(500000, 4600000, res, res),
                       nodata=nodata) as dst:
        dst.write(data, 1)


def c2_scene(folder: Path, qa: np.ndarray) -> Path:
    """A Collection-2 L2 scene whose SR bands hold data everywhere (no band fill), with the given QA_PIXEL."""
    folder.mkdir(parents=True)
    write(folder / f"{C2}_SR_B4.TIF", np.full(qa.shape, 10000, dtype=np.uint16), nodata=0)
    write(folder / f"{C2}_SR_B5.TIF", np.full(qa.shape, 20000, dtype=np.uint16), nodata=0)
    write(folder / f"{C2}_QA_PIXEL.TIF", qa.astype(np.uint16), nodata=1)  # as USGS tags it: 1 = fill
    (folder / f"{C2}_MTL.json").write_text(json.dumps({"LANDSAT_METADATA_FILE": {
        "PRODUCT_CONTENTS": {"COLLECTION_NUMBER": "02", "PROCESSING_LEVEL": "L2SP"},
        "IMAGE_ATTRIBUTES": {"SPACECRAFT_ID": "LANDSAT_8", "SENSOR_ID": "OLI_TIRS", "DATE_ACQUIRED": "2023-06-10"}}}))
    return folder


def test_qa_fill_is_masked_even_when_not_listed(tmp_path: Path) -> None:
    qa = np.full((12, 12), CLOUD_HIGH)
    qa[0, :7] = FILL  # QA says fill where the bands still hold values (a QA edge wider than the bands')
    scene = c2_scene(tmp_path / "cloudy", qa)
    plain = api.eo_spectral_index(str(scene), "NDVI", quicklook=False)
    assert plain.stats.valid_pixels == 144  # no QA mask asked for: the bands alone decide
    with pytest.raises(InvalidInput, match="nodata"):
        api.eo_spectral_index(str(scene), "NDVI", mask=["cloud", "shadow"], quicklook=False)  # no clear pixel

    qa = np.full((12, 12), CLEAR_LOW)
    qa[0, :7] = FILL
    qa[5, 5] = SHADOW
    qa[6, 6] = CIRRUS
    r = api.eo_spectral_index(str(c2_scene(tmp_path / "mixed", qa)), "NDVI", mask=["cloud", "shadow"],
                              quicklook=False)
    assert r.stats.valid_pixels == 144 - 7 - 1
    red, nir = 10000 * 2.75e-5 - 0.2, 20000 * 2.75e-5 - 0.2
    assert r.stats.mean == pytest.approx((nir - red) / (nir + red), abs=1e-6)


def test_clear_class_excludes_shadow_and_cirrus_in_the_cloud_mask(tmp_path: Path) -> None:
    qa = np.full((10, 10), CLEAR_LOW)
    qa[0, :4] = SHADOW
    qa[1, :3] = CIRRUS
    qa[2, :2] = WATER
    qa[9, :5] = FILL
    m = api.eo_cloud_mask(str(c2_scene(tmp_path / "s", qa)), classes=["clear", "shadow", "cirrus"])
    assert m.data_pixels == 95
    assert m.class_fractions["clear"] == pytest.approx((95 - 4 - 3) / 95)
    assert m.class_fractions["shadow"] == pytest.approx(4 / 95)
    assert m.class_fractions["cirrus"] == pytest.approx(3 / 95)
    with rasterio.open(m.output) as src:
        a = src.read(1)
    assert (a[9, :5] == 255).all() and a[0, 0] == 1


def test_scl_no_data_is_masked_even_when_not_listed(tmp_path: Path) -> None:
    folder = tmp_path / "S2A_MSIL2A_20230105T101329_N0509_R022_T32TQM_20230105T114000.SAFE"
    folder.mkdir()
    write(folder / "T32TQM_20230105T101329_B04_10m.tif", np.full((8, 8), 1800, dtype=np.uint16), res=10.0, nodata=0)
    write(folder / "T32TQM_20230105T101329_B08_10m.tif", np.full((8, 8), 4000, dtype=np.uint16), res=10.0, nodata=0)
    scl = np.full((8, 8), 4, dtype=np.uint8)
    scl[:, 0] = 0  # SCL NO_DATA where the bands still have values
    scl[7, 7] = 9
    write(folder / "T32TQM_20230105T101329_SCL_10m.tif", scl, res=10.0)
    r = api.eo_spectral_index(str(folder), "NDVI", mask=["cloud"], quicklook=False)
    assert r.stats.valid_pixels == 64 - 8 - 1
