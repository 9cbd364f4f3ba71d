"""FVC, LAI and albedo on the bundled Landsat scene against the cited formulas evaluated here by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rasterio

from tests.test_eo_indices import read, toa
from tools.eo import api


def test_fvc_with_given_and_percentile_thresholds() -> None:
    red, nir = toa(4), toa(5)
    ndvi = (nir - red) / (nir + red)
    r = api.eo_vegetation_parameters("sample://eo/landsat8_c1_l1t", "fvc", ndvi_soil=0.2, ndvi_veg=0.8,
                                     quicklook=False)
    np.testing.assert_allclose(read(r.output), np.clip((ndvi - 0.2) / 0.6, 0, 1), atol=2e-6)
    sq = api.eo_vegetation_parameters("sample://eo/landsat8_c1_l1t", "fvc", method="squared", quicklook=False)
    # Default thresholds: the 5th and 95th percentiles of the scene's NDVI (float32 raster, exact percentiles).
    v = ndvi.astype(np.float32).astype(np.float64)
    assert sq.parameters["ndvi_soil"] == pytest.approx(np.percentile(v, 5), abs=1e-9)
    assert sq.parameters["ndvi_veg"] == pytest.approx(np.percentile(v, 95), abs=1e-9)
    lo, hi = sq.parameters["ndvi_soil"], sq.parameters["ndvi_veg"]
    np.testing.assert_allclose(read(sq.output), np.clip((ndvi - lo) / (hi - lo), 0, 1) ** 2, atol=5e-6)


def test_lai_savi_and_evi() -> None:
    b, red, nir = toa(2), toa(4), toa(5)
    savi = 1.5 * (nir - red) / (nir + red + 0.5)
    r = api.eo_vegetation_parameters("sample://eo/landsat8_c1_l1t", "lai", quicklook=False)
    got = read(r.output)
    for row, col in [(10, 10), (300, 300), (500, 100), (602, 626)]:
        s = savi[row, col]
        expected = 6.0 if s >= 0.687 else 0.0 if s < 0.1 else -math.log((0.69 - s) / 0.59) / 0.91
        assert got[row, col] == pytest.approx(expected, abs=1e-5)
    e = api.eo_vegetation_parameters("sample://eo/landsat8_c1_l1t", "lai", method="evi", quicklook=False)
    evi = 2.5 * (nir - red) / (nir + 6 * red - 7.5 * b + 1)
    np.testing.assert_allclose(read(e.output), np.maximum(3.618 * evi - 0.118, 0), atol=1e-5)


def test_albedo_liang() -> None:
    b, red, nir, s1, s2 = (toa(i) for i in (2, 4, 5, 6, 7))
    r = api.eo_vegetation_parameters("sample://eo/landsat8_c1_l1t", "albedo", quicklook=True)
    expected = 0.356 * b + 0.130 * red + 0.373 * nir + 0.085 * s1 + 0.072 * s2 - 0.0018
    np.testing.assert_allclose(read(r.output), expected, atol=1e-6)
    assert any("TOA" in n for n in r.notes)
    with rasterio.open(r.output) as src:
        assert src.tags()["units"] == "fraction"
