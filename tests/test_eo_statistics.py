"""Statistics, areas, zonal statistics, change and trends against NumPy/SciPy and hand-computed values."""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from scipy import stats as sps

from tools.eo import api, trends


def write(path: Path, data: np.ndarray, crs: str = "EPSG:32633", res: float = 30.0, x0: float = 500000.0,
          y0: float = 4600000.0, nodata: float | None = None) -> str:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[1], height=data.shape[0], count=1,
                       dtype=data.dtype, crs=crs, transform=from_origin(x0, y0, res, res), nodata=nodata) as dst:
        dst.write(data, 1)
    return str(path)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.settings import reload_settings

    monkeypatch.setenv("RESEARCH_MCP_EO__BLOCK_SIZE", "64")  # many blocks: exercises merging across windows
    reload_settings()


def test_statistics_equal_numpy(tmp_path: Path, small_blocks: None) -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(0.4, 0.2, (150, 170)).astype("float32")
    a[rng.random(a.shape) < 0.1] = np.nan
    a[:3, :3] = -9999
    path = write(tmp_path / "x.tif", np.where(np.isnan(a), -9999, a).astype("float32"), nodata=-9999)
    v = a[np.isfinite(a) & (a != -9999)].astype(np.float64)
    r = api.eo_statistics(path, percentiles=[0, 1, 5, 33.3, 50, 95, 100], bins=10)
    assert r.stats.valid_pixels == v.size
    assert r.stats.mean == pytest.approx(v.mean(), rel=1e-9)
    assert r.stats.std == pytest.approx(v.std(), rel=1e-9)
    assert (r.stats.min, r.stats.max) == (v.min(), v.max())
    assert r.percentiles_exact
    for q in (0, 1, 5, 33.3, 50, 95, 100):
        assert r.percentiles[f"p{q:g}"] == pytest.approx(np.percentile(v, q), abs=1e-12)
    counts, edges = np.histogram(v, bins=10, range=(v.min(), v.max()))
    assert r.histogram_counts == counts.tolist()
    np.testing.assert_allclose(r.histogram_edges, edges)
    mask = np.zeros(a.shape, dtype="uint8")
    mask[:, :85] = 1
    m = write(tmp_path / "m.tif", mask)
    rm = api.eo_statistics(path, exclude=m, percentiles=[50])
    keep = np.isfinite(a) & (a != -9999) & (mask == 0)
    assert rm.stats.valid_pixels == int(keep.sum())
    assert rm.percentiles["p50"] == pytest.approx(np.median(a[keep].astype(float)), abs=1e-12)


def test_area_projected_and_geographic(tmp_path: Path) -> None:
    a = np.arange(100, dtype="float32").reshape(10, 10) / 100.0
    a[0, 0] = np.nan
    r = api.eo_area(write(tmp_path / "p.tif", a, res=20.0), [api.AreaRule(op=">", value=0.5),
                                                             api.AreaRule(op="<=", value=0.5)])
    assert r.rows[0].pixels == 49 and r.rows[0].area_m2 == pytest.approx(49 * 400.0)
    assert r.rows[1].pixels == 50
    assert r.valid_area_m2 == pytest.approx(99 * 400.0) and r.total_area_m2 == pytest.approx(100 * 400.0)
    assert r.rows[0].percent_of_valid == pytest.approx(100 * 49 / 99)
    # A 1 x 1 degree cell at the equator on the authalic sphere: R^2 * (pi/180) * sin(1 deg).
    g = write(tmp_path / "g.tif", np.ones((1, 1), dtype="float32"), crs="EPSG:4326", res=1.0, x0=0.0, y0=1.0)
    rg = api.eo_area(g, [api.AreaRule(op="==", value=1)])
    assert rg.rows[0].area_m2 == pytest.approx(6371007.2**2 * math.radians(1) * math.sin(math.radians(1)), rel=1e-9)


def test_zonal_by_polygon_and_by_zone_raster(tmp_path: Path) -> None:
    a = np.arange(400, dtype="float32").reshape(20, 20)
    path = write(tmp_path / "v.tif", a, res=10.0)
    # Polygon covering columns 2..5 and rows 4..9 (pixel centres inside), in the raster's CRS.
    x0, y0 = 500000.0, 4600000.0
    poly = {"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32633"}},
            "features": [{"type": "Feature", "properties": {"name": "field"}, "geometry": {"type": "Polygon",
                          "coordinates": [[[x0 + 20, y0 - 40], [x0 + 60, y0 - 40], [x0 + 60, y0 - 100],
                                           [x0 + 20, y0 - 100], [x0 + 20, y0 - 40]]]}}]}
    r = api.eo_zonal_statistics(path, zones=poly)
    sel = a[4:10, 2:6]
    z = r.zones[0]
    assert z.zone == "field" and z.pixels == sel.size
    assert z.mean == pytest.approx(sel.mean()) and z.max == sel.max() and z.min == sel.min()
    assert z.valid_area_m2 == pytest.approx(sel.size * 100.0)
    zones = np.zeros((20, 20), dtype="uint8")
    zones[:10] = 1
    zones[10:, 10:] = 7
    zr = api.eo_zonal_statistics(path, zone_raster=write(tmp_path / "z.tif", zones, res=10.0))
    assert [z.zone for z in zr.zones] == ["1", "7"]
    assert zr.zones[0].mean == pytest.approx(a[:10].mean())
    assert zr.zones[1].std == pytest.approx(a[10:, 10:].std())


def test_change_resamples_20m_onto_10m(tmp_path: Path) -> None:
    before = write(tmp_path / "b10.tif", np.full((20, 20), 0.2, dtype="float32"), res=10.0)
    coarse = np.full((10, 10), 0.5, dtype="float32")
    coarse[:5] = 0.1
    after = write(tmp_path / "a20.tif", coarse, res=20.0)
    r = api.eo_change(before, after, resampling="nearest", threshold=0.2, quicklook=False)
    assert r.resampled
    with rasterio.open(r.output) as src:
        d = src.read(1)
        assert src.res == (10.0, 10.0) and d.shape == (20, 20)
    np.testing.assert_allclose(d[:10], -0.1, atol=1e-7)
    np.testing.assert_allclose(d[10:], 0.3, atol=1e-7)
    assert r.increase_area_m2 == pytest.approx(200 * 100.0)
    assert r.decrease_area_m2 == 0.0


def hand_mk(y: np.ndarray) -> tuple[float, float, float]:
    """Mann-Kendall S, Var(S) with the tie correction, and Z, written out pair by pair."""
    y = y[np.isfinite(y)]
    n = len(y)
    s = sum(np.sign(y[j] - y[i]) for i, j in combinations(range(n), 2))
    _, counts = np.unique(y, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in counts)) / 18.0
    z = (s - 1) / math.sqrt(var) if s > 0 else (s + 1) / math.sqrt(var) if s < 0 else 0.0
    return float(s), var, z


def test_trend_functions_against_scipy_and_hand_values() -> None:
    rng = np.random.default_rng(5)
    t = np.array([2000.0, 2001.5, 2002, 2004, 2005, 2007, 2008.25, 2010])
    y = np.round(rng.normal(0, 1, (60, t.size)) + 0.3 * (t - 2000), 1)  # rounding makes ties
    y[3, 2] = np.nan
    y[4, :6] = np.nan  # fewer than 3 valid dates
    y[7, :] = 1.0  # all tied
    s, var, z, p = trends.mann_kendall(y)
    sen = trends.sen_slope(t, y, max_elements=100)
    ols = trends.ols_slope(t, y)
    for i in range(60):
        ok = np.isfinite(y[i])
        if ok.sum() < 3:
            assert math.isnan(s[i]) and math.isnan(sen[i]) and math.isnan(ols[i])
            continue
        hs, hv, hz = hand_mk(y[i])
        assert s[i] == hs and var[i] == pytest.approx(hv)
        if hv > 0:
            assert z[i] == pytest.approx(hz) and p[i] == pytest.approx(2 * sps.norm.sf(abs(hz)))
        assert sen[i] == pytest.approx(sps.theilslopes(y[i][ok], t[ok]).slope)
        if np.ptp(y[i][ok]) > 0:
            assert ols[i] == pytest.approx(sps.linregress(t[ok], y[i][ok]).slope)
    # Kendall's tau-b relation when the times have no ties: tau_b = S / sqrt(n0 - n1) / sqrt(n0).
    row = y[0]
    tau = sps.kendalltau(t, row).statistic
    n0 = len(t) * (len(t) - 1) / 2
    _, c = np.unique(row, return_counts=True)
    n1 = sum(k * (k - 1) / 2 for k in c)
    assert tau == pytest.approx(s[0] / math.sqrt((n0 - n1) * n0))


def test_trend_tool_per_pixel_and_area_mean(tmp_path: Path, small_blocks: None) -> None:
    rng = np.random.default_rng(9)
    dates = ["2018-07-01", "2016-07-01", "2017-07-01", "2019-07-01", "2020-07-01"]
    years = trends.decimal_years(dates)
    paths, stack = [], []
    for i, yr in enumerate(years):
        a = (0.02 * (yr - 2016) + rng.normal(0, 0.01, (70, 90))).astype("float32")
        paths.append(write(tmp_path / f"d{i}.tif", a))
        stack.append(a)
    r = api.eo_trend(paths, dates)
    order = np.argsort(years)
    cube = np.stack([stack[i] for i in order], axis=-1).astype(float)
    with rasterio.open(r.output) as src:
        sen = src.read(1)
        mkp = src.read(4)
        assert list(src.descriptions) == ["sen_slope", "ols_slope", "mk_z", "mk_p", "mk_s"]
    for (row, col) in [(0, 0), (33, 47), (69, 89)]:
        assert sen[row, col] == pytest.approx(sps.theilslopes(cube[row, col], years[order]).slope, rel=1e-5)
    means = [float(np.mean(a, dtype=np.float64)) for a in stack]
    assert r.area_mean == pytest.approx(means)
    assert r.area_trend["sen_slope"] == pytest.approx(sps.theilslopes(np.array(means)[order], years[order]).slope)
    assert r.area_trend["ols_slope"] == pytest.approx(sps.linregress(years[order], np.array(means)[order]).slope)
    assert 0.0 <= r.significant_fraction <= 1.0 and np.nanmax(mkp) <= 1.0
    x0, y0 = 500000.0, 4600000.0  # region: rows 10..29, columns 5..24 (30 m pixels), in the raster's CRS
    region = {"type": "Polygon", "coordinates": [[[x0 + 150, y0 - 300], [x0 + 750, y0 - 300], [x0 + 750, y0 - 900],
                                                  [x0 + 150, y0 - 900], [x0 + 150, y0 - 300]]]}
    rr = api.eo_trend(paths, dates, region={"type": "Feature", "properties": {}, "geometry": region,
                                            "crs": {"type": "name", "properties": {"name": "EPSG:32633"}}})
    assert rr.area_mean == pytest.approx([float(np.mean(a[10:30, 5:25], dtype=np.float64)) for a in stack])
    with pytest.raises(Exception, match="same date"):
        api.eo_trend(paths[:3], ["2020-01-01", "2020-01-01", "2021-01-01"])


def test_tvdi_and_burn_severity(tmp_path: Path) -> None:
    ndvi = np.tile((0.11 + 0.02 * np.arange(35)).astype("float32"), (40, 1))  # on the 0.02 bins' centres
    lst = (320 - 20 * ndvi + np.tile(np.linspace(-5, 5, 40, dtype="float32")[:, None], (1, 35))).astype("float32")
    r = api.eo_tvdi(write(tmp_path / "n.tif", ndvi), write(tmp_path / "t.tif", lst), bin_width=0.02, min_count=1,
                    quicklook=False)
    # Dry edge: 325 - 20 NDVI (rows with +5), wet edge: 315 - 20 NDVI, as constructed.
    assert r.dry_edge["a"] == pytest.approx(325, abs=1e-3) and r.dry_edge["b"] == pytest.approx(-20, abs=1e-3)
    assert r.wet_edge["a"] == pytest.approx(315, abs=1e-3) and r.wet_edge["b"] == pytest.approx(-20, abs=1e-3)
    with rasterio.open(r.output) as src:
        tv = src.read(1)
    np.testing.assert_allclose(tv[:, 10], (lst[:, 10] - (315 - 20 * ndvi[:, 10])) / 10.0, atol=1e-4)
    pre = write(tmp_path / "pre.tif", np.full((4, 5), 0.6, dtype="float32"))
    post_v = np.array([[0.6, 0.55, 0.45, 0.3, 0.1]] * 4, dtype="float32")
    post_v[0, 0] = 0.9
    b = api.eo_burn_severity(pre, write(tmp_path / "post.tif", post_v), quicklook=False)
    with rasterio.open(b.classes_output) as src:
        cls = src.read(1)
    # dNBR 0 -> unburned (3), 0.05 -> 3, 0.15 -> low (4), 0.3 -> moderate-low (5), 0.5 -> moderate-high (6),
    # -0.3 -> enhanced regrowth high (1).
    assert cls[1].tolist() == [3, 3, 4, 5, 6] and cls[0, 0] == 1
    assert b.class_areas_m2["moderate-high severity"] == pytest.approx(4 * 900.0)
