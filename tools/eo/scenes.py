"""Scene detection: which product a folder or file list holds, and where each band is.

Landsat Collection-1/2 Level-1/2 (from MTL.txt / MTL.json and the USGS file names) and Sentinel-2
L1C/L2A (from MTD_MSIL*.xml, tileInfo.json, the SAFE product name and the ESA file names).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.eo import metadata as md
from tools.eo.sensors import MSI, MSI_BAND_ID, MSI_L2A_EXTRA, BandSpec, landsat_bands
from tools.errors import InvalidInput, NotFound, unknown_name
from tools.paths import resolve_input

RASTER_SUFFIXES = {".tif", ".tiff", ".jp2", ".vrt"}
LANDSAT_KEY = re.compile(
    r"(?:^|_)(SR_B\d+|ST_B\d+|ST_[A-Z]+|QA_PIXEL|QA_RADSAT|SR_QA_AEROSOL|BQA|B6_VCID_[12]|B\d{1,2})$")
S2_KEY = re.compile(r"(?:^|_)(B0[1-9]|B1[0-2]|B8A|SCL|AOT|WVP)(?:_(\d+)M)?$")
_LANDSAT_NAME = re.compile(r"^L([COTEM])0?([4-9])")
_S2_PRODUCT = re.compile(r"S2([ABC])_MSI(L1C|L2A)_\d{8}T\d{6}_N(\d{2})(\d{2})")
_MAX_FILES = 500


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


def _raster_files(paths: list[Path]) -> list[Path]:
    return [p for p in paths if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES]


def _gather(inputs: list[Path]) -> tuple[Path, list[Path]]:
    files: list[Path] = []
    root = inputs[0] if inputs[0].is_dir() else inputs[0].parent
    for p in inputs:
        if p.is_dir():
            found = sorted(x for x in p.rglob("*") if x.is_file() and len(x.relative_to(p).parts) <= 6)
            files.extend(found[: _MAX_FILES + 1])
        else:
            files.append(p)
    if len(files) > _MAX_FILES:
        raise InvalidInput(f"The scene holds more than {_MAX_FILES} files.", hint="Point at one product's folder.")
    if len(inputs) == 1 and inputs[0].is_file():
        # A metadata file or one band: take the whole folder it sits in.
        files = sorted(x for x in inputs[0].parent.iterdir() if x.is_file())
    return root, files


PRODUCTS = ("landsat-c1-l1", "landsat-c2-l1", "landsat-c2-l2", "sentinel-2-l1c", "sentinel-2-l2a")


def open_scene(scene: str | list[str], product: str | None = None) -> Scene:
    """Detect the product in a folder, a metadata file, a STAC item JSON, or a list of band files (paths or
    sample:// URIs).

    `product` (one of PRODUCTS) names the product when the files cannot: Sentinel-2 bands with plain names
    (B04.tif, B08.tif) and no MTD XML, tileInfo.json or STAC item beside them. Metadata found beside the
    bands (MTL, MTD XML, tileInfo.json, a STAC item) is read first; a STAC item is used when none of the
    others is there.
    """
    if product is not None and product not in PRODUCTS:
        raise InvalidInput(f"Unknown product {product!r}.", hint=f"Use one of {', '.join(PRODUCTS)}.")
    items = [scene] if isinstance(scene, str) else list(scene)
    if not items:
        raise InvalidInput("No scene was given.", hint="Pass a folder, an MTL file or a list of band files.")
    paths = [resolve_input(s) for s in items]
    from tools.eo import stac

    if len(paths) == 1 and paths[0].is_file() and stac.is_stac_item(paths[0]):
        return _as_product(stac.scene_from_stac_item(paths[0]), product)
    root, files = _gather(paths)
    names = [f.name.upper() for f in files]
    mtl = next((f for f in files if re.search(r"MTL\.(TXT|JSON)$", f.name.upper())), None)
    s2meta = next((f for f in files if re.match(r"MTD_MSIL(1C|2A)\.XML$", f.name.upper())), None)
    tileinfo = next((f for f in files if f.name == "tileInfo.json"), None)
    rasters = _raster_files(files)
    if mtl is None and s2meta is None and tileinfo is None:
        beside = sorted(root.glob("*.json")) if all(p.is_file() for p in paths) else []
        item = next((f for f in [*files, *beside] if f.suffix.lower() == ".json" and stac.is_stac_item(f)), None)
        if item is not None:
            listed = [p for p in paths if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES]
            return _as_product(_only(stac.scene_from_stac_item(item), listed), product)
    if not rasters:
        raise InvalidInput(
            f"No raster files (.tif, .tiff, .jp2) in {root}.",
            hint="Point at a folder holding a Landsat or Sentinel-2 product's band files.",
        )
    if product is not None:
        if product.startswith("landsat"):
            return _as_product(_landsat(root, files, rasters, mtl), product)
        return _as_product(_sentinel2(root, files, rasters, s2meta, tileinfo, product.rsplit("-", 1)[1].upper()),
                           product)
    landsat_named = any(_LANDSAT_NAME.match(n) for n in names)
    s2_named = any(_S2_PRODUCT.search(str(f).upper()) for f in files) or any(
        S2_KEY.search(f.stem.upper()) and f.stem.upper().endswith(("B8A", "B8A_20M", "B12", "B12_20M"))
        for f in rasters)
    if mtl is not None or (landsat_named and s2meta is None and tileinfo is None):
        return _landsat(root, files, rasters, mtl)
    if s2meta is not None or tileinfo is not None or s2_named:
        return _sentinel2(root, files, rasters, s2meta, tileinfo)
    raise InvalidInput(
        f"Cannot tell which product {root} holds: no MTL (Landsat), no MTD_MSIL*.xml or tileInfo.json "
        "(Sentinel-2), no STAC item JSON, and no band file names of either.",
        hint="Name the product (product='sentinel-2-l2a', 'sentinel-2-l1c', 'landsat-c2-l2'...), keep the "
        "product's metadata file or STAC item beside its bands, or use the USGS/ESA file names "
        "(..._B4.TIF, ..._SR_B4.TIF, ..._B04.jp2, ..._B04_10m.jp2).",
    )


def _as_product(scene: Scene, product: str | None) -> Scene:
    if product is not None and scene.product != product:
        raise InvalidInput(
            f"product={product!r} was given, but the files and metadata describe a {scene.product} scene.",
            hint="Drop the product argument, or point at the scene that product names.",
        )
    return scene


def _only(scene: Scene, listed: list[Path]) -> Scene:
    """The scene restricted to the band files a caller listed (all of them when none was listed)."""
    if not listed:
        return scene
    wanted = {p.resolve() for p in listed}
    bands = {k: b for k, b in scene.bands.items() if b.path.resolve() in wanted}
    unknown = wanted - {b.path.resolve() for b in bands.values()}
    if unknown:
        raise InvalidInput(
            f"{', '.join(sorted(p.name for p in unknown))} is not an asset of the STAC item beside it.",
            hint="List only the item's band files, or pass the item JSON itself.",
        )
    scene.bands = bands
    return scene


def _landsat(root: Path, files: list[Path], rasters: list[Path], mtl: Path | None) -> Scene:
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
        m = next((_LANDSAT_NAME.match(f.name.upper()) for f in files if _LANDSAT_NAME.match(f.name.upper())), None)
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


def _sentinel2(root: Path, files: list[Path], rasters: list[Path], s2meta: Path | None,
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
    m = _S2_PRODUCT.search(product_name.upper()) or next(
        (x for x in (_S2_PRODUCT.search(str(f).upper()) for f in names) if x), None)
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


def find_scenes(folder: Path, max_depth: int = 4, limit: int = 100) -> list[tuple[Path, Scene | str]]:
    """Every product folder under `folder` (one with an MTL, MTD XML, tileInfo.json or band files)."""
    if not folder.is_dir():
        raise NotFound(f"{folder} is not a folder.", hint="Pass a folder that holds scene folders.")
    out: list[tuple[Path, Scene | str]] = []
    candidates = [folder, *sorted(
        d for d in folder.rglob("*") if d.is_dir() and len(d.relative_to(folder).parts) <= max_depth)]
    seen: set[Path] = set()
    for d in candidates:
        if len(out) >= limit:
            break
        if any(d.is_relative_to(s) for s in seen):
            continue
        direct = [f for f in d.iterdir() if f.is_file()]
        has_meta = any(re.search(r"(MTL\.(txt|json)|MTD_MSIL..\.xml|tileInfo\.json)$", f.name, re.I) for f in direct)
        has_bands = any(LANDSAT_KEY.search(f.stem.upper()) or S2_KEY.search(f.stem.upper())
                        for f in _raster_files(direct))
        if not (has_meta or has_bands):
            continue
        try:
            out.append((d, open_scene(str(d))))
            seen.add(d)
        except (InvalidInput, NotFound) as exc:
            out.append((d, str(exc)))
    return out
