"""The EO tools that calibrate bands and compute spectral indices."""

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
    idx,
    load_scene,
    stats_model,
)
from tools.eo.results import CorrectedBand, CorrectionResult, RasterResult
from tools.errors import InvalidInput
from tools.progress import Progress, report


def eo_spectral_index(
    scene: SceneArg,
    index: Annotated[str, Field(description="Name (eo_list_indices), e.g. NDVI, EVI, NDWI, NDMI, NBR, SAVI.")],
    constants: Annotated[dict[str, float] | None, Field(description="Override constants, e.g. {'L': 0.5}.")] = None,
    mask: MaskArg = None,
    cog: CogArg = False,
    quicklook: QuicklookArg = True,
    resolution: ResolutionArg = "finest",
    product: ProductArg = None,
    progress: Progress | None = None,
) -> RasterResult:
    """Compute a spectral index of a scene from calibrated reflectance, as a GeoTIFF.

    Returns the file, a PNG, the formula, statistics and notes. Bounded by max_pixels.
    """
    from tools.eo.products import index_product

    sc = load_scene(scene, product)
    product, pl = index_product(sc, index, constants, progress, mask_classes=mask, cog=cog, resolution=resolution)
    info = idx.catalogue()[pl.name]
    cmap = {"water": "RdBu", "vegetation": "RdYlGn", "burn": "RdYlGn", "snow": "Blues"}.get(
        info.application_domain, "viridis")
    return RasterResult(
        output=str(product.path),
        quicklook=draw_quicklook(product.path, quicklook, cmap, f"{pl.name} ({info.long_name})", scene=sc),
        quantity=pl.name, units="index", method=f"{info.formula} ({info.reference})", stats=stats_model(product.stats),
        inputs=product.files, calibration=product.formulas, parameters=dict(pl.params), width=product.grid.width,
        height=product.grid.height, crs=crs_name(product.grid), notes=product.notes,
    )


def eo_radiometric_correction(
    scene: SceneArg,
    bands: Annotated[list[str] | None, Field(description="Key (B4), name (red) or symbol (R); default: all "
                                             "reflective and thermal bands.")] = None,
    quantity: Annotated[Literal["auto", "reflectance", "radiance", "brightness_temperature", "dn"], Field(
        description="auto: reflectance, and brightness (L1) or surface (L2) temperature for thermal.")] = "auto",
    cog: CogArg = False,
    resolution: ResolutionArg = "finest",
    product: ProductArg = None,
    progress: Progress | None = None,
) -> CorrectionResult:
    """Convert a scene's DN to reflectance, radiance or temperature as a float32 GeoTIFF.

    One band per input (at most 20). Returns the file and the formulas used.
    """
    from tools.eo.products import scene_inputs
    from tools.eo.rasters import RunningStats, Writer, block_windows

    sc = load_scene(scene, product)
    if bands:
        chosen = {sc.band(b).key: sc.band(b) for b in bands}
    else:
        chosen = {k: b for k, b in sc.bands.items() if b.spec.kind in ("reflective", "thermal")}
    if len(chosen) > 20:
        raise InvalidInput(f"{len(chosen)} bands were asked for; one call writes at most 20.",
                           hint="Name the bands you need in `bands`.")
    ins = scene_inputs(sc, chosen, quantity=quantity, resolution=resolution)
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
                         formula=ins.calibrations[k].formula, stats=stats_model(stats[k]))
           for j, k in enumerate(keys, 1)]
    notes = [n for c in ins.calibrations.values() for n in c.notes] + sc.notes + ins.notes
    return CorrectionResult(output=str(path), bands=out, width=ins.grid.width, height=ins.grid.height,
                            crs=crs_name(ins.grid), notes=notes)


