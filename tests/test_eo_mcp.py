"""The EO tools through the MCP server in memory: listing, a structured call, a tool error, resources."""

from __future__ import annotations

import math

import pytest
import rasterio

server_app = pytest.importorskip("server.app")


@pytest.mark.anyio
async def test_eo_tools_over_mcp(anyio_backend: str) -> None:
    from mcp import Client

    async with Client(server_app.build_server(["eo"])) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"eo_list_scenes", "eo_describe_scene", "eo_list_indices", "eo_spectral_index", "eo_cloud_mask",
                "eo_land_surface_temperature", "eo_statistics", "eo_trend", "eo_quicklook"} <= names
        r = await c.call_tool("eo_spectral_index", {"scene": "sample://eo/landsat8_c1_l1t", "index": "NDWI",
                                                    "quicklook": False})
        out = r.structured_content
        assert out["quantity"] == "NDWI" and out["method"].startswith("(G-N)/(G+N)")
        assert out["stats"]["mean"] == pytest.approx(-0.4606, abs=1e-4)  # README's independent value
        with rasterio.open(out["output"]) as src:
            assert src.width == 627 and not math.isnan(float(src.read(1)[300, 300]))
        stats = await c.call_tool("eo_statistics", {"raster": out["output"], "percentiles": [50]})
        assert stats.structured_content["stats"]["valid_pixels"] == 627 * 603
        bad = await c.call_tool("eo_spectral_index", {"scene": "sample://eo/landsat8_c1_l1t", "index": "NDREI"})
        assert bad.is_error and "needs band RE1" in bad.content[0].text
        mask = await c.call_tool("eo_cloud_mask", {"scene": "sample://eo/landsat8_c1_l1t", "thresholds": [
            {"layer": "blue", "op": ">", "value": 0.2}, {"layer": "NDVI", "op": "<", "value": 0.1}]})
        fractions = mask.structured_content["class_fractions"]
        assert set(fractions) == {"blue > 0.2", "NDVI < 0.1"} and 0 < mask.structured_content["flagged_fraction"] < 1
        area = await c.call_tool("eo_area", {"raster": out["output"], "rules": [{"op": ">", "value": 0}]})
        assert area.structured_content["rows"][0]["area_m2"] % 900 == 0
        listed = await c.call_tool("eo_list_scenes", {})
        assert len(listed.structured_content["scenes"]) == 2
        resources = {str(x.uri) for x in (await c.list_resources()).resources}
        assert "sample://eo/landsat8_c1_l1t/l8_MTL.txt" in resources
