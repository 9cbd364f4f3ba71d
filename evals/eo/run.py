"""NDVI on a 10980 x 10980 two-band uint16 scene (tiled from the bundled Landsat 8 sample): the windowed
eo_spectral_index against gdal_calc.py, against a whole-array NumPy read, and against the pure-I/O limit (read
both bands, write one float32 band, no arithmetic), each in its own subprocess, timed (wall and CPU) and with
its peak RSS (os.wait4). Every side writes with the options eo_spectral_index uses: tiled (512 x 512; 256 x 256
under 4096 pixels), DEFLATE level 1, floating-point predictor, NUM_THREADS=ALL_CPUS. Prints the ratios and
writes a CSV; `perf_rows(quick)` gives the rows of `research-mcp eval perf`.

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
scene, out, tile, m4, a4, m5, a5, elev = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:9])
s = math.sin(math.radians(elev))
with rasterio.open(f"{scene}/bench_B4.TIF") as r4, rasterio.open(f"{scene}/bench_B5.TIF") as r5:
    red = (r4.read(1).astype(np.float64) * m4 + a4) / s
    nir = (r5.read(1).astype(np.float64) * m5 + a5) / s
    prof = r4.profile
ndvi = ((nir - red) / (nir + red)).astype(np.float32)
prof.update(dtype="float32", nodata=float("nan"), tiled=True, blockxsize=tile, blockysize=tile, compress="deflate",
            predictor=3, zlevel=1, bigtiff="IF_SAFER", num_threads="ALL_CPUS")
with rasterio.open(out, "w", **prof) as dst:
    dst.write(ndvi, 1)
"""

# The pure-I/O limit: both bands read block by block in a thread, band 4 written as float32 (a cast, no
# arithmetic) with the same creation options and GDAL cache as eo_spectral_index.
PURE_IO = """
import queue, sys, threading, numpy as np, rasterio
from rasterio.windows import Window
scene, out, tile, cache_mb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rasterio.env.set_gdal_config("GDAL_CACHEMAX", cache_mb * 1024 * 1024)
q = queue.Queue(maxsize=2)
with rasterio.open(f"{scene}/bench_B4.TIF") as r4, rasterio.open(f"{scene}/bench_B5.TIF") as r5:
    h, w = r4.height, r4.width
    wins = [Window(c, r, min(1024, w - c), min(1024, h - r)) for r in range(0, h, 1024) for c in range(0, w, 1024)]

    def read():
        for win in wins:
            a, b = r4.read(1, window=win), r5.read(1, window=win)
            q.put((win, a.astype(np.float32), b))
        q.put(None)

    t = threading.Thread(target=read)
    t.start()
    prof = dict(driver="GTiff", width=w, height=h, count=1, dtype="float32", crs=r4.crs, transform=r4.transform,
                nodata=float("nan"), tiled=True, blockxsize=tile, blockysize=tile, compress="deflate", predictor=3,
                zlevel=1, bigtiff="IF_SAFER", num_threads="ALL_CPUS")
    with rasterio.open(out, "w", **prof) as dst:
        while (item := q.get()) is not None:
            dst.write(item[1], 1, window=item[0])
    t.join()
"""


OURS_NAME = "research-mcp eo_spectral_index (windowed)"
WHOLE_NAME = "whole-array numpy read"
GDAL_NAME = "gdal_calc.py"
IO_NAME = "pure I/O (read 2 bands, write 1, no arithmetic)"
TOLERANCE = 1e-6  # largest |ours - reference| counted as the same NDVI


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
    """Largest absolute difference between two NDVI rasters over every pixel (inf where only one is NaN)."""
    import numpy as np
    import rasterio
    from rasterio.windows import Window

    worst = 0.0
    with rasterio.open(a) as x, rasterio.open(b) as y:
        if (x.width, x.height) != (y.width, y.height):
            return math.inf
        for r0 in range(0, x.height, 1024):
            w = Window(0, r0, x.width, min(1024, x.height - r0))
            u, v = x.read(1, window=w).astype(np.float64), y.read(1, window=w).astype(np.float64)
            nan_u, nan_v = np.isnan(u), np.isnan(v)
            if (nan_u != nan_v).any():
                return math.inf
            ok = ~nan_u
            if ok.any():
                worst = max(worst, float(np.abs(u[ok] - v[ok]).max()))
    return worst


def tile_for(size: int) -> int:
    """The internal tile edge eo_spectral_index writes at this size (tools.eo.rasters.Writer)."""
    return 256 if size < 4096 else 512


def run_benchmark(size: int, out: Path, repeat: int = 1, keep: bool = False) -> dict:
    """Every side on a size x size scene: {"rows": [...], "diff": {name: max |ours - it|}, "gdal_calc": path|None}."""
    from tools.settings import get_settings

    out = out.resolve()
    scene = out / f"scene-{size}"
    t0 = time.perf_counter()
    build_scene(scene, size)
    built = time.perf_counter() - t0
    env = dict(os.environ)
    env |= {"RESEARCH_MCP_ROOTS": json.dumps([str(out)]), "RESEARCH_MCP_OUTPUT_DIR": str(out / "ours"),
            "PYTHONPATH": str(REPO)}
    m = mtl_values()
    tile = str(tile_for(size))
    whole_path, gdal_path, io_path = out / "whole.tif", out / "gdal_calc.tif", out / "pure-io.tif"
    keys = ("REFLECTANCE_MULT_BAND_4", "REFLECTANCE_ADD_BAND_4", "REFLECTANCE_MULT_BAND_5", "REFLECTANCE_ADD_BAND_5",
            "SUN_ELEVATION")
    methods: dict[str, tuple[list[str], dict[str, str]]] = {
        OURS_NAME: ([sys.executable, "-c", OURS, str(scene)], env),
        IO_NAME: ([sys.executable, "-c", PURE_IO, str(scene), str(io_path), tile,
                   str(get_settings().eo.gdal_cache_mb)], env),
        WHOLE_NAME: ([sys.executable, "-c", WHOLE, str(scene), str(whole_path), tile, *(str(m[k]) for k in keys)],
                     env),
    }
    gdal_calc = shutil.which("gdal_calc.py") or shutil.which("gdal_calc")
    if gdal_calc is not None:
        s = math.sin(math.radians(m["SUN_ELEVATION"]))
        red = f"((A*{m['REFLECTANCE_MULT_BAND_4']!r}+({m['REFLECTANCE_ADD_BAND_4']!r}))/{s!r})"
        nir = f"((B*{m['REFLECTANCE_MULT_BAND_5']!r}+({m['REFLECTANCE_ADD_BAND_5']!r}))/{s!r})"
        cmd = [gdal_calc, "-A", str(scene / "bench_B4.TIF"), "-B", str(scene / "bench_B5.TIF"),
               f"--outfile={gdal_path}", f"--calc=({nir}-{red})/({nir}+{red})", "--type=Float32", "--quiet",
               "--overwrite", "--co=TILED=YES", f"--co=BLOCKXSIZE={tile}", f"--co=BLOCKYSIZE={tile}",
               "--co=COMPRESS=DEFLATE", "--co=PREDICTOR=3", "--co=ZLEVEL=1", "--co=NUM_THREADS=ALL_CPUS",
               "--co=BIGTIFF=IF_SAFER"]
        genv = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        genv["PATH"] = "/usr/bin:/bin"
        methods[GDAL_NAME] = (cmd, genv)
    best: dict[str, dict[str, float]] = {}
    ours_path = None
    names = list(methods)
    for rep in range(repeat):
        for name in names if rep % 2 == 0 else names[::-1]:
            if name == WHOLE_NAME and rep > 0:
                continue  # the slowest side; it is there for its peak RSS, which one run gives
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
    diff: dict[str, float] = {}
    if ours_path is not None and ours_path.exists():
        for name, path in ((WHOLE_NAME, whole_path), (GDAL_NAME, gdal_path)):
            if name in best and best[name]["status"] == 0:
                diff[name] = compare(ours_path, path)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_output(out / f"ndvi-benchmark-{size}.csv") as tmp, tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["method", "seconds", "cpu_seconds", "peak_rss_mib", "status"])
        w.writeheader()
        w.writerows(rows)
    if not keep:
        shutil.rmtree(scene, ignore_errors=True)
        for p in (whole_path, gdal_path, io_path):
            p.unlink(missing_ok=True)
        shutil.rmtree(out / "ours", ignore_errors=True)
    return {"rows": rows, "diff": diff, "gdal_calc": gdal_calc, "built_s": built, "tile": int(tile),
            "load": os.getloadavg()}


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
    load0 = os.getloadavg()
    res = run_benchmark(size, args.out, args.repeat, args.keep)
    rows, diff = res["rows"], res["diff"]
    print("wall time suffers from other processes on a shared machine; CPU time (user + system) does less.")
    print(f"scene: 2 bands x {size} x {size} uint16 ({2 * size * size * 2 / 2**20:.0f} MiB) built in "
          f"{res['built_s']:.1f} s; outputs: DEFLATE level 1, predictor 3, {res['tile']} x {res['tile']} tiles, "
          f"NUM_THREADS=ALL_CPUS; load average {load0[0]:.2f} before, {res['load'][0]:.2f} after")
    if res["gdal_calc"] is None:
        print("gdal_calc.py not found (Debian: apt-get install gdal-bin): the gdal_calc column is skipped.")
    if args.repeat > 1:
        print(f"best wall and CPU time of {args.repeat} runs each (alternating order; the whole-array read once); "
              "largest peak RSS")
    for r in rows:
        print(f"{r['method']:<48} wall {r['seconds']:7.2f} s  cpu {r['cpu_seconds']:7.2f} s  "
              f"peak RSS {r['peak_rss_mib']:8.1f} MiB  exit {r['status']}")
    if WHOLE_NAME in diff:
        print(f"max |ours - whole-array| = {diff[WHOLE_NAME]:.2e}")
    if GDAL_NAME in diff:
        print(f"max |ours - gdal_calc|   = {diff[GDAL_NAME]:.2e}")
    best = {r["method"]: r for r in rows if r["status"] == 0}
    o = best.get(OURS_NAME)
    if o is not None:
        if WHOLE_NAME in best:
            w_ = best[WHOLE_NAME]
            print(f"time ratio ours / whole-array numpy: wall {o['seconds'] / w_['seconds']:.2f}, "
                  f"cpu {o['cpu_seconds'] / w_['cpu_seconds']:.2f}")
            print(f"peak RSS ratio ours / whole-array numpy: {o['peak_rss_mib'] / w_['peak_rss_mib']:.3f} "
                  "(goal <= 0.25)")
        if GDAL_NAME in best:
            g = best[GDAL_NAME]
            print(f"time ratio ours / gdal_calc: wall {o['seconds'] / g['seconds']:.2f}, "
                  f"cpu {o['cpu_seconds'] / g['cpu_seconds']:.2f} (goal <= 0.67, i.e. 1.5x faster)")
            print(f"peak RSS ratio ours / gdal_calc: {o['peak_rss_mib'] / g['peak_rss_mib']:.2f}")
        if IO_NAME in best:
            i_ = best[IO_NAME]
            print(f"time ratio ours / pure-I/O limit: wall {o['seconds'] / i_['seconds']:.2f}, "
                  f"cpu {o['cpu_seconds'] / i_['cpu_seconds']:.2f} (goal <= 2)")
    return 0 if all(r["status"] == 0 for r in rows) else 1


def _row(target: str, ours: float, baseline: float, unit: str, goal: float, limit: str, same: bool | None,
         baseline_name: str, n: int, note: str = "") -> dict:
    ratio = ours / baseline if baseline and math.isfinite(baseline) else math.nan
    note = "; ".join(x for x in (note, f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
                     if x)
    return {"target": target, "ours": ours, "baseline": baseline, "unit": unit, "ratio": ratio,
            "goal": f"<= {goal:g}x", "met": bool(ratio <= goal), "limit": limit, "same_output": same,
            "baseline_name": baseline_name, "n": n, "note": note}


def perf_rows(quick: bool) -> list[dict]:
    """Rows for `research-mcp eval perf`: ours against gdal_calc.py (wall, CPU), against the pure-I/O limit
    (wall) and against a whole-array read (peak RSS), on a 1200 x 1200 (quick) or 10980 x 10980 scene."""
    import tempfile

    size = 1200 if quick else 10980
    repeat = 3 if quick else 2
    with tempfile.TemporaryDirectory(prefix="eval-eo-") as tmp:
        res = run_benchmark(size, Path(tmp), repeat=repeat)
    best = {r["method"]: r for r in res["rows"] if r["status"] == 0}
    o = best.get(OURS_NAME)
    if o is None:
        raise RuntimeError("eo_spectral_index failed in the benchmark (run python -m evals.eo to see why)")
    where = f"NDVI {size} x {size}"
    limit = "DEFLATE compression of the float32 output (over half the CPU of every side)"
    if quick:
        limit = "interpreter start-up and imports (~1 s CPU) at this size; the goals are set for 10980 x 10980"
    gdal_same = res["diff"][GDAL_NAME] <= TOLERANCE if GDAL_NAME in res["diff"] else None
    whole_same = res["diff"][WHOLE_NAME] <= TOLERANCE if WHOLE_NAME in res["diff"] else None
    rows = []
    g = best.get(GDAL_NAME)
    for key, what in (("seconds", "wall"), ("cpu_seconds", "CPU")):
        if g is None:
            why = "gdal_calc.py not found (Debian: apt-get install gdal-bin)" if res["gdal_calc"] is None \
                else "gdal_calc.py failed"
            rows.append(_row(f"EO {where}, {what} time, eo_spectral_index vs gdal_calc.py", o[key], math.nan, "s",
                             1 / 1.5, why, None, GDAL_NAME, repeat, why))
        else:
            rows.append(_row(f"EO {where}, {what} time, eo_spectral_index vs gdal_calc.py", o[key], g[key], "s",
                             1 / 1.5, limit, gdal_same, GDAL_NAME, repeat,
                             f"same output: max |ours - gdal_calc| = {res['diff'][GDAL_NAME]:.1e} <= {TOLERANCE:g}"))
    i_ = best.get(IO_NAME)
    rows.append(_row(f"EO {where}, wall time, eo_spectral_index vs the pure-I/O limit", o["seconds"],
                     i_["seconds"] if i_ else math.nan, "s", 2.0,
                     limit if quick else "read + compress/write floor: the same options, no arithmetic", None,
                     "read 2 bands + write 1 float32 band", repeat))
    w_ = best.get(WHOLE_NAME)
    rows.append(_row(f"EO {where}, peak RSS, eo_spectral_index vs a whole-array read", o["peak_rss_mib"],
                     w_["peak_rss_mib"] if w_ else math.nan, "MiB", 0.25,
                     limit if quick else "GDAL block cache (RESEARCH_MCP_EO__GDAL_CACHE_MB), interpreter, imports",
                     whole_same, WHOLE_NAME, repeat,
                     f"max |ours - whole-array| = {res['diff'].get(WHOLE_NAME, math.nan):.1e}"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
