"""`research-mcp serve --http --workers 2`: several stateless server processes behind one port answer 500
concurrent cheap calls (light tools, not held back by the heavy-call queue), every one with its own answer, and
a long call's job is collected through whichever process takes the request (the 1 s inline budget makes a
small training a job)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import REPO, free_port, server_env, stop_server

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CALLS = 500


@pytest.fixture(scope="module")
def two_worker_server(tmp_path_factory):
    port = free_port()
    out = tmp_path_factory.mktemp("http-workers")
    env = server_env(RESEARCH_MCP_OUTPUT_DIR=str(out), RESEARCH_MCP_LOG_LEVEL="WARNING", RESEARCH_MCP_DASK_WORKERS="1",
                     RESEARCH_MCP_INLINE_BUDGET_S="1")
    log = (out / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "serve", "--http", "--workers", "2", "--host", "127.0.0.1",
         "--port", str(port)],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    _wait_until_both_answer(proc, url, out / "server.log")
    yield url
    stop_server(proc)
    log.close()


def _wait_until_both_answer(proc: subprocess.Popen, url: str, log_path) -> None:
    """The parent binds the port before its server processes have imported the app: wait for answers,
    not for the socket, so the burst below meets started servers."""
    body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {}}
    deadline, answered = time.monotonic() + 120, 0
    while answered < 4:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log_path.read_text(errors='replace')[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"server did not answer within 120 s: {log_path.read_text(errors='replace')[-2000:]}")
        try:
            answered += httpx.post(url, json=body, headers=HEADERS, timeout=30).status_code == 200
        except httpx.HTTPError:
            time.sleep(0.3)


def _result(text: str) -> dict:
    """The JSON-RPC response in a reply, plain JSON or one server-sent event."""
    if text.lstrip().startswith("{"):
        return json.loads(text)
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


def _path_graph(n: int) -> dict:
    return {"edges": [[i, i + 1] for i in range(n - 1)]}


def expected_text(n: int) -> str:
    """The edge-list serialization of the path 0-1-...-(n-1), written out independently."""
    return "[" + ", ".join(f"({i}, {i + 1})" for i in range(n - 1)) + "]"


async def _calls(url: str) -> list[tuple[str, str]]:
    limits = httpx.Limits(max_connections=250, max_keepalive_connections=250)
    async with httpx.AsyncClient(timeout=httpx.Timeout(120), limits=limits) as client:

        async def one(i: int) -> tuple[str, str]:
            n = 2 + i % 97
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "graph_serialize",
                               "arguments": {"graph": _path_graph(n), "format": "edge_list"}}}
            r = await client.post(url, json=body, headers=HEADERS)
            r.raise_for_status()
            reply = _result(r.text)
            assert reply["id"] == i
            assert "structuredContent" in reply["result"], reply
            return expected_text(n), reply["result"]["structuredContent"]["text"]

        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(CALLS))), timeout=240)


def test_two_server_processes_answer_500_concurrent_calls(two_worker_server) -> None:
    answers = asyncio.run(_calls(two_worker_server))
    assert len(answers) == CALLS
    assert all(expected == got for expected, got in answers)


def test_a_stateless_server_needs_no_session(two_worker_server) -> None:
    # no initialize and no session id: any process may take any request
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    r = httpx.post(two_worker_server, json=body, headers=HEADERS, timeout=60)
    assert r.status_code == 200 and "mcp-session-id" not in r.headers
    names = {t["name"] for t in _result(r.text)["result"]["tools"]}
    assert {"graph_solve", "dti_screen"} <= names


def test_any_server_process_reads_an_output_file_by_its_uri(two_worker_server) -> None:
    import base64
    from pathlib import Path

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "graph_solve", "arguments": {"task": "cycle",
                                                            "graph": {"edges": [[i, (i + 1) % 6] for i in range(6)]}}}}
    result = _result(httpx.post(two_worker_server, json=call, headers=HEADERS, timeout=120).text)["result"]
    drawing = Path(result["structuredContent"]["drawing"])
    uri = next(c["uri"] for c in result["content"] if c["type"] == "resource_link")

    async def reads() -> list[bytes]:
        async def one(i: int) -> bytes:  # a fresh connection each: the processes take turns accepting them
            async with httpx.AsyncClient(timeout=60) as client:
                body = {"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": uri}}
                reply = _result((await client.post(two_worker_server, json=body, headers=HEADERS)).text)
                return base64.b64decode(reply["result"]["contents"][0]["blob"])

        return await asyncio.gather(*(one(i) for i in range(16)))

    assert all(data == drawing.read_bytes() for data in asyncio.run(reads()))


def _call(url: str, i: int, name: str, arguments: dict) -> dict:
    """One tools/call on a fresh connection (so any server process may take it); its result."""
    body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    r = httpx.post(url, json=body, headers=HEADERS, timeout=60)
    r.raise_for_status()
    return _result(r.text)["result"]


def test_a_job_is_collected_through_any_server_process(two_worker_server) -> None:
    train = {"datasets": ["jsonlite_md5"], "per_dataset": 12, "epochs": 6, "d_model": 16, "n_layer": 1}
    first = _call(two_worker_server, 1, "nid_train_model", train)
    job_id = first["structuredContent"]["job"]["id"]
    deadline = time.monotonic() + 300
    while "job" in (done := _call(two_worker_server, 2, "jobs_wait", {"job_id": job_id}))["structuredContent"]:
        assert time.monotonic() < deadline
    assert not done.get("isError") and done["structuredContent"]["steps"] > 0
    states = {_call(two_worker_server, 3 + i, "jobs_status", {"job_id": job_id})["structuredContent"]["state"]
              for i in range(8)}
    again = _call(two_worker_server, 20, "jobs_result", {"job_id": job_id})
    assert states == {"done"} and again["structuredContent"] == done["structuredContent"]
