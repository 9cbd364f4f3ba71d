"""Radiometric calibration of one band, as a function applied block by block.

Landsat Level-1 (USGS Landsat 8-9 Data Users Handbook, section 5): radiance L = M_L*DN + A_L;
TOA reflectance rho = (M_rho*DN + A_rho) / sin(sun elevation); TOA brightness temperature
BT = K2 / ln(K1/L + 1). Landsat Collection-2 Level-2 (LSDS-1619): SR = DN*2.75e-5 - 0.2,
ST = DN*0.00341802 + 149.0 (K), auxiliary ST layers scaled per the guide, or the MTL's own values.
Sentinel-2 L1C/L2A: reflectance = (DN + offset) / 10000, offset -1000 from processing baseline 04.00.
Fill pixels (Landsat DN 0, Sentinel-2 DN 0, ST auxiliary -9999, a file's nodata tag) become NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tools.eo import metadata as md
from tools.eo.scenes import Band, Scene, s2_offset_and_scale
from tools.eo.sensors import ST_AUX_SCALE, THERMAL_K_DEFAULTS
from tools.errors import InvalidInput

QUANTITIES = ("auto", "reflectance", "radiance", "brightness_temperature", "dn")
_L1_RESCALE = ("RADIOMETRIC_RESCALING", "LEVEL1_RADIOMETRIC_RESCALING")
_THERMAL = ("TIRS_THERMAL_CONSTANTS", "LEVEL1_THERMAL_CONSTANTS", "THERMAL_CONSTANTS")


@dataclass
class Calibration:
    """DN -> physical value for one band; `apply` takes the raw block and returns float64 with NaN fills."""

    band: str
    quantity: str
    unit: str
    formula: str
    fill_values: tuple[float, ...] = ()
    fn: Callable[[np.ndarray], np.ndarray] = field(default=lambda a: a.astype(np.float64), repr=False)
    notes: list[str] = field(default_factory=list)

    def apply(self, raw: np.ndarray, nodata: float | None = None) -> np.ndarray:
        out = self.fn(raw)
        fills = set(self.fill_values) | ({nodata} if nodata is not None and not math.isnan(nodata) else set())
        for f in fills:
            bad = raw == f
            if bad.any():
                out[bad] = np.nan
        return out


def _need(scene: Scene, key: str, prefer: tuple[str, ...], what: str) -> float:
    value = md.lookup_float(scene.metadata, key, prefer)
    if value is None:
        raise InvalidInput(
            f"The scene's metadata lacks {key}, needed for {what}.",
            hint="Keep the product's complete MTL file beside the bands, or ask for quantity='dn'.",
        )
    return value


def thermal_constants(scene: Scene, band: Band) -> tuple[float, float, str]:
    """(K1, K2, source) for a Landsat thermal band: the MTL's, else the published sensor constants."""
    n = band.spec.mtl_number or ""
    n = n.removeprefix("ST_B")
    k1 = md.lookup_float(scene.metadata, f"K1_CONSTANT_BAND_{n}", _THERMAL)
    k2 = md.lookup_float(scene.metadata, f"K2_CONSTANT_BAND_{n}", _THERMAL)
    if k1 is not None and k2 is not None:
        return k1, k2, "MTL"
    default = THERMAL_K_DEFAULTS.get((scene.platform, n))
    if default is None:
        raise InvalidInput(f"No K1/K2 thermal constants for {scene.platform} band {n}.",
                           hint="Keep the MTL file (TIRS_THERMAL_CONSTANTS) beside the bands.")
    return default[0], default[1], "Landsat product guide"


def calibration(scene: Scene, band: Band, quantity: str = "auto") -> Calibration:
    """How to turn `band`'s DN into `quantity` for this scene's product."""
    if quantity not in QUANTITIES:
        raise InvalidInput(f"Unknown quantity {quantity!r}.", hint=f"Use one of {', '.join(QUANTITIES)}.")
    spec = band.spec
    if quantity == "dn" or spec.kind == "qa":
        return Calibration(spec.key, "dn", "1", "DN (no scaling)")
    if scene.is_landsat and scene.level == "L1":
        return _landsat_l1(scene, band, quantity)
    if scene.is_landsat:
        return _landsat_l2(scene, band, quantity)
    return _sentinel2(scene, band, quantity)


def _landsat_l1(scene: Scene, band: Band, quantity: str) -> Calibration:
    spec = band.spec
    n = spec.mtl_number
    if spec.kind == "thermal":
        if quantity == "reflectance":
            raise InvalidInput(f"{spec.key} is a thermal band: it has no reflectance.",
                               hint="Ask for brightness_temperature or radiance.")
    elif quantity == "brightness_temperature":
        raise InvalidInput(f"{spec.key} is not a thermal band.", hint="Ask for reflectance or radiance.")
    if quantity == "radiance" or (spec.kind == "pan" and quantity == "auto" and scene.sun_elevation is None):
        ml = _need(scene, f"RADIANCE_MULT_BAND_{n}", _L1_RESCALE, "radiance")
        al = _need(scene, f"RADIANCE_ADD_BAND_{n}", _L1_RESCALE, "radiance")
        return Calibration(spec.key, "radiance", "W/(m2 sr um)", f"L = {ml:g}*DN + {al:g}", (0,),
                           lambda a: a.astype(np.float64) * ml + al)
    if spec.kind == "thermal":
        ml = _need(scene, f"RADIANCE_MULT_BAND_{n}", _L1_RESCALE, "brightness temperature")
        al = _need(scene, f"RADIANCE_ADD_BAND_{n}", _L1_RESCALE, "brightness temperature")
        k1, k2, src = thermal_constants(scene, band)

        def bt(a: np.ndarray) -> np.ndarray:
            rad = a.astype(np.float64) * ml + al
            with np.errstate(divide="ignore", invalid="ignore"):
                return k2 / np.log(k1 / rad + 1.0)

        return Calibration(spec.key, "brightness_temperature", "K",
                           f"BT = {k2:g} / ln({k1:g} / ({ml:g}*DN + {al:g}) + 1)", (0,), bt,
                           [] if src == "MTL" else [f"K1/K2 from the {src} (not in the MTL)."])
    mr = _need(scene, f"REFLECTANCE_MULT_BAND_{n}", _L1_RESCALE, "TOA reflectance")
    ar = _need(scene, f"REFLECTANCE_ADD_BAND_{n}", _L1_RESCALE, "TOA reflectance")
    if scene.sun_elevation is None:
        raise InvalidInput("The MTL lacks SUN_ELEVATION, needed for sun-corrected TOA reflectance.",
                           hint="Keep the complete MTL file beside the bands.")
    s = math.sin(math.radians(scene.sun_elevation))

    scale, offset = mr / s, ar / s

    def toa(a: np.ndarray) -> np.ndarray:
        out = np.multiply(a, scale, dtype=np.float64)
        out += offset
        return out

    return Calibration(spec.key, "reflectance", "1",
                       f"rho = ({mr:g}*DN + {ar:g}) / sin({scene.sun_elevation:g} deg)", (0,), toa)


_L2_SR = ("LEVEL2_SURFACE_REFLECTANCE_PARAMETERS",)
_L2_ST = ("LEVEL2_SURFACE_TEMPERATURE_PARAMETERS",)


def _landsat_l2(scene: Scene, band: Band, quantity: str) -> Calibration:
    spec = band.spec
    if spec.kind == "st_aux":
        scale = ST_AUX_SCALE.get(spec.key, 1.0)
        return Calibration(spec.key, "scaled", "see product guide", f"value = DN*{scale:g}", (-9999,),
                           lambda a: a.astype(np.float64) * scale)
    if spec.kind == "thermal":
        if quantity not in ("auto", "brightness_temperature"):
            raise InvalidInput(f"{spec.key} is Level-2 surface temperature; it has no {quantity}.",
                               hint="Use quantity='auto' (kelvin) or 'dn'.")
        mult = md.lookup_float(scene.metadata, f"TEMPERATURE_MULT_BAND_{spec.key}", _L2_ST) or 0.00341802
        add = md.lookup_float(scene.metadata, f"TEMPERATURE_ADD_BAND_{spec.key}", _L2_ST)
        add = 149.0 if add is None else add
        return Calibration(spec.key, "surface_temperature", "K", f"ST = {mult:g}*DN + {add:g}", (0,),
                           lambda a: a.astype(np.float64) * mult + add)
    if quantity not in ("auto", "reflectance"):
        raise InvalidInput(f"{spec.key} is Level-2 surface reflectance; it has no {quantity}.",
                           hint="Use quantity='auto' or 'reflectance'.")
    n = spec.mtl_number
    mult = md.lookup_float(scene.metadata, f"REFLECTANCE_MULT_BAND_{n}", _L2_SR) if scene.metadata else None
    add = md.lookup_float(scene.metadata, f"REFLECTANCE_ADD_BAND_{n}", _L2_SR) if scene.metadata else None
    if "LEVEL2_SURFACE_REFLECTANCE_PARAMETERS" not in scene.metadata:
        mult, add = None, None  # never take the Level-1 TOA factors for Level-2 data
    mult = 2.75e-05 if mult is None else mult
    add = -0.2 if add is None else add
    return Calibration(spec.key, "surface_reflectance", "1", f"SR = {mult:g}*DN + {add:g}", (0,),
                       lambda a: a.astype(np.float64) * mult + add)


def _sentinel2(scene: Scene, band: Band, quantity: str) -> Calibration:
    spec = band.spec
    if spec.kind == "st_aux":  # AOT, WVP: quantified by 1000
        return Calibration(spec.key, "scaled", "1", "value = DN/1000", (0,), lambda a: a.astype(np.float64) / 1000.0)
    if quantity not in ("auto", "reflectance"):
        raise InvalidInput(f"Sentinel-2 {scene.level} band {spec.key} is reflectance; it has no {quantity}.",
                           hint="Use quantity='auto' or 'reflectance'.")
    offset, quant = s2_offset_and_scale(scene, spec.key)
    kind = "surface_reflectance" if scene.level == "L2A" else "reflectance"
    return Calibration(spec.key, kind, "1", f"rho = (DN + {offset:g}) / {quant:g}", (0,),
                       lambda a: (a.astype(np.float64) + offset) / quant)
