"""Inputs of the scale benchmark and tests, built from the bundled data.

- A molecule library: the bundled screening library and the BindingDB pair drugs, enumerated into
  distinct real variants (`evals.dti.run.make_library`: small groups added at either end, kept only
  where RDKit sanitizes them).
- A Sentinel-2 L2A time series: `n` local STAC items of one tile, whose red and NIR bands are the bundled
  Sentinel-2 sample tiled to `size` pixels, with a known per-pixel NIR trend per year and seeded noise.
"""

from __future__ import annotations

import csv
import json
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from tools.paths import sample_path


def seed_smiles() -> list[str]:
    """The distinct SMILES of the bundled screening library and of the BindingDB pair files."""
    out = [ln.split()[0] for ln in sample_path("dti/screening_library.smi").read_text().splitlines()
           if ln.strip() and not ln.startswith("#")]
    for name in ("bindingdb_pairs_train.csv", "bindingdb_pairs_test.csv"):
        with open(sample_path(f"dti/{name}"), newline="") as fh:
            out += [r["SMILES"] for r in csv.DictReader(fh)]
    return list(dict.fromkeys(out))


def write_library(path: Path, n: int) -> Path:
    """A .smi library of `n` distinct real molecules with ids m0, m1, ..."""
    from evals.dti.run import make_library

    smiles = make_library(n, seed_smiles(), valid_only=True)
    if len(smiles) < n:
        raise SystemExit(f"only {len(smiles)} distinct variants could be made, fewer than {n}")
    path.write_text("".join(f"{s} m{i}\n" for i, s in enumerate(smiles)))
    return path


def _tile(a: np.ndarray, size: int) -> np.ndarray:
    reps = (size // a.shape[0] + 1, size // a.shape[1] + 1)
    return np.tile(a, reps)[:size, :size]


def nir_trend(size: int) -> np.ndarray:
    """The NIR DN change per year put into each pixel of the generated series (a west-east ramp)."""
    return np.broadcast_to(np.linspace(-300.0, 300.0, size), (size, size))


def write_stac_series(folder: Path, n: int, size: int, seed: int = 0) -> list[Path]:
    """`n` Sentinel-2 L2A STAC items, one every 30 days from 2021-01-05, each with B04 and B08 GeoTIFFs."""
    import rasterio
    from rasterio.transform import from_origin

    rng = np.random.default_rng(seed)
    with rasterio.open(sample_path("eo/sentinel2_l1c/B04.tif")) as r, \
            rasterio.open(sample_path("eo/sentinel2_l1c/B08.tif")) as q:
        red0 = 800 + 1000 * _tile(r.read(1) / r.read(1).max(), size)  # the sample's texture at land levels:
        nir0 = 2500 + 1500 * _tile(q.read(1) / q.read(1).max(), size)  # its 0 (no data) border becomes bare soil
    slope = nir_trend(size)
    transform = from_origin(500000, 4500000, 10, 10)
    items = []
    start = date(2021, 1, 5)
    for k in range(n):
        day = start + timedelta(days=30 * k)
        years = (day - start).days / 365.25
        sub = folder / f"S2A_T19TEST_{day:%Y%m%d}_L2A"
        sub.mkdir(parents=True, exist_ok=True)
        red = np.clip(red0 + rng.normal(0, 20, red0.shape), 1, 20000).astype(np.uint16)
        nir = np.clip(nir0 + slope * years + rng.normal(0, 20, nir0.shape), 1, 20000).astype(np.uint16)
        for name, data in (("B04", red), ("B08", nir)):
            with rasterio.open(sub / f"{name}.tif", "w", driver="GTiff", width=size, height=size, count=1,
                               dtype="uint16", crs="EPSG:32619", transform=transform, nodata=0, tiled=True,
                               blockxsize=256, blockysize=256, compress="deflate") as dst:
                dst.write(data, 1)
        item = {
            "type": "Feature", "stac_version": "1.0.0", "id": sub.name, "collection": "sentinel-2-l2a",
            "stac_extensions": [], "bbox": [-69.0, 40.6, -68.9, 40.7],
            "geometry": {"type": "Polygon", "coordinates": [[[-69.0, 40.6], [-68.9, 40.6], [-68.9, 40.7],
                                                             [-69.0, 40.6]]]},
            "properties": {"datetime": f"{day:%Y-%m-%d}T15:30:00Z", "platform": "sentinel-2a",
                           "constellation": "sentinel-2", "instruments": ["msi"], "eo:cloud_cover": 0.0,
                           "s2:product_type": "S2MSI2A", "s2:processing_baseline": "03.01", "proj:epsg": 32619},
            "links": [],
            "assets": {b: {"href": f"./{b}.tif", "type": "image/tiff; application=geotiff", "roles": ["data"],
                           "eo:bands": [{"name": b, "common_name": c}]} for b, c in (("B04", "red"), ("B08", "nir"))},
        }
        path = sub / f"{sub.name}.json"
        path.write_text(json.dumps(item))
        items.append(path)
    return items
