"""Radiometry and temperature: brightness temperature and LST against hand-computed pixels of the bundled
Landsat scene; Collection-2 Level-2 and Sentinel-2 L2A scaling, QA/SCL masks and radiance-layer LST on
small GeoTIFF fixtures written here with known values."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api
from tools.paths import SAMPLE_DIR

L8 = SAMPLE_DIR / "eo" / "landsat8_c1_l1t"
PIXELS = [(0, 0), (100, 200), (301, 450), (602, 626), (250, 13)]


def mtl(key: str) -> float:
    text = (L8 / "l8_MTL.txt").read_text()
    return float(re.search(rf"^\s*{key}\s*=\s*([-\d.E+]+)", text, re.M).group(1))


def dn(band: int, row: int, col: int) -> float:
    with rasterio.open(L8 / f"l8_B{band}.tif") as src:
        return float(src.read(1, window=((row, row + 1), (col, col + 1)))[0, 0])


def pixel(path: str, row: int, col: int, band: int = 1) -> float:
    with rasterio.open(path) as src:
        return float(src.read(band, window=((row, row + 1), (col, col + 1)))[0, 0])


def hand_bt(band: int, row: int, col: int) -> float:
    radiance = mtl(f"RADIANCE_MULT_BAND_{band}") * dn(band, row, col) + mtl(f"RADIANCE_ADD_BAND_{band}")
    return mtl(f"K2_CONSTANT_BAND_{band}") / math.log(mtl(f"K1_CONSTANT_BAND_{band}") / radiance + 1)


def hand_toa(band: int, row: int, col: int) -> float:
    v = mtl(f"REFLECTANCE_MULT_BAND_{band}") * dn(band, row, col) + mtl(f"REFLECTANCE_ADD_BAND_{band}")
    return v / math.sin(math.radians(mtl("SUN_ELEVATION")))


def test_brightness_temperature_and_reflectance_pixels() -> None:
    r = api.eo_radiometric_correction("sample://eo/landsat8_c1_l1t", bands=["red", "B10", "thermal2"])
    assert [b.band for b in r.bands] == ["B4", "B10", "B11"]
    assert [b.units for b in r.bands] == ["1", "K", "K"]
    for row, col in PIXELS:
        assert pixel(r.output, row, col, 1) == pytest.approx(hand_toa(4, row, col), abs=1e-6)
        assert pixel(r.output, row, col, 2) == pytest.approx(hand_bt(10, row, col), abs=1e-4)
        assert pixel(r.output, row, col, 3) == pytest.approx(hand_bt(11, row, col), abs=1e-4)
    # The shared README's independent figure: BT10 mean 286.73 K.
    assert r.bands[1].stats.mean == pytest.approx(286.73, abs=0.01)
    rad = api.eo_radiometric_correction("sample://eo/landsat8_c1_l1t", bands=["B5"], quantity="radiance")
    row, col = PIXELS[1]
    assert pixel(rad.output, row, col) == pytest.approx(
        mtl("RADIANCE_MULT_BAND_5") * dn(5, row, col) + mtl("RADIANCE_ADD_BAND_5"), rel=1e-6)


def test_single_channel_lst_pixels() -> None:
    r = api.eo_land_surface_temperature("sample://eo/landsat8_c1_l1t", quicklook=False)
    assert r.parameters["method"] == "single_channel"
    for row, col in PIXELS:
        red, nir = hand_toa(4, row, col), hand_toa(5, row, col)
        ndvi = (nir - red) / (nir + red)
        if ndvi < 0.2:
            eps = 0.979 - 0.035 * red
        elif ndvi > 0.5:
            eps = 0.99
        else:
            eps = 0.004 * ((ndvi - 0.2) / 0.3) ** 2 + 0.986
        bt = hand_bt(10, row, col)
        lst = bt / (1 + (10.895 * bt / 14388.0) * math.log(eps))
        assert pixel(r.output, row, col) == pytest.approx(lst, abs=1e-3)


def test_split_window_lst_pixels() -> None:
    r = api.eo_land_surface_temperature("sample://eo/landsat8_c1_l1t", method="split_window", water_vapour=1.5,
                                        quicklook=False)
    c0, c1, c2, c3, c4, c5, c6 = -0.268, 1.378, 0.183, 54.30, -2.238, -129.20, 16.40
    for row, col in PIXELS:
        red, nir = hand_toa(4, row, col), hand_toa(5, row, col)
        pv = min(max(((nir - red) / (nir + red) - 0.2) / 0.3, 0), 1) ** 2
        e10 = 0.987 * pv + 0.971 * (1 - pv)
        e11 = 0.989 * pv + 0.977 * (1 - pv)
        t10, t11 = hand_bt(10, row, col), hand_bt(11, row, col)
        d, e, de, w = t10 - t11, (e10 + e11) / 2, e10 - e11, 1.5
        lst = t10 + c1 * d + c2 * d * d + c0 + (c3 + c4 * w) * (1 - e) + (c5 + c6 * w) * de
        assert pixel(r.output, row, col) == pytest.approx(lst, abs=1e-3)


# ----------------------------------------------------------------------------------------- fixtures
def write(path: Path, data: np.ndarray, crs: str = "EPSG:32633", res: float = 30.0, nodata: float | None = None,
          x0: float = 500000.0, y0: float = 4600000.0) -> None:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[1], height=data.shape[0], count=1,
                       dtype=data.dtype, crs=crs, transform=from_origin(x0, y0, res, res), nodata=nodata) as dst:
        dst.write(data, 1)


C2 = "LC09_L2SP_042034_20230610_20230612_02_T1"


def c2_l2_scene(folder: Path, sr_value: int = 20000) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shape = (40, 50)
    for b in range(1, 8):
        a = np.full(shape, sr_value + 500 * b, dtype=np.uint16)
        a[0, :5] = 0  # fill
        write(folder / f"{C2}_SR_B{b}.TIF", a, nodata=0)
    st = np.full(shape, 44000, dtype=np.uint16)
    st[0, :5] = 0
    write(folder / f"{C2}_ST_B10.TIF", st, nodata=0)
    layers = {"TRAD": 9000, "URAD": 1500, "DRAD": 2500, "ATRAN": 8000, "EMIS": 9800}
    for k, v in layers.items():
        a = np.full(shape, v, dtype=np.int16)
        a[0, :5] = -9999
        write(folder / f"{C2}_ST_{k}.TIF", a, nodata=-9999)
    qa = np.full(shape, 1 << 6, dtype=np.uint16)  # clear
    qa[0, :5] = 1  # fill
    qa[10:20, 10:20] = (1 << 3) | (3 << 8)  # cloud, high confidence
    qa[30:35, 0:10] = 1 << 4  # shadow
    write(folder / f"{C2}_QA_PIXEL.TIF", qa, nodata=1)
    meta = {"LANDSAT_METADATA_FILE": {
        "PRODUCT_CONTENTS": {"COLLECTION_NUMBER": "02", "PROCESSING_LEVEL": "L2SP", "LANDSAT_PRODUCT_ID": C2},
        "IMAGE_ATTRIBUTES": {"SPACECRAFT_ID": "LANDSAT_9", "SENSOR_ID": "OLI_TIRS", "DATE_ACQUIRED": "2023-06-10",
                             "SUN_ELEVATION": "60.0"},
        "LEVEL2_SURFACE_REFLECTANCE_PARAMETERS": {f"REFLECTANCE_MULT_BAND_{b}": "2.75E-05" for b in range(1, 8)}
        | {f"REFLECTANCE_ADD_BAND_{b}": "-0.200000" for b in range(1, 8)},
        "LEVEL2_SURFACE_TEMPERATURE_PARAMETERS": {"TEMPERATURE_MULT_BAND_ST_B10": "0.00341802",
                                                  "TEMPERATURE_ADD_BAND_ST_B10": "149.0"},
        "LEVEL1_RADIOMETRIC_RESCALING": {f"REFLECTANCE_MULT_BAND_{b}": "2.0000E-05" for b in range(1, 10)}
        | {f"REFLECTANCE_ADD_BAND_{b}": "-0.100000" for b in range(1, 10)},
        "LEVEL1_THERMAL_CONSTANTS": {"K1_CONSTANT_BAND_10": "799.0284", "K2_CONSTANT_BAND_10": "1329.2405"},
    }}
    (folder / f"{C2}_MTL.json").write_text(json.dumps(meta))
    return folder


def test_c2_l2_scaling_and_qa_mask(tmp_path: Path) -> None:
    scene = c2_l2_scene(tmp_path / "c2")
    d = api.eo_describe_scene(str(scene))
    assert (d.product, d.platform, d.quality_layer) == ("landsat-c2-l2", "LANDSAT_9", "qa_pixel")
    red, nir = 20000 * 2.75e-5 + 500 * 4 * 2.75e-5 - 0.2, (20000 + 500 * 5) * 2.75e-5 - 0.2
    r = api.eo_spectral_index(str(scene), "NDVI", quicklook=False)
    assert pixel(r.output, 5, 5) == pytest.approx((nir - red) / (nir + red), abs=1e-6)
    assert math.isnan(pixel(r.output, 0, 0))  # fill stays nodata
    assert r.stats.valid_pixels == 40 * 50 - 5
    masked = api.eo_spectral_index(str(scene), "NDVI", mask=["cloud", "shadow"], quicklook=False)
    assert masked.stats.valid_pixels == 40 * 50 - 5 - 100 - 50
    assert math.isnan(pixel(masked.output, 15, 15))
    st = api.eo_land_surface_temperature(str(scene), quicklook=False)
    assert st.parameters["method"] == "product"
    assert pixel(st.output, 5, 5) == pytest.approx(44000 * 0.00341802 + 149.0, abs=1e-4)
    m = api.eo_cloud_mask(str(scene), classes=["cloud", "cloud_high_confidence", "shadow"])
    assert m.data_pixels == 40 * 50 - 5
    assert m.class_fractions["cloud"] == pytest.approx(100 / 1995)
    assert m.class_fractions["shadow"] == pytest.approx(50 / 1995)
    assert m.flagged_fraction == pytest.approx(150 / 1995)
    with rasterio.open(m.output) as src:
        a = src.read(1)
    assert a[0, 0] == 255 and a[15, 15] == 1 and a[25, 25] == 0
    both = api.eo_cloud_mask(str(scene), classes=["cloud"], thresholds=[
        api.ThresholdRule(layer="NDVI", op=">", value=0.0)], combine="all")
    assert both.flagged_fraction == pytest.approx(100 / 1995)


def test_radiance_layer_lst(tmp_path: Path) -> None:
    scene = c2_l2_scene(tmp_path / "c2")
    r = api.eo_land_surface_temperature(str(scene), method="radiance_layers", quicklook=False)
    trad, urad, drad, atran, emis = 9.0, 1.5, 2.5, 0.8, 0.98
    ls = (trad - urad) / (atran * emis) - (1 - emis) / emis * drad
    t = 1329.2405 / math.log(799.0284 / ls + 1)
    assert pixel(r.output, 7, 7) == pytest.approx(t, abs=1e-3)
    assert r.parameters["K_source"] == "MTL"
    assert math.isnan(pixel(r.output, 0, 0))


def test_sentinel2_l2a_offset_scl_and_resampling(tmp_path: Path) -> None:
    folder = tmp_path / "S2B_MSIL2A_20230105T101329_N0509_R022_T32TQM_20230105T114000.SAFE"
    img = folder / "GRANULE" / "L2A_T32TQM" / "IMG_DATA"
    img.mkdir(parents=True)
    stem = "T32TQM_20230105T101329"
    red = np.full((20, 20), 1800, dtype=np.uint16)
    nir = np.full((20, 20), 4000, dtype=np.uint16)
    red[0, 0] = 0
    write(img / f"{stem}_B04_10m.tif", red, res=10.0, nodata=0)
    write(img / f"{stem}_B08_10m.tif", nir, res=10.0, nodata=0)
    write(img / f"{stem}_B11_20m.tif", np.full((10, 10), 3000, dtype=np.uint16), res=20.0, nodata=0)
    scl = np.full((10, 10), 4, dtype=np.uint8)
    scl[5:, 5:] = 9  # cloud high probability, 20 m
    write(img / f"{stem}_SCL_20m.tif", scl, res=20.0)
    d = api.eo_describe_scene(str(folder))
    assert (d.product, d.processing_baseline, d.quality_layer) == ("sentinel-2-l2a", "05.09", "scl")
    r = api.eo_spectral_index(str(folder), "NDVI", quicklook=False)
    rr, nn = (1800 - 1000) / 1e4, (4000 - 1000) / 1e4
    assert pixel(r.output, 3, 3) == pytest.approx((nn - rr) / (nn + rr), abs=1e-6)
    assert math.isnan(pixel(r.output, 0, 0))
    m = api.eo_spectral_index(str(folder), "NDMI", mask=["cloud"], quicklook=False)
    assert (m.width, m.height) == (20, 20)  # the 20 m SWIR band is resampled to the 10 m grid
    s1 = (3000 - 1000) / 1e4
    assert pixel(m.output, 2, 2) == pytest.approx((nn - s1) / (nn + s1), abs=1e-6)
    assert math.isnan(pixel(m.output, 15, 15))
    assert m.stats.valid_pixels == 400 - 100  # NDMI does not read the red fill pixel


def test_sentinel2_mtd_offsets_override_the_rule(tmp_path: Path) -> None:
    folder = tmp_path / "l1c"
    folder.mkdir()
    (folder / "MTD_MSIL1C.xml").write_text(
        "<x><PRODUCT_URI>S2A_MSIL1C_20220301T101000_N0400_R022_T32TQM_20220301T120000.SAFE</PRODUCT_URI>"
        "<PROCESSING_BASELINE>04.00</PROCESSING_BASELINE><QUANTIFICATION_VALUE unit=\"none\">10000"
        "</QUANTIFICATION_VALUE><RADIO_ADD_OFFSET band_id=\"3\">-1000</RADIO_ADD_OFFSET>"
        "<RADIO_ADD_OFFSET band_id=\"7\">-900</RADIO_ADD_OFFSET></x>")
    write(folder / "T32TQM_20220301T101000_B04.tif", np.full((8, 8), 2000, dtype=np.uint16), res=10.0)
    write(folder / "T32TQM_20220301T101000_B08.tif", np.full((8, 8), 5000, dtype=np.uint16), res=10.0)
    r = api.eo_spectral_index(str(folder), "NDVI", quicklook=False)
    red, nir = (2000 - 1000) / 1e4, (5000 - 900) / 1e4
    assert r.stats.mean == pytest.approx((nir - red) / (nir + red), abs=1e-6)


def test_mtl_txt_and_json_give_the_same_scene(tmp_path: Path) -> None:
    folder = tmp_path / "l8json"
    folder.mkdir()
    groups: dict[str, dict[str, str]] = {}
    current = None
    for line in (L8 / "l8_MTL.txt").read_text().splitlines():
        k, _, v = (s.strip() for s in line.partition("="))
        if k == "GROUP":
            current = v
            groups.setdefault(v, {})
        elif k not in ("END_GROUP", "END", "") and current:
            groups[current][k] = v.strip('"')
    (folder / "LC08_L1TP_020039_20150804_20170226_01_T1_MTL.json").write_text(json.dumps({"L1_METADATA_FILE": groups}))
    for b in (4, 5):
        (folder / f"LC08_L1TP_020039_20150804_20170226_01_T1_B{b}.TIF").write_bytes((L8 / f"l8_B{b}.tif").read_bytes())
    a = api.eo_spectral_index(str(folder), "NDVI", quicklook=False)
    b = api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDVI", quicklook=False)
    assert a.stats.mean == pytest.approx(b.stats.mean, abs=1e-12)
    assert api.eo_describe_scene(str(folder)).product == "landsat-c1-l1"


def test_list_scenes_in_a_folder(tmp_path: Path) -> None:
    lib = tmp_path / "library"
    c2_l2_scene(lib / "landsat")
    odd = lib / "odd"
    odd.mkdir(parents=True)
    write(odd / "X_B04.tif", np.ones((4, 4), dtype="uint16"))
    listed = api.eo_list_scenes(str(lib))
    assert [(s.product, s.platform) for s in listed.scenes] == [("landsat-c2-l2", "LANDSAT_9")]
    assert "ST_TRAD" in listed.scenes[0].bands and listed.scenes[0].acquired == "2023-06-10"
    assert len(listed.problems) == 1 and "odd" in listed.problems[0]
    samples = api.eo_list_scenes()
    assert {s.path for s in samples.scenes} == {"sample://eo/landsat8_c1_l1t", "sample://eo/sentinel2_l1c"}
