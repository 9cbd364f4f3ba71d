"""`research-mcp call` waits for a long call's job; `research-mcp jobs ...` reaches the jobs of the output folder,
those of a server running in another process included. The inline budget is 1 s."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO, free_port, server_env, start_http_server, stop_server

TRAIN = {"datasets": ["jsonlite_md5"], "per_dataset": 12, "epochs": 6, "d_model": 16, "n_layer": 1}
NO_PATH = [list(e) for e in nx.complete_bipartite_graph(18, 22).edges()]  # no Hamiltonian path: a search that runs on
ENDLESS = {"task": "hamiltonian_path", "graph": {"edges": NO_PATH}}


def _env(out: Path) -> dict[str, str]:
    return server_env(RESEARCH_MCP_OUTPUT_DIR=str(out), RESEARCH_MCP_INLINE_BUDGET_S="1",
                      RESEARCH_MCP_LOG_LEVEL="WARNING", RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS=str(10**12))


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def test_call_waits_for_the_job_and_jobs_reads_it_back(tmp_path: Path) -> None:
    env = _env(tmp_path / "out")
    called = cli("call", "nid_train_model", json.dumps(TRAIN), env=env)
    assert called.returncode == 0, called.stderr[-2000:]
    result = json.loads(called.stdout)
    assert result["steps"] > 0 and Path(result["checkpoint"]).is_file()  # the tool's result, not a handle
    listed = cli("jobs", "list", "--json", env=env)
    jobs = json.loads(listed.stdout)["jobs"]
    assert [(j["tool"], j["state"]) for j in jobs] == [("nid_train_model", "done")]
    job_id = jobs[0]["id"]
    status = json.loads(cli("jobs", "status", job_id, env=env).stdout)
    assert status["arguments"] == TRAIN and result["checkpoint"] in status["files"]
    assert json.loads(cli("jobs", "result", job_id, env=env).stdout) == result
    assert json.loads(cli("jobs", "wait", job_id, env=env).stdout) == result
    table = cli("jobs", "list", env=env)
    assert table.returncode == 0 and job_id in table.stdout
    unknown = cli("jobs", "cancel", "job-nope", env=env)
    assert unknown.returncode == 1 and "not a job id" in unknown.stderr and "Traceback" not in unknown.stderr
    usage = cli("jobs", env=env)
    assert usage.returncode == 2 and "list,status,wait,result,cancel" in usage.stderr


@pytest.mark.anyio
async def test_jobs_waits_on_and_cancels_the_jobs_of_a_server_in_another_process(tmp_path: Path) -> None:
    env = _env(tmp_path / "out")
    port = free_port()
    server = start_http_server(port, env)
    try:
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
            trained = (await client.call_tool("nid_train_model", TRAIN)).structured_content["job"]["id"]
            endless = (await client.call_tool("graph_solve", ENDLESS)).structured_content["job"]["id"]
            waited = cli("jobs", "wait", trained, env=env)
            t0 = time.perf_counter()
            cancelled = cli("jobs", "cancel", endless, env=env)
            took = time.perf_counter() - t0
            owner_says = (await client.call_tool("jobs_status", {"job_id": endless})).structured_content
            collected = await client.call_tool("jobs_result", {"job_id": trained})
    finally:
        stop_server(server)
    assert waited.returncode == 0, waited.stderr[-2000:]
    assert json.loads(waited.stdout) == collected.structured_content
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["state"] == "cancelled", cancelled.stderr
    assert owner_says["state"] == "cancelled"
    print(f"\nresearch-mcp jobs cancel (a new process, start-up included): {took:.1f} s")
