"""Bounds of the EO family, set through `RESEARCH_MCP_EO__<NAME>`."""

from pydantic import BaseModel, Field

from tools.limits import register_limits


@register_limits("eo")
class EOLimits(BaseModel):
    max_pixels: int = Field(400_000_000, description="Largest raster (width x height) a tool processes.")
    block_size: int = Field(1024, description="Edge of the square windows pixel work is done in.")
    max_zones: int = Field(300, description="Most zones (polygons or zone-raster values) one zonal call handles.")
    max_dates: int = Field(100, description="Most rasters (dates) in one time-series trend.")
    max_bins: int = Field(1000, description="Most histogram bins one statistics call returns.")
    gdal_cache_mb: int = Field(256, description="GDAL block cache (MiB); bounds the memory of reads and writes.")
    threads: int = Field(2, description="Worker threads computing blocks in parallel (each with its own readers).")
