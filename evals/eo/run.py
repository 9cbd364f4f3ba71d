"""NDVI on a 10980 x 10980 two-band uint16 scene (tiled from the bundled Landsat 8 sample): the windowed
eo_spectral_index against gdal_calc.py and against a whole-array NumPy read, each in its own subprocess,
timed and with its peak RSS (os.wait4). Prints the ratios and writes a CSV.

    python -m evals.eo                # full size, 10980 x 10980
    python -m evals.eo --quick        # 1200 x 1200, seconds
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools.atomic import atomic_output

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tools" / "sample_data" / "eo" / "landsat8_c1_l1t"

OURS = """
import sys, time
from tools.eo.api import eo_spectral_index
t = time.perf_counter()
r = eo_spectral_index(sys.argv[1], "NDVI", quicklook=False)
print(r.output)
"""

WHOLE = """
import math, sys, numpy as np, rasterio
scene, out, m4, a4, m5, a5, elev = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:8])
s = math.sin(math.radians(elev))
with rasterio.open(f"{scene}/bench_B4.TIF") as r4, rasterio.open(f"{scene}/bench_B5.TIF") as r5:
    red = (r4.read(1).astype(np.float64) * m4 + a4) / s
    nir = (r5.read(1).astype(np.float64) * m5 + a5) / s
    prof = r4.profile
ndvi = ((nir - red) / (nir + red)).astype(np.float32)
prof.update(dtype="float32", nodata=float("nan"), tiled=True, blockxsize=512, blockysize=512, compress="deflate",
            predictor=3, zlevel=1, bigtiff="IF_SAFER", num_threads="ALL_CPUS")
with rasterio.open(out, "w", **prof) as dst:
    dst.write(ndvi, 1)
"""


OURS_NAME = "research-mcp eo_spectral_index (windowed)"
WHOLE_NAME = "whole-array numpy read"
GDAL_NAME = "gdal_calc.py"


def mtl_values() -> dict[str, float]:
    out = {}
    for line in (SAMPLE / "l8_MTL.txt").read_text().splitlines():
        k, _, v = (s.strip() for s in line.partition("="))
        if k in ("REFLECTANCE_MULT_BAND_4", "REFLECTANCE_ADD_BAND_4", "REFLECTANCE_MULT_BAND_5",
                 "REFLECTANCE_ADD_BAND_5", "SUN_ELEVATION"):
            out[k] = float(v)
    return out


def build_scene(folder: Path, size: int) -> None:
    """Two uint16 bands (red B4, NIR B5) of size x size, tiled from the sample; 512 x 512 internal tiles."""
    import numpy as np
    import rasterio
    from rasterio.transform import from_origin
    from rasterio.windows import Window

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLE / "l8_MTL.txt", folder / "bench_MTL.txt")
    for b in (4, 5):
        with rasterio.open(SAMPLE / f"l8_B{b}.tif") as src:
            tile = src.read(1)
            crs, t = src.crs, src.transform
        h, w = tile.shape
        with atomic_output(folder / f"bench_B{b}.TIF") as tmp, rasterio.open(
                tmp, "w", driver="GTiff", width=size, height=size, count=1, dtype="uint16", crs=crs,
                transform=from_origin(t.c, t.f, t.a, -t.e), tiled=True, blockxsize=512, blockysize=512,
                bigtiff="IF_SAFER") as dst:
            for r0 in range(0, size, 1024):
                rows = min(1024, size - r0)
                ridx = (np.arange(r0, r0 + rows) % h)[:, None]
                cidx = (np.arange(size) % w)[None, :]
                dst.write(tile[ridx, cidx], 1, window=Window(0, r0, size, rows))


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str, float]:
    """(wall seconds, peak RSS MiB, exit status, stdout, CPU seconds) of one subprocess."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.stderr.write(err[-2000:])
    return wall, usage.ru_maxrss / 1024.0, proc.returncode, out.strip(), usage.ru_utime + usage.ru_stime


def compare(a: Path, b: Path) -> float:
    """Largest absolute difference between two NDVI rasters on a few windows."""
    import numpy as np
    import rasterio
    from rasterio.windows import Window

    worst = 0.0
    with rasterio.open(a) as x, rasterio.open(b) as y:
        for r0, c0 in ((0, 0), (x.height // 2, x.width // 3), (max(0, x.height - 300), max(0, x.width - 300))):
            w = Window(c0, r0, min(300, x.width - c0), min(300, x.height - r0))
            worst = max(worst, float(np.nanmax(np.abs(x.read(1, window=w).astype(float) - y.read(1, window=w)))))
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="research-mcp eval eo", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="A 1200 x 1200 scene (seconds).")
    ap.add_argument("--size", type=int, default=None, help="Scene edge in pixels (default 10980; --quick 1200).")
    ap.add_argument("--out", type=Path, default=None, help="Output folder (default: <output dir>/eval-eo).")
    ap.add_argument("--keep", action="store_true", help="Keep the scene and the NDVI rasters.")
    ap.add_argument("--repeat", type=int, default=1, help="Runs per method (alternating order); best time kept.")
    args = ap.parse_args(argv)
    size = args.size or (1200 if args.quick else 10980)
    if args.out is None:
        from tools.paths import output_dir

        args.out = output_dir() / "eval-eo"
    out = args.out.resolve()
    scene = out / f"scene-{size}"
    t0 = time.perf_counter()
    build_scene(scene, size)
    print("wall time suffers from other processes on a shared machine; CPU time (user + system) does less.")
    print(f"scene: 2 bands x {size} x {size} uint16 ({2 * size * size * 2 / 2**20:.0f} MiB) built in "
          f"{time.perf_counter() - t0:.1f} s")
    env = dict(os.environ)
    env |= {"RESEARCH_MCP_ROOTS": json.dumps([str(out)]), "RESEARCH_MCP_OUTPUT_DIR": str(out / "ours"),
            "PYTHONPATH": str(REPO)}
    m = mtl_values()
    whole_path, gdal_path = out / "whole.tif", out / "gdal_calc.tif"
    keys = ("REFLECTANCE_MULT_BAND_4", "REFLECTANCE_ADD_BAND_4", "REFLECTANCE_MULT_BAND_5", "REFLECTANCE_ADD_BAND_5",
            "SUN_ELEVATION")
    methods: dict[str, tuple[list[str], dict[str, str]]] = {
        OURS_NAME: ([sys.executable, "-c", OURS, str(scene)], env),
        WHOLE_NAME: ([sys.executable, "-c", WHOLE, str(scene), str(whole_path), *(str(m[k]) for k in keys)], env),
    }
    gdal_calc = shutil.which("gdal_calc.py") or shutil.which("gdal_calc")
    if gdal_calc is None:
        print("gdal_calc.py not found (Debian: apt-get install gdal-bin): the gdal_calc column is skipped.")
    else:
        s = math.sin(math.radians(m["SUN_ELEVATION"]))
        red = f"((A*{m['REFLECTANCE_MULT_BAND_4']!r}+({m['REFLECTANCE_ADD_BAND_4']!r}))/{s!r})"
        nir = f"((B*{m['REFLECTANCE_MULT_BAND_5']!r}+({m['REFLECTANCE_ADD_BAND_5']!r}))/{s!r})"
        cmd = [gdal_calc, "-A", str(scene / "bench_B4.TIF"), "-B", str(scene / "bench_B5.TIF"),
               f"--outfile={gdal_path}", f"--calc=({nir}-{red})/({nir}+{red})", "--type=Float32", "--quiet",
               "--overwrite", "--co=TILED=YES", "--co=BLOCKXSIZE=512", "--co=BLOCKYSIZE=512",
               "--co=COMPRESS=DEFLATE", "--co=PREDICTOR=3", "--co=ZLEVEL=1", "--co=NUM_THREADS=ALL_CPUS",
               "--co=BIGTIFF=IF_SAFER"]
        genv = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        genv["PATH"] = "/usr/bin:/bin"
        methods[GDAL_NAME] = (cmd, genv)
    best: dict[str, dict[str, float]] = {}
    ours_path = None
    names = list(methods)
    for rep in range(args.repeat):
        for name in names if rep % 2 == 0 else names[::-1]:
            cmd, e = methods[name]
            wall, rss, rc, printed, cpu = measure(cmd, e)
            if name == OURS_NAME and rc == 0 and printed:
                ours_path = Path(printed.splitlines()[-1])
            b = best.setdefault(name, {"seconds": math.inf, "cpu_seconds": math.inf, "peak_rss_mib": 0.0,
                                       "status": 0})
            b["seconds"] = min(b["seconds"], wall)
            b["cpu_seconds"] = min(b["cpu_seconds"], cpu)
            b["peak_rss_mib"] = max(b["peak_rss_mib"], rss)
            b["status"] = b["status"] or rc
    rows = [{"method": n, **best[n]} for n in names]
    if args.repeat > 1:
        print(f"best wall and CPU time of {args.repeat} runs each (alternating order); largest peak RSS")
    for r in rows:
        print(f"{r['method']:<45} wall {r['seconds']:7.2f} s  cpu {r['cpu_seconds']:7.2f} s  "
              f"peak RSS {r['peak_rss_mib']:8.1f} MiB  exit {r['status']}")
    ok = {n for n in names if best[n]["status"] == 0}
    if ours_path is not None and ours_path.exists():
        if WHOLE_NAME in ok:
            print(f"max |ours - whole-array| = {compare(ours_path, whole_path):.2e}")
        if GDAL_NAME in ok:
            print(f"max |ours - gdal_calc|   = {compare(ours_path, gdal_path):.2e}")
    o = best[OURS_NAME]
    if WHOLE_NAME in ok:
        w_ = best[WHOLE_NAME]
        print(f"time ratio ours / whole-array numpy: wall {o['seconds'] / w_['seconds']:.2f}, "
              f"cpu {o['cpu_seconds'] / w_['cpu_seconds']:.2f}")
        print(f"peak RSS ratio ours / whole-array numpy: {o['peak_rss_mib'] / w_['peak_rss_mib']:.3f} (goal <= 0.25)")
    if GDAL_NAME in ok:
        g = best[GDAL_NAME]
        print(f"time ratio ours / gdal_calc: wall {o['seconds'] / g['seconds']:.2f}, "
              f"cpu {o['cpu_seconds'] / g['cpu_seconds']:.2f} (goal <= 1.0)")
        print(f"peak RSS ratio ours / gdal_calc: {o['peak_rss_mib'] / g['peak_rss_mib']:.2f}")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_output(out / f"ndvi-benchmark-{size}.csv") as tmp, tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["method", "seconds", "cpu_seconds", "peak_rss_mib", "status"])
        w.writeheader()
        w.writerows(rows)
    if not args.keep:
        shutil.rmtree(scene, ignore_errors=True)
        for p in (whole_path, gdal_path):
            p.unlink(missing_ok=True)
        shutil.rmtree(out / "ours", ignore_errors=True)
    return 0 if all(r["status"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
