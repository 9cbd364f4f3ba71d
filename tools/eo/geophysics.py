"""Geophysical parameters from reflectance and brightness temperature, each with its published formula.

Every function works on NumPy blocks with NaN for nodata and is elementwise, so it runs window by window.
"""

from __future__ import annotations

import numpy as np

from tools.errors import InvalidInput

# Second radiation constant rho = h*c/k_B = 1.438e-2 m K, in um K (Planck's law; Artis & Carnahan 1982).
RHO_UM_K = 14388.0

# Sobrino, Jimenez-Munoz & Paolini (2004), RSE 90:434-440, NDVI thresholds method (NDVI^THM):
# NDVI < 0.2: bare soil, eps = 0.979 - 0.035 * red; 0.2 <= NDVI <= 0.5: eps = 0.004 * Pv + 0.986;
# NDVI > 0.5: vegetation, eps = 0.99; Pv = ((NDVI - 0.2) / (0.5 - 0.2))^2 (Carlson & Ripley 1997).
SOBRINO_2004 = "Sobrino et al. 2004, RSE 90:434-440 (NDVI thresholds method)"

# Jimenez-Munoz, Sobrino, Skokovic, Mattar & Cristobal (2014), IEEE GRSL 11(10):1840-1843, split-window
# for Landsat-8 TIRS bands 10/11: Ts = T10 + c1(T10-T11) + c2(T10-T11)^2 + c0 + (c3 + c4 w)(1 - eps)
# + (c5 + c6 w) d_eps, with eps = (eps10 + eps11)/2, d_eps = eps10 - eps11, w in g/cm2.
SPLIT_WINDOW_JM2014 = (-0.268, 1.378, 0.183, 54.30, -2.238, -129.20, 16.40)
# Band emissivities of soil and vegetation for TIRS 10/11 (Yu, Guo & Wu 2014, Remote Sens. 6:9829-9852).
TIRS_EMISSIVITY = {"soil": (0.971, 0.977), "vegetation": (0.987, 0.989)}

# USGS FIREMON dNBR severity classes (Key & Benson 2006, RMRS-GTR-164-CD, LA-1 to LA-51).
DNBR_CLASSES = [
    (-np.inf, -0.251, 1, "enhanced regrowth, high"), (-0.251, -0.101, 2, "enhanced regrowth, low"),
    (-0.101, 0.099, 3, "unburned"), (0.099, 0.269, 4, "low severity"),
    (0.269, 0.439, 5, "moderate-low severity"), (0.439, 0.659, 6, "moderate-high severity"),
    (0.659, np.inf, 7, "high severity"),
]


def proportion_vegetation(ndvi: np.ndarray, ndvi_soil: float, ndvi_veg: float, exponent: float = 2.0) -> np.ndarray:
    """Pv = ((NDVI - NDVIs)/(NDVIv - NDVIs))^k clipped to [0, 1] (k=2: Carlson & Ripley 1997)."""
    if not ndvi_veg > ndvi_soil:
        raise InvalidInput(f"ndvi_veg ({ndvi_veg}) must exceed ndvi_soil ({ndvi_soil}).",
                           hint="Typical values: 0.2 and 0.5 (emissivity), 0.05-0.2 and 0.8-0.9 (FVC).")
    with np.errstate(invalid="ignore"):
        return np.clip((ndvi - ndvi_soil) / (ndvi_veg - ndvi_soil), 0.0, 1.0) ** exponent


def emissivity_sobrino2004(ndvi: np.ndarray, red: np.ndarray, ndvi_soil: float = 0.2,
                           ndvi_veg: float = 0.5) -> np.ndarray:
    """Broadband thermal emissivity by the NDVI thresholds method of Sobrino et al. (2004)."""
    pv = proportion_vegetation(ndvi, ndvi_soil, ndvi_veg)
    eps = 0.004 * pv + 0.986
    with np.errstate(invalid="ignore"):
        eps = np.where(ndvi < ndvi_soil, 0.979 - 0.035 * red, eps)
        eps = np.where(ndvi > ndvi_veg, 0.99, eps)
    eps[np.isnan(ndvi)] = np.nan
    return eps


def emissivity_tirs(ndvi: np.ndarray, band: int, ndvi_soil: float = 0.2, ndvi_veg: float = 0.5) -> np.ndarray:
    """TIRS band-10/11 emissivity: eps = eps_v*Pv + eps_s*(1 - Pv) (NDVI-THM, values of Yu et al. 2014)."""
    i = 0 if band == 10 else 1
    es, ev = TIRS_EMISSIVITY["soil"][i], TIRS_EMISSIVITY["vegetation"][i]
    pv = proportion_vegetation(ndvi, ndvi_soil, ndvi_veg)
    return ev * pv + es * (1.0 - pv)


def single_channel_lst(bt: np.ndarray, emissivity: np.ndarray, wavelength_um: float) -> np.ndarray:
    """LST = BT / (1 + (lambda*BT/rho) * ln(eps)) (Artis & Carnahan 1982), rho = 14388 um K."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return bt / (1.0 + (wavelength_um * bt / RHO_UM_K) * np.log(emissivity))


def split_window_lst(t10: np.ndarray, t11: np.ndarray, eps10: np.ndarray, eps11: np.ndarray,
                     water_vapour: float) -> np.ndarray:
    """Split-window LST of Jimenez-Munoz et al. (2014) for Landsat-8/9 TIRS (kelvin in, kelvin out)."""
    if not 0.0 <= water_vapour <= 6.5:
        raise InvalidInput(f"water_vapour {water_vapour} g/cm2 is outside the algorithm's range (0-6).",
                           hint="Give the atmospheric water vapour content in g/cm2 (e.g. from a reanalysis).")
    c0, c1, c2, c3, c4, c5, c6 = SPLIT_WINDOW_JM2014
    d = t10 - t11
    eps = 0.5 * (eps10 + eps11)
    deps = eps10 - eps11
    w = water_vapour
    return t10 + c1 * d + c2 * d * d + c0 + (c3 + c4 * w) * (1.0 - eps) + (c5 + c6 * w) * deps


def surface_radiance(trad: np.ndarray, urad: np.ndarray, drad: np.ndarray, atran: np.ndarray,
                     emis: np.ndarray) -> np.ndarray:
    """Surface-leaving radiance from Collection-2 Level-2 radiance layers (Cook et al. 2014; LSDS-1619):
    Ls = (TRAD - URAD)/(ATRAN*EMIS) - (1 - EMIS)/EMIS * DRAD."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (trad - urad) / (atran * emis) - (1.0 - emis) / emis * drad


def radiance_temperature(ls: np.ndarray, k1: float, k2: float) -> np.ndarray:
    """T = K2 / ln(K1/Ls + 1); NaN where Ls <= 0 (no temperature inverts a non-positive radiance)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(ls > 0, k2 / np.log(k1 / np.where(ls > 0, ls, 1.0) + 1.0), np.nan)
    t[~np.isfinite(t)] = np.nan
    return t


def radiance_layer_lst(trad: np.ndarray, urad: np.ndarray, drad: np.ndarray, atran: np.ndarray,
                       emis: np.ndarray, k1: float, k2: float) -> np.ndarray:
    """LST from Collection-2 Level-2 radiance layers: `radiance_temperature(surface_radiance(...))`."""
    return radiance_temperature(surface_radiance(trad, urad, drad, atran, emis), k1, k2)


def fvc(ndvi: np.ndarray, ndvi_soil: float, ndvi_veg: float, method: str = "linear") -> np.ndarray:
    """Fractional vegetation cover: linear (Gutman & Ignatov 1998) or squared (Carlson & Ripley 1997)."""
    exponent = {"linear": 1.0, "squared": 2.0}.get(method)
    if exponent is None:
        raise InvalidInput(f"Unknown FVC method {method!r}.", hint="Use 'linear' or 'squared'.")
    return proportion_vegetation(ndvi, ndvi_soil, ndvi_veg, exponent)


def lai_from_evi(evi: np.ndarray) -> np.ndarray:
    """LAI = 3.618*EVI - 0.118, floored at 0 (Boegh et al. 2002, RSE 79:329-343)."""
    return np.maximum(3.618 * evi - 0.118, 0.0, where=np.isfinite(evi), out=np.full_like(evi, np.nan))


def lai_from_savi(savi: np.ndarray) -> np.ndarray:
    """LAI = -ln((0.69 - SAVI)/0.59)/0.91 with SAVI(L=0.5), 6 where SAVI >= 0.687 and 0 below 0.1
    (Bastiaanssen 1998 SEBAL; Allen et al. 2007 METRIC, J. Irrig. Drain. Eng. 133:380-394)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        lai = -np.log((0.69 - savi) / 0.59) / 0.91
        lai = np.where(savi >= 0.687, 6.0, lai)
        lai = np.where(savi < 0.1, 0.0, lai)
    lai[np.isnan(savi)] = np.nan
    return lai


def albedo_liang(blue: np.ndarray, red: np.ndarray, nir: np.ndarray, swir1: np.ndarray,
                 swir2: np.ndarray) -> np.ndarray:
    """Shortwave broadband albedo, Liang (2001) RSE 76:213-238 (TM/ETM+ bands 1, 3, 4, 5, 7):
    a = 0.356*blue + 0.130*red + 0.373*nir + 0.085*swir1 + 0.072*swir2 - 0.0018."""
    return 0.356 * blue + 0.130 * red + 0.373 * nir + 0.085 * swir1 + 0.072 * swir2 - 0.0018


def dnbr_class(dnbr: np.ndarray) -> np.ndarray:
    """Severity class 1-7 (DNBR_CLASSES) per pixel, 0 for nodata."""
    out = np.zeros(dnbr.shape, dtype=np.uint8)
    for lo, hi, code, _ in DNBR_CLASSES:
        with np.errstate(invalid="ignore"):
            out[(dnbr >= lo) & (dnbr < hi)] = code
    return out


def fit_edges(ndvi_bins: np.ndarray, tmax: np.ndarray, tmin: np.ndarray, counts: np.ndarray,
              min_count: int = 10) -> tuple[tuple[float, float], tuple[float, float], int]:
    """Dry edge Tmax = a + b*NDVI and wet edge Tmin = a' + b'*NDVI by least squares over NDVI bins
    (Sandholt, Rasmussen & Andersen 2002, RSE 79:213-224)."""
    ok = (counts >= min_count) & np.isfinite(tmax) & np.isfinite(tmin)
    if ok.sum() < 3:
        raise InvalidInput("Too few NDVI bins with enough pixels to fit the dry and wet edges.",
                           hint="Use a larger area with a range of vegetation cover, or lower min_count.")
    b_dry, a_dry = np.polyfit(ndvi_bins[ok], tmax[ok], 1)
    b_wet, a_wet = np.polyfit(ndvi_bins[ok], tmin[ok], 1)
    return (float(a_dry), float(b_dry)), (float(a_wet), float(b_wet)), int(ok.sum())


def tvdi(ndvi: np.ndarray, lst: np.ndarray, dry: tuple[float, float], wet: tuple[float, float]) -> np.ndarray:
    """TVDI = (Ts - Tmin(NDVI)) / (Tmax(NDVI) - Tmin(NDVI)), clipped to [0, 1] (Sandholt et al. 2002)."""
    tmax = dry[0] + dry[1] * ndvi
    tmin = wet[0] + wet[1] * ndvi
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.clip((lst - tmin) / (tmax - tmin), 0.0, 1.0)
    out[~np.isfinite(lst) | ~np.isfinite(ndvi)] = np.nan
    return out
