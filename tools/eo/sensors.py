"""Band tables per sensor: product band keys, common names and spyndex band symbols.

Common names follow the STAC electro-optical extension (coastal, blue, green, red, rededge1..3, nir,
nir08, nir09, cirrus, swir16 is called swir1 here, swir22 swir2, lwir11 thermal, lwir12 thermal2).
spyndex symbols follow the Awesome Spectral Indices catalogue (A, B, G, R, RE1-3, N, N2, WV, S1, S2,
T, T1, T2). Landsat OLI band 5 (851-879 nm) lies inside spyndex's broad NIR range (760-900 nm), so it
serves as both N and N2; TIRS band 10 serves as both T and T1.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BandSpec:
    key: str  # product band key as it appears in file names: "B4", "SR_B4", "ST_B10", "B8A", "QA_PIXEL", "SCL"
    common: str | None  # common name: "red", "nir", "thermal", "qa_pixel", ...
    symbols: tuple[str, ...] = ()  # spyndex band symbols this band provides
    kind: str = "reflective"  # reflective | thermal | pan | qa | st_aux
    mtl_number: str | None = None  # the band's suffix in MTL keys (RADIANCE_MULT_BAND_<n>)
    resolution: float | None = None  # nominal pixel size (m)


def _b(key: str, common: str | None, symbols: tuple[str, ...] = (), kind: str = "reflective",
       number: str | None = None, res: float | None = 30.0) -> BandSpec:
    return BandSpec(key, common, symbols, kind, number, res)


OLI_TIRS = [
    _b("B1", "coastal", ("A",), number="1"), _b("B2", "blue", ("B",), number="2"),
    _b("B3", "green", ("G",), number="3"), _b("B4", "red", ("R",), number="4"),
    _b("B5", "nir", ("N", "N2"), number="5"), _b("B6", "swir1", ("S1",), number="6"),
    _b("B7", "swir2", ("S2",), number="7"), _b("B8", "pan", (), "pan", "8", 15.0),
    _b("B9", "cirrus", (), number="9"),
    _b("B10", "thermal", ("T", "T1"), "thermal", "10"), _b("B11", "thermal2", ("T2",), "thermal", "11"),
]
TM = [
    _b("B1", "blue", ("B",), number="1"), _b("B2", "green", ("G",), number="2"),
    _b("B3", "red", ("R",), number="3"), _b("B4", "nir", ("N",), number="4"),
    _b("B5", "swir1", ("S1",), number="5"), _b("B6", "thermal", ("T",), "thermal", "6"),
    _b("B7", "swir2", ("S2",), number="7"),
]
ETM = [
    *[b for b in TM if b.key != "B6"],
    _b("B6_VCID_1", "thermal", ("T",), "thermal", "6_VCID_1"),
    _b("B6_VCID_2", "thermal_high_gain", (), "thermal", "6_VCID_2"),
    _b("B8", "pan", (), "pan", "8", 15.0),
]
LANDSAT_L1_QA = [_b("BQA", "qa_bqa", (), "qa"), _b("QA_PIXEL", "qa_pixel", (), "qa"),
                 _b("QA_RADSAT", "qa_radsat", (), "qa")]
ST_AUX = ["ST_TRAD", "ST_URAD", "ST_DRAD", "ST_ATRAN", "ST_EMIS", "ST_EMSD", "ST_CDIST", "ST_QA"]
# Scale and offset of the Collection-2 Level-2 surface temperature auxiliary layers (LSDS-1619 product guide).
ST_AUX_SCALE = {"ST_TRAD": 0.001, "ST_URAD": 0.001, "ST_DRAD": 0.001, "ST_ATRAN": 0.0001, "ST_EMIS": 0.0001,
                "ST_EMSD": 0.0001, "ST_CDIST": 0.01, "ST_QA": 0.01}


def landsat_bands(sensor: str, level: str) -> list[BandSpec]:
    """The band list of a Landsat product; `sensor` in OLI_TIRS/ETM/TM, `level` L1 or L2."""
    base = {"OLI_TIRS": OLI_TIRS, "ETM": ETM, "TM": TM}[sensor]
    if level == "L1":
        return base + LANDSAT_L1_QA
    out: list[BandSpec] = []
    for b in base:
        if b.kind == "reflective":
            out.append(BandSpec("SR_" + b.key, b.common, b.symbols, "reflective", b.mtl_number, 30.0))
    thermal = "B10" if sensor == "OLI_TIRS" else "B6"
    out.append(BandSpec("ST_" + thermal, "thermal", ("T", "T1") if sensor == "OLI_TIRS" else ("T",), "thermal",
                        "ST_" + thermal, 30.0))
    out += [BandSpec(k, k.lower(), (), "st_aux", None, 30.0) for k in ST_AUX]
    out += [BandSpec("QA_PIXEL", "qa_pixel", (), "qa"), BandSpec("QA_RADSAT", "qa_radsat", (), "qa"),
            BandSpec("SR_QA_AEROSOL", "qa_aerosol", (), "qa")]
    return out


MSI = [
    _b("B01", "coastal", ("A",), res=60.0), _b("B02", "blue", ("B",), res=10.0),
    _b("B03", "green", ("G",), res=10.0), _b("B04", "red", ("R",), res=10.0),
    _b("B05", "rededge1", ("RE1",), res=20.0), _b("B06", "rededge2", ("RE2",), res=20.0),
    _b("B07", "rededge3", ("RE3",), res=20.0), _b("B08", "nir", ("N",), res=10.0),
    _b("B8A", "nir08", ("N2",), res=20.0), _b("B09", "nir09", ("WV",), res=60.0),
    _b("B10", "cirrus", (), res=60.0), _b("B11", "swir1", ("S1",), res=20.0),
    _b("B12", "swir2", ("S2",), res=20.0),
]
MSI_L2A_EXTRA = [BandSpec("SCL", "scl", (), "qa", None, 20.0), BandSpec("AOT", "aot", (), "st_aux", None, 10.0),
                 BandSpec("WVP", "wvp", (), "st_aux", None, 10.0)]
# ESA band ids used in MTD XML offsets (RADIO_ADD_OFFSET band_id="3" is B04).
MSI_BAND_ID = {b.key: str(i) for i, b in enumerate(MSI)}

# Landsat TIRS/TM/ETM+ thermal constants used when the metadata lacks them (Landsat product guides).
THERMAL_K_DEFAULTS = {
    ("LANDSAT_8", "10"): (774.8853, 1321.0789), ("LANDSAT_8", "11"): (480.8883, 1201.1442),
    ("LANDSAT_9", "10"): (799.0284, 1329.2405), ("LANDSAT_9", "11"): (475.6581, 1198.3494),
    ("LANDSAT_7", "6_VCID_1"): (666.09, 1282.71), ("LANDSAT_5", "6"): (607.76, 1260.56),
    ("LANDSAT_4", "6"): (671.62, 1284.30),
}
# Effective wavelengths (um) of the thermal bands, for the emissivity-corrected single-channel inversion:
# TIRS B10 10.895; ETM+ B6 11.269 and TM B6 11.457 (Jimenez-Munoz & Sobrino 2003, JGR 108(D22):4688).
THERMAL_WAVELENGTH_UM = {"OLI_TIRS": 10.895, "ETM": 11.269, "TM": 11.457}
