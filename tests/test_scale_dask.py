"""The distributed paths on a real 2-worker `LocalCluster` (one for the module): each family's result equals
the single-process path and an independent reference; a worker killed mid-run changes nothing; a cancel
cancels the futures."""

from __future__ import annotations

import csv
import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tools.errors import Cancelled
from tools.paths import sample_path
from tools.progress import Progress

SAMPLE_LIB = sample_path("dti/screening_library.smi")
ASPIRIN = ("CC(=O)Oc1ccccc1C(=O)O", "OC(=O)c1ccccc1OC(C)=O", "O=C(O)c1ccccc1OC(=O)C.[Na+].[Cl-]")


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    from tools import execution

    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
    old = os.environ.get("RESEARCH_MCP_DASK_SCHEDULER")
    os.environ["RESEARCH_MCP_DASK_SCHEDULER"] = lc.scheduler_address
    watcher = Client(lc, set_as_default=False)
    yield watcher
    execution.close()
    watcher.close()
    lc.close()
    if old is None:
        os.environ.pop("RESEARCH_MCP_DASK_SCHEDULER", None)
    else:
        os.environ["RESEARCH_MCP_DASK_SCHEDULER"] = old


def _target() -> str:
    with open(sample_path("dti/targets.csv")) as fh:
        return next(csv.DictReader(fh))["sequence"]


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """600 real molecules, aspirin written three ways, and one invalid row, as CSV (partitions of 100)."""
    monkeypatch.setenv("RESEARCH_MCP_DTI__SCREEN_PARTITION_ROWS", "100")
    from tools.settings import reload_settings

    reload_settings()
    rows = [line.split() for line in SAMPLE_LIB.read_text().splitlines() if line and not line.startswith("#")][:600]
    rows[10] = [ASPIRIN[0], "aspirin-a"]
    rows[250] = [ASPIRIN[1], "aspirin-b"]
    rows[520] = [ASPIRIN[2], "aspirin-salt"]
    rows[300] = ["C1CC(", "broken"]
    path = tmp_path / "lib.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "SMILES"])
        w.writerows([[rid, smi] for smi, rid, *_ in rows])
    return path


def _screen(path: Path, mode: str, monkeypatch: pytest.MonkeyPatch, top_k: int = 10_000, progress=None):
    from tools.dti.scoring import dti_screen

    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", mode)
    return dti_screen(target=_target(), library=str(path), top_k=top_k, write_sdf=False, progress=progress)


def test_dti_screen_distributed_equals_single_process_and_a_direct_ranking(cluster, library, monkeypatch) -> None:
    from rdkit import Chem

    single = _screen(library, "inline", monkeypatch)
    dist = _screen(library, "auto", monkeypatch)
    assert not single.distributed and dist.distributed and dist.partitions == 6
    assert pq.read_table(single.scores_parquet).equals(pq.read_table(dist.scores_parquet))
    assert single.top == dist.top
    table = pq.read_table(dist.scores_parquet).to_pylist()
    assert [r["row"] for r in table] == list(range(1, 601)) and dist.rejected == 1
    assert next(r for r in table if r["id"] == "broken")["score"] is None
    # independent ranking: group the input with RDKit's InChIKey, best score per molecule, sort
    best: dict[str, tuple[float, int, list[str]]] = {}
    for r in table:
        if r["score"] is None:
            continue
        mol = Chem.MolFromSmiles(r["smiles"])
        key = Chem.MolToInchiKey(mol)
        score, row, ids = best.get(key, (-1.0, 0, []))
        ids.append(r["id"])
        best[key] = (score, row, ids) if score >= r["score"] else (r["score"], r["row"], ids)
    expected = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    with open(dist.hits_csv) as fh:
        hits = list(csv.DictReader(fh))
    assert [h["inchikey"] for h in hits] == [k for k, _ in expected]
    assert [h["ids"].split(";") for h in hits] == [v[2] for _, v in expected]
    aspirin = next(h for h in hits if "aspirin-a" in h["ids"])
    ours = [i for i in aspirin["ids"].split(";") if i.startswith("aspirin")]
    assert ours == ["aspirin-a", "aspirin-b", "aspirin-salt"]  # three spellings, one hit (beside the library's own)
    top = _screen(library, "auto", monkeypatch, top_k=7)
    assert [h.inchikey for h in top.top] == [k for k, _ in expected[:7]]


def test_dti_screen_reads_parquet_like_csv(cluster, library, monkeypatch, tmp_path) -> None:
    import pyarrow as pa

    with library.open() as fh:
        rows = list(csv.DictReader(fh))
    pq_path = tmp_path / "lib.parquet"
    pq.write_table(pa.table({"smiles": [r["SMILES"] for r in rows], "id": [r["id"] for r in rows]}), pq_path,
                   row_group_size=128)
    a = _screen(library, "auto", monkeypatch, top_k=20)
    b = _screen(pq_path, "auto", monkeypatch, top_k=20)
    assert a.top == b.top and a.scored == b.scored


def test_a_worker_killed_mid_screen_changes_nothing(cluster, library, monkeypatch) -> None:
    reference = pq.read_table(_screen(library, "inline", monkeypatch).scores_parquet)
    killed: list[int] = []

    def on_progress(done: float, total: float | None, message: str | None) -> None:
        if done > 0 and not killed:
            busy = [addr for addr, keys in cluster.processing().items() if keys]
            pids = cluster.run(os.getpid)
            victim = pids[busy[0]] if busy else next(iter(pids.values()))
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    run = _screen(library, "auto", monkeypatch, progress=Progress(on_progress))
    assert killed and killed[0] not in cluster.run(os.getpid).values()
    out = pq.read_table(run.scores_parquet)
    assert out.num_rows == 600 and out.equals(reference)


def test_a_cancel_cancels_the_futures(cluster, library, monkeypatch) -> None:
    progress = Progress(lambda done, total, message: progress.cancel() if done > 0 else None)
    with pytest.raises(Cancelled):
        _screen(library, "auto", monkeypatch, progress=progress)

    def screen_tasks(dask_scheduler) -> int:
        return sum(str(k).startswith("dti-screen") for k in dask_scheduler.tasks)

    deadline = time.monotonic() + 20
    while cluster.run_on_scheduler(screen_tasks) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.run_on_scheduler(screen_tasks) == 0
    out = Path(os.environ["RESEARCH_MCP_OUTPUT_DIR"])
    assert not list(out.glob("dti_screen_scores*.parquet"))  # a cancelled screen leaves no finished-looking file


# ------------------------------------------------------------------ NID


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import tools.nid.corpus_scan as scan

    monkeypatch.setattr(scan, "PARTITION_BYTES", 32 * 1024)
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, lines in (("tweets.jsonl", 1500), ("eth_tokens.jsonl", 300), ("jsonlite_MD5.txt", None)):
        text = sample_path(f"nid/{name}").read_text(encoding="utf-8")
        (folder / name).write_text("".join(text.splitlines(keepends=True)[:lines]), encoding="utf-8")
    return folder


def _reference_scan(folder: Path) -> tuple[dict, dict]:
    """First occurrence (file, line, start) and count of every identifier, one document at a time."""
    from tools.nid.detect import find_nids

    first: dict[tuple[str, str], tuple[str, int, int]] = {}
    counts: dict[tuple[str, str], int] = {}
    for f in sorted(folder.iterdir()):
        for i, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            doc = json.loads(line)["text"] if f.suffix == ".jsonl" else line
            for d in find_nids(doc, plausible_only=True):
                first.setdefault((d.type, d.value), (str(f), i, d.start))
                counts[(d.type, d.value)] = counts.get((d.type, d.value), 0) + 1
    return first, counts


def test_nid_corpus_scan_equals_one_pass(cluster, corpus, monkeypatch) -> None:
    from tools.nid.corpus_scan import nid_corpus_scan

    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "inline")
    single = nid_corpus_scan(paths=[str(corpus)], max_results=1000)
    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "auto")
    dist = nid_corpus_scan(paths=[str(corpus)], max_results=1000)
    assert dist.distributed and dist.partitions > 10 and not single.distributed
    assert single.model_dump(exclude={"identifiers_csv", "distributed"}) == dist.model_dump(
        exclude={"identifiers_csv", "distributed"})
    first, counts = _reference_scan(corpus)
    with open(dist.identifiers_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == dist.unique == len(first)
    assert dist.total_occurrences == sum(counts.values())
    for r in rows:
        key = (r["type"], r["value"])
        assert (r["file"], int(r["line"]), int(r["start"])) == first[key]
        assert int(r["occurrences"]) == counts[key]
    assert {"tco", "eth_address", "md5"} <= set(dist.by_type)


def test_nid_corpus_scores_equal_scoring_whole_documents(cluster, corpus, monkeypatch, tmp_path) -> None:
    import torch

    from tools.nid.bytelm import ByteLMConfig
    from tools.nid.corpus_scan import nid_corpus_scan
    from tools.nid.pipeline import candidate_set, score_features
    from tools.nid.scorers import open_model
    from tools.nid.train import TrainConfig, train_byte_lm

    torch.set_num_threads(1)
    texts = [json.loads(line)["text"][:200] for line in (corpus / "tweets.jsonl").read_text().splitlines()[:40]]
    cfg = TrainConfig(epochs=1, batch_size=8, model=ByteLMConfig(block_size=96, d_model=16, n_layer=1, n_head=4))
    model = train_byte_lm(texts, tmp_path / "tiny.pt", cfg).checkpoint
    (corpus / "eth_tokens.jsonl").unlink()
    (corpus / "jsonlite_MD5.txt").unlink()
    kw = dict(paths=[str(corpus)], model=str(model), n_gids=3, max_nids=40, prefix_chars=48, suffix_chars=4)
    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "inline")
    single = np.load(nid_corpus_scan(**kw).scores_path)
    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "auto")
    dist_result = nid_corpus_scan(**kw)
    dist = np.load(dist_result.scores_path)
    assert dist_result.scored_nids == 40
    assert np.array_equal(single["features"], dist["features"], equal_nan=True)
    assert list(single["nids"]) == list(dist["nids"])
    # reference: the same NIDs scored in their whole documents, in one call
    docs = [json.loads(line)["text"] for line in (corpus / "tweets.jsonl").read_text().splitlines()]
    where = {}
    for i, doc in enumerate(docs):
        for nid in dist["nids"]:
            at = doc.find(str(nid))
            if at >= 0 and str(nid) not in where:
                where[str(nid)] = (i, at)
    sets = [candidate_set(docs[where[n][0]], where[n][1], where[n][1] + len(n), "tco", 3)
            for n in map(str, dist["nids"])]
    ref = score_features(open_model(model), sets, prefix_chars=48, suffix_chars=4, recall=True)
    np.testing.assert_allclose(dist["features"], ref, rtol=1e-5, atol=1e-6)


def test_partitions_in_flight_are_bounded(cluster) -> None:
    from tools.execution import map_partitions

    pulled: list[int] = []
    lock = threading.Lock()

    def parts():
        for i in range(40):
            with lock:
                pulled.append(i)
            yield i

    got = []
    for value in map_partitions(abs, parts(), name="bounded"):
        got.append(value)
        if len(got) == 1:
            assert len(pulled) <= 2 * 2 * 5  # in_flight x worker threads, plus the buffered results
    assert got == list(range(40))


# ------------------------------------------------------------------ EO


def test_eo_timeseries_distributed_equals_single_process_and_a_whole_stack(cluster, tmp_path, monkeypatch) -> None:
    import rasterio
    from scipy.stats import theilslopes

    from evals.scale.data import write_stac_series
    from tools.eo.timeseries import eo_index_timeseries
    from tools.eo.trends import decimal_years

    items = write_stac_series(tmp_path / "series", 20, 64)
    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "inline")
    single = eo_index_timeseries(items=[str(tmp_path / "series")], window=24)
    monkeypatch.setenv("RESEARCH_MCP_DASK_MODE", "auto")
    dist = eo_index_timeseries(items=[str(tmp_path / "series")], window=24)
    assert dist.distributed and dist.windows == 9 and dist.items == 20
    assert single.series == dist.series and single.series_trend == dist.series_trend
    with rasterio.open(single.trends_tif) as a, rasterio.open(dist.trends_tif) as b:
        trends = b.read()
        assert np.array_equal(a.read(), trends, equal_nan=True)
    # reference: the whole stack in memory, NDVI by hand (baseline 03.01: DN / 10000, no offset)
    stack = []
    for item in sorted(items):
        with rasterio.open(item.parent / "B04.tif") as r, rasterio.open(item.parent / "B08.tif") as q:
            red, nir = r.read(1) / 1e4, q.read(1) / 1e4
        stack.append((nir - red) / (nir + red))
    stack = np.array(stack)
    np.testing.assert_allclose([s.mean for s in dist.series], stack.reshape(20, -1).mean(axis=1), rtol=1e-6)
    t = decimal_years([s.datetime for s in dist.series])
    rng = np.random.default_rng(1)
    for r, c in rng.integers(0, 64, size=(6, 2)):
        y = stack[:, r, c].astype(np.float32).astype(np.float64)
        assert trends[0, r, c] == pytest.approx(theilslopes(y, t).slope, rel=1e-4, abs=1e-6)
        assert trends[3, r, c] == pytest.approx(np.polyfit(t, y, 1)[0], rel=1e-4, abs=1e-6)
    assert np.all(trends[4] == 20)
    # the planted NIR trend falls west and rises east: so does NDVI's Sen slope
    assert np.median(trends[0][:, :8]) < 0 < np.median(trends[0][:, -8:])
