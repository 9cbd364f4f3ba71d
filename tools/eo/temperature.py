"""The EO tools on surface temperature: land surface temperature retrieval and the Temperature-Vegetation
Dryness Index."""

from __future__ import annotations

import math
import threading
from typing import Annotated, Literal

from pydantic import Field

from tools.eo.arguments import (
    CogArg,
    MaskArg,
    ProductArg,
    QuicklookArg,
    SceneArg,
    crs_name,
    draw_quicklook,
    geo,
    idx,
    load_scene,
    np,
    stats_model,
)
from tools.eo.results import RasterResult, TVDIResult
from tools.errors import InvalidInput
from tools.progress import Progress


def eo_land_surface_temperature(
    scene: SceneArg,
    method: Annotated[Literal["auto", "single_channel", "split_window", "radiance_layers", "product"], Field(
        description="auto: product on L2 scenes, else single_channel; split_window needs B10/B11; "
        "radiance_layers and product need C2 L2.")] = "auto",
    water_vapour: Annotated[float, Field(ge=0, le=6.5, description="g/cm2, split_window only.")] = 2.0,
    ndvi_soil: Annotated[float, Field(description="Bare-soil NDVI (emissivity).")] = 0.2,
    ndvi_veg: Annotated[float, Field(description="Full-vegetation NDVI (emissivity).")] = 0.5,
    mask: MaskArg = None,
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    product: ProductArg = None,
    progress: Progress | None = None,
) -> RasterResult:
    """Retrieve land surface temperature (K) from a Landsat scene as a GeoTIFF.

    Returns the file, a PNG, statistics and the cited method.
    """
    from tools.eo.products import map_scene
    from tools.eo.radiometry import thermal_constants
    from tools.eo.sensors import THERMAL_WAVELENGTH_UM

    sc = load_scene(scene, product)
    if not sc.is_landsat:
        raise InvalidInput(f"{sc.product} has no thermal bands.", hint="Use a Landsat scene for LST.")
    m = method
    if m == "auto":
        m = "product" if sc.level == "L2" else "single_channel"
    params: dict[str, float | str | None] = {"method": m}
    extra_notes: list[str] = []
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
        nonpositive = [0]
        lock = threading.Lock()

        def from_layers(a: dict[str, np.ndarray]) -> np.ndarray:
            ls = geo.surface_radiance(a["TRAD"], a["URAD"], a["DRAD"], a["ATRAN"], a["EMIS"])
            with np.errstate(invalid="ignore"):
                bad = int((np.isfinite(ls) & (ls <= 0)).sum())
            with lock:
                nonpositive[0] += bad
            return geo.radiance_temperature(ls, k1, k2)

        prod = map_scene(sc, layers, from_layers, "LST", progress, mask_classes=mask, cog=cog, units="K")
        if nonpositive[0]:
            extra_notes.append(
                f"{nonpositive[0]} pixel(s) have a non-positive surface radiance Ls (the path and reflected sky "
                "radiance exceed TRAD): no temperature inverts it, so they are nodata.")
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
        output=str(prod.path), quicklook=draw_quicklook(prod.path, quicklook, "inferno", f"LST ({m})", "K", scene=sc),
        quantity="land_surface_temperature", units="K", method=how, stats=stats_model(prod.stats), inputs=prod.files,
        calibration=prod.formulas, parameters=params, width=prod.grid.width, height=prod.grid.height,
        crs=crs_name(prod.grid), notes=prod.notes + extra_notes,
    )




def eo_tvdi(
    ndvi: Annotated[str, Field(description="NDVI GeoTIFF (eo_spectral_index).")],
    lst: Annotated[str, Field(description="LST GeoTIFF in K (eo_land_surface_temperature), same CRS.")],
    bin_width: Annotated[float, Field(gt=0, le=0.1)] = 0.01,
    ndvi_min: Annotated[float, Field(description="NDVI below this (water, cloud) is left out of the fits.")] = 0.1,
    min_count: Annotated[int, Field(ge=1, description="Fewest pixels in a fitted bin.")] = 10,
    quicklook: QuicklookArg = True,
    progress: Progress | None = None,
) -> TVDIResult:
    """Temperature-Vegetation Dryness Index (Sandholt et al. 2002) from NDVI and LST rasters.

    1 = dry. Returns the GeoTIFF, a PNG, the fitted edges and statistics.
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
    return TVDIResult(output=str(path), quicklook=draw_quicklook(path, quicklook, "RdYlBu_r", "TVDI (1 = dry)"),
                      dry_edge={"a": dry[0], "b": dry[1]}, wet_edge={"a": wet[0], "b": wet[1]}, bins_used=used,
                      stats=stats_model(stats))


