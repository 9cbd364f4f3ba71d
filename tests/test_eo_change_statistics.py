"""Statistics of |change| and of the positive and negative parts of a change raster, against NumPy, on a
synthetic raster and on a real change map (NDWI - NDVI of the bundled Landsat 8 scene)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.settings import reload_settings

    monkeypatch.setenv("RESEARCH_MCP_EO__BLOCK_SIZE", "64")  # many blocks: exercises merging across windows
    reload_settings()


def read(path: str) -> np.ndarray:
    with rasterio.open(path) as src:
        return src.read(1).astype(np.float64)


def test_abs_and_signed_statistics_equal_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    a = rng.normal(-0.05, 0.3, (130, 150)).astype("float32")
    a[rng.random(a.shape) < 0.05] = np.nan
    a[0, :20] = 0.0
    path = tmp_path / "change.tif"
    with rasterio.open(path, "w", driver="GTiff", width=150, height=130, count=1, dtype="float32", crs="EPSG:32633",
                       transform=from_origin(500000, 4600000, 30, 30), nodata=float("nan")) as dst:
        dst.write(a, 1)
    v = a[np.isfinite(a)].astype(np.float64)
    qs = [5, 50, 90, 99]
    r = api.eo_statistics(str(path), percentiles=qs, bins=10, transform="abs")
    assert r.transform == "abs" and r.percentiles_exact
    for q in qs:
        assert r.percentiles[f"p{q:g}"] == pytest.approx(np.percentile(np.abs(v), q), abs=1e-9)
    assert r.stats.mean == pytest.approx(np.abs(v).mean(), abs=1e-9)
    assert r.stats.min == pytest.approx(0.0) and r.stats.max == pytest.approx(np.abs(v).max())
    assert r.histogram_counts == np.histogram(np.abs(v), bins=10, range=(0.0, np.abs(v).max()))[0].tolist()
    pos, neg = v[v > 0], v[v < 0]
    assert r.positive.pixels == pos.size and r.negative.pixels == neg.size
    assert r.zero_pixels == (v == 0).sum() >= 20
    assert r.positive.sum == pytest.approx(pos.sum(), rel=1e-9) and r.negative.sum == pytest.approx(neg.sum(), rel=1e-9)
    assert r.negative.mean == pytest.approx(neg.mean(), abs=1e-9)
    assert r.negative.std == pytest.approx(neg.std(), abs=1e-9)
    assert (r.negative.min, r.negative.max) == pytest.approx((neg.min(), neg.max()))
    assert r.positive.fraction_of_valid == pytest.approx(pos.size / v.size)
    signed = api.eo_statistics(str(path), percentiles=[50])
    assert signed.transform == "none" and signed.percentiles["p50"] == pytest.approx(np.percentile(v, 50), abs=1e-9)
    assert signed.positive == r.positive  # the signed parts describe the raw values whatever the transform


def test_abs_percentiles_of_a_real_change_map() -> None:
    ndvi = api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDVI", quicklook=False)
    ndwi = api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDWI", quicklook=False)
    ch = api.eo_change(ndvi.output, ndwi.output, quicklook=False)
    d = read(ch.output)
    d = d[np.isfinite(d)]
    r = api.eo_statistics(ch.output, percentiles=[10, 50, 95], transform="abs")
    for q in (10, 50, 95):
        assert r.percentiles[f"p{q:g}"] == pytest.approx(np.percentile(np.abs(d), q), abs=1e-7)
    assert r.negative.pixels == (d < 0).sum() and r.positive.pixels == (d > 0).sum()
    assert r.negative.mean == pytest.approx(d[d < 0].mean(), abs=1e-7)
    assert r.negative.pixels / d.size > 0.99  # NDWI (McFeeters) lies below NDVI on this vegetated crop
