"""Scene detection: which product a folder, a file list or a STAC item JSON holds, and the `Scene` it is."""

from __future__ import annotations

import re
from pathlib import Path

from tools.eo import stac
from tools.eo.scenes import (
    LANDSAT_KEY,
    LANDSAT_NAME,
    RASTER_SUFFIXES,
    S2_KEY,
    S2_PRODUCT,
    Scene,
    landsat_from_files,
    raster_files,
    sentinel2_from_files,
)
from tools.errors import InvalidInput, NotFound
from tools.paths import resolve_input

_MAX_FILES = 500


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
    if len(paths) == 1 and paths[0].is_file() and stac.is_stac_item(paths[0]):
        return _as_product(stac.scene_from_stac_item(paths[0]), product)
    root, files = _gather(paths)
    names = [f.name.upper() for f in files]
    mtl = next((f for f in files if re.search(r"MTL\.(TXT|JSON)$", f.name.upper())), None)
    s2meta = next((f for f in files if re.match(r"MTD_MSIL(1C|2A)\.XML$", f.name.upper())), None)
    tileinfo = next((f for f in files if f.name == "tileInfo.json"), None)
    rasters = raster_files(files)
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
            return _as_product(landsat_from_files(root, files, rasters, mtl), product)
        level = product.rsplit("-", 1)[1].upper()
        return _as_product(sentinel2_from_files(root, files, rasters, s2meta, tileinfo, level), product)
    landsat_named = any(LANDSAT_NAME.match(n) for n in names)
    s2_named = any(S2_PRODUCT.search(str(f).upper()) for f in files) or any(
        S2_KEY.search(f.stem.upper()) and f.stem.upper().endswith(("B8A", "B8A_20M", "B12", "B12_20M"))
        for f in rasters)
    if mtl is not None or (landsat_named and s2meta is None and tileinfo is None):
        return landsat_from_files(root, files, rasters, mtl)
    if s2meta is not None or tileinfo is not None or s2_named:
        return sentinel2_from_files(root, files, rasters, s2meta, tileinfo)
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
                        for f in raster_files(direct))
        if not (has_meta or has_bands):
            continue
        try:
            out.append((d, open_scene(str(d))))
            seen.add(d)
        except (InvalidInput, NotFound) as exc:
            out.append((d, str(exc)))
    return out
