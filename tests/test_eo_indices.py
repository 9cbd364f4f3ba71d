"""Spectral indices on the bundled Landsat 8 scene against an independent NumPy computation from the raw
bands (TOA reflectance, sun-corrected, from MTL values read here), plus catalogue coverage and refusals."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import rasterio

from tools.eo import api, indices
from tools.errors import InvalidInput, NotFound
from tools.paths import SAMPLE_DIR

L8 = SAMPLE_DIR / "eo" / "landsat8_c1_l1t"
S2 = SAMPLE_DIR / "eo" / "sentinel2_l1c"
SYMBOLS = set(["A", "B", "G", "R", "N", "N2", "RE1", "RE2", "RE3", "WV", "S1", "S2", "T", "T1", "T2"])


def mtl_value(key: str) -> float:
    text = (L8 / "l8_MTL.txt").read_text()
    return float(re.search(rf"^\s*{key}\s*=\s*([-\d.E+]+)", text, re.M).group(1))


def toa(band: int) -> np.ndarray:
    with rasterio.open(L8 / f"l8_B{band}.tif") as src:
        dn = src.read(1).astype(np.float64)
    m, a = mtl_value(f"REFLECTANCE_MULT_BAND_{band}"), mtl_value(f"REFLECTANCE_ADD_BAND_{band}")
    return (m * dn + a) / math.sin(math.radians(mtl_value("SUN_ELEVATION")))


def read(path: str) -> np.ndarray:
    with rasterio.open(path) as src:
        return src.read(1).astype(np.float64)


def reference() -> dict[str, np.ndarray]:
    b, g, r, n, s1, s2 = (toa(i) for i in (2, 3, 4, 5, 6, 7))
    return {
        "NDVI": (n - r) / (n + r),
        "EVI": 2.5 * (n - r) / (n + 6.0 * r - 7.5 * b + 1.0),
        "NDWI": (g - n) / (g + n),
        "NDMI": (n - s1) / (n + s1),
        "NBR": (n - s2) / (n + s2),
        "MNDWI": (g - s1) / (g + s1),
        "NDBI": (s1 - n) / (s1 + n),
    }


def test_seven_indices_equal_numpy_from_raw_bands() -> None:
    ref = reference()
    for name, expected in ref.items():
        result = api.eo_spectral_index("sample://eo/landsat8_c1_l1t", name, quicklook=False)
        got = read(result.output)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6, err_msg=name)
        assert result.stats.valid_pixels == expected.size
        assert result.stats.mean == pytest.approx(float(expected.mean()), abs=1e-6)
    # The published means of the shared data README (computed independently): NDVI 0.5306, NDWI -0.4606.
    assert float(ref["NDVI"].mean()) == pytest.approx(0.5306, abs=1e-4)
    assert float(ref["NDWI"].mean()) == pytest.approx(-0.4606, abs=1e-4)


def test_output_keeps_grid_and_is_tiled_and_compressed() -> None:
    result = api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDVI", quicklook=True, cog=True)
    with rasterio.open(L8 / "l8_B4.tif") as band, rasterio.open(result.output) as out:
        assert out.crs == band.crs and out.transform == band.transform
        assert out.profile["tiled"] and out.compression is not None
        assert out.overviews(1)  # COG has overviews
    assert Path(result.quicklook).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_names_are_unambiguous() -> None:
    assert indices.catalogue()["NDWI"].formula == "(G-N)/(G+N)"  # McFeeters
    assert indices.catalogue()["NDMI"].formula == "(N-S1)/(N+S1)"  # Gao's form
    assert indices.resolve_name("ndwi_gao") == "NDMI"
    assert indices.resolve_name("NDWI_McFeeters") == "NDWI"


def test_catalogue_coverage_is_reported() -> None:
    total = len(indices.catalogue())
    l8 = api.eo_describe_scene("sample://eo/landsat8_c1_l1t")
    s2 = api.eo_describe_scene("sample://eo/sentinel2_l1c")
    assert l8.catalogue_size == total == 280
    # Only SAR (VV/VH/HH/HV), WorldView/MODIS-only bands (Y, G1) and a constant without default (PAR) remain.
    computable = set(indices.search(available=set(api.load_scene(str(L8)).by_symbol()) | set(
        api.load_scene(str(S2)).by_symbol()), computable_only=True))
    left = [n for n in indices.catalogue() if n not in computable]
    for name in left:
        missing = indices.entry(name, SYMBOLS)["missing"]
        assert set(missing) & {"VV", "VH", "HH", "HV", "Y", "G1", "PAR"}, name
    print(f"catalogue {total}: Landsat 8 {l8.computable_indices}, Sentinel-2 {s2.computable_indices}, "
          f"both sensors' bands {len(computable)}")
    assert l8.computable_indices == 214 and s2.computable_indices == 244 and len(computable) == 264


def test_every_landsat_computable_index_evaluates() -> None:
    sc = api.load_scene("sample://eo/landsat8_c1_l1t")
    available = sc.by_symbol()
    rng = np.random.default_rng(0)
    arrays = {s: rng.uniform(0.05, 0.5, (4, 4)) for s in available}
    arrays |= {s: rng.uniform(280, 300, (4, 4)) for s in ("T", "T1", "T2")}
    done = 0
    for name in indices.search(available=set(available), computable_only=True):
        pl = indices.plan(name, lambda s: s in available, sc.platform, None, lambda s: None)
        out = pl.evaluate({s: arrays[s] for s in pl.bands})
        assert out.shape == (4, 4)
        done += 1
    assert done == 214


def test_missing_band_is_named() -> None:
    with pytest.raises(InvalidInput, match=r"needs band RE1 \(Red Edge 1"):
        api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDREI", quicklook=False)
    with pytest.raises(InvalidInput, match="needs band T"):
        api.eo_spectral_index("sample://eo/sentinel2_l1c", "NDVIT", quicklook=False)


def test_unknown_index_suggests_close_names() -> None:
    with pytest.raises(NotFound, match="NDVI") as err:
        api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDVl", quicklook=False)
    assert "Did you mean" in str(err.value)


def test_constants_override_and_search() -> None:
    r = api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "SAVI", constants={"L": 0.5}, quicklook=False)
    n, red = toa(5), toa(4)
    np.testing.assert_allclose(read(r.output), 1.5 * (n - red) / (n + red + 0.5), atol=1e-6)
    with pytest.raises(InvalidInput, match="takes no constant"):
        api.eo_spectral_index("sample://eo/landsat8_c1_l1t", "NDVI", constants={"L": 0.5})
    listing = api.eo_list_indices(domain="water", bands=["G", "N"], limit=100)
    assert "NDWI" in [i.name for i in listing.indices]
    assert all(i.domain == "water" and {"G", "N"} <= set(i.bands) for i in listing.indices)


def test_sentinel2_ndvi_matches_numpy() -> None:
    with rasterio.open(S2 / "B04.tif") as a, rasterio.open(S2 / "B08.tif") as b:
        red, nir = a.read(1).astype(float), b.read(1).astype(float)
    ok = (red > 0) & (nir > 0)
    with np.errstate(invalid="ignore"):
        expected = np.where(ok, ((nir - red) / 1e4) / ((nir + red) / 1e4), np.nan)
    r = api.eo_spectral_index("sample://eo/sentinel2_l1c", "NDVI", quicklook=False)
    np.testing.assert_allclose(read(r.output), expected, atol=1e-6)
    assert r.stats.valid_pixels == int(ok.sum())


def test_block_evaluation_equals_spyndex_compute_index() -> None:
    import spyndex

    rng = np.random.default_rng(1)
    symbols = ["A", "B", "G", "R", "N", "N2", "RE1", "RE2", "RE3", "WV", "S1", "S2"]
    arrays = {s: rng.uniform(0.02, 0.6, (3, 5)) for s in symbols} | {s: rng.uniform(280, 300, (3, 5))
                                                                     for s in ("T", "T1", "T2")}
    checked = 0
    for name in indices.search(available=set(arrays), computable_only=True):
        pl = indices.plan(name, lambda s: True, "SENTINEL_2A", None, lambda s: None)
        if pl.kernels:
            continue
        ours = pl.evaluate({s: arrays[s] for s in pl.bands})
        params = {k: v for k, v in (pl.params | {s: arrays[s] for s in pl.bands}).items()}
        with np.errstate(all="ignore"):
            theirs = np.broadcast_to(np.asarray(spyndex.computeIndex(name, params=params), dtype=float), ours.shape)
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
        checked += 1
    assert checked > 240
