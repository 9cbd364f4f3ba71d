"""Every EO tool function in one namespace, for callers from Python: `from tools.eo.api import eo_spectral_index`.

The tools live in modules named for what they hold (`discovery`, `spectral`, `masking`, `temperature`,
`vegetation`, `change`, `summaries`); `catalog.TOOLS` is what the server registers.
"""

from tools.eo.arguments import load_scene
from tools.eo.change import eo_burn_severity, eo_change, eo_trend
from tools.eo.discovery import eo_describe_scene, eo_list_indices, eo_list_scenes
from tools.eo.masking import ThresholdRule, eo_cloud_mask
from tools.eo.spectral import eo_radiometric_correction, eo_spectral_index
from tools.eo.summaries import AreaRule, eo_area, eo_quicklook, eo_statistics, eo_zonal_statistics
from tools.eo.temperature import eo_land_surface_temperature, eo_tvdi
from tools.eo.vegetation import eo_vegetation_parameters

__all__ = [
    "AreaRule", "ThresholdRule", "eo_area", "eo_burn_severity", "eo_change", "eo_cloud_mask", "eo_describe_scene",
    "eo_land_surface_temperature", "eo_list_indices", "eo_list_scenes", "eo_quicklook", "eo_radiometric_correction",
    "eo_spectral_index", "eo_statistics", "eo_trend", "eo_tvdi", "eo_vegetation_parameters", "eo_zonal_statistics",
    "load_scene",
]
