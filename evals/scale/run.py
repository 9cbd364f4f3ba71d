"""Scale-out benchmark: the single-process path, a 1-worker and a 2-worker Dask LocalCluster, side by side.

Two jobs: `dti_screen` of a library of real molecules (the bundled library and BindingDB drugs,
enumerated) and `eo_index_timeseries` over generated Sentinel-2 STAC items. Each configuration runs in a
fresh subprocess (no feature cache or page cache advantage carried over from another run), with its
cluster started and the model loaded before the clock starts. Peak memory is each process's maximum
resident set (getrusage): the caller, and every worker. The outputs of the three paths are compared:
the same top hits and the same Parquet of scores; the same series and trend rasters. Beside them: the CPU
seconds of the caller (its serial share: reading the file, merging, writing Parquet) and of each worker,
and the 1-minute load average before and after each run (other work on the machine slows every path).
Results: evals/scale/results/scale_full.{json,csv,md}.

    python -m evals.scale            # 100,000 molecules, 24 items of 384 x 384
    python -m evals.scale --quick    # 600 molecules, 20 items of 48 x 48, all in one process (the test)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.scale.perf import perf_rows  # noqa: F401  (the DTI rows of `research-mcp eval perf`)

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = (("single process", 0), ("1 worker", 1), ("2 workers", 2))


def _peak_mb() -> float:
    """This process's peak resident memory in MB (VmHWM: unlike ru_maxrss, not inherited from the parent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    """CPU seconds this process has used (user + system), read in the caller and in each worker."""
    return time.process_time()


def _target() -> str:
    from tools.paths import sample_path

    with open(sample_path("dti/targets.csv")) as fh:
        return next(csv.DictReader(fh))["sequence"]


def one(job: str, workers: int, path: str) -> dict:
    """Run one job in this process: inline (workers 0) or on a fresh LocalCluster of `workers` processes."""

    saved = {k: os.environ.get(k) for k in ("RESEARCH_MCP_DASK_WORKERS", "RESEARCH_MCP_DASK_MODE")}
    try:
        return _one(job, workers, path)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _one(job: str, workers: int, path: str) -> dict:
    from tools import execution

    worker_peaks: list[float] = []
    if workers:
        os.environ["RESEARCH_MCP_DASK_WORKERS"] = str(workers)
        client = execution.get_client()
        if job == "dti":
            from tools.dti.registry import load_model

            client.run(load_model, "default")
    else:
        os.environ["RESEARCH_MCP_DASK_MODE"] = "inline"
        if job == "dti":
            from tools.dti.registry import load_model

            load_model("default")
    client = execution.get_client() if workers else None
    worker_cpu0 = client.run(_cpu_s) if client else {}
    load0, cpu0 = os.getloadavg()[0], _cpu_s()
    t = time.perf_counter()
    if job == "dti":
        from tools.dti.scoring import dti_screen

        r = dti_screen(target=_target(), library=path, top_k=100, write_sdf=False)
        out = {"records": r.library_size, "scored": r.scored, "partitions": r.partitions,
               "top": [h.model_dump() for h in r.top], "scores_parquet": r.scores_parquet}
    else:
        from tools.eo.timeseries import eo_index_timeseries

        r = eo_index_timeseries(items=[path], window=int(os.environ.get("SCALE_EO_WINDOW", "256")))
        out = {"items": r.items, "pixels": r.width * r.height, "windows": r.windows,
               "series": [s.model_dump() for s in r.series], "trends_tif": r.trends_tif}
    out["seconds"] = time.perf_counter() - t
    out["caller_cpu_s"] = _cpu_s() - cpu0
    out["load_1min"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    if client:
        used = client.run(_cpu_s)
        out["worker_cpu_s"] = sorted(used[w] - worker_cpu0.get(w, 0.0) for w in used)
    else:
        out["worker_cpu_s"] = []
    if workers:
        worker_peaks = sorted(execution.get_client().run(_peak_mb).values())
        if not os.environ.get("SCALE_KEEP_CLUSTER"):
            execution.close()
    out |= {"caller_peak_mb": _peak_mb(), "worker_peak_mb": worker_peaks}
    return out


def _run(job: str, workers: int, path: Path, env: dict[str, str], in_process: bool = False) -> dict:
    if in_process:  # --quick: one process for every configuration (fresh clusters, so fresh workers)
        from tools.settings import reload_settings

        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        reload_settings()
        try:
            return json.loads(json.dumps(one(job, workers, str(path)), default=str))
        finally:  # the caller's environment again (its output folder, not the run's scratch one)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            reload_settings()
    proc = subprocess.run([sys.executable, "-m", "evals.scale.run", "--one", job, str(workers), str(path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=7200)
    if proc.returncode != 0:
        raise SystemExit(f"{job} with {workers} workers failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _same_dti(a: dict, b: dict) -> bool:
    import pyarrow.parquet as pq

    return a["top"] == b["top"] and pq.read_table(a["scores_parquet"]).equals(pq.read_table(b["scores_parquet"]))


def _same_eo(a: dict, b: dict) -> bool:
    import numpy as np
    import rasterio

    with rasterio.open(a["trends_tif"]) as x, rasterio.open(b["trends_tif"]) as y:
        same = np.array_equal(x.read(), y.read(), equal_nan=True)
    return same and a["series"] == b["series"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small inputs (seconds)")
    ap.add_argument("--molecules", type=int, default=None, help="library size (default 100,000; quick 2,000)")
    ap.add_argument("--items", type=int, default=None, help="STAC items (default 24; quick 20)")
    ap.add_argument("--size", type=int, default=None, help="item side in pixels (default 384; quick 48)")
    ap.add_argument("--one", nargs=3, metavar=("JOB", "WORKERS", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        job, workers, path = args.one
        print(json.dumps(one(job, int(workers), path), default=str))
        return 0
    from evals.scale.data import write_library, write_stac_series

    n_mol = args.molecules or (600 if args.quick else 100_000)
    n_items = args.items or (20 if args.quick else 24)
    size = args.size or (48 if args.quick else 384)
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        lib = write_library(work / f"library_{n_mol}.smi", n_mol)
        write_stac_series(work / "series", n_items, size)
        print(f"inputs: {n_mol:,} molecules, {n_items} STAC items of {size} x {size} ({time.perf_counter() - t:.0f} s)",
              file=sys.stderr)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RESEARCH_MCP_", "OPENAI_"))}
        env |= {"RESEARCH_MCP_OUTPUT_DIR": str(work / "out"), "RESEARCH_MCP_ROOTS": json.dumps([str(work)]),
                "RESEARCH_MCP_LOG_LEVEL": "WARNING", "SCALE_EO_WINDOW": str(24 if args.quick else 128)}
        if args.quick:
            env["RESEARCH_MCP_DTI__SCREEN_PARTITION_ROWS"] = "150"
        if args.quick:  # one cluster per configuration for both jobs: worker peaks then cover both
            env["SCALE_KEEP_CLUSTER"] = "1"
        jobs = (("dti", lib), ("eo", work / "series"))
        runs: dict[str, dict[str, dict]] = {job: {} for job, _ in jobs}
        for label, workers in CONFIGS:
            for job, path in jobs:
                runs[job][label] = _run(job, workers, path, env, in_process=args.quick)
                print(f"{job} {label}: {runs[job][label]['seconds']:.1f} s", file=sys.stderr)
            if args.quick:
                from tools import execution

                execution.close()
        rows = []
        for job, _ in jobs:
            same = _same_dti if job == "dti" else _same_eo
            identical = all(same(runs[job]["single process"], r) for r in runs[job].values())
            units = n_mol if job == "dti" else n_items * size * size
            for label, _ in CONFIGS:
                r = runs[job][label]
                rows.append({"job": job, "path": label, "units": units, "seconds": round(r["seconds"], 2),
                             "per_second": round(units / r["seconds"], 1),
                             "caller_peak_mb": round(r["caller_peak_mb"]),
                             "worker_peak_mb": [round(x) for x in r["worker_peak_mb"]],
                             "caller_cpu_s": round(r["caller_cpu_s"], 1),
                             "worker_cpu_s": [round(x, 1) for x in r["worker_cpu_s"]],
                             "load_1min_before_after": r["load_1min"],
                             "identical_to_single_process": identical})
    _print(rows, n_mol)
    if args.quick:
        from tools.paths import output_dir

        target = output_dir() / "scale_quick.json"
    else:
        RESULTS.mkdir(exist_ok=True)
        target = RESULTS / "scale_full.json"
    meta = {"cpus": os.cpu_count(), "molecules": n_mol, "items": n_items, "size": size}
    target.write_text(json.dumps(meta | {"rows": rows}, indent=2) + "\n")
    _write_tables(rows, target.with_suffix(""))
    print(f"results: {target}")
    return 0 if all(r["identical_to_single_process"] for r in rows) else 1


def _write_tables(rows: list[dict], stem: Path) -> None:
    """The rows as CSV and as a Markdown table beside the JSON, with the 1 -> 2 worker ratios."""
    cols = ["job", "path", "units", "seconds", "per_second", "caller_peak_mb", "worker_peak_mb", "caller_cpu_s",
            "worker_cpu_s", "load_1min_before_after", "identical_to_single_process"]
    flat = [{c: "/".join(map(str, r[c])) if isinstance(r[c], list) else r[c] for c in cols} for r in rows]
    with open(stem.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(flat)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in flat]
    for job in sorted({r["job"] for r in rows}):
        by = {r["path"]: r for r in rows if r["job"] == job}
        lines.append(f"\n{job}: 2 workers / 1 worker = {by['1 worker']['seconds'] / by['2 workers']['seconds']:.2f}x "
                     f"throughput; single process / 2 workers = "
                     f"{by['single process']['seconds'] / by['2 workers']['seconds']:.2f}x")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


def _print(rows: list[dict], n_mol: int) -> None:
    print(f"{'job':4} {'path':15} {'units':>11} {'seconds':>9} {'units/s':>10} {'caller MB':>10} "
          f"{'worker MB':>14} identical")
    for r in rows:
        print(f"{r['job']:4} {r['path']:15} {r['units']:>11,} {r['seconds']:>9.2f} {r['per_second']:>10,.0f} "
              f"{r['caller_peak_mb']:>10} {'/'.join(map(str, r['worker_peak_mb'])) or '-':>14} "
              f"{r['identical_to_single_process']}")
    for job in ("dti", "eo"):
        by = {r["path"]: r for r in rows if r["job"] == job}
        ratio = by["1 worker"]["seconds"] / by["2 workers"]["seconds"]
        print(f"{job}: 2 workers / 1 worker = {ratio:.2f}x throughput; single process / 2 workers = "
              f"{by['single process']['seconds'] / by['2 workers']['seconds']:.2f}x")
    dti = {r["path"]: r for r in rows if r["job"] == "dti"}
    per_worker = dti["1 worker"]["per_second"]
    hours = 10_000_000 / dti["2 workers"]["per_second"] / 3600
    print(f"dti: 10 M molecules at the 2-worker rate: {hours:.1f} h; at {per_worker:,.0f} molecules/s per "
          f"worker, 64 workers: {10_000_000 / (64 * per_worker) / 60:.0f} min (linear in workers while the "
          "caller keeps up: it only reads records and writes Parquet)")


if __name__ == "__main__":
    sys.exit(main())
