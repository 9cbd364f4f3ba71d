"""Scenes from STAC items (Earth Search sentinel-cogs Sentinel-2 L2A, USGS-style Landsat C2 L2) and from plainly
named band files with a `product` argument; metadata (baseline, datetime, cloud cover) and the BOA offset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from tools.eo import api
from tools.eo.scenes import Scene
from tools.eo.stac import scene_from_stac_item
from tools.errors import InvalidInput
from tools.paths import SAMPLE_DIR

S2_SAMPLE = SAMPLE_DIR / "eo" / "sentinel2_l1c"
COGS = "https://sentinel-cogs.s3.us-west-2.amazonaws.com/sentinel-s2-l2a-cogs/32/T/QM/2023/1/S2B_32TQM_20230105_0_L2A"


def write(path: Path, data: np.ndarray, res: float = 10.0, nodata: float | None = 0) -> None:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[1], height=data.shape[0], count=1,
                       dtype=data.dtype, crs="EPSG:32632", transform=from_origin(600000, 5000000, res, res),
                       nodata=nodata) as dst:
        dst.write(data, 1)


def s2_item(folder: Path, baseline: str | None, **props: object) -> Path:
    """An Earth Search v1 `sentinel-2-l2a` item (asset hrefs on sentinel-cogs) with B04/B08/B11 downloaded
    beside it under their own names; the SCL asset is left remote."""
    folder.mkdir(parents=True)
    write(folder / "B04.tif", np.full((4, 4), 1800, dtype=np.uint16))
    write(folder / "B08.tif", np.full((4, 4), 4000, dtype=np.uint16))
    write(folder / "B11.tif", np.full((2, 2), 3000, dtype=np.uint16), res=20.0)
    properties = {"datetime": "2023-01-05T10:19:45.123000Z", "platform": "sentinel-2b", "constellation": "sentinel-2",
                  "instruments": ["msi"], "eo:cloud_cover": 12.5, "s2:product_type": "S2MSI2A", "proj:epsg": 32632,
                  "earthsearch:boa_offset_applied": False} | props
    if baseline is not None:
        properties["s2:processing_baseline"] = baseline

    def asset(name: str, common: str | None) -> dict[str, object]:
        bands = [{"name": name, "common_name": common}] if common else []
        return {"href": f"{COGS}/{name}.tif", "type": "image/tiff; application=geotiff; profile=cloud-optimized",
                "roles": ["data"], "eo:bands": bands}

    item = {
        "type": "Feature", "stac_version": "1.0.0", "id": "S2B_32TQM_20230105_0_L2A", "collection": "sentinel-2-l2a",
        "stac_extensions": [], "bbox": [11.0, 45.0, 11.1, 45.1],
        "geometry": {"type": "Polygon", "coordinates": [[[11.0, 45.0], [11.1, 45.0], [11.1, 45.1], [11.0, 45.0]]]},
        "properties": properties, "links": [],
        "assets": {"red": asset("B04", "red"), "nir": asset("B08", "nir"), "swir16": asset("B11", "swir16"),
                   "scl": asset("SCL", None), "thumbnail": {"href": f"{COGS}/thumbnail.jpg", "roles": ["thumbnail"]}},
    }
    path = folder / "S2B_32TQM_20230105_0_L2A.json"
    path.write_text(json.dumps(item))
    return path


def ndvi(red_dn: float, nir_dn: float, offset: float) -> float:
    r, n = (red_dn + offset) / 1e4, (nir_dn + offset) / 1e4
    return (n - r) / (n + r)


def pixel(path: str) -> float:
    with rasterio.open(path) as src:
        return float(src.read(1)[0, 0])


@pytest.mark.parametrize(("baseline", "offset"), [("03.01", 0.0), ("04.00", -1000.0), ("05.09", -1000.0)])
def test_s2_l2a_stac_item_metadata_and_boa_offset(tmp_path: Path, baseline: str, offset: float) -> None:
    item = s2_item(tmp_path / "s2", baseline)
    sc = scene_from_stac_item(item)
    assert isinstance(sc, Scene) and sorted(sc.bands) == ["B04", "B08", "B11"]
    assert any("scl" in n for n in sc.notes)  # the remote SCL asset is named as left out
    d = api.eo_describe_scene(str(item))
    assert (d.product, d.platform, d.processing_baseline) == ("sentinel-2-l2a", "SENTINEL_2B", baseline)
    assert (d.acquired, d.cloud_cover) == ("2023-01-05", 12.5)
    r = api.eo_spectral_index(str(item), "NDVI", quicklook=False)
    assert pixel(r.output) == pytest.approx(ndvi(1800, 4000, offset), abs=1e-6)
    assert f"rho = (DN + {offset:g}) / 10000" == r.calibration["R"]


def test_s2_stac_offset_already_applied_and_unknown_baseline(tmp_path: Path) -> None:
    applied = s2_item(tmp_path / "a", "05.09", **{"earthsearch:boa_offset_applied": True})
    r = api.eo_spectral_index(str(applied), "NDVI", quicklook=False)
    assert pixel(r.output) == pytest.approx(ndvi(1800, 4000, 0.0), abs=1e-6)
    assert any("boa_offset_applied" in n for n in r.notes)
    unknown = api.eo_describe_scene(str(s2_item(tmp_path / "u", None)))
    assert unknown.processing_baseline is None and any("baseline unknown" in n for n in unknown.notes)


def test_stac_item_beside_plain_band_files(tmp_path: Path) -> None:
    item = s2_item(tmp_path / "s2", "05.09")
    folder = item.parent
    d = api.eo_describe_scene(str(folder))  # the folder: the item beside the bands is read
    assert d.processing_baseline == "05.09" and d.metadata_file == item.name
    listed = [str(folder / "B08.tif"), str(folder / "B11.tif")]
    r = api.eo_spectral_index(listed, "NDMI", quicklook=False, resolution="coarsest")
    n, s1 = (4000 - 1000) / 1e4, (3000 - 1000) / 1e4
    assert pixel(r.output) == pytest.approx((n - s1) / (n + s1), abs=1e-6)
    assert r.inputs == {"N": "B08.tif", "S1": "B11.tif"}
    write(folder / "B02.tif", np.full((4, 4), 900, dtype=np.uint16))
    with pytest.raises(InvalidInput, match="not an asset of the STAC item"):
        api.eo_describe_scene([str(folder / "B02.tif"), str(folder / "B04.tif")])


def test_plain_named_real_sentinel2_bands_need_a_product_or_an_item(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    for b in ("B04", "B08"):  # the bundled real L1C bands (S2A, 2017-07-29, baseline 02.05), without tileInfo.json
        shutil.copy(S2_SAMPLE / f"{b}.tif", folder / f"{b}.tif")
    files = [str(folder / "B04.tif"), str(folder / "B08.tif")]
    with pytest.raises(InvalidInput, match="Cannot tell which product") as err:
        api.eo_describe_scene(files)
    assert "product=" in err.value.hint
    r = api.eo_spectral_index(files, "NDVI", product="sentinel-2-l1c", quicklook=False)
    with rasterio.open(folder / "B04.tif") as a, rasterio.open(folder / "B08.tif") as b:
        red, nir = a.read(1).astype(np.float64) / 1e4, b.read(1).astype(np.float64) / 1e4
    ok = red > 0
    expected = (nir[ok] - red[ok]) / (nir[ok] + red[ok])
    assert r.stats.valid_pixels == ok.sum() and r.stats.mean == pytest.approx(expected.mean(), abs=1e-6)
    assert r.stats.mean == pytest.approx(0.1368, abs=1e-4)  # the data README's reference value
    with pytest.raises(InvalidInput, match="describe a Sentinel-2 L1C"):
        api.eo_describe_scene(str(S2_SAMPLE), product="sentinel-2-l2a")  # its tileInfo.json says L1C
    with pytest.raises(InvalidInput, match="Unknown product"):
        api.load_scene(files, "sentinel-3")

    item = {"type": "Feature", "stac_version": "1.1.0", "id": "S2A_19UDP_20170729_0_L1C",
            "collection": "sentinel-2-l1c", "geometry": None, "links": [],
            "properties": {"datetime": "2017-07-29T15:35:57Z", "platform": "sentinel-2a", "eo:cloud_cover": 24.48,
                           "s2:processing_baseline": "02.05"},
            "assets": {"B04": {"href": "./B04.tif"}, "B08": {"href": "B08.tif"}}}
    (folder / "item.json").write_text(json.dumps(item))
    d = api.eo_describe_scene(files)
    assert (d.product, d.platform, d.acquired, d.cloud_cover, d.processing_baseline) == (
        "sentinel-2-l1c", "SENTINEL_2A", "2017-07-29", 24.48, "02.05")
    again = api.eo_spectral_index(files, "NDVI", quicklook=False)
    assert again.stats.mean == pytest.approx(r.stats.mean, abs=1e-9)


LC = "LC09_L2SP_042034_20230610_20230612_02_T1"


def test_landsat_c2_l2_stac_item(tmp_path: Path) -> None:
    folder = tmp_path / "lc"
    folder.mkdir()
    write(folder / f"{LC}_SR_B4.TIF", np.full((6, 6), 10000, dtype=np.uint16), res=30.0)
    write(folder / f"{LC}_SR_B5.TIF", np.full((6, 6), 20000, dtype=np.uint16), res=30.0)
    qa = np.full((6, 6), 21824, dtype=np.uint16)
    qa[0, :3] = 22280  # cloud, high confidence
    write(folder / f"{LC}_QA_PIXEL.TIF", qa, res=30.0, nodata=1)
    item = {
        "type": "Feature", "stac_version": "1.0.0", "id": f"{LC}_SR", "collection": "landsat-c2l2-sr", "links": [],
        "geometry": None,
        "properties": {"datetime": "2023-06-10T18:35:01.123Z", "platform": "LANDSAT_9", "instruments": ["OLI", "TIRS"],
                       "eo:cloud_cover": 3.2, "view:sun_elevation": 66.25, "landsat:collection_number": "02",
                       "landsat:correction": "L2SP", "landsat:scene_id": "LC90420342023161LGN00"},
        "assets": {"red": {"href": f"./{LC}_SR_B4.TIF", "eo:bands": [{"name": "SR_B4", "common_name": "red"}]},
                   "nir08": {"href": f"{LC}_SR_B5.TIF", "eo:bands": [{"name": "SR_B5", "common_name": "nir08"}]},
                   "qa_pixel": {"href": f"{LC}_QA_PIXEL.TIF"},
                   "swir16": {"href": f"https://landsatlook.usgs.gov/data/{LC}_SR_B6.TIF"}},
    }
    path = folder / f"{LC}_SR_stac.json"
    path.write_text(json.dumps(item))
    d = api.eo_describe_scene(str(path))
    assert (d.product, d.platform, d.sensor, d.quality_layer) == ("landsat-c2-l2", "LANDSAT_9", "OLI_TIRS", "qa_pixel")
    assert (d.acquired, d.sun_elevation, d.cloud_cover) == ("2023-06-10", 66.25, 3.2)
    r = api.eo_spectral_index(str(path), "NDVI", mask=["cloud"], quicklook=False)
    red, nir = 10000 * 2.75e-5 - 0.2, 20000 * 2.75e-5 - 0.2
    assert r.stats.valid_pixels == 36 - 3
    assert r.stats.mean == pytest.approx((nir - red) / (nir + red), abs=1e-6)


def test_stac_refusals(tmp_path: Path) -> None:
    (tmp_path / "not_item.json").write_text(json.dumps({"type": "FeatureCollection", "features": []}))
    with pytest.raises(InvalidInput, match="not a STAC item"):
        scene_from_stac_item(tmp_path / "not_item.json")
    item = s2_item(tmp_path / "gone", "05.09")
    for b in ("B04", "B08", "B11"):
        (item.parent / f"{b}.tif").unlink()
    with pytest.raises(InvalidInput, match="None of the band assets") as err:
        scene_from_stac_item(item)
    assert "beside the item JSON" in err.value.hint
    odd = json.loads(item.read_text()) | {"id": "X", "collection": "modis"}
    odd["properties"] = {"datetime": "2020-01-01T00:00:00Z", "platform": "terra"}
    (tmp_path / "modis.json").write_text(json.dumps(odd))
    with pytest.raises(InvalidInput, match="neither a Sentinel-2 nor a Landsat"):
        scene_from_stac_item(tmp_path / "modis.json")
