"""Scene detection and band mapping from file names and metadata; QA bit and SCL class decoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api, masks
from tools.errors import InvalidInput


def touch(path: Path) -> None:
    with rasterio.open(path, "w", driver="GTiff", width=4, height=4, count=1, dtype="uint16", crs="EPSG:32633",
                       transform=from_origin(0, 40, 10, 10)) as dst:
        dst.write(np.full((4, 4), 7000, dtype="uint16"), 1)


def test_landsat7_c2_l1_from_names_only(tmp_path: Path) -> None:
    stem = "LE07_L1TP_042034_20030610_20200915_02_T1"
    for key in ("B1", "B2", "B3", "B4", "B5", "B6_VCID_1", "B6_VCID_2", "B7", "B8", "QA_PIXEL"):
        touch(tmp_path / f"{stem}_{key}.TIF")
    d = api.eo_describe_scene(str(tmp_path))
    assert (d.product, d.platform, d.sensor, d.quality_layer) == ("landsat-c2-l1", "LANDSAT_7", "ETM", "qa_pixel")
    rows = {b.key: b for b in d.bands}
    assert rows["B4"].common_name == "nir" and rows["B4"].spyndex_symbols == ["N"]
    assert rows["B6_VCID_1"].spyndex_symbols == ["T"] and rows["B8"].kind == "pan"
    assert any("No MTL" in n for n in d.notes)
    with pytest.raises(InvalidInput, match="lacks REFLECTANCE_MULT_BAND_4"):
        api.eo_spectral_index(str(tmp_path), "NDVI")


def test_sentinel2_names_and_landsat_pre_collection_names(tmp_path: Path) -> None:
    s2 = tmp_path / "S2A_MSIL1C_20170729T153601_N0205_R111_T19UDP_20170729T153557.SAFE"
    s2.mkdir()
    for key in ("B02", "B03", "B04", "B08", "B8A", "B11", "B12"):
        touch(s2 / f"T19UDP_20170729T153601_{key}.jp2".replace(".jp2", ".tif"))
    d = api.eo_describe_scene(str(s2))
    assert (d.product, d.platform, d.processing_baseline) == ("sentinel-2-l1c", "SENTINEL_2A", "02.05")
    assert {b.key: b.spyndex_symbols for b in d.bands}["B8A"] == ["N2"]
    sample = api.eo_describe_scene("sample://eo/landsat8_c1_l1t/l8_MTL.txt")  # a metadata file names its scene
    assert sample.product == "landsat-c1-l1" and sample.sun_elevation == pytest.approx(64.74360932)
    assert {b.key: b.common_name for b in sample.bands}["B10"] == "thermal"


def test_qa_bits_and_scl_classes() -> None:
    qa = np.array([1, 1 << 6, (1 << 3) | (3 << 8), 1 << 4, (1 << 1), (1 << 5) | (1 << 7), 1 << 2, (3 << 14)])
    got = masks.qa_mask("qa_pixel", qa, ["fill", "clear", "cloud", "cloud_high_confidence", "shadow",
                                         "dilated_cloud", "snow", "water", "cirrus", "cirrus_high_confidence"])
    assert np.flatnonzero(got["fill"]).tolist() == [0]
    assert np.flatnonzero(got["clear"]).tolist() == [1]
    assert np.flatnonzero(got["cloud"]).tolist() == [2] and np.flatnonzero(got["cloud_high_confidence"]).tolist() == [2]
    assert np.flatnonzero(got["shadow"]).tolist() == [3] and np.flatnonzero(got["dilated_cloud"]).tolist() == [4]
    assert np.flatnonzero(got["snow"]).tolist() == [5] and np.flatnonzero(got["water"]).tolist() == [5]
    assert np.flatnonzero(got["cirrus"]).tolist() == [6]
    assert np.flatnonzero(got["cirrus_high_confidence"]).tolist() == [7]
    bqa = np.array([1, 1 << 4, 3 << 7, 3 << 9, 3 << 11, 2 << 5])
    b = masks.qa_mask("qa_bqa", bqa, ["fill", "cloud", "shadow", "snow", "cirrus", "cloud_high_confidence"])
    assert [np.flatnonzero(b[k]).tolist() for k in ("fill", "cloud", "shadow", "snow", "cirrus")] == [
        [0], [1], [2], [3], [4]]
    assert not b["cloud_high_confidence"].any()  # confidence 2 (medium) is not high
    scl = np.arange(12)
    s = masks.qa_mask("scl", scl, ["cloud", "shadow", "cirrus", "snow", "water", "fill"])
    assert np.flatnonzero(s["cloud"]).tolist() == [8, 9] and np.flatnonzero(s["cirrus"]).tolist() == [10]
    assert [np.flatnonzero(s[k]).tolist() for k in ("shadow", "snow", "water", "fill")] == [[3], [11], [6], [0]]
    with pytest.raises(InvalidInput, match="Known classes"):
        masks.check_classes("scl", ["clouds"])
    a = np.array([True, False, True])
    assert masks.combine([a, np.array([False, False, True])], "all").tolist() == [False, False, True]
    assert masks.combine([a, np.array([False, True, False])], "any").tolist() == [True, True, True]
