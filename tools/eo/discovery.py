"""The EO tools that find scenes and spectral indices and describe what a scene holds."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tools.eo.arguments import ProductArg, SceneArg, idx, load_scene
from tools.eo.results import BandRow, IndexInfo, IndexList, SceneDescription, SceneList, SceneSummary
from tools.errors import InvalidInput
from tools.paths import SAMPLE_DIR, resolve_input


def eo_list_scenes(
    folder: Annotated[str | None, Field(
        description="Searched 4 levels deep; default: the bundled samples.")] = None,
) -> SceneList:
    """List the Landsat and Sentinel-2 scenes under a folder (the bundled samples by default).

    Use it first: path, product, platform, date and bands per scene (at most 100).
    """
    from tools.eo.detection import find_scenes

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


def eo_describe_scene(scene: SceneArg, product: ProductArg = None) -> SceneDescription:
    """Describe a scene: which bands and indices it supports. Reads headers only."""
    from tools.eo.products import qa_layer
    from tools.eo.rasters import open_raster

    sc = load_scene(scene, product)
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


def eo_list_indices(
    query: Annotated[str | None, Field(description="Text in the name or long name, e.g. 'water'.")] = None,
    domain: Annotated[str | None, Field(description="vegetation, water, burn, urban, soil, snow, radar, clouds or "
                                        "kernel.")] = None,
    bands: Annotated[list[str] | None, Field(description="Band symbols it must use, e.g. ['N', 'S1'].")] = None,
    scene: Annotated[str | list[str] | None, Field(description="Say what each index lacks on this scene.")] = None,
    computable_only: Annotated[bool, Field(description="With a scene: only indices it can compute.")] = False,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=100)] = 30,
    product: ProductArg = None,
) -> IndexList:
    """Search the 280 spectral indices (Awesome Spectral Indices) by name, domain or bands.

    Formula, bands, constants, reference; with a scene, what it lacks. Page with offset. NDWI is McFeeters'.
    """
    available = set(load_scene(scene, product).by_symbol()) if scene is not None else None
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


