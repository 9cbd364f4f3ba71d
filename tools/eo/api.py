"""The EO tools: plain functions with typed parameters and structured results (the MCP layer wraps them)."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tools.eo.results import (
    AreaResult,
    AreaRow,
    BandRow,
    BurnResult,
    ChangeResult,
    CorrectedBand,
    CorrectionResult,
    IndexInfo,
    IndexList,
    MaskResult,
    QuicklookResult,
    RasterResult,
    RasterStats,
    SceneDescription,
    SceneList,
    SceneSummary,
    StatisticsResult,
    TrendResult,
    TVDIResult,
    ZonalResult,
    ZoneRow,
)
from tools.errors import InvalidInput, LimitExceeded, NotFound
from tools.paths import SAMPLE_DIR, resolve_input
from tools.progress import Progress, report
from tools.settings import get_settings


class _Deferred:
    """A module imported on first attribute access, so that listing the tools does not import NumPy & co."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


np = _Deferred("numpy")
geo = _Deferred("tools.eo.geophysics")
idx = _Deferred("tools.eo.indices")
mk = _Deferred("tools.eo.masks")
st = _Deferred("tools.eo.statistics")
tr = _Deferred("tools.eo.trends")

SceneArg = Annotated[
    str | list[str],
    Field(description="A scene: its folder, its metadata file (MTL.txt/.json, MTD_MSIL*.xml, tileInfo.json), or a "
          "list of its band files; paths inside the roots or sample:// URIs (e.g. sample://eo/landsat8_c1_l1t)."),
]
RasterArg = Annotated[str, Field(
    description="A GeoTIFF (or other GDAL raster) path inside the roots, or a sample:// URI.")]
CogArg = Annotated[bool, Field(
    description="Write a Cloud-Optimized GeoTIFF (with overviews) instead of a tiled GeoTIFF.")]
QuicklookArg = Annotated[bool, Field(description="Also draw a PNG quicklook with a colorbar.")]
MaskArg = Annotated[
    list[str] | None,
    Field(description="QA classes to set to nodata before computing, e.g. ['cloud', 'shadow', 'cirrus', "
          "'dilated_cloud'] (Landsat QA_PIXEL/BQA or Sentinel-2 SCL); None: no QA masking."),
]


def _stats(s: Any) -> RasterStats:
    return RasterStats(**s.summary())


def _crs(grid: Any) -> str | None:
    return grid.crs.to_string() if grid.crs is not None else None


def _open(scene: str | list[str]) -> Any:
    from tools.eo.scenes import open_scene

    return open_scene(scene)


def _quick(path: Path, draw: bool, cmap: str, title: str, label: str | None = None) -> str | None:
    if not draw:
        return None
    from tools.eo.quicklook import render

    return str(render(path, title=title, cmap=cmap, label=label))


# ----------------------------------------------------------------------------------------------- scenes
def eo_list_scenes(
    folder: Annotated[str | None, Field(
        description="Folder to search (4 levels deep); None: the bundled samples.")] = None,
) -> SceneList:
    """List the Landsat and Sentinel-2 scenes found under a folder (the bundled samples by default).

    Use it first to find scene paths for the other eo_ tools. Returns each scene's product, platform,
    acquisition date and band keys; folders that look like scenes but cannot be read are listed under
    problems with the reason. At most 100 scenes.
    """
    from tools.eo.scenes import find_scenes

    root = SAMPLE_DIR / "eo" if folder is None else resolve_input(folder)
    found = find_scenes(root)
    scenes, problems = [], []
    for path, sc in found:
        shown = f"sample://{path.relative_to(SAMPLE_DIR).as_posix()}" if path.is_relative_to(SAMPLE_DIR) else str(path)
        if isinstance(sc, str):
            problems.append(f"{shown}: {sc}")
        else:
            scenes.append(SceneSummary(path=shown, product=sc.product, platform=sc.platform, sensor=sc.sensor,
                                       scene_id=sc.scene_id, acquired=sc.acquired, bands=sorted(sc.bands)))
    return SceneList(folder=str(root) if folder else "sample://eo", scenes=scenes, problems=problems)


def eo_describe_scene(scene: SceneArg) -> SceneDescription:
    """Describe a scene: product level, platform, date, sun elevation, and every band with its common name and
    spyndex symbol, size, resolution and CRS.

    Use it to see which bands and indices a scene supports before computing. Reads headers only.
    """
    from tools.eo.products import qa_layer
    from tools.eo.rasters import open_raster

    sc = _open(scene)
    rows = []
    for key, band in sorted(sc.bands.items()):
        with open_raster(band.path) as src:
            rows.append(BandRow(key=key, common_name=band.spec.common, spyndex_symbols=list(band.spec.symbols),
                                kind=band.spec.kind, file=band.path.name, width=src.width, height=src.height,
                                resolution_m=float(abs(src.transform.a)), dtype=src.dtypes[0],
                                crs=src.crs.to_string() if src.crs else None))
    available = set(sc.by_symbol())
    computable = idx.search(available=available, computable_only=True)
    try:
        qa = qa_layer(sc)[1]
    except InvalidInput:
        qa = None
    return SceneDescription(
        product=sc.product, platform=sc.platform, sensor=sc.sensor, scene_id=sc.scene_id, acquired=sc.acquired,
        sun_elevation=sc.sun_elevation, cloud_cover=sc.cloud_cover, processing_baseline=sc.processing_baseline,
        metadata_file=sc.metadata_file.name if sc.metadata_file else None, bands=rows,
        computable_indices=len(computable), catalogue_size=len(idx.catalogue()), quality_layer=qa, notes=sc.notes,
    )


# ---------------------------------------------------------------------------------------------- indices
def eo_list_indices(
    query: Annotated[str | None, Field(
        description="Text in the index name or long name, e.g. 'water', 'NDVI'.")] = None,
    domain: Annotated[str | None, Field(description="Application domain: vegetation, water, burn, urban, soil, "
                                        "snow, radar, clouds, kernel.")] = None,
    bands: Annotated[list[str] | None, Field(
        description="spyndex band symbols the index must use, e.g. ['N', 'S1'].")] = None,
    scene: Annotated[str | list[str] | None, Field(description="A scene: report what each index lacks on it.")] = None,
    computable_only: Annotated[bool, Field(description="With a scene: only indices its bands can compute.")] = False,
    offset: Annotated[int, Field(ge=0, description="Skip this many matches (paging).")] = 0,
    limit: Annotated[int, Field(ge=1, le=100, description="Most indices returned.")] = 30,
) -> IndexList:
    """Search the spectral-index catalogue (Awesome Spectral Indices via spyndex, 280 indices) by name, domain or
    bands, optionally against a scene to see which indices it can compute.

    Names are unambiguous: NDWI is McFeeters' (G-N)/(G+N); NDMI is (N-S1)/(N+S1), Gao's water index form.
    Returns formula, bands, default constants and reference per index; page with offset/next_offset.
    """
    available = set(_open(scene).by_symbol()) if scene is not None else None
    names = idx.search(query, domain, bands, available, computable_only and available is not None)
    page = names[offset: offset + limit]
    computable = None
    if available is not None:
        computable = len(idx.search(available=available, computable_only=True))
    return IndexList(
        matched=len(names), offset=offset, next_offset=offset + limit if offset + limit < len(names) else None,
        catalogue_size=len(idx.catalogue()), computable_for_scene=computable, domains=idx.domains(),
        indices=[IndexInfo(**idx.entry(n, available)) for n in page],
    )


def eo_spectral_index(
    scene: SceneArg,
    index: Annotated[str, Field(description="Catalogue name, e.g. NDVI, EVI, NDWI (McFeeters), NDMI, NBR, MNDWI, NDBI, "
                                "SAVI, kNDVI (see eo_list_indices).")],
    constants: Annotated[dict[str, float] | None, Field(
        description="Override index constants, e.g. {'L': 0.5}.")] = None,
    mask: MaskArg = None,
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> RasterResult:
    """Compute a spectral index of a scene from calibrated bands and write it as a GeoTIFF.

    Bands are converted first: Landsat L1 to sun-corrected TOA reflectance (thermal to brightness temperature,
    K), Landsat C2 L2 with the SR/ST scale factors, Sentinel-2 DN/10000 with the baseline offset; fill pixels
    and (optionally) QA-masked pixels stay nodata. Returns the GeoTIFF path, a PNG quicklook, the formula,
    the files read and summary statistics. An index needing a band the sensor lacks is refused, naming it.
    Work runs in blocks (memory bounded); bound: RESEARCH_MCP_EO__MAX_PIXELS pixels.
    """
    from tools.eo.products import index_product

    sc = _open(scene)
    product, pl = index_product(sc, index, constants, progress, mask_classes=mask, cog=cog)
    info = idx.catalogue()[pl.name]
    cmap = {"water": "RdBu", "vegetation": "RdYlGn", "burn": "RdYlGn", "snow": "Blues"}.get(
        info.application_domain, "viridis")
    return RasterResult(
        output=str(product.path), quicklook=_quick(product.path, quicklook, cmap, f"{pl.name} ({info.long_name})"),
        quantity=pl.name, units="index", method=f"{info.formula} ({info.reference})", stats=_stats(product.stats),
        inputs=product.files, calibration=product.formulas, parameters=dict(pl.params), width=product.grid.width,
        height=product.grid.height, crs=_crs(product.grid), notes=product.notes,
    )


# -------------------------------------------------------------------------------------------- radiometry
def eo_radiometric_correction(
    scene: SceneArg,
    bands: Annotated[list[str] | None, Field(description="Bands by key (B4), common name (red) or symbol (R); "
                                             "None: every reflective and thermal band.")] = None,
    quantity: Annotated[Literal["auto", "reflectance", "radiance", "brightness_temperature", "dn"], Field(
        description="auto: reflectance for reflective bands, brightness temperature (L1) or surface temperature "
        "(L2) for thermal bands.")] = "auto",
    cog: CogArg = False,
    progress: Progress | None = None,
) -> CorrectionResult:
    """Convert a scene's DN to physical units and write a multi-band float32 GeoTIFF (one band per input).

    Landsat L1: TOA reflectance (M*DN + A)/sin(sun elevation), radiance M_L*DN + A_L, brightness temperature
    K2/ln(K1/L + 1) from the MTL; Landsat C2 L2: SR = DN*2.75e-5 - 0.2, ST = DN*0.00341802 + 149 K;
    Sentinel-2: (DN + offset)/10000 (offset -1000 from baseline 04.00). Fill stays NaN. Bands on different
    grids are resampled (bilinear) to the finest. At most 20 bands.
    """
    from tools.eo.products import scene_inputs
    from tools.eo.rasters import RunningStats, Writer, block_windows

    sc = _open(scene)
    if bands:
        chosen = {sc.band(b).key: sc.band(b) for b in bands}
    else:
        chosen = {k: b for k, b in sc.bands.items() if b.spec.kind in ("reflective", "thermal")}
    if len(chosen) > 20:
        raise InvalidInput(f"{len(chosen)} bands were asked for; one call writes at most 20.",
                           hint="Name the bands you need in `bands`.")
    ins = scene_inputs(sc, chosen, quantity=quantity)
    keys = list(chosen)
    try:
        writer = Writer(f"{sc.product}-{quantity}", ins.grid, count=len(keys), cog=cog,
                        descriptions=[f"{k} {ins.calibrations[k].quantity} ({ins.calibrations[k].unit})" for k in keys])
        stats = {k: RunningStats() for k in keys}
        wins = block_windows(ins.grid)
        try:
            for i, w in enumerate(wins, start=1):
                arrays = ins.read(w)
                for j, k in enumerate(keys, start=1):
                    stats[k].update(arrays[k])
                    writer.write(arrays[k], w, band=j)
                report(progress, i, len(wins), "radiometric correction")
        except BaseException:
            writer.discard()
            raise
        if all(s.count == 0 for s in stats.values()):
            writer.discard()
            raise InvalidInput("Every pixel of every band is nodata.", hint="Check the band files.")
        path = writer.close()
    finally:
        ins.close()
    out = [CorrectedBand(band=k, output_band=j, quantity=ins.calibrations[k].quantity, units=ins.calibrations[k].unit,
                         formula=ins.calibrations[k].formula, stats=_stats(stats[k])) for j, k in enumerate(keys, 1)]
    notes = [n for c in ins.calibrations.values() for n in c.notes] + sc.notes
    return CorrectionResult(output=str(path), bands=out, width=ins.grid.width, height=ins.grid.height,
                            crs=_crs(ins.grid), notes=notes)


# ------------------------------------------------------------------------------------------------- masks
class ThresholdRule(BaseModel):
    layer: str = Field(description="An index name (NDVI, NDSI...) or a band (B10, thermal, blue) of the scene.")
    op: Literal[">", ">=", "<", "<=", "==", "!="]
    value: float


def eo_cloud_mask(
    scene: SceneArg,
    classes: Annotated[list[str] | None, Field(description="QA classes to flag: Landsat QA_PIXEL fill, dilated_cloud, "
                       "cirrus, cloud, shadow, snow, water, clear (+ *_high_confidence); BQA cloud, shadow, snow, "
                       "cirrus; Sentinel-2 SCL cloud, cloud_medium, cloud_high, cirrus, shadow, snow, water, "
                       "dark, saturated, vegetation, bare. None: cloud, shadow, cirrus, dilated_cloud when the "
                       "scene has a QA layer.")] = None,
    thresholds: Annotated[list[ThresholdRule] | None, Field(description="Threshold rules, e.g. "
                          "[{'layer': 'blue', 'op': '>', 'value': 0.25}].")] = None,
    combine: Annotated[Literal["any", "all"], Field(description="any: flag where any class/rule holds; all: where "
                       "all hold.")] = "any",
    quicklook: QuicklookArg = False,
    progress: Progress | None = None,
) -> MaskResult:
    """Build a cloud / quality mask from the scene's QA layer (Landsat QA_PIXEL or BQA bits, Sentinel-2 SCL
    classes) and/or thresholds on indices and bands, combined by union or intersection.

    Writes a uint8 GeoTIFF (1 flagged, 0 clear, 255 no data) and returns the flagged share per class/rule.
    Pass the same classes as `mask` to eo_spectral_index to exclude them there.
    """
    from tools.eo.products import qa_layer, scene_inputs
    from tools.eo.rasters import Writer, block_windows

    sc = _open(scene)
    wanted: dict[str, Any] = {}
    qa_kind = None
    if classes is None and not thresholds:
        qa_band, qa_kind = qa_layer(sc)
        names = mk.check_classes(qa_kind, list(mk.DEFAULT_CLOUD_CLASSES))
    elif classes:
        qa_band, qa_kind = qa_layer(sc)
        names = mk.check_classes(qa_kind, classes)
    else:
        names = []
    if qa_kind:
        wanted["qa:layer"] = qa_band
    rules: list[tuple[str, Any]] = []
    for r in thresholds or []:
        label = f"{r.layer} {r.op} {r.value:g}"
        try:
            name = idx.resolve_name(r.layer)
        except NotFound:
            name = None
        if name is not None:
            available = sc.by_symbol()
            pl = idx.plan(name, lambda s, a=available: s in a, sc.platform, None,
                          lambda s, n=name: sc.symbol_band(s, n))
            for s in pl.bands:
                wanted[f"sym:{s}"] = sc.symbol_band(s, name)
            rules.append((label, lambda a, pl=pl, r=r: mk.threshold(
                pl.evaluate({s: a[f"sym:{s}"] for s in pl.bands}), r.op, r.value)))
        else:
            try:
                band = sc.band(r.layer)
            except NotFound as exc:
                raise InvalidInput(f"{r.layer!r} is neither a spectral index nor a band of this scene.",
                                   hint=exc.hint or "List bands with eo_describe_scene.") from exc
            wanted[f"band:{band.key}"] = band
            rules.append((label, lambda a, k=f"band:{band.key}", r=r: mk.threshold(a[k], r.op, r.value)))
    ins = scene_inputs(sc, wanted)
    counts = {n: 0 for n in names} | {label: 0 for label, _ in rules}
    flagged_total, data_total = 0, 0
    try:
        writer = Writer("cloud-mask", ins.grid, dtype="uint8", nodata=255, descriptions=["mask: 1 flagged, 0 clear"])
        wins = block_windows(ins.grid)
        try:
            for i, w in enumerate(wins, start=1):
                a = ins.read(w)
                parts, has_data = [], None
                if qa_kind:
                    qa = a["qa:layer"]
                    good = np.isfinite(qa)
                    fill = mk.qa_mask(qa_kind, np.where(good, qa, 0), ["fill"])["fill"]
                    has_data = good & ~fill
                    for n, m in mk.qa_mask(qa_kind, np.where(good, qa, 0), names).items():
                        m = m & has_data
                        counts[n] += int(m.sum())
                        parts.append(m)
                for label, fn in rules:
                    m = fn(a)
                    counts[label] += int(m.sum())
                    parts.append(m)
                if has_data is None:
                    has_data = np.zeros(next(iter(a.values())).shape, dtype=bool)
                    for k, v in a.items():
                        if k != "qa:layer":
                            has_data |= np.isfinite(v)
                flag = mk.combine(parts, combine) & has_data
                flagged_total += int(flag.sum())
                data_total += int(has_data.sum())
                writer.write(np.where(has_data, flag.astype(np.uint8), 255).astype(np.uint8), w)
                report(progress, i, len(wins), "mask")
        except BaseException:
            writer.discard()
            raise
        if data_total == 0:
            writer.discard()
            raise InvalidInput("The scene holds no data pixels (all fill).", hint="Check the QA and band files.")
        path = writer.close()
    finally:
        ins.close()
    return MaskResult(output=str(path), quicklook=_quick(path, quicklook, "Greys", "mask (1 = flagged)"),
                      flagged_fraction=flagged_total / data_total,
                      class_fractions={k: v / data_total for k, v in counts.items()}, data_pixels=data_total,
                      combine=combine)


# ------------------------------------------------------------------------------------------ temperature
def eo_land_surface_temperature(
    scene: SceneArg,
    method: Annotated[Literal["auto", "single_channel", "split_window", "radiance_layers", "product"], Field(
        description="single_channel: emissivity-corrected BT (Artis & Carnahan 1982) with NDVI-threshold "
        "emissivity (Sobrino et al. 2004); split_window: Jimenez-Munoz et al. 2014 for TIRS B10/B11; "
        "radiance_layers: Collection-2 L2 ST_TRAD/URAD/DRAD/ATRAN/EMIS; product: Collection-2 L2 ST_B10 scaled; "
        "auto: product for L2 scenes, single_channel for L1.")] = "auto",
    water_vapour: Annotated[float, Field(
        ge=0, le=6.5, description="Atmospheric water vapour (g/cm2), split-window only.")] = 2.0,
    ndvi_soil: Annotated[float, Field(description="NDVI of bare soil (emissivity thresholds).")] = 0.2,
    ndvi_veg: Annotated[float, Field(description="NDVI of full vegetation (emissivity thresholds).")] = 0.5,
    mask: MaskArg = None,
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> RasterResult:
    """Retrieve land surface temperature (K) from a Landsat scene and write it as a GeoTIFF.

    Methods and their formulas are listed under `method`; each is cited in the result. Level-1 methods start
    from TOA brightness temperature (K1/K2 from the MTL) and TOA reflectance; they do not correct the
    atmosphere beyond what the method states. Returns path, quicklook, statistics, method and parameters.
    """
    from tools.eo.products import map_scene
    from tools.eo.radiometry import thermal_constants
    from tools.eo.sensors import THERMAL_WAVELENGTH_UM

    sc = _open(scene)
    if not sc.is_landsat:
        raise InvalidInput(f"{sc.product} has no thermal bands.", hint="Use a Landsat scene for LST.")
    m = method
    if m == "auto":
        m = "product" if sc.level == "L2" else "single_channel"
    params: dict[str, float | str | None] = {"method": m}
    if m in ("product", "radiance_layers") and sc.level != "L2":
        raise InvalidInput(f"Method {m} needs a Collection-2 Level-2 scene; this is {sc.product}.",
                           hint="Use single_channel or split_window on Level-1 scenes.")
    if m in ("single_channel", "split_window") and sc.level != "L1":
        raise InvalidInput(f"Method {m} starts from Level-1 brightness temperature; this is {sc.product}, whose "
                           "ST_B band is already surface temperature.",
                           hint="Use method='product' or 'radiance_layers'.")
    if m == "product":
        band = sc.band("ST_B10" if sc.sensor == "OLI_TIRS" else "ST_B6")
        prod = map_scene(sc, {"ST": band}, lambda a: a["ST"], "LST", progress, mask_classes=mask, cog=cog, units="K")
        how = "Collection-2 Level-2 ST band: ST = DN*0.00341802 + 149.0 K (LSDS-1619)"
    elif m == "radiance_layers":
        layers = {k: sc.band(f"ST_{k}") for k in ("TRAD", "URAD", "DRAD", "ATRAN", "EMIS")}
        thermal = sc.band("ST_B10" if sc.sensor == "OLI_TIRS" else "ST_B6")
        k1, k2, src = thermal_constants(sc, thermal)
        params |= {"K1": k1, "K2": k2, "K_source": src}
        prod = map_scene(sc, layers, lambda a: geo.radiance_layer_lst(a["TRAD"], a["URAD"], a["DRAD"], a["ATRAN"],
                                                                       a["EMIS"], k1, k2),
                         "LST", progress, mask_classes=mask, cog=cog, units="K")
        how = ("Ls = (TRAD - URAD)/(ATRAN*EMIS) - (1 - EMIS)/EMIS*DRAD; T = K2/ln(K1/Ls + 1) "
               "(Cook et al. 2014; LSDS-1619)")
    elif m == "single_channel":
        bands = {"BT": sc.symbol_band("T", "single-channel LST"), "R": sc.symbol_band("R", "NDVI emissivity"),
                 "N": sc.symbol_band("N", "NDVI emissivity")}
        lam = THERMAL_WAVELENGTH_UM[sc.sensor]
        params |= {"wavelength_um": lam, "rho_um_K": geo.RHO_UM_K, "ndvi_soil": ndvi_soil, "ndvi_veg": ndvi_veg}
        ndvi_plan = idx.plan("NDVI", lambda s: True, sc.platform, None, lambda s: None)

        def single(a: dict[str, np.ndarray]) -> np.ndarray:
            ndvi = ndvi_plan.evaluate(a)
            eps = geo.emissivity_sobrino2004(ndvi, a["R"], ndvi_soil, ndvi_veg)
            return geo.single_channel_lst(a["BT"], eps, lam)

        prod = map_scene(sc, bands, single, "LST", progress, mask_classes=mask, cog=cog, units="K")
        how = (f"LST = BT/(1 + (lambda*BT/rho)*ln(eps)), lambda = {lam} um, rho = 14388 um K (Artis & Carnahan "
               f"1982); eps by NDVI thresholds ({geo.SOBRINO_2004})")
    else:
        if sc.sensor != "OLI_TIRS":
            raise InvalidInput("Split-window needs two thermal bands (Landsat 8/9 TIRS B10 and B11).",
                               hint="Use method='single_channel' for TM/ETM+.")
        bands = {"T10": sc.symbol_band("T1", "split-window LST"), "T11": sc.symbol_band("T2", "split-window LST"),
                 "R": sc.symbol_band("R", "NDVI emissivity"), "N": sc.symbol_band("N", "NDVI emissivity")}
        params |= {"water_vapour_g_cm2": water_vapour, "ndvi_soil": ndvi_soil, "ndvi_veg": ndvi_veg}
        params |= dict(zip(("c0", "c1", "c2", "c3", "c4", "c5", "c6"), geo.SPLIT_WINDOW_JM2014, strict=True))
        ndvi_plan = idx.plan("NDVI", lambda s: True, sc.platform, None, lambda s: None)

        def split(a: dict[str, np.ndarray]) -> np.ndarray:
            ndvi = ndvi_plan.evaluate(a)
            e10 = geo.emissivity_tirs(ndvi, 10, ndvi_soil, ndvi_veg)
            e11 = geo.emissivity_tirs(ndvi, 11, ndvi_soil, ndvi_veg)
            return geo.split_window_lst(a["T10"], a["T11"], e10, e11, water_vapour)

        prod = map_scene(sc, bands, split, "LST", progress, mask_classes=mask, cog=cog, units="K")
        how = ("Split-window, Jimenez-Munoz et al. 2014 (IEEE GRSL 11:1840); band emissivities by NDVI-THM with "
               "soil/vegetation values of Yu et al. 2014 (Remote Sens. 6:9829)")
    return RasterResult(
        output=str(prod.path), quicklook=_quick(prod.path, quicklook, "inferno", f"LST ({m})", "K"),
        quantity="land_surface_temperature", units="K", method=how, stats=_stats(prod.stats), inputs=prod.files,
        calibration=prod.formulas, parameters=params, width=prod.grid.width, height=prod.grid.height,
        crs=_crs(prod.grid), notes=prod.notes,
    )


# ----------------------------------------------------------------------------------------- vegetation
def eo_vegetation_parameters(
    scene: SceneArg,
    parameter: Annotated[Literal["fvc", "lai", "albedo"], Field(description="fvc: fractional vegetation cover; "
                         "lai: leaf area index; albedo: shortwave broadband albedo.")],
    method: Annotated[str | None, Field(description="fvc: 'linear' (Gutman & Ignatov 1998, default) or 'squared' "
                      "(Carlson & Ripley 1997); lai: 'savi' (SEBAL/METRIC, default) or 'evi' (Boegh et al. 2002); "
                      "albedo: 'liang2001'.")] = None,
    ndvi_soil: Annotated[float | None, Field(
        description="FVC: NDVI of bare soil; None: the scene's 5th percentile.")] = None,
    ndvi_veg: Annotated[float | None, Field(
        description="FVC: NDVI of full cover; None: the scene's 95th percentile.")] = None,
    mask: MaskArg = None,
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> RasterResult:
    """Derive a vegetation/surface parameter (FVC, LAI or broadband albedo) from a scene, with its cited formula.

    FVC = ((NDVI - NDVIs)/(NDVIv - NDVIs))^k clipped to [0,1]; LAI = -ln((0.69 - SAVI)/0.59)/0.91 (SAVI, L=0.5)
    or 3.618*EVI - 0.118; albedo = 0.356 blue + 0.130 red + 0.373 nir + 0.085 swir1 + 0.072 swir2 - 0.0018
    (Liang 2001, meant for surface reflectance). Returns the GeoTIFF path, quicklook and statistics.
    """
    from tools.eo.products import index_product, map_scene, symbol_bands
    from tools.eo.rasters import Reader, grid_of

    sc = _open(scene)
    params: dict[str, float | str | None] = {}
    notes: list[str] = []
    if parameter == "fvc":
        how_m = method or "linear"
        if how_m not in ("linear", "squared"):
            raise InvalidInput(f"Unknown FVC method {how_m!r}.", hint="Use 'linear' or 'squared'.")
        ndvi_prod, _ = index_product(sc, "NDVI", None, progress, mask_classes=mask)
        lo, hi = ndvi_soil, ndvi_veg
        if lo is None or hi is None:
            grid = grid_of(ndvi_prod.path)
            r = Reader(ndvi_prod.path, grid)
            try:
                pct, _exact = st.exact_percentiles(r, grid, None, ndvi_prod.stats, [5, 95], progress, (0, 2))
            finally:
                r.close()
            lo = pct["p5"] if lo is None else lo
            hi = pct["p95"] if hi is None else hi
        params |= {"ndvi_soil": lo, "ndvi_veg": hi, "method": how_m, "ndvi_raster": str(ndvi_prod.path)}
        grid = grid_of(ndvi_prod.path)
        from tools.eo.products import run_raster

        path, stats = run_raster({"v": Reader(ndvi_prod.path, grid)}, grid,
                                 lambda a: geo.fvc(a["v"], lo, hi, how_m), "FVC", progress, cog=cog, units="fraction")
        how = ("FVC = (NDVI - NDVIs)/(NDVIv - NDVIs) (Gutman & Ignatov 1998)" if how_m == "linear" else
               "FVC = ((NDVI - NDVIs)/(NDVIv - NDVIs))^2 (Carlson & Ripley 1997)")
        return RasterResult(output=str(path), quicklook=_quick(path, quicklook, "YlGn", "FVC", "fraction"),
                            quantity="fvc", units="fraction", method=how, stats=_stats(stats),
                            inputs=ndvi_prod.files, calibration=ndvi_prod.formulas, parameters=params,
                            width=grid.width, height=grid.height, crs=_crs(grid), notes=ndvi_prod.notes)
    if parameter == "lai":
        how_m = method or "savi"
        if how_m not in ("savi", "evi"):
            raise InvalidInput(f"Unknown LAI method {how_m!r}.", hint="Use 'savi' or 'evi'.")
        name = "SAVI" if how_m == "savi" else "EVI"
        constants = {"L": 0.5} if how_m == "savi" else None
        available = sc.by_symbol()
        pl = idx.plan(name, lambda s: s in available, sc.platform, constants, lambda s: sc.symbol_band(s, "LAI"))
        fn = geo.lai_from_savi if how_m == "savi" else geo.lai_from_evi
        prod = map_scene(sc, symbol_bands(sc, pl.bands, "LAI"), lambda a: fn(pl.evaluate(a)), "LAI", progress,
                         mask_classes=mask, cog=cog, units="m2/m2")
        how = ("LAI = -ln((0.69 - SAVI)/0.59)/0.91, SAVI with L = 0.5 (Bastiaanssen 1998; Allen et al. 2007)"
               if how_m == "savi" else "LAI = 3.618*EVI - 0.118 (Boegh et al. 2002, RSE 79:329)")
        params |= {"method": how_m, **pl.params}
        if sc.level in ("L1", "L1C"):
            notes.append("Computed from TOA reflectance; the empirical LAI relations were fitted on surface "
                         "reflectance.")
        units = "m2/m2"
    elif parameter == "albedo":
        if method not in (None, "liang2001"):
            raise InvalidInput(f"Unknown albedo method {method!r}.", hint="Use 'liang2001'.")
        bands = {c: sc.band(c) for c in ("blue", "red", "nir", "swir1", "swir2")}
        prod = map_scene(sc, bands, lambda a: geo.albedo_liang(a["blue"], a["red"], a["nir"], a["swir1"], a["swir2"]),
                         "albedo", progress, mask_classes=mask, cog=cog, units="fraction")
        how = ("albedo = 0.356 blue + 0.130 red + 0.373 nir + 0.085 swir1 + 0.072 swir2 - 0.0018 "
               "(Liang 2001, RSE 76:213)")
        params |= {"method": "liang2001"}
        if sc.level in ("L1", "L1C"):
            notes.append("Computed from TOA reflectance; Liang's coefficients convert surface reflectance.")
        units = "fraction"
    else:
        raise InvalidInput(f"Unknown parameter {parameter!r}.", hint="Use fvc, lai or albedo.")
    return RasterResult(
        output=str(prod.path), quicklook=_quick(prod.path, quicklook, "YlGn" if parameter == "lai" else "gray",
                                                parameter.upper(), units),
        quantity=parameter, units=units, method=how, stats=_stats(prod.stats), inputs=prod.files,
        calibration=prod.formulas, parameters=params, width=prod.grid.width, height=prod.grid.height,
        crs=_crs(prod.grid), notes=prod.notes + notes,
    )


# --------------------------------------------------------------------------------------- drought / burn
def eo_tvdi(
    ndvi: Annotated[str, Field(description="NDVI GeoTIFF (e.g. from eo_spectral_index).")],
    lst: Annotated[str, Field(description="LST GeoTIFF in K (e.g. from eo_land_surface_temperature), same CRS.")],
    bin_width: Annotated[float, Field(gt=0, le=0.1, description="NDVI bin width for the edges.")] = 0.01,
    ndvi_min: Annotated[float, Field(description="Ignore NDVI below this (water, cloud) when fitting edges.")] = 0.1,
    min_count: Annotated[int, Field(ge=1, description="Fewest pixels for a bin to enter the edge fits.")] = 10,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> TVDIResult:
    """Temperature-Vegetation Dryness Index from NDVI and LST rasters (Sandholt et al. 2002, RSE 79:213).

    Fits the dry edge (max LST per NDVI bin) and the wet edge (min LST per bin) by least squares, then
    TVDI = (LST - Tmin(NDVI))/(Tmax(NDVI) - Tmin(NDVI)) in [0, 1] (1 = dry). Two passes over the rasters.
    """
    from tools.eo.products import run_raster
    from tools.eo.rasters import Reader, close_all, common_grid, iter_blocks, resolve_raster

    pn, pt = resolve_raster(ndvi), resolve_raster(lst)
    grid = common_grid([pn, pt])
    nb = math.ceil(2.0 / bin_width)
    tmax = np.full(nb, -np.inf)
    tmin = np.full(nb, np.inf)
    counts = np.zeros(nb, dtype=np.int64)
    readers = {"n": Reader(pn, grid), "t": Reader(pt, grid)}
    try:
        for _, a in iter_blocks(readers, grid, progress, "TVDI edges"):
            ok = np.isfinite(a["n"]) & np.isfinite(a["t"]) & (a["n"] >= ndvi_min)
            b = np.clip(((a["n"][ok] + 1.0) / bin_width).astype(np.int64), 0, nb - 1)
            t = a["t"][ok]
            np.maximum.at(tmax, b, t)
            np.minimum.at(tmin, b, t)
            counts += np.bincount(b, minlength=nb)
    finally:
        close_all(readers)
    centres = -1.0 + (np.arange(nb) + 0.5) * bin_width
    tmax[counts == 0] = np.nan
    tmin[counts == 0] = np.nan
    dry, wet, used = geo.fit_edges(centres, tmax, tmin, counts, min_count)
    path, stats = run_raster({"n": Reader(pn, grid), "t": Reader(pt, grid)}, grid,
                             lambda a: geo.tvdi(a["n"], a["t"], dry, wet), "TVDI", progress, units="index")
    return TVDIResult(output=str(path), quicklook=_quick(path, quicklook, "RdYlBu_r", "TVDI (1 = dry)"),
                      dry_edge={"a": dry[0], "b": dry[1]}, wet_edge={"a": wet[0], "b": wet[1]}, bins_used=used,
                      stats=_stats(stats))


def _nbr_raster(path: str, progress: Progress | None) -> Path:
    """An NBR raster: the file itself, or computed when `path` is a scene (folder or metadata file)."""
    from tools.eo.products import index_product
    from tools.eo.scenes import RASTER_SUFFIXES

    p = resolve_input(path)
    if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES:
        return p
    prod, _ = index_product(_open(path), "NBR", None, progress)
    return prod.path


def eo_burn_severity(
    pre: Annotated[str, Field(description="Pre-fire NBR GeoTIFF, or a pre-fire scene (NBR computed).")],
    post: Annotated[str, Field(description="Post-fire NBR GeoTIFF, or a post-fire scene (NBR computed).")],
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> BurnResult:
    """Burn severity from dNBR = NBR_pre - NBR_post, classed by the USGS FIREMON thresholds (Key & Benson 2006).

    Classes: enhanced regrowth high (< -0.251) / low (< -0.101), unburned (< 0.099), low (< 0.269),
    moderate-low (< 0.439), moderate-high (< 0.659), high severity. Returns the dNBR and class GeoTIFFs and
    the area (m2) of each class. The post raster is resampled to the finer grid when grids differ.
    """
    from tools.eo.rasters import Reader, RunningStats, Writer, block_windows, close_all, common_grid, pixel_area_rows

    a, b = _nbr_raster(pre, progress), _nbr_raster(post, progress)
    grid = common_grid([a, b])
    readers = {"pre": Reader(a, grid), "post": Reader(b, grid)}
    areas = {label: 0.0 for *_, label in geo.DNBR_CLASSES}
    stats = RunningStats()
    w1 = Writer("dNBR", grid, descriptions=["dNBR = NBR_pre - NBR_post"])
    w2 = Writer("burn-severity", grid, dtype="uint8", nodata=0, descriptions=["FIREMON class 1-7"])
    try:
        wins = block_windows(grid)
        for i, w in enumerate(wins, start=1):
            d = readers["pre"].read(w) - readers["post"].read(w)
            cls = geo.dnbr_class(d)
            stats.update(d)
            rows = pixel_area_rows(grid, int(w.row_off), int(w.height))
            for _lo, _hi, code, label in geo.DNBR_CLASSES:
                areas[label] += float(((cls == code).sum(axis=1) * rows).sum())
            w1.write(d, w)
            w2.write(cls, w)
            report(progress, i, len(wins), "dNBR")
    except BaseException:
        w1.discard()
        w2.discard()
        raise
    finally:
        close_all(readers)
    if stats.count == 0:
        w1.discard()
        w2.discard()
        raise InvalidInput("The pre- and post-fire rasters share no valid pixel.", hint="Check that they overlap.")
    p1, p2 = w1.close(), w2.close()
    return BurnResult(output=str(p1), classes_output=str(p2), quicklook=_quick(p1, quicklook, "RdYlGn_r", "dNBR"),
                      stats=_stats(stats), class_areas_m2=areas)


# ------------------------------------------------------------------------------------------ statistics
def _mask_reader(mask: str | None, grid: Any) -> Any:
    from tools.eo.rasters import Reader, resolve_raster

    if mask is None:
        return None
    p = resolve_raster(mask)
    r = Reader(p, grid, resampling="nearest")
    return r


def _single(raster: str, band: int = 1) -> tuple[Any, Any, Path]:
    from tools.eo.rasters import Reader, check_size, grid_of, resolve_raster

    p = resolve_raster(raster)
    grid = grid_of(p)
    check_size(grid)
    return Reader(p, grid, band=band), grid, p


ExcludeArg = Annotated[str | None, Field(description="A raster whose non-zero pixels are excluded (e.g. the "
                                         "eo_cloud_mask output); same CRS, resampled by nearest neighbour.")]


def eo_statistics(
    raster: RasterArg,
    band: Annotated[int, Field(ge=1, description="Band number.")] = 1,
    percentiles: Annotated[list[float] | None, Field(
        description="Percentiles (0-100), exact as numpy.percentile; None: 2, 5, 25, 50, 75, 95, 98.")] = None,
    bins: Annotated[int, Field(ge=1, description="Histogram bins.")] = 20,
    value_range: Annotated[list[float] | None, Field(
        description="[low, high] of the histogram; None: min-max.")] = None,
    exclude: ExcludeArg = None,
    progress: Progress | None = None,
) -> StatisticsResult:
    """Statistics of a raster band over its valid pixels: count, min, max, mean, std, exact percentiles and a
    histogram, ignoring nodata (and, optionally, pixels flagged by an exclusion mask).

    Memory is bounded: the raster is read in blocks over four passes. Bound: RESEARCH_MCP_EO__MAX_BINS bins.
    """
    limit = get_settings().eo.max_bins
    if bins > limit:
        raise LimitExceeded("The number of histogram bins", bins, limit, "RESEARCH_MCP_EO__MAX_BINS")
    reader, grid, p = _single(raster, band)
    m = _mask_reader(exclude, grid)
    try:
        mom = st.moments(reader, grid, m, progress, (0, 4))
        if mom.count == 0:
            raise InvalidInput(f"{p.name} band {band} holds only nodata pixels.",
                               hint="Check the raster (or the exclusion mask).")
        qs = [2, 5, 25, 50, 75, 95, 98] if percentiles is None else percentiles
        if len(qs) > 101:
            raise InvalidInput(f"{len(qs)} percentiles were asked for; at most 101 are returned.",
                               hint="Ask for fewer percentiles.")
        pct, exact = st.exact_percentiles(reader, grid, m, mom, qs, progress, (1, 4))
        if value_range is not None and (len(value_range) != 2 or not value_range[1] > value_range[0]):
            raise InvalidInput("value_range must be [low, high] with high > low.", hint="e.g. [-1, 1].")
        lo, hi = value_range if value_range is not None else (mom.min, mom.max if mom.max > mom.min else mom.min + 1)
        counts, edges = st.histogram(reader, grid, m, bins, lo, hi, progress, (3, 4))
    finally:
        reader.close()
        if m is not None:
            m.close()
    return StatisticsResult(raster=p.name, band=band, stats=_stats(mom), percentiles=pct, percentiles_exact=exact,
                            histogram_counts=counts, histogram_edges=edges)


class AreaRule(BaseModel):
    op: Literal[">", ">=", "<", "<=", "==", "!="]
    value: float


def eo_area(
    raster: RasterArg,
    rules: Annotated[list[AreaRule], Field(description="Conditions, e.g. [{'op': '>', 'value': 0.3}] for NDVI > 0.3.")],
    band: Annotated[int, Field(ge=1)] = 1,
    exclude: ExcludeArg = None,
    progress: Progress | None = None,
) -> AreaResult:
    """Area meeting each threshold condition (m2, km2, % of valid and of total area) from the raster's CRS.

    Pixel areas come from the projected CRS units, or on the sphere of equal area for geographic CRSs
    (row by row). Use it for 'water area (MNDWI > 0)', 'vegetated area (NDVI > 0.3)', 'hot area (LST > 310)'.
    """
    if not rules:
        raise InvalidInput("No rule given.", hint="e.g. rules=[{'op': '>', 'value': 0.3}].")
    reader, grid, p = _single(raster, band)
    m = _mask_reader(exclude, grid)
    try:
        hits, vpx, varea, _tpx, tarea = st.threshold_areas(reader, grid, [(r.op, r.value) for r in rules], m,
                                                           progress)
    finally:
        reader.close()
        if m is not None:
            m.close()
    if vpx == 0:
        raise InvalidInput(f"{p.name} holds only nodata pixels.", hint="Check the raster.")
    rows = [AreaRow(rule=f"value {r.op} {r.value:g}", pixels=n, area_m2=a, area_km2=a / 1e6,
                    percent_of_valid=100.0 * a / varea if varea else None, percent_of_total=100.0 * a / tarea)
            for r, (n, a) in zip(rules, hits, strict=True)]
    return AreaResult(raster=p.name, rows=rows, valid_area_m2=varea, total_area_m2=tarea, crs=_crs(grid))


def eo_zonal_statistics(
    raster: RasterArg,
    zones: Annotated[str | dict[str, Any] | None, Field(description="GeoJSON polygons (object, text or file path); "
                     "EPSG:4326 lon/lat unless it names a CRS. Zone names from properties.id/name.")] = None,
    zone_raster: Annotated[str | None, Field(description="Instead of polygons: an integer raster of zone ids (0 = "
                           "none), e.g. a classification; same CRS.")] = None,
    band: Annotated[int, Field(ge=1)] = 1,
    all_touched: Annotated[bool, Field(
        description="Polygons: include every pixel touched, not only centres inside.")] = False,
    progress: Progress | None = None,
) -> ZonalResult:
    """Statistics of a raster per zone: polygons from GeoJSON, or the integer values of a zone raster.

    Per zone: pixels, valid pixels, mean, std, min, max and valid area (m2). Bound:
    RESEARCH_MCP_EO__MAX_ZONES zones.
    """
    from tools.eo.rasters import Reader, resolve_raster

    if (zones is None) == (zone_raster is None):
        raise InvalidInput("Give exactly one of zones (GeoJSON) and zone_raster.",
                           hint="Pass polygons or a zone raster.")
    reader, grid, p = _single(raster, band)
    try:
        if zones is not None:
            result = st.polygon_zones(reader, grid, st.load_geojson(zones), progress, all_touched)
        else:
            zr = Reader(resolve_raster(zone_raster), grid, resampling="nearest")
            try:
                result = st.raster_zones(reader, zr, grid, progress)
            finally:
                zr.close()
    finally:
        reader.close()

    def clean(v: Any) -> Any:
        return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)

    rows = []
    for z in result:
        s = z.stats.summary()
        rows.append(ZoneRow(zone=z.key, properties={k: clean(v) for k, v in z.properties.items()}, pixels=z.pixels,
                            valid_pixels=s["valid_pixels"], mean=s["mean"], std=s["std"], min=s["min"], max=s["max"],
                            valid_area_m2=z.area_m2))
    return ZonalResult(raster=p.name, zones=rows)


# ------------------------------------------------------------------------------------------ change/trend
def eo_change(
    before: Annotated[str, Field(description="Raster of the earlier date (e.g. an NDVI GeoTIFF).")],
    after: Annotated[str, Field(description="Raster of the later date, same CRS (another grid is resampled).")],
    method: Annotated[Literal["difference", "relative", "ratio"], Field(
        description="difference: after - before; relative: (after - before)/|before|; ratio: after/before."),
    ] = "difference",
    threshold: Annotated[float | None, Field(description="Report the area where change > threshold (increase) and "
                         "< -threshold (decrease); for ratio, > 1+threshold and < 1-threshold.")] = None,
    resampling: Annotated[Literal["nearest", "bilinear", "cubic", "average"], Field(
        description="How to bring the coarser raster onto the finer grid.")] = "bilinear",
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> ChangeResult:
    """Change map between two dates, resampling both rasters to the finer common grid when they differ
    (e.g. 10 m vs 20 m bands); rasters in different CRSs are refused.

    Returns the change GeoTIFF, statistics and, with a threshold, the increase and decrease areas (m2).
    """
    from tools.eo.products import run_raster
    from tools.eo.rasters import Reader, close_all, common_grid, grid_of, pixel_area_rows, resolve_raster

    pa, pb = resolve_raster(before), resolve_raster(after)
    grid = common_grid([pa, pb], [f"before ({pa.name})", f"after ({pb.name})"])
    resampled = not (grid_of(pa).same_as(grid) and grid_of(pb).same_as(grid))

    def change(a: dict[str, np.ndarray]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            if method == "difference":
                out = a["b"] - a["a"]
            elif method == "relative":
                out = (a["b"] - a["a"]) / np.abs(a["a"])
            else:
                out = a["b"] / a["a"]
        out[~np.isfinite(out)] = np.nan
        return out

    readers = {"a": Reader(pa, grid, resampling=resampling), "b": Reader(pb, grid, resampling=resampling)}
    path, stats = run_raster(readers,
                             grid, change, f"change-{method}", progress, cog=cog)
    inc = dec = None
    if threshold is not None:
        hi, lo = (1 + threshold, 1 - threshold) if method == "ratio" else (threshold, -threshold)
        r = {"c": Reader(path, grid_of(path))}
        inc = dec = 0.0
        try:
            from tools.eo.rasters import iter_blocks

            for w, a in iter_blocks(r, grid, None, "areas"):
                rows = pixel_area_rows(grid, int(w.row_off), int(w.height))
                with np.errstate(invalid="ignore"):
                    inc += float(((a["c"] > hi).sum(axis=1) * rows).sum())
                    dec += float(((a["c"] < lo).sum(axis=1) * rows).sum())
        finally:
            close_all(r)
    return ChangeResult(output=str(path), quicklook=_quick(path, quicklook, "RdBu", f"change ({method})"),
                        method=method, stats=_stats(stats), resampled=resampled, increase_area_m2=inc,
                        decrease_area_m2=dec, threshold=threshold)


def eo_trend(
    rasters: Annotated[list[str], Field(description="One raster per date (same CRS; resampled to the finest grid).")],
    dates: Annotated[list[str], Field(description="The rasters' dates: ISO dates ('2020-07-01') or decimal years.")],
    alpha: Annotated[float, Field(gt=0, lt=1, description="Significance level for the Mann-Kendall test.")] = 0.05,
    region: Annotated[str | dict[str, Any] | None, Field(
        description="GeoJSON polygon(s) (object, text or path; EPSG:4326 unless named) over which the area mean "
        "is taken; None: the whole raster.")] = None,
    progress: Progress | None = None,
) -> TrendResult:
    """Time-series trend per pixel and of the area mean: least-squares slope, Mann-Kendall test (with the tie
    correction) and Sen's slope, in units per year.

    Writes a 5-band GeoTIFF (sen_slope, ols_slope, mk_z, mk_p, mk_s); pixels with fewer than 3 valid dates are
    nodata. Returns the area-mean series (whole raster or a region) and its trend. Bound:
    RESEARCH_MCP_EO__MAX_DATES dates.
    """
    from tools.eo.rasters import Reader, RunningStats, Writer, block_windows, close_all, common_grid, resolve_raster

    limit = get_settings().eo.max_dates
    if len(rasters) > limit:
        raise LimitExceeded("The number of dates", len(rasters), limit, "RESEARCH_MCP_EO__MAX_DATES")
    if len(rasters) != len(dates):
        raise InvalidInput(f"{len(rasters)} rasters but {len(dates)} dates.", hint="Give one date per raster.")
    if len(rasters) < 3:
        raise InvalidInput("A trend needs at least 3 dates.", hint="Give 3 or more rasters.")
    t = tr.decimal_years(dates)
    order = np.argsort(t)
    paths = [resolve_raster(rasters[i]) for i in order]
    ts = t[order]
    grid = common_grid(paths)
    geoms = st.project_features(st.load_geojson(region), grid) if region is not None else None
    readers = {str(i): Reader(p, grid) for i, p in enumerate(paths)}
    sums = np.zeros(len(paths))
    cnts = np.zeros(len(paths), dtype=np.int64)
    names = ["sen_slope", "ols_slope", "mk_z", "mk_p", "mk_s"]
    writer = Writer("trend", grid, count=5, descriptions=names, units="per year")
    sig = RunningStats()
    n_sig = 0
    try:
        wins = block_windows(grid)
        for k, w in enumerate(wins, start=1):
            stack = np.stack([readers[str(i)].read(w) for i in range(len(paths))], axis=-1)
            shape = stack.shape[:2]
            y = stack.reshape(-1, len(paths))
            ok = np.isfinite(y)
            if geoms is not None:
                ok &= st.region_mask(geoms, grid, w).reshape(-1, 1)
            sums += np.where(ok, y, 0.0).sum(axis=0)
            cnts += ok.sum(axis=0)
            s, _var, z, p = tr.mann_kendall(y)
            outs = [tr.sen_slope(ts, y), tr.ols_slope(ts, y), z, p, s]
            for j, o in enumerate(outs, start=1):
                writer.write(o.reshape(shape), w, band=j)
            sig.update(p)
            n_sig += int((p < alpha).sum())
            report(progress, k, len(wins), "trend")
    except BaseException:
        writer.discard()
        raise
    finally:
        close_all(readers)
    if sig.count == 0:
        writer.discard()
        raise InvalidInput("No pixel has 3 or more valid dates.", hint="Check that the rasters overlap.")
    path = writer.close()
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnts > 0, sums / np.maximum(cnts, 1), np.nan)
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return TrendResult(output=str(path), dates=[float(x) for x in t],
                       area_mean=[None if not math.isfinite(means[back[i]]) else float(means[back[i]])
                                  for i in range(len(t))],
                       area_trend=tr.series_trend(ts, means), significant_fraction=n_sig / sig.count, alpha=alpha)


def eo_quicklook(
    raster: RasterArg,
    band: Annotated[int, Field(ge=1)] = 1,
    cmap: Annotated[str, Field(description="matplotlib colormap: viridis, RdYlGn, inferno, RdBu, gray...")] = "viridis",
    vmin: Annotated[float | None, Field(description="Colour scale low end; None: 2nd percentile.")] = None,
    vmax: Annotated[float | None, Field(description="Colour scale high end; None: 98th percentile.")] = None,
    title: Annotated[str | None, Field(description="Plot title; None: the band description.")] = None,
) -> QuicklookResult:
    """Draw a PNG quicklook of a raster band with a colorbar (decimated to at most 1024 px on a side)."""
    from tools.eo.quicklook import render
    from tools.eo.rasters import resolve_raster

    p = resolve_raster(raster)
    return QuicklookResult(png=str(render(p, title=title, cmap=cmap, vmin=vmin, vmax=vmax, band=band)))
