"""The EO family's MCP tools."""

from tools.eo import change, discovery, masking, spectral, summaries, temperature, timeseries, vegetation
from tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    ToolSpec(discovery.eo_list_scenes, "List EO scenes"),
    ToolSpec(discovery.eo_describe_scene, "Describe an EO scene"),
    ToolSpec(discovery.eo_list_indices, "Search spectral indices"),
    ToolSpec(spectral.eo_spectral_index, "Compute a spectral index", read_only=False, idempotent=False, heavy=True),
    ToolSpec(spectral.eo_radiometric_correction, "Radiometric correction", read_only=False,
             idempotent=False, heavy=True),
    ToolSpec(masking.eo_cloud_mask, "Cloud and quality mask", read_only=False, idempotent=False, heavy=True),
    ToolSpec(temperature.eo_land_surface_temperature, "Land surface temperature", read_only=False,
             idempotent=False, heavy=True),
    ToolSpec(vegetation.eo_vegetation_parameters, "Vegetation parameters (FVC, LAI, albedo)", read_only=False,
             idempotent=False, heavy=True),
    ToolSpec(temperature.eo_tvdi, "Temperature-Vegetation Dryness Index", read_only=False,
             idempotent=False, heavy=True),
    ToolSpec(change.eo_burn_severity, "Burn severity (dNBR)", read_only=False, idempotent=False, heavy=True),
    ToolSpec(summaries.eo_statistics, "Raster statistics", heavy=True),
    ToolSpec(summaries.eo_area, "Area above/below thresholds", heavy=True),
    ToolSpec(summaries.eo_zonal_statistics, "Zonal statistics", heavy=True),
    ToolSpec(change.eo_change, "Change between dates", read_only=False, idempotent=False, heavy=True),
    ToolSpec(change.eo_trend, "Time-series trend", read_only=False, idempotent=False, heavy=True),
    ToolSpec(summaries.eo_quicklook, "Raster quicklook PNG", read_only=False, idempotent=False, heavy=True),
    ToolSpec(timeseries.eo_index_timeseries, "Index time series over STAC items (Dask)",
             read_only=False, idempotent=False, heavy=True),
]
