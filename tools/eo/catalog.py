"""The EO family's MCP tools."""

from tools.eo import api
from tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    ToolSpec(api.eo_list_scenes, "List EO scenes"),
    ToolSpec(api.eo_describe_scene, "Describe an EO scene"),
    ToolSpec(api.eo_list_indices, "Search spectral indices"),
    ToolSpec(api.eo_spectral_index, "Compute a spectral index", read_only=False, idempotent=False),
    ToolSpec(api.eo_radiometric_correction, "Radiometric correction", read_only=False, idempotent=False),
    ToolSpec(api.eo_cloud_mask, "Cloud and quality mask", read_only=False, idempotent=False),
    ToolSpec(api.eo_land_surface_temperature, "Land surface temperature", read_only=False, idempotent=False),
    ToolSpec(api.eo_vegetation_parameters, "Vegetation parameters (FVC, LAI, albedo)", read_only=False,
             idempotent=False),
    ToolSpec(api.eo_tvdi, "Temperature-Vegetation Dryness Index", read_only=False, idempotent=False),
    ToolSpec(api.eo_burn_severity, "Burn severity (dNBR)", read_only=False, idempotent=False),
    ToolSpec(api.eo_statistics, "Raster statistics"),
    ToolSpec(api.eo_area, "Area above/below thresholds"),
    ToolSpec(api.eo_zonal_statistics, "Zonal statistics"),
    ToolSpec(api.eo_change, "Change between dates", read_only=False, idempotent=False),
    ToolSpec(api.eo_trend, "Time-series trend", read_only=False, idempotent=False),
    ToolSpec(api.eo_quicklook, "Raster quicklook PNG", read_only=False, idempotent=False),
]
