"""Answers computed independently of the tools under test: numpy and rasterio on the bundled files.

Landsat 8 L1 reflectance follows the USGS formula rho = (M*DN + A) / sin(sun elevation) with the
coefficients read here from the MTL file; brightness temperature BT = K2 / ln(K1/L + 1) with
L = ML*DN + AL. Sentinel-2 L1C reflectance is DN / 10000 (processing baseline 02.05, no offset), DN 0
being outside the footprint. Indices are written out from their published formulas.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np

SAMPLES = Path(__file__).resolve().parents[2] / "tools" / "sample_data"
LANDSAT = SAMPLES / "eo" / "landsat8_c1_l1t"
SENTINEL = SAMPLES / "eo" / "sentinel2_l1c"
LANDSAT_PIXEL_M2 = 30.0 * 30.0
SENTINEL_PIXEL_M2 = 900.0 * 900.0


@functools.cache
def mtl() -> dict[str, str]:
    text = (LANDSAT / "l8_MTL.txt").read_text()
    return {m.group(1): m.group(2).strip().strip('"') for m in re.finditer(r"^\s*(\w+)\s*=\s*(.+)$", text, re.M)}


def _read(path: Path) -> np.ndarray:
    import rasterio

    with rasterio.open(path) as ds:
        return ds.read(1).astype(np.float64)


@functools.cache
def landsat_reflectance(band: int) -> np.ndarray:
    m = mtl()
    dn = _read(LANDSAT / f"l8_B{band}.tif")
    mult, add = float(m[f"REFLECTANCE_MULT_BAND_{band}"]), float(m[f"REFLECTANCE_ADD_BAND_{band}"])
    return (mult * dn + add) / math.sin(math.radians(float(m["SUN_ELEVATION"])))


@functools.cache
def landsat_brightness_temperature(band: int = 10) -> np.ndarray:
    m = mtl()
    dn = _read(LANDSAT / f"l8_B{band}.tif")
    radiance = float(m[f"RADIANCE_MULT_BAND_{band}"]) * dn + float(m[f"RADIANCE_ADD_BAND_{band}"])
    return float(m[f"K2_CONSTANT_BAND_{band}"]) / np.log(float(m[f"K1_CONSTANT_BAND_{band}"]) / radiance + 1.0)


@functools.cache
def sentinel_reflectance(band: str) -> np.ndarray:
    dn = _read(SENTINEL / f"{band}.tif")
    out = dn / 10000.0
    out[dn == 0] = np.nan
    return out


def _nd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a - b) / (a + b)


def landsat_index(name: str) -> np.ndarray:
    """A Landsat 8 index from TOA reflectance (B2 blue, B3 green, B4 red, B5 NIR, B6 SWIR1, B7 SWIR2)."""
    r = landsat_reflectance
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "NDVI": lambda: _nd(r(5), r(4)),
            "NDWI": lambda: _nd(r(3), r(5)),
            "MNDWI": lambda: _nd(r(3), r(6)),
            "NDMI": lambda: _nd(r(5), r(6)),
            "NBR": lambda: _nd(r(5), r(7)),
            "NDBI": lambda: _nd(r(6), r(5)),
            "EVI": lambda: 2.5 * (r(5) - r(4)) / (r(5) + 6.0 * r(4) - 7.5 * r(2) + 1.0),
            "SAVI": lambda: 1.5 * (r(5) - r(4)) / (r(5) + r(4) + 0.5),
        }[name]()


def landsat_lst() -> np.ndarray:
    """Single-channel LST (Artis & Carnahan 1982) from band 10 with NDVI-threshold emissivity (Sobrino 2004).

    eps = 0.979 - 0.035 * red where NDVI < 0.2; 0.99 where NDVI > 0.5; else 0.004 * Pv + 0.986 with
    Pv = ((NDVI - 0.2) / 0.3)^2. LST = BT / (1 + (lambda * BT / rho) * ln(eps)), lambda 10.895 um, rho 14388 um K.
    """
    ndvi = landsat_index("NDVI")
    red = landsat_reflectance(4)
    pv = np.clip((ndvi - 0.2) / 0.3, 0.0, 1.0) ** 2
    eps = np.where(ndvi < 0.2, 0.979 - 0.035 * red, np.where(ndvi > 0.5, 0.99, 0.004 * pv + 0.986))
    bt = landsat_brightness_temperature(10)
    return bt / (1.0 + (10.895 * bt / 14388.0) * np.log(eps))


def sentinel_index(name: str) -> np.ndarray:
    r = sentinel_reflectance
    return {
        "NDVI": lambda: _nd(r("B08"), r("B04")),
        "NDWI": lambda: _nd(r("B03"), r("B08")),
        "NDMI": lambda: _nd(r("B8A"), r("B11")),
        "NBR": lambda: _nd(r("B08"), r("B12")),
    }[name]()


def valid(a: np.ndarray) -> np.ndarray:
    return a[np.isfinite(a)]


def mean(a: np.ndarray) -> float:
    return float(np.mean(valid(a)))


def std(a: np.ndarray) -> float:
    return float(np.std(valid(a)))


def percentile(a: np.ndarray, q: float) -> float:
    return float(np.percentile(valid(a), q))


def share_above(a: np.ndarray, threshold: float) -> float:
    """Percent of valid pixels strictly above `threshold`."""
    v = valid(a)
    return float(100.0 * np.count_nonzero(v > threshold) / v.size)


def area_km2_above(a: np.ndarray, threshold: float, pixel_m2: float) -> float:
    return float(np.count_nonzero(valid(a) > threshold) * pixel_m2 / 1e6)


def band_count(folder: Path) -> int:
    return len(list(folder.glob("*.tif")))
