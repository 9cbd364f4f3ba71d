"""DTI rows of the one-run performance table (`research-mcp eval perf`): the screen against the per-pair
loop and against the fingerprint floor, on the same molecules, side by side in one run.

- per-pair loop: `dti_score` called once per molecule (the public scoring function, one pair a call);
- screen: `dti_screen` of the whole SMILES file on the Dask cluster (2 workers on a 2-core machine),
  end to end (reading, featurizing, scoring, Parquet, top-k);
- floor: RDKit alone on the same molecules, parsing and the 1024-bit Morgan fingerprint, split over as
  many processes as the cluster has workers.

Full: 100,000 molecules (`evals.scale.data.write_library`, written once to the output folder and
reused), the loop timed on its first 300 and extrapolated; quick: 500 molecules, the loop over all of
them. `same_output`: the loop's scores equal the screen's within 1e-5 and the loop ranks its molecules
as the screen does (the 10 best, in order).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

TOLERANCE = 1e-5


def _fingerprints(smiles: list[str]) -> int:
    """Parse and fingerprint `smiles` (the floor of any screen); the count of valid molecules."""
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    mols = [m for m in map(Chem.MolFromSmiles, smiles) if m is not None]
    gen.GetFingerprints(mols, numThreads=1)
    return len(mols)


def _floor_seconds(smiles: list[str], processes: int) -> float:
    chunks = [smiles[i::processes] for i in range(processes)]
    with ProcessPoolExecutor(processes) as pool:
        list(pool.map(_fingerprints, [s[:50] for s in chunks]))  # start-up and imports off the clock
        t = time.perf_counter()
        list(pool.map(_fingerprints, chunks))
        return time.perf_counter() - t


def measure(n: int, loop_n: int) -> dict[str, Any]:
    """Time the three sides on one library of `n` molecules; the loop on its first `loop_n`."""
    import csv

    import pyarrow.parquet as pq

    from evals.scale.data import write_library
    from tools import execution
    from tools.atomic import atomic_output
    from tools.dti.registry import load_model
    from tools.dti.scoring import PairIn, dti_score, dti_screen
    from tools.paths import output_dir, sample_path
    from tools.settings import get_settings

    path = output_dir() / f"perf_library_{n}.smi"  # the enumeration is deterministic: made once, then reused
    if not path.exists():
        with atomic_output(path) as tmp:
            write_library(tmp, n)
    smiles = [line.split()[0] for line in path.read_text().splitlines()]
    with open(sample_path("dti/targets.csv")) as fh:
        target = next(csv.DictReader(fh))["sequence"]
    load_model("default")
    distributed = execution.will_distribute(math.ceil(n / get_settings().dti.screen_partition_rows))
    workers = execution.cluster_workers() if distributed else 1
    if distributed:
        execution.get_client().run(load_model, "default")
    dti_score(pairs=[PairIn(smiles="CCO", protein=target)])  # first-call imports off the clock

    t = time.perf_counter()
    loop = [dti_score(pairs=[PairIn(smiles=s, protein=target)]).scores[0].score for s in smiles[:loop_n]]
    loop_s = time.perf_counter() - t
    t = time.perf_counter()
    screen = dti_screen(target=target, library=str(path), top_k=100, write_sdf=False)
    screen_s = time.perf_counter() - t
    floor_s = _floor_seconds(smiles, workers)

    scores = pq.read_table(screen.scores_parquet, columns=["score"]).column("score").to_pylist()[:loop_n]
    same_scores = all((a is None and b is None) or (a is not None and b is not None and abs(a - b) <= TOLERANCE)
                      for a, b in zip(loop, scores, strict=True))

    def rank(xs: list[float | None]) -> list[int]:
        return sorted((i for i, x in enumerate(xs) if x is not None), key=lambda i: (-xs[i], i))[:10]
    return {"n": n, "loop_n": loop_n, "workers": workers, "loop_s": loop_s, "screen_s": screen_s,
            "floor_s": floor_s, "same": same_scores and rank(loop) == rank(scores), "scored": screen.scored,
            "distributed": screen.distributed}


def perf_rows(quick: bool) -> list[dict[str, Any]]:
    """The DTI rows of the perf table (see the module docstring)."""
    from evals.perf.run import row

    m = measure(500, 500) if quick else measure(100_000, 300)
    n, loop_full = m["n"], m["loop_s"] * m["n"] / m["loop_n"]
    extrapolated = m["loop_n"] < n
    where = f"{m['workers']} worker{'s' if m['workers'] > 1 else ''}" if m["distributed"] else "in process"
    rate = n / m["screen_s"]
    return [
        row(f"DTI screen, {n:,} molecules from a SMILES file, end to end ({where})", m["screen_s"], loop_full, "s",
            "<= 20 s" if not quick else "<= 0.5x",
            f"RDKit parsing + canonical SMILES (~45% of CPU) and descriptors (~20%) per molecule; {rate:,.0f} "
            "molecules/s", m["same"], baseline_name="dti_score per pair, one call a molecule", n=n,
            note=(f"loop timed on {m['loop_n']:,} molecules and extrapolated" if extrapolated else "loop over all")),
        row(f"DTI screen vs RDKit floor (parse + Morgan alone), {n:,} molecules", m["screen_s"], m["floor_s"], "s",
            "<= 3x", "the model's other inputs: canonical SMILES, 19 descriptors, neighbourhood Tanimoto, "
            "trees; InChI only for the top-k", None, baseline_name=f"RDKit parse + fingerprint, {m['workers']} "
            "processes", n=n, note=f"floor {n / m['floor_s']:,.0f} molecules/s" if m["floor_s"] else None),
    ]


def main() -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m evals.scale.perf", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    for r in perf_rows(args.quick):
        print(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

