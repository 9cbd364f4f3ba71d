"""The EO cloud / quality mask tool: QA bits and classes, thresholds on indices and bands."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from tools.eo.arguments import ProductArg, QuicklookArg, SceneArg, draw_quicklook, idx, load_scene, mk, np
from tools.eo.results import MaskResult
from tools.errors import InvalidInput, NotFound
from tools.progress import Progress, report


class ThresholdRule(BaseModel):
    layer: str = Field(description="An index (NDVI...) or band (B10, blue) of the scene.")
    op: Literal[">", ">=", "<", "<=", "==", "!="]
    value: float


def eo_cloud_mask(
    scene: SceneArg,
    classes: Annotated[list[str] | None, Field(description="Default cloud, shadow, cirrus, dilated_cloud; also "
                       "snow, water, clear and confidence classes per QA layer (QA_PIXEL, BQA, SCL); an unknown "
                       "class is refused with the layer's classes.")] = None,
    thresholds: Annotated[list[ThresholdRule] | None, Field(description="e.g. [{'layer': 'blue', 'op': '>', "
                          "'value': 0.25}].")] = None,
    combine: Annotated[Literal["any", "all"], Field(description="Flag where any / all classes and rules hold.")]
    = "any",
    quicklook: QuicklookArg = False,
    product: ProductArg = None,
    progress: Progress | None = None,
) -> MaskResult:
    """Build a cloud / quality mask from the scene's QA layer (Landsat QA bits, Sentinel-2 SCL).

    Classes and threshold rules; a uint8 GeoTIFF (1 flagged, 0 clear, 255 nodata) and the share flagged per class
    and rule.
    """
    from tools.eo.products import qa_layer, scene_inputs
    from tools.eo.rasters import Writer, block_windows

    sc = load_scene(scene, product)
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
                    has_data = ~mk.fill_mask(qa_kind, qa)
                    for n, m in mk.qa_mask(qa_kind, np.where(has_data, qa, 0), names).items():
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
    return MaskResult(output=str(path), quicklook=draw_quicklook(path, quicklook, "Greys", "mask (1 = flagged)",
                                                                  scene=sc),
                      flagged_fraction=flagged_total / data_total,
                      class_fractions={k: v / data_total for k, v in counts.items()}, data_pixels=data_total,
                      combine=combine)


