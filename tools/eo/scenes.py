"""Scenes: the `Scene` every eo_ tool works on, and where each band is.

Landsat Collection-1/2 Level-1/2 (from MTL.txt / MTL.json and the USGS file names) and Sentinel-2
L1C/L2A (from MTD_MSIL*.xml, tileInfo.json, the SAFE product name and the ESA file names). Which product a
folder, file list or STAC item holds is decided in `tools.eo.detection`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.eo import metadata as md
from tools.eo.sensors import MSI, MSI_BAND_ID, MSI_L2A_EXTRA, BandSpec, landsat_bands
from tools.errors import InvalidInput, unknown_name

RASTER_SUFFIXES = {".tif", ".tiff", ".jp2", ".vrt"}
LANDSAT_KEY = re.compile(
    r"(?:^|_)(SR_B\d+|ST_B\d+|ST_[A-Z]+|QA_PIXEL|QA_RADSAT|SR_QA_AEROSOL|BQA|B6_VCID_[12]|B\d{1,2})$")
S2_KEY = re.compile(r"(?:^|_)(B0[1-9]|B1[0-2]|B8A|SCL|AOT|WVP)(?:_(\d+)M)?$")
LANDSAT_NAME = re.compile(r"^L([COTEM])0?([4-9])")
S2_PRODUCT = re.compile(r"S2([ABC])_MSI(L1C|L2A)_\d{8}T\d{6}_N(\d{2})(\d{2})")


@dataclass
class Band:
    spec: BandSpec
    path: Path

    @property
    def key(self) -> str:
        return self.spec.key


@dataclass
class Scene:
    """A detected product: its kind, platform, band files and the metadata radiometry needs."""

    root: Path
    product: str  # landsat-c1-l1 | landsat-c2-l1 | landsat-c2-l2 | sentinel-2-l1c | sentinel-2-l2a
    platform: str  # LANDSAT_8, LANDSAT_9, LANDSAT_7, LANDSAT_5, LANDSAT_4, SENTINEL_2A/2B/2C, SENTINEL_2
    sensor: str  # OLI_TIRS | ETM | TM | MSI
    bands: dict[str, Band]
    metadata: md.Groups = field(default_factory=dict)
    metadata_file: Path | None = None
    scene_id: str | None = None
    acquired: str | None = None
    sun_elevation: float | None = None
    cloud_cover: float | None = None
    processing_baseline: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def is_landsat(self) -> bool:
        return self.product.startswith("landsat")

    @property
    def level(self) -> str:
        return self.product.rsplit("-", 1)[-1].upper()

    def by_symbol(self) -> dict[str, Band]:
        """spyndex band symbol -> band, for the bands present."""
        out: dict[str, Band] = {}
        for band in self.bands.values():
            for s in band.spec.symbols:
                out.setdefault(s, band)
        return out

    def by_common(self) -> dict[str, Band]:
        return {b.spec.common: b for b in self.bands.values() if b.spec.common}

    def band(self, name: str) -> Band:
        """A band by product key (B4, SR_B4, B8A), common name (red) or spyndex symbol (R)."""
        n = name.strip()
        for table in (self.bands, self.by_common(), self.by_symbol()):
            if n in table:
                return table[n]
        upper = {k.upper(): v for k, v in self.bands.items()}
        if n.upper() in upper:
            return upper[n.upper()]
        names = list(self.bands) + list(self.by_common()) + list(self.by_symbol())
        raise unknown_name(f"band of this {self.product} scene", n, names)

    def symbol_band(self, symbol: str, for_what: str) -> Band:
        """The band for a spyndex symbol, or an error naming the missing band."""
        table = self.by_symbol()
        if symbol in table:
            return table[symbol]
        from tools.eo.indices import band_description

        raise InvalidInput(
            f"{for_what} needs band {symbol} ({band_description(symbol)}), which this {self.product} "
            f"{self.platform} scene does not have (it has {', '.join(sorted(table)) or 'no spectral bands'}).",
            hint="Choose an index whose bands the sensor provides (eo_list_indices with this scene lists them), "
            "or add the band's file to the scene folder.",
        )


def raster_files(paths: list[Path]) -> list[Path]:
    return [p for p in paths if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES]


def landsat_from_files(root: Path, files: list[Path], rasters: list[Path], mtl: Path | None) -> Scene:
    groups: md.Groups = {}
    if mtl is not None:
        groups = md.read_mtl_json(mtl) if mtl.suffix.lower() == ".json" else md.read_mtl_txt(mtl)
    notes = [] if mtl is not None else [
        "No MTL file: Level-1 calibration constants are unavailable; only Level-2 scaling applies."]
    keyed: dict[str, Path] = {}
    for f in rasters:
        m = LANDSAT_KEY.search(f.stem.upper())
        if m and m.group(1) not in keyed:
            keyed[m.group(1)] = f
    return landsat_scene(root, groups, mtl, keyed, notes)


def _pick(table: dict[str, BandSpec], key: str) -> BandSpec | None:
    """The band of `table` named by product key (SR_B4, B04) or by common name (red)."""
    if key in table:
        return table[key]
    return next((b for b in table.values() if b.common == key.lower()), None)


def landsat_scene(root: Path, groups: md.Groups, metadata_file: Path | None, keyed: dict[str, Path],
                  notes: list[str] | None = None) -> Scene:
    """A Landsat scene from its metadata groups (MTL, or the same keys from a STAC item) and its band files by
    product key or common name; the platform, level and collection come from the metadata, else from the
    USGS file names."""
    files = list(keyed.values())
    name_src = " ".join(f.name.upper() for f in files)
    spacecraft = md.lookup(groups, "SPACECRAFT_ID")
    if spacecraft is None:
        m = next((LANDSAT_NAME.match(f.name.upper()) for f in files if LANDSAT_NAME.match(f.name.upper())), None)
        if m is None:
            raise InvalidInput(f"{root} has no MTL and no Landsat file names.",
                               hint="Keep the MTL file with the bands.")
        spacecraft = f"LANDSAT_{m.group(2)}"
    spacecraft = spacecraft.upper().replace("-", "_")
    sensor_id = (md.lookup(groups, "SENSOR_ID") or "").upper()
    num = spacecraft[-1]
    sensor = "OLI_TIRS" if num in "89" or "OLI" in sensor_id else ("ETM" if num == "7" or "ETM" in sensor_id else "TM")
    collection = md.lookup(groups, "COLLECTION_NUMBER")
    level_txt = (md.lookup(groups, "PROCESSING_LEVEL") or md.lookup(groups, "DATA_TYPE") or "").upper()
    if collection is None:
        collection = "02" if "LANDSAT_METADATA_FILE" in groups or re.search(r"_02_T[12R]", name_src) else "01"
    is_l2 = level_txt.startswith("L2") or "_SR_B" in name_src or re.search(r"(^|_)SR_B\d", name_src) is not None
    level = "L2" if is_l2 else "L1"
    if collection.lstrip("0") == "1" and level == "L2":
        raise InvalidInput(
            "Landsat Collection-1 Level-2 (ESPA) products are not supported.",
            hint="Use Collection-2 Level-2 (SR_B*, ST_B*) or Level-1 products.",
        )
    product = f"landsat-c{collection.lstrip('0') or '1'}-{level.lower()}"
    table = {b.key: b for b in landsat_bands(sensor, level)}
    bands: dict[str, Band] = {}
    for key, f in keyed.items():
        spec = _pick(table, key)
        if spec is not None and spec.key not in bands:
            bands[spec.key] = Band(spec, f)
    if not bands:
        raise InvalidInput(f"No Landsat band files found in {root}.",
                           hint="Band files end in _B<n>.TIF or _SR_B<n>.TIF.")
    return Scene(
        root=root, product=product, platform=spacecraft, sensor=sensor, bands=bands, metadata=groups,
        metadata_file=metadata_file,
        scene_id=md.lookup(groups, "LANDSAT_PRODUCT_ID") or md.lookup(groups, "LANDSAT_SCENE_ID"),
        acquired=md.lookup(groups, "DATE_ACQUIRED"), sun_elevation=md.lookup_float(groups, "SUN_ELEVATION"),
        cloud_cover=md.lookup_float(groups, "CLOUD_COVER"), notes=list(notes or []),
    )


def sentinel2_from_files(root: Path, files: list[Path], rasters: list[Path], s2meta: Path | None,
               tileinfo: Path | None, level: str | None = None) -> Scene:
    groups: md.Groups = {}
    if s2meta is not None:
        groups = md.read_s2_xml(s2meta)
    elif tileinfo is not None:
        groups = md.read_tileinfo(tileinfo)
    keys_res: dict[str, tuple[int, Path]] = {}
    for f in rasters:
        k = S2_KEY.search(f.stem.upper())
        if not k:
            continue
        res = int(k.group(2)) if k.group(2) else 0
        if k.group(1) not in keys_res or res < keys_res[k.group(1)][0]:
            keys_res[k.group(1)] = (res, f)
    fallback = "L2A" if "SCL" in keys_res or any(r for r, _ in keys_res.values()) else "L1C"
    return sentinel2_scene(root, groups, s2meta or tileinfo, {k: f for k, (_, f) in keys_res.items()}, files,
                           level=level, fallback_level=fallback)


def sentinel2_scene(root: Path, groups: md.Groups, metadata_file: Path | None, keyed: dict[str, Path],
                    names: Sequence[Path] = (), level: str | None = None, fallback_level: str = "L1C",
                    notes: list[str] | None = None) -> Scene:
    """A Sentinel-2 scene from its metadata groups ({"S2_PRODUCT": {...}} as read from an MTD XML, a tileInfo.json
    or a STAC item) and its band files by band key (B04, B8A, SCL) or common name. The level is `level` when
    given, else the product name's or product type's, else `fallback_level`."""
    info = groups.get("S2_PRODUCT", {})
    product_name = info.get("PRODUCT_URI") or info.get("productName") or ""
    m = S2_PRODUCT.search(product_name.upper()) or next(
        (x for x in (S2_PRODUCT.search(str(f).upper()) for f in names) if x), None)
    ptype = info.get("PRODUCT_TYPE", "").upper()
    found = (m.group(2) if m else None) or ("L2A" if "2A" in ptype else "L1C" if "1C" in ptype else None)
    if level is not None and found is not None and found != level:
        raise InvalidInput(f"The metadata describe a Sentinel-2 {found} product, not {level}.",
                           hint=f"Use product='sentinel-2-{found.lower()}', or leave product out.")
    level = level or found or fallback_level
    table = {b.key: b for b in MSI + (MSI_L2A_EXTRA if level == "L2A" else [])}
    bands: dict[str, Band] = {}
    for key, path in sorted(keyed.items()):
        spec = _pick(table, key)
        if spec is not None and spec.key not in bands:
            bands[spec.key] = Band(spec, path)
    if not bands:
        raise InvalidInput(f"No Sentinel-2 band files found in {root}.", hint="Band files end in B04 or B04_10m.")
    baseline = info.get("PROCESSING_BASELINE")
    if baseline is None and m:
        baseline = f"{m.group(3)}.{m.group(4)}"
    craft = info.get("SPACECRAFT_NAME", "").upper().replace("-", "_")
    platform = f"SENTINEL_2{m.group(1)}" if m else (craft if re.fullmatch(r"SENTINEL_2[ABC]", craft) else "SENTINEL_2")
    cloud = info.get("Cloud_Coverage_Assessment") or info.get("cloudyPixelPercentage")
    acquired = info.get("PRODUCT_START_TIME") or info.get("timestamp")
    extra = list(notes or [])
    if not baseline:
        extra.append("Processing baseline unknown: no offset applied (as for baselines before 04.00).")
    return Scene(
        root=root, product=f"sentinel-2-{level.lower()}", platform=platform, sensor="MSI", bands=bands,
        metadata=groups, metadata_file=metadata_file, scene_id=product_name or info.get("ITEM_ID") or None,
        acquired=acquired[:10] if acquired else None, cloud_cover=float(cloud) if cloud else None,
        processing_baseline=baseline, notes=extra,
    )


def s2_offset_and_scale(scene: Scene, key: str) -> tuple[float, float]:
    """(add offset, quantification) of a Sentinel-2 band: reflectance = (DN + offset) / quantification.

    From the MTD XML (RADIO_ADD_OFFSET / BOA_ADD_OFFSET, QUANTIFICATION_VALUE) when present; otherwise
    the ESA rule: offset -1000 from processing baseline 04.00 (25 January 2022) on, 0 before; 10000.
    """
    info = scene.metadata.get("S2_PRODUCT", {})
    tag = "BOA_ADD_OFFSET" if scene.product.endswith("l2a") else "RADIO_ADD_OFFSET"
    band_id = MSI_BAND_ID.get(key)
    quant = info.get("BOA_QUANTIFICATION_VALUE" if scene.product.endswith("l2a") else "QUANTIFICATION_VALUE")
    scale = float(quant) if quant else 10000.0
    if band_id is not None and f"{tag}_{band_id}" in info:
        return float(info[f"{tag}_{band_id}"]), scale
    baseline = scene.processing_baseline
    try:
        new = baseline is not None and float(baseline) >= 4.0
    except ValueError:
        new = False
    return (-1000.0 if new else 0.0), scale
