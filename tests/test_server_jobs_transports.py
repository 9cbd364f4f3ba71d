"""Jobs over the real transports, with clients whose request timeout is 60 s, as MCP hosts have.

The Python SDK client (60 s read timeout) over a stdio subprocess and over streamable HTTP, and the MCP
Inspector CLI (its default 60 s timeout) over HTTP and stdio: `dti_train` and `nid_finetune` answer with a job
handle well inside 45 s, and `jobs_wait` then returns the result a direct Python call with the same seed gives
(same metrics, same checkpoint bytes). A server killed with SIGKILL and restarted reports its running job
`interrupted` (with the arguments to rerun it) and still serves a job that had finished; a job started
through one HTTP server process is waited on and cancelled through another one sharing the output folder.
The inline budget is 1 s (40 s in production: the same path, sooner).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import networkx as nx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from server.jobs import is_handle
from tests.conftest import REPO, free_port, server_env, start_http_server, stop_server
from tools.settings import reload_settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOST_TIMEOUT_S = 60.0  # what Claude Desktop, VS Code and Cursor give a tool call
HANDLE_LIMIT_S = 45.0
BUDGET = "1"
DTI = ("dti_train", {"path": "sample://dti/bindingdb_pairs_test.csv", "name": "jobs_ref", "epochs": 1, "members": 1})
FINETUNE = ("nid_finetune", {"per_dataset": 2, "steps": 1, "batch_size": 2})
QUICK_TRAIN = ("nid_train_model", {"datasets": ["jsonlite_md5"], "per_dataset": 12, "epochs": 6, "d_model": 16,
                                   "n_layer": 1})
ENDLESS = ("graph_solve", {"task": "hamiltonian_path",
                           "graph": {"edges": [list(e) for e in nx.complete_bipartite_graph(18, 22).edges()]}})


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(tool: str, result: dict[str, Any], out: Path) -> tuple[dict[str, Any], str]:
    """The result without its timing and file names, and the sha256 of the checkpoint it wrote."""
    if tool == "dti_train":
        kept = {k: v for k, v in result.items() if k != "seconds"}
        return kept, _sha256(out / "dti_models" / f"{result['model']}.pt")
    kept = {k: v for k, v in result.items() if k not in ("adapter", "split_path", "seconds")}
    return kept, _sha256(Path(result["adapter"]) / "adapter_model.safetensors")


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], str]]:
    """Each tool called directly in this process, with the same arguments (and so the same seed)."""
    from tools.dti.training import dti_train
    from tools.nid.finetune_tool import nid_finetune

    out = tmp_path_factory.mktemp("direct")
    old = os.environ.get("RESEARCH_MCP_OUTPUT_DIR")
    os.environ["RESEARCH_MCP_OUTPUT_DIR"] = str(out)
    reload_settings()
    try:
        refs = {DTI[0]: fingerprint(DTI[0], dti_train(**DTI[1]).model_dump(mode="json"), out),
                FINETUNE[0]: fingerprint(FINETUNE[0], nid_finetune(**FINETUNE[1]).model_dump(mode="json"), out)}
    finally:
        os.environ.pop("RESEARCH_MCP_OUTPUT_DIR") if old is None else os.environ.update(RESEARCH_MCP_OUTPUT_DIR=old)
        reload_settings()
    return refs


def _env(out: Path) -> dict[str, str]:
    return server_env(RESEARCH_MCP_OUTPUT_DIR=str(out), RESEARCH_MCP_INLINE_BUDGET_S=BUDGET,
                      RESEARCH_MCP_LOG_LEVEL="WARNING", RESEARCH_MCP_GRAPH__MAX_SEARCH_STEPS=str(10**12))


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def handle_then_result(client: Client, tool: str, args: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
    """Seconds until the call answered (with a handle), its job id, and the job's result collected with jobs_wait."""
    t0 = time.perf_counter()
    first = await client.call_tool(tool, args)
    took = time.perf_counter() - t0
    assert not first.is_error, _text(first)
    assert is_handle(first.structured_content), first.structured_content
    job_id = first.structured_content["job"]["id"]
    deadline = time.monotonic() + 600
    while True:
        result = await client.call_tool("jobs_wait", {"job_id": job_id})
        assert not result.is_error, _text(result)
        if not is_handle(result.structured_content):
            return took, job_id, result.structured_content
        assert time.monotonic() < deadline, f"{tool} did not finish"


@contextlib.asynccontextmanager
async def http_client(url: str) -> Any:
    async with (create_mcp_http_client(timeout=httpx2.Timeout(HOST_TIMEOUT_S)) as http,
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=HOST_TIMEOUT_S) as client):
        yield client


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    out = tmp_path_factory.mktemp("http-jobs")
    port = free_port()
    proc = start_http_server(port, _env(out))
    yield f"http://127.0.0.1:{port}/mcp", out
    stop_server(proc)


# ---------------------------------------------------------------------------------------------- the Python SDK client


async def test_stdio_long_calls_answer_with_handles_and_their_jobs_give_the_direct_results(direct, tmp_path) -> None:
    out = tmp_path / "stdio-out"
    params = StdioServerParameters(command=sys.executable, args=["-m", "server", "serve"], cwd=str(REPO),
                                   env=_env(out))
    async with Client(params, read_timeout_seconds=HOST_TIMEOUT_S) as client:
        for tool, args in (DTI, FINETUNE):
            took, _, result = await handle_then_result(client, tool, args)
            print(f"\nstdio {tool}: handle after {took:.2f} s")
            assert took < HANDLE_LIMIT_S
            assert fingerprint(tool, result, out) == direct[tool]


async def test_http_long_calls_answer_with_handles_and_their_jobs_give_the_direct_results(direct, http_server) -> None:
    url, out = http_server
    async with http_client(url) as client:
        for tool, args in (DTI, FINETUNE):
            took, _, result = await handle_then_result(client, tool, args)
            print(f"\nhttp {tool}: handle after {took:.2f} s")
            assert took < HANDLE_LIMIT_S
            assert fingerprint(tool, result, out) == direct[tool]


# ---------------------------------------------------------------------------------------------- the MCP Inspector


def inspector(target: list[str], method_args: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """One MCP Inspector CLI call (its default request timeout); the seconds it took and its JSON output."""
    t0 = time.perf_counter()
    proc = subprocess.run(["npx", "-y", "@modelcontextprotocol/inspector", "--cli", *target, *method_args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    took = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return took, json.loads(proc.stdout)


def _tool_call(name: str, args: dict[str, Any]) -> list[str]:
    pairs = [f"{k}={v}" for k, v in args.items()]
    return ["--method", "tools/call", "--tool-name", name, *(["--tool-arg", *pairs] if pairs else [])]


needs_npx = pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")


@needs_npx
@pytest.mark.parametrize("call", [DTI, FINETUNE], ids=lambda c: c[0])
def test_inspector_over_http_gets_a_handle_then_the_direct_result(call, direct, http_server) -> None:
    url, out = http_server
    tool, args = call
    inspector([url, "--transport", "http"], ["--method", "tools/list"], server_env())  # npx fetches it once
    took, first = inspector([url, "--transport", "http"], _tool_call(tool, args), server_env())
    print(f"\ninspector http {tool}: handle after {took:.2f} s (node start-up included)")
    assert took < HANDLE_LIMIT_S and not first.get("isError"), first
    assert is_handle(first["structuredContent"])
    job_id = first["structuredContent"]["job"]["id"]
    for _ in range(200):
        _, answer = inspector([url, "--transport", "http"], _tool_call("jobs_wait", {"job_id": job_id}), server_env())
        assert not answer.get("isError"), answer
        if not is_handle(answer["structuredContent"]):
            break
    assert fingerprint(tool, answer["structuredContent"], out) == direct[tool]


@needs_npx
def test_inspector_over_stdio_gets_a_handle_and_the_job_ends_interrupted_with_its_server(tmp_path) -> None:
    """Over stdio the job lives in the server the client started; when the client leaves, the job ends with it,
    and the next server on the same output folder reports it interrupted, not running."""
    env = _env(tmp_path / "out")
    serve = [sys.executable, "-m", "server", "serve"]
    took, first = inspector(serve, _tool_call(*DTI), env)
    print(f"\ninspector stdio {DTI[0]}: handle after {took:.2f} s (node and server start-up included)")
    assert took < HANDLE_LIMIT_S and is_handle(first["structuredContent"]), first
    job_id = first["structuredContent"]["job"]["id"]
    _, status = inspector(serve, _tool_call("jobs_status", {"job_id": job_id}), env)
    assert status["structuredContent"]["state"] == "interrupted"
    assert status["structuredContent"]["arguments"] == DTI[1]
    _, running = inspector(serve, _tool_call("jobs_list", {"state": "running"}), env)
    assert running["structuredContent"]["total"] == 0


# ---------------------------------------------------------------------------------------------- restarts and processes


async def test_a_killed_server_leaves_no_job_running_and_its_finished_jobs_after_a_restart(tmp_path) -> None:
    out = tmp_path / "out"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = start_http_server(port, _env(out))
    try:
        async with http_client(url) as client:
            _, finished_id, finished = await handle_then_result(client, *QUICK_TRAIN)
            first = await client.call_tool(*ENDLESS)
            endless = first.structured_content["job"]["id"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc = start_http_server(port, _env(out))
        async with http_client(url) as client:
            status = (await client.call_tool("jobs_status", {"job_id": endless})).structured_content
            again = await client.call_tool("jobs_result", {"job_id": finished_id})
            running = (await client.call_tool("jobs_list", {"state": "running"})).structured_content
    finally:
        stop_server(proc)
    assert status["state"] == "interrupted" and status["arguments"] == ENDLESS[1], status
    assert "To run it again, call graph_solve with" in status["message"]
    assert not again.is_error and again.structured_content == finished
    assert Path(finished["checkpoint"]).is_file()
    assert running["total"] == 0


async def test_a_job_started_through_one_server_process_is_waited_on_and_cancelled_through_another(tmp_path) -> None:
    out = tmp_path / "shared-out"
    ports = free_port(), free_port()
    procs = [start_http_server(p, _env(out)) for p in ports]
    a_url, b_url = (f"http://127.0.0.1:{p}/mcp" for p in ports)
    try:
        async with http_client(a_url) as a, http_client(b_url) as b:
            first = await a.call_tool(*QUICK_TRAIN)
            job_id = first.structured_content["job"]["id"]
            while True:
                waited = await b.call_tool("jobs_wait", {"job_id": job_id})
                if not is_handle(waited.structured_content):
                    break
            owned = await a.call_tool("jobs_result", {"job_id": job_id})
            endless = (await a.call_tool(*ENDLESS)).structured_content["job"]["id"]
            t0 = time.perf_counter()
            cancelled = (await b.call_tool("jobs_cancel", {"job_id": endless})).structured_content
            took = time.perf_counter() - t0
            seen_by_a = (await a.call_tool("jobs_status", {"job_id": endless})).structured_content
    finally:
        for proc in procs:
            stop_server(proc)
    print(f"\ncancel through another process: answered 'cancelled' after {took:.2f} s")
    assert not waited.is_error and waited.structured_content == owned.structured_content
    assert waited.structured_content["steps"] > 0 and Path(waited.structured_content["checkpoint"]).is_file()
    assert cancelled["state"] == "cancelled" and seen_by_a["state"] == "cancelled"
    assert took < 2.0
