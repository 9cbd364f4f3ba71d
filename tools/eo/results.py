"""Structured results of the EO tools (small summaries; rasters and plots are returned as file paths)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RasterStats(BaseModel):
    valid_pixels: int
    nodata_pixels: int
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None


class BandRow(BaseModel):
    key: str = Field(description="Product band key (B4, SR_B4, ST_B10, B8A, QA_PIXEL, SCL).")
    common_name: str | None
    spyndex_symbols: list[str]
    kind: str
    file: str
    width: int
    height: int
    resolution_m: float
    dtype: str
    crs: str | None


class SceneSummary(BaseModel):
    path: str
    product: str
    platform: str
    sensor: str
    scene_id: str | None = None
    acquired: str | None = None
    bands: list[str]


class SceneList(BaseModel):
    folder: str
    scenes: list[SceneSummary]
    problems: list[str] = Field(default_factory=list, description="Folders that looked like scenes but failed.")


class SceneDescription(BaseModel):
    product: str = Field(description="landsat-c1-l1, landsat-c2-l1, landsat-c2-l2, sentinel-2-l1c or sentinel-2-l2a.")
    platform: str
    sensor: str
    scene_id: str | None
    acquired: str | None
    sun_elevation: float | None
    cloud_cover: float | None
    processing_baseline: str | None
    metadata_file: str | None
    bands: list[BandRow]
    computable_indices: int = Field(description="Catalogue indices whose bands this scene has.")
    catalogue_size: int
    quality_layer: str | None
    notes: list[str]


class IndexInfo(BaseModel):
    name: str
    long_name: str
    formula: str
    bands: list[str] = Field(description="spyndex band symbols the formula reads.")
    constants: dict[str, float | None]
    domain: str
    reference: str
    missing: list[str] | None = Field(None, description="Bands/constants the given scene lacks (None: no scene).")


class IndexList(BaseModel):
    matched: int
    offset: int
    next_offset: int | None = Field(description="Call again with this offset for more; None when done.")
    catalogue_size: int
    computable_for_scene: int | None = None
    domains: list[str]
    indices: list[IndexInfo]


class RasterResult(BaseModel):
    output: str = Field(description="Path of the GeoTIFF written (tiled, DEFLATE; a COG when asked).")
    quicklook: str | None = Field(None, description="Path of the PNG quicklook, when drawn.")
    quantity: str
    units: str
    method: str = Field(description="Formula or method, with its reference.")
    stats: RasterStats
    inputs: dict[str, str] = Field(default_factory=dict, description="Input name -> file read.")
    calibration: dict[str, str] = Field(default_factory=dict, description="Input name -> DN conversion applied.")
    parameters: dict[str, float | str | None] = Field(default_factory=dict)
    width: int
    height: int
    crs: str | None
    notes: list[str] = Field(default_factory=list)


class MaskResult(BaseModel):
    output: str = Field(description="uint8 GeoTIFF: 1 flagged, 0 clear, 255 nodata.")
    quicklook: str | None = None
    flagged_fraction: float = Field(description="Flagged pixels / pixels with data.")
    class_fractions: dict[str, float] = Field(description="Per class or threshold rule: fraction of data pixels.")
    data_pixels: int
    combine: str


class SignedPart(BaseModel):
    """The pixels of one sign (> 0 or < 0) of the raw values."""

    pixels: int
    fraction_of_valid: float
    sum: float | None = None
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None


class StatisticsResult(BaseModel):
    raster: str
    band: int
    transform: str = Field("none", description="What stats, percentiles and histogram describe: the values "
                           "('none') or their absolute values ('abs').")
    stats: RasterStats
    percentiles: dict[str, float]
    percentiles_exact: bool
    histogram_counts: list[int]
    histogram_edges: list[float]
    positive: SignedPart | None = Field(None, description="Raw values > 0 (e.g. increases of a change raster).")
    negative: SignedPart | None = Field(None, description="Raw values < 0 (e.g. decreases).")
    zero_pixels: int = Field(0, description="Valid pixels equal to 0.")


class AreaRow(BaseModel):
    rule: str
    pixels: int
    area_m2: float
    area_km2: float
    percent_of_valid: float | None
    percent_of_total: float


class AreaResult(BaseModel):
    raster: str
    rows: list[AreaRow]
    valid_area_m2: float
    total_area_m2: float
    crs: str | None


class ZoneRow(BaseModel):
    zone: str
    properties: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    pixels: int
    valid_pixels: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    valid_area_m2: float


class ZonalResult(BaseModel):
    raster: str
    zones: list[ZoneRow]


class ChangeResult(BaseModel):
    output: str
    quicklook: str | None = None
    method: str
    stats: RasterStats
    resampled: bool = Field(description="True when the two rasters were on different grids.")
    increase_area_m2: float | None = None
    decrease_area_m2: float | None = None
    threshold: float | None = None


class TrendResult(BaseModel):
    output: str = Field(description="Multi-band GeoTIFF: sen_slope, ols_slope, mk_z, mk_p, mk_s (per year).")
    dates: list[float] = Field(description="Decimal years, in input order.")
    area_mean: list[float | None] = Field(description="Mean of each date's raster over valid pixels.")
    area_trend: dict[str, float | None] = Field(description="Trend of the area-mean series.")
    significant_fraction: float | None = Field(None, description="Share of valid pixels with MK p < alpha.")
    alpha: float


class BurnResult(BaseModel):
    output: str = Field(description="dNBR GeoTIFF (float32).")
    classes_output: str = Field(description="Severity class GeoTIFF (uint8, 1-7, 0 nodata).")
    quicklook: str | None = None
    stats: RasterStats
    class_areas_m2: dict[str, float]


class TVDIResult(BaseModel):
    output: str
    quicklook: str | None = None
    dry_edge: dict[str, float] = Field(description="Tmax = a + b*NDVI.")
    wet_edge: dict[str, float] = Field(description="Tmin = a + b*NDVI.")
    bins_used: int
    stats: RasterStats


class QuicklookResult(BaseModel):
    png: str


class CorrectedBand(BaseModel):
    band: str
    output_band: int
    quantity: str
    units: str
    formula: str
    stats: RasterStats


class CorrectionResult(BaseModel):
    output: str = Field(description="Multi-band float32 GeoTIFF, one band per input band, NaN nodata.")
    bands: list[CorrectedBand]
    width: int
    height: int
    crs: str | None
    notes: list[str] = Field(default_factory=list)
