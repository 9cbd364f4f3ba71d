"""Scenes from local STAC items: a Sentinel-2 or Landsat Collection-2 item JSON whose band assets are on disk.

    from tools.eo.stac import scene_from_stac_item
    scene = scene_from_stac_item("S2B_32TQM_20230105_0_L2A.json")   # -> tools.eo.scenes.Scene
    scene.processing_baseline, scene.acquired, scene.cloud_cover, sorted(scene.bands)

The returned `Scene` is what every eo_ tool works on (`detection.open_scene` calls this for an item JSON, or for the
item beside a folder of band files), so a time series over many items opens one scene per item.

What is read (pystac):
- Sentinel-2 (Element 84 Earth Search `sentinel-2-l2a` / `sentinel-2-l1c`, the `sentinel-cogs` COGs, and
  items of the same shape): `s2:processing_baseline`, `s2:product_type` (or the collection id),
  `s2:product_uri`, `platform`, `properties.datetime`, `eo:cloud_cover`. The L2A BOA add-offset follows
  the ESA rule, -1000 from processing baseline 04.00 on (reflectance = (DN + offset)/10000), unless the item
  says `earthsearch:boa_offset_applied: true` (the COGs were already shifted; offset 0).
- Landsat Collection 2 (USGS, Planetary Computer): `platform`, `instruments`, `landsat:collection_number`,
  `landsat:correction` (L1TP / L2SP ...) or the collection id, `landsat:scene_id`, `view:sun_elevation`,
  `properties.datetime`, `eo:cloud_cover`; an MTL asset on disk is read too (Level-1 calibration needs it).
- Band assets: by the USGS/ESA file name of the href, else the asset's `eo:bands` name, else its key or
  common name (red, nir08, swir16, qa_pixel, scl...). Relative hrefs resolve against the item file; an
  http(s)/s3 href is looked for under its file name beside the item JSON. Assets not on disk are left out
  (and named in the scene's notes); paths must lie inside the configured roots.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tools.eo import metadata as md
from tools.eo.scenes import LANDSAT_KEY, RASTER_SUFFIXES, S2_KEY, Scene, landsat_scene, sentinel2_scene
from tools.eo.sensors import MSI_BAND_ID
from tools.errors import InvalidInput
from tools.paths import resolve_input

_MAX_ITEM_BYTES = 10_000_000
_S2_COMMON = {"swir16": "swir1", "swir22": "swir2", "scl": "SCL", "aot": "AOT", "wvp": "WVP"}
_LANDSAT_COMMON = {"nir08": "nir", "swir16": "swir1", "swir22": "swir2", "lwir": "thermal", "lwir11": "thermal",
                   "lwir12": "thermal2", "qa_pixel": "QA_PIXEL", "qa_radsat": "QA_RADSAT",
                   "qa_aerosol": "SR_QA_AEROSOL", "qa": "ST_QA", "trad": "ST_TRAD", "urad": "ST_URAD",
                   "drad": "ST_DRAD", "atran": "ST_ATRAN", "emis": "ST_EMIS", "emsd": "ST_EMSD", "cdist": "ST_CDIST"}
_SENSORS = {"oli": "OLI_TIRS", "tirs": "OLI_TIRS", "etm+": "ETM", "etm": "ETM", "tm": "TM"}


def is_stac_item(path: Path) -> bool:
    """Whether `path` is a JSON file holding one STAC Item (type Feature with stac_version and assets)."""
    if path.suffix.lower() != ".json" or not path.is_file() or path.stat().st_size > _MAX_ITEM_BYTES:
        return False
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("type") == "Feature" and "stac_version" in data and "assets" in data


def scene_from_stac_item(path: str | Path) -> Scene:
    """The scene described by a local STAC item JSON (Sentinel-2 L1C/L2A or Landsat Collection 2), with the
    band assets found on disk, its product metadata (processing baseline, datetime, cloud cover, sun
    elevation) and the Sentinel-2 offset rule applied. Raises InvalidInput when the file is not a STAC item,
    the item is of neither mission, or none of its band assets is on disk."""
    import pystac

    p = resolve_input(str(path))
    if not is_stac_item(p):
        raise InvalidInput(f"{p.name} is not a STAC item JSON (a Feature with stac_version and assets).",
                           hint="Pass the item's .json file, as saved from a STAC API or catalogue.")
    try:
        item = pystac.Item.from_file(str(p))
    except Exception as exc:  # pystac raises several types for a malformed item
        raise InvalidInput(f"{p.name} is not a readable STAC item: {exc}.",
                           hint="Check the JSON against the STAC Item specification.") from exc
    family = _family(item)
    local, missing = _local_assets(item, p.parent)
    notes = [f"Bands from the STAC item {p.name}."]
    if missing:
        notes.append(f"Assets not on disk, left out: {', '.join(sorted(missing))}.")
    if family == "sentinel-2":
        keyed = _keyed(local, S2_KEY, _S2_COMMON)
        groups, more = _s2_groups(item)
        _need_bands(keyed, p, missing)
        return sentinel2_scene(p.parent, groups, p, keyed, list(keyed.values()), notes=notes + more)
    keyed = _keyed(local, LANDSAT_KEY, _LANDSAT_COMMON)
    groups = _landsat_groups(item, local)
    _need_bands(keyed, p, missing)
    return landsat_scene(p.parent, groups, p, keyed, notes)


def _family(item: Any) -> str:
    props = item.properties
    text = " ".join(str(x) for x in (props.get("constellation"), props.get("platform"), item.collection_id,
                                     item.id)).lower()
    if "sentinel-2" in text or "sentinel2" in text or any(k.startswith("s2:") for k in props):
        return "sentinel-2"
    if "landsat" in text or any(k.startswith("landsat:") for k in props):
        return "landsat"
    raise InvalidInput(f"STAC item {item.id} is neither a Sentinel-2 nor a Landsat item.",
                       hint="Only Sentinel-2 L1C/L2A and Landsat Collection-2 items are read.")


def _local_assets(item: Any, folder: Path) -> tuple[list[tuple[str, Any, Path]], list[str]]:
    """(key, asset, local path) of every raster or metadata asset on disk; the keys of raster assets that are not."""
    found, missing = [], []
    for key, asset in item.assets.items():
        href = asset.get_absolute_href() or asset.href
        url = urlparse(href)
        if url.scheme in ("http", "https", "s3", "gs", "az"):
            candidate = folder / Path(url.path).name
        elif url.scheme == "file":
            candidate = Path(url.path)
        else:
            candidate = Path(href)
        suffix = candidate.suffix.lower()
        if suffix not in RASTER_SUFFIXES and not re.search(r"MTL\.(txt|json)$", candidate.name, re.I):
            continue
        if candidate.is_file():
            found.append((key, asset, resolve_input(str(candidate))))
        elif suffix in RASTER_SUFFIXES:
            missing.append(key)
    return found, missing


def _asset_band_name(asset: Any) -> str | None:
    bands = asset.extra_fields.get("eo:bands") or asset.extra_fields.get("bands") or []
    if bands and isinstance(bands[0], dict):
        return bands[0].get("name")
    return None


def _keyed(local: list[tuple[str, Any, Path]], key_re: re.Pattern[str], common: dict[str, str]) -> dict[str, Path]:
    """Band key (or common name) -> file: by the file's product name, the eo:bands name, or the asset key."""
    out: dict[str, Path] = {}
    for key, asset, path in local:
        if path.suffix.lower() not in RASTER_SUFFIXES:
            continue
        m = key_re.search(path.stem.upper())
        name = _asset_band_name(asset)
        if m:
            band = m.group(1)
        elif name and key_re.search(name.upper()):
            band = key_re.search(name.upper()).group(1)
        else:
            k = key.lower().removesuffix("-jp2")
            band = common.get(k, k)
        out.setdefault(band, path)
    return out


def _need_bands(keyed: dict[str, Path], item_path: Path, missing: list[str]) -> None:
    if not keyed:
        raise InvalidInput(
            f"None of the band assets of {item_path.name} is on disk"
            + (f" ({', '.join(sorted(missing)[:8])} are remote or missing)." if missing else "."),
            hint="Download the assets beside the item JSON under their own file names, or point the asset hrefs "
            "at local files.",
        )


def _baseline(value: Any) -> str | None:
    if value is None or value == "":
        return None
    try:
        return f"{float(value):05.2f}"
    except (TypeError, ValueError):
        return str(value)


def _s2_groups(item: Any) -> tuple[md.Groups, list[str]]:
    props = item.properties
    info: dict[str, str] = {"ITEM_ID": item.id}
    ptype = str(props.get("s2:product_type") or "")
    if not ptype:
        text = f"{item.collection_id or ''} {item.id}".lower()
        ptype = "S2MSI2A" if "l2a" in text else "S2MSI1C" if "l1c" in text else ""
    values = {"PRODUCT_URI": props.get("s2:product_uri"), "PROCESSING_BASELINE": _baseline(
        props.get("s2:processing_baseline")), "PRODUCT_TYPE": ptype, "SPACECRAFT_NAME": props.get("platform"),
        "PRODUCT_START_TIME": item.datetime.isoformat() if item.datetime else props.get("start_datetime"),
        "Cloud_Coverage_Assessment": props.get("eo:cloud_cover")}
    info |= {k: str(v) for k, v in values.items() if v not in (None, "")}
    notes = []
    if props.get("earthsearch:boa_offset_applied") is True and "2A" in ptype.upper():
        info |= {f"BOA_ADD_OFFSET_{i}": "0" for i in MSI_BAND_ID.values()}
        notes.append("The item says earthsearch:boa_offset_applied: the COGs already carry the BOA offset, so "
                     "reflectance = DN/10000.")
    return {"S2_PRODUCT": info}, notes


def _landsat_groups(item: Any, local: list[tuple[str, Any, Path]]) -> md.Groups:
    props = item.properties
    groups: md.Groups = {}
    mtl = next((path for _k, _a, path in local if re.search(r"MTL\.(txt|json)$", path.name, re.I)), None)
    if mtl is not None:
        groups = md.read_mtl_json(mtl) if mtl.suffix.lower() == ".json" else md.read_mtl_txt(mtl)
    instruments = [str(x).lower() for x in props.get("instruments") or []]
    sensor = next((_SENSORS[i] for i in instruments if i in _SENSORS), None)
    level = str(props.get("landsat:correction") or props.get("landsat:processing_level") or "")
    if not level:
        m = re.search(r"-(l[12])\b", (item.collection_id or "").lower())
        level = m.group(1).upper() if m else ""
    values = {"SPACECRAFT_ID": str(props.get("platform") or "").upper().replace("-", "_") or None,
              "SENSOR_ID": sensor, "COLLECTION_NUMBER": props.get("landsat:collection_number"),
              "PROCESSING_LEVEL": level or None, "LANDSAT_PRODUCT_ID": item.id,
              "LANDSAT_SCENE_ID": props.get("landsat:scene_id"),
              "DATE_ACQUIRED": item.datetime.date().isoformat() if item.datetime else None,
              "SUN_ELEVATION": props.get("view:sun_elevation"), "CLOUD_COVER": props.get("eo:cloud_cover")}
    groups["STAC_ITEM"] = {k: str(v) for k, v in values.items() if v not in (None, "")}
    return groups
