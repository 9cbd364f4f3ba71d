"""The EO tool deriving vegetation and surface parameters (FVC, LAI, albedo)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tools.eo.arguments import (
    CogArg,
    MaskArg,
    ProductArg,
    QuicklookArg,
    ResolutionArg,
    SceneArg,
    crs_name,
    draw_quicklook,
    geo,
    idx,
    load_scene,
    st,
    stats_model,
)
from tools.eo.results import RasterResult
from tools.errors import InvalidInput
from tools.progress import Progress


def eo_vegetation_parameters(
    scene: SceneArg,
    parameter: Literal["fvc", "lai", "albedo"],
    method: Annotated[str | None, Field(description="fvc: linear (default) or squared; lai: savi (default) or evi; "
                      "albedo: liang2001.")] = None,
    ndvi_soil: Annotated[float | None, Field(description="FVC: bare-soil NDVI; default: 5th percentile.")] = None,
    ndvi_veg: Annotated[float | None, Field(description="FVC: full-cover NDVI; default: 95th percentile.")] = None,
    mask: MaskArg = None,
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    resolution: ResolutionArg = "finest",
    product: ProductArg = None,
    progress: Progress | None = None,
) -> RasterResult:
    """Derive fractional vegetation cover, leaf area index or albedo from a scene.

    Returns the GeoTIFF, a PNG, statistics and the cited formula.
    """
    from tools.eo.products import index_product, map_scene, symbol_bands
    from tools.eo.rasters import Reader, grid_of

    sc = load_scene(scene, product)
    params: dict[str, float | str | None] = {}
    notes: list[str] = []
    if parameter == "fvc":
        how_m = method or "linear"
        if how_m not in ("linear", "squared"):
            raise InvalidInput(f"Unknown FVC method {how_m!r}.", hint="Use 'linear' or 'squared'.")
        ndvi_prod, _ = index_product(sc, "NDVI", None, progress, mask_classes=mask, resolution=resolution)
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
        picture = draw_quicklook(path, quicklook, "YlGn", "FVC", "fraction", scene=sc)
        return RasterResult(output=str(path), quicklook=picture,
                            quantity="fvc", units="fraction", method=how, stats=stats_model(stats),
                            inputs=ndvi_prod.files, calibration=ndvi_prod.formulas, parameters=params,
                            width=grid.width, height=grid.height, crs=crs_name(grid), notes=ndvi_prod.notes)
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
                         mask_classes=mask, cog=cog, units="m2/m2", resolution=resolution)
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
                         "albedo", progress, mask_classes=mask, cog=cog, units="fraction",
                         resolution=resolution)
        how = ("albedo = 0.356 blue + 0.130 red + 0.373 nir + 0.085 swir1 + 0.072 swir2 - 0.0018 "
               "(Liang 2001, RSE 76:213)")
        params |= {"method": "liang2001"}
        if sc.level in ("L1", "L1C"):
            notes.append("Computed from TOA reflectance; Liang's coefficients convert surface reflectance.")
        units = "fraction"
    else:
        raise InvalidInput(f"Unknown parameter {parameter!r}.", hint="Use fvc, lai or albedo.")
    return RasterResult(
        output=str(prod.path), quicklook=draw_quicklook(prod.path, quicklook, "YlGn" if parameter == "lai" else "gray",
                                                parameter.upper(), units, scene=sc),
        quantity=parameter, units=units, method=how, stats=stats_model(prod.stats), inputs=prod.files,
        calibration=prod.formulas, parameters=params, width=prod.grid.width, height=prod.grid.height,
        crs=crs_name(prod.grid), notes=prod.notes + notes,
    )


