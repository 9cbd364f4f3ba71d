"""A cancel stops the work: every long tool's worker thread (or model calls) ends within a second of it.

Each call runs over the in-memory `mcp.Client(server)`, so the server's worker pools are those of the
test's own event loop. A call counts as started once it has reported progress, or once its worker thread
has used a quarter second of CPU; then the call is cancelled and the test waits, under `fail_after`, for
the pool to have no thread busy (or, for model-calling tools, for the endpoint to see no request in flight
and no new one).
"""

from __future__ import annotations

import csv
import time
from typing import Any

import anyio
import networkx as nx
import pytest
import rasterio  # noqa: F401 - imported up front: a cancel during a module's first import waits for it to end
import rdkit.Chem  # noqa: F401
import scipy.sparse  # noqa: F401
import sklearn.metrics  # noqa: F401
import sympy  # noqa: F401
import torch
import torch.distributed  # noqa: F401
from mcp import Client

from server.app import build_server
from server.registry import capacity
from tests.scripted_llm import ScriptedLLM
from tools.paths import SAMPLE_DIR
from tools.settings import reload_settings

pytestmark = pytest.mark.anyio

STOP_S = 1.0
START_CPU_S = 0.25
TARGET = next(csv.DictReader((SAMPLE_DIR / "dti" / "targets.csv").open()))["sequence"]
NO_HAMILTONIAN_PATH = [list(e) for e in nx.complete_bipartite_graph(18, 22).edges()]  # |A| - |B| = 4 > 1

THREAD_TOOLS: dict[str, dict[str, Any]] = {
    "eo_spectral_index": {"scene": "sample://eo/sentinel2_l1c", "index": "NDVI"},
    "eo_land_surface_temperature": {"scene": "sample://eo/landsat8_c1_l1t"},
    "graph_solve": {"task": "hamiltonian_path", "graph": {"edges": NO_HAMILTONIAN_PATH}},
    "dti_featurize": {"path": "sample://dti/screening_library.smi"},
    "dti_screen": {"target": TARGET, "library": "sample://dti/screening_library.smi"},
    "dti_train": {"path": "sample://dti/bindingdb_pairs_train.csv", "name": "cancelled", "epochs": 5},
    "nid_train_model": {"epochs": 30},
    "nid_blind_filter": {"dataset": "eth_tokens"},
}


async def _cancel_once_started(client: Client, name: str, args: dict[str, Any], started: Any) -> float:
    """Start the call, cancel it once `started()` holds, and return the seconds until its work stopped."""
    progressed = anyio.Event()
    finished = anyio.Event()
    scope = anyio.CancelScope()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progressed.set()

    async def call() -> None:
        with scope:
            result = await client.call_tool(name, args, progress_callback=on_progress)
            pytest.fail(f"{name} finished before it could be cancelled: {result.content[0].text[:300]}")
        finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(180):
            while not (progressed.is_set() or started()):
                await anyio.sleep(0.02)
        cancelled = time.perf_counter()
        scope.cancel()
        await finished.wait()
    return cancelled


@pytest.fixture
def long_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS", str(10**12))
    reload_settings()


@pytest.mark.parametrize("name", list(THREAD_TOOLS))
async def test_a_cancel_stops_the_worker_thread_within_a_second(name: str, long_searches) -> None:
    server = build_server([name.split("_")[0]], log_level="CRITICAL")
    async with Client(server) as client:
        await client.list_tools()
        threads = capacity().threads
        cpu0 = time.process_time()

        def started() -> bool:
            return threads.borrowed_tokens > 0 and time.process_time() - cpu0 > START_CPU_S

        cancelled = await _cancel_once_started(client, name, THREAD_TOOLS[name], started)
        with anyio.fail_after(STOP_S + 0.5):
            while threads.borrowed_tokens:
                await anyio.sleep(0.01)
        stopped = time.perf_counter() - cancelled
        cpu_at_stop = time.process_time()
        # the server still answers, and no thread of the cancelled call is left burning CPU
        listed = await client.list_tools()
        assert listed.tools and threads.borrowed_tokens == 0
    assert stopped < STOP_S, f"{name} stopped {stopped:.2f} s after the cancel"
    assert time.process_time() - cpu_at_stop < 1.0


def _slow_rule(body: dict[str, Any]) -> str:
    return "Answer: 1"


ASYNC_TOOLS: dict[str, dict[str, Any]] = {
    "longctx_answer": {"task": "What is the key?", "path": "sample://longctx/alice.txt", "chunk_tokens": 600,
                       "concurrency": 2},
    "graph_benchmark": {"tasks": ["connectivity"], "generators": ["ERP"], "per_cell": 50},
}


@pytest.mark.parametrize("name", list(ASYNC_TOOLS))
async def test_a_cancel_stops_the_model_calls(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedLLM(_slow_rule, latency_s=0.2) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        reload_settings()
        async with Client(build_server([name.split("_")[0]], log_level="CRITICAL")) as client:
            cancelled = await _cancel_once_started(client, name, ASYNC_TOOLS[name], lambda: len(llm.requests) >= 2)
            with anyio.fail_after(STOP_S + 0.5):
                while llm.active:
                    await anyio.sleep(0.01)
            stopped = time.perf_counter() - cancelled
            asked = len(llm.requests)
            await client.list_tools()
            with anyio.move_on_after(0.5):  # a window in which a still-running call would ask again
                while len(llm.requests) == asked:
                    await anyio.sleep(0.02)
        assert len(llm.requests) == asked, f"{name} kept calling the model after the cancel"
    assert stopped < STOP_S, f"{name} stopped {stopped:.2f} s after the cancel"
