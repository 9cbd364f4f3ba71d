"""Index rasters whose windows hold fill pixels (DN 0), 0/0 and x/0 pixels: values, NaN masks and statistics of
eo_spectral_index against NumPy from the raw bands; block statistics of blocks with NaN, +-inf and integers."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import rasterio

from tools.eo import api, products
from tools.eo.rasters import RunningStats
from tools.paths import SAMPLE_DIR

L8 = SAMPLE_DIR / "eo" / "landsat8_c1_l1t"
BANDS = {"B": 2, "G": 3, "R": 4, "N": 5}
# Reflectance = DN * 2**-14 - 0.25 under a sun at the zenith: exact in float64, so DN 4096 is reflectance 0 and
# DN 4096 -+ k are reflectances of exactly opposite sign (a zero denominator of a normalised difference).
MULT, ADD = "6.103515625E-05", "-0.250000"
ZERO = 4096


def scene_with_edge_pixels(folder: Path) -> Path:
    """The bundled Landsat 8 scene with exact calibration factors, fill pixels in every band and zero
    denominators of NDVI (x/0 and 0/0), NDWI (x/0) and EVI (x/0)."""
    shutil.copytree(L8, folder)
    mtl = folder / "l8_MTL.txt"
    text = mtl.read_text()
    for b in BANDS.values():
        text = re.sub(rf"(REFLECTANCE_MULT_BAND_{b} = ).*", rf"\g<1>{MULT}", text)
        text = re.sub(rf"(REFLECTANCE_ADD_BAND_{b} = ).*", rf"\g<1>{ADD}", text)
    text = re.sub(r"(SUN_ELEVATION = ).*", r"\g<1>90.00000000", text)
    dn = {}
    for s, b in BANDS.items():
        with rasterio.open(folder / f"l8_B{b}.tif") as src:
            dn[s], profile = src.read(1), src.profile
    dn["R"][0:5, 0:40] = 0  # fills
    dn["N"][100:103, 200:260] = 0
    dn["B"][300, 10:20] = 0
    dn["G"][50:52, 500:560] = 0
    dn["R"][200:210, :], dn["N"][200:210, :] = ZERO - 100, ZERO + 100  # NDVI: x/0 -> +-inf
    dn["R"][400, :], dn["N"][400, :] = ZERO, ZERO  # NDVI: 0/0
    dn["G"][210:215, :], dn["N"][210:215, :] = ZERO - 50, ZERO + 50  # NDWI: x/0
    # EVI: N 0.875, R 0, B 0.25 -> 0.875 + 6*0 - 7.5*0.25 + 1 == 0 exactly.
    dn["N"][450, :], dn["R"][450, :], dn["B"][450, :] = ZERO + 14336, ZERO, ZERO + 4096
    for s, b in BANDS.items():
        with rasterio.open(folder / f"l8_B{b}.tif", "w", **profile) as dst:
            dst.write(dn[s], 1)
    mtl.write_text(text)  # after the bands: GDAL deletes a GeoTIFF's _MTL.txt sidecar when it recreates the file
    return folder


def reference(folder: Path, name: str) -> np.ndarray:
    """The index as float32 from the raw DN: fills and +-inf are NaN."""
    mtl = (folder / "l8_MTL.txt").read_text()
    rho = {}
    for s, b in BANDS.items():
        m = float(re.search(rf"REFLECTANCE_MULT_BAND_{b} = (\S+)", mtl).group(1))
        a = float(re.search(rf"REFLECTANCE_ADD_BAND_{b} = (\S+)", mtl).group(1))
        with rasterio.open(folder / f"l8_B{b}.tif") as src:
            d = src.read(1)
        rho[s] = np.where(d == 0, np.nan, d.astype(np.float64) * m + a)
    b, g, r, n = rho["B"], rho["G"], rho["R"], rho["N"]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = {
            "NDVI": (n - r) / (n + r),
            "EVI": 2.5 * (n - r) / (n + 6.0 * r - 7.5 * b + 1.0),
            "SAVI": (1.0 + 1.0) * (n - r) / (n + r + 1.0),
            "NDWI": (g - n) / (g + n),
        }[name].astype(np.float32)
    value[np.isinf(value)] = np.nan
    return value


@pytest.fixture(params=[64, 1024], ids=["blocks64", "blocks1024"])
def block_size(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    from tools.settings import reload_settings

    monkeypatch.setenv("RESEARCH_MCP_EO__BLOCK_SIZE", str(request.param))
    reload_settings()
    if request.param == 64:
        monkeypatch.setattr(products, "_BAND_PIXELS", 64 * 10)  # several row bands per window
    return request.param


@pytest.mark.parametrize("name", ["NDVI", "EVI", "SAVI", "NDWI"])
def test_index_with_fills_and_zero_denominators_equals_numpy(tmp_path: Path, block_size: int, name: str) -> None:
    folder = scene_with_edge_pixels(tmp_path / "scene")
    expected = reference(folder, name)
    result = api.eo_spectral_index(str(folder), name, quicklook=False)
    with rasterio.open(result.output) as src:
        got = src.read(1)
    assert got.dtype == np.float32 and got.shape == expected.shape
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
    assert np.isfinite(got[~nan]).all()
    assert float(np.abs(got[~nan].astype(np.float64) - expected[~nan]).max()) <= 1e-6
    fills = {"NDVI": 5 * 40 + 3 * 60, "EVI": 5 * 40 + 3 * 60 + 10, "SAVI": 5 * 40 + 3 * 60, "NDWI": 3 * 60 + 2 * 60}
    if name == "SAVI":  # N + R + 1 > 0 everywhere: only the fills
        assert nan.sum() == fills[name]
    else:  # the zero denominators are NaN too
        assert nan.sum() > fills[name]
    if name == "NDVI":
        assert nan[200:210].all() and nan[400].all()
    if name == "EVI":
        assert nan[450].all()
    if name == "NDWI":
        assert nan[210:215].all()
    v = expected[~nan].astype(np.float64)
    assert result.stats.valid_pixels == v.size
    assert result.stats.nodata_pixels == nan.sum()
    assert (result.stats.min, result.stats.max) == (v.min(), v.max())
    assert result.stats.mean == pytest.approx(v.mean(), rel=1e-9, abs=1e-12)
    assert result.stats.std == pytest.approx(v.std(), rel=1e-6)


def merged(blocks: list[np.ndarray], **kw: object) -> RunningStats:
    st = RunningStats()
    for b in blocks:
        st.merge(RunningStats.summarize(b, **kw))
    return st


def test_block_statistics_skip_nan_and_inf() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(0.3, 0.2, (6, 50, 40)).astype(np.float32)
    a[0, 3, 4], a[1, 0, 0], a[2, 7, 1] = np.nan, np.inf, -np.inf
    a[3] = np.nan  # a block with no finite value
    st = merged(list(a))
    v = a[np.isfinite(a)].astype(np.float64)
    assert (st.count, st.total) == (v.size, a.size)
    assert (st.min, st.max) == (v.min(), v.max())
    assert st.mean == pytest.approx(v.mean(), rel=1e-12)
    assert st.std == pytest.approx(v.std(), rel=1e-6)


def test_block_statistics_with_given_bounds_equal_computed_ones() -> None:
    rng = np.random.default_rng(8)
    block = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    scratch = np.empty(block.size, np.float32)
    plain = RunningStats.summarize(block)
    given = RunningStats.summarize(block, all_finite=True, scratch=scratch,
                                   bounds=(np.minimum.reduce(block, axis=None), np.maximum.reduce(block, axis=None)))
    assert plain == given
    assert plain[4:] == (float(block.min()), float(block.max()))


def test_block_statistics_of_integers_are_exact() -> None:
    block = np.array([[1, 2], [3, 250]], dtype=np.uint8)  # a mean of 64 would wrap around in uint8
    size, n, mean, m2, lo, hi = RunningStats.summarize(block)
    v = block.astype(np.float64)
    assert (size, n, lo, hi) == (4, 4, 1.0, 250.0)
    assert mean == v.mean() and m2 == pytest.approx(((v - v.mean()) ** 2).sum(), rel=1e-15)
