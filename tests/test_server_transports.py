"""The real transports: a stdio subprocess, a streamable-HTTP subprocess with its token and Host checks,
and the MCP Inspector CLI as an independent client."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from server.http import INSPECTOR
from tests.conftest import REPO, free_port, server_env, start_http_server

pytestmark = pytest.mark.anyio

# A call with a result checked against networkx by hand: the 5-cycle 0-1-2-3-4-0 has diameter 2.
GOOD_CALL = ("graph_solve", {"task": "diameter", "graph": {"edges": [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]]}})
BAD_CALL = ("graph_solve", {"task": "diameter", "graph": {"edges": [["a b", "c"]]}})
TOKEN = "9f2c4e6a8b0d1f3a5c7e9b1d3f5a7c9e0b2d4f6a8c0e2b4d"  # openssl rand -hex 24
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INSPECTOR_VERSION = INSPECTOR.rpartition("@")[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _answer(result) -> object:
    assert not result.is_error, result.content
    return result.structured_content["answer"]


async def _exercise(client: Client) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"graph_solve", "graph_generate", "graph_check_answer"} <= names
    assert _answer(await client.call_tool(*GOOD_CALL)) == 2
    bad = await client.call_tool(*BAD_CALL)
    assert bad.is_error and "integer" in bad.content[0].text
    assert _answer(await client.call_tool(*GOOD_CALL)) == 2


async def test_stdio_subprocess_lists_calls_and_survives_errors(tmp_path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "server", "serve"], cwd=str(REPO),
        env=server_env(RESEARCH_MCP_OUTPUT_DIR=str(tmp_path / "out")),
    )
    async with Client(params) as client:
        await _exercise(client)
        resources = (await client.list_resources()).resources
        assert any(str(r.uri).startswith("sample://") for r in resources)


@pytest.fixture(scope="module")
def http_server():
    port = free_port()
    proc = start_http_server(port, server_env(RESEARCH_MCP_TOKEN=TOKEN))
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


async def test_http_with_the_right_token(http_server) -> None:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(http_server, http_client=http)) as client,
    ):
        await _exercise(client)


def test_http_refuses_a_wrong_or_missing_token(http_server) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = httpx.post(http_server, json=INIT, headers=MCP_HEADERS | headers, timeout=10)
        assert r.status_code == 401, headers
        assert "RESEARCH_MCP_TOKEN" in r.json()["error_description"]


def test_http_bearer_scheme_is_case_insensitive(http_server) -> None:
    for scheme in ("bearer", "BEARER", "BeArEr"):
        r = httpx.post(http_server, json=INIT, headers=MCP_HEADERS | {"Authorization": f"{scheme} {TOKEN}"},
                       timeout=10)
        assert r.status_code == 200, scheme


def test_http_refuses_two_authorization_headers(http_server) -> None:
    for second in (f"Bearer {TOKEN}", "Bearer wrong"):
        headers = [*MCP_HEADERS.items(), ("Authorization", f"Bearer {TOKEN}"), ("Authorization", second)]
        r = httpx.post(http_server, json=INIT, headers=headers, timeout=10)
        assert r.status_code in (400, 401), second
        assert "one Authorization header" in r.json()["error_description"]


def test_http_refuses_a_short_token_at_start_up() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "server", "serve", "--http", "--host", "127.0.0.1", "--port", str(free_port())],
        env=server_env(RESEARCH_MCP_TOKEN="s3cret-but-short"), cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "openssl rand -hex 24" in proc.stderr and "32" in proc.stderr


def test_http_refuses_a_foreign_host_header(http_server) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = httpx.post(http_server, json=INIT, headers=MCP_HEADERS | auth | {"Host": "evil.example.com"}, timeout=10)
    assert r.status_code in (400, 421)
    r = httpx.post(http_server, json=INIT, headers=MCP_HEADERS | auth | {"Origin": "http://evil.example.com"},
                   timeout=10)
    assert r.status_code in (400, 403)
    ok = httpx.post(http_server, json=INIT, headers=MCP_HEADERS | auth, timeout=10)
    assert ok.status_code == 200


def test_http_on_a_public_interface_requires_a_token() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "server", "serve", "--http", "--host", "0.0.0.0", "--port", str(free_port())],
        env=server_env(), cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "RESEARCH_MCP_TOKEN" in proc.stderr


def test_cli_tools_and_call() -> None:
    listing = subprocess.run([sys.executable, "-m", "server", "tools", "--json"], cwd=REPO, env=server_env(),
                             capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    tools = {t["name"]: t for t in json.loads(listing.stdout)}
    assert tools["graph_solve"]["annotations"]["readOnlyHint"] is True
    call = subprocess.run([sys.executable, "-m", "server", "call", GOOD_CALL[0], json.dumps(GOOD_CALL[1])],
                          cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=120)
    assert call.returncode == 0, call.stderr
    assert json.loads(call.stdout)["answer"] == 2
    bad = subprocess.run([sys.executable, "-m", "server", "call", BAD_CALL[0], json.dumps(BAD_CALL[1])],
                         cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "integer" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")
def test_mcp_inspector_cli_lists_the_tools() -> None:
    proc = subprocess.run(
        ["npx", "-y", "@modelcontextprotocol/inspector", "--cli", sys.executable, "-m", "server", "serve",
         "--method", "tools/list"],
        cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {t["name"] for t in json.loads(proc.stdout)["tools"]}
    assert {"graph_solve", "graph_generate"} <= names


def _started_http(env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str]]:
    """`serve --http` on a free port, and the lines it printed before it accepted connections."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "server", "serve", "--http", "--port", str(port)], env=env,
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if line.strip().startswith("npx "):
            break
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, lines
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"no server on {port}: {lines}")


def test_http_prints_its_url_the_header_and_an_inspector_command_that_works() -> None:
    proc, lines = _started_http(server_env(RESEARCH_MCP_TOKEN=TOKEN))
    try:
        url = next(line.split(" at ")[1] for line in lines if "streamable HTTP at" in line)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
        header = next(line.split("header: ")[1].split("  ")[0] for line in lines if "header:" in line)
        assert header == "Authorization: Bearer $RESEARCH_MCP_TOKEN"
        name, _, value = header.replace("$RESEARCH_MCP_TOKEN", TOKEN).partition(": ")
        assert httpx.post(url, json=INIT, headers=MCP_HEADERS | {name: value}, timeout=10).status_code == 200
        command = next(line.strip() for line in lines if line.strip().startswith("npx "))
        assert f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION} " in command and url in command
        assert f"@{INSPECTOR_VERSION}" in README  # the README names the version the server prints
        if shutil.which("npx") is None:
            pytest.skip("npx (Node.js) is not installed: the printed Inspector command is not run")
        run = subprocess.run(["bash", "-c", command], env=server_env(RESEARCH_MCP_TOKEN=TOKEN), cwd=REPO,
                             capture_output=True, text=True, timeout=400)
        assert run.returncode == 0, run.stderr[-2000:]
        assert {"graph_solve", "graph_generate"} <= {t["name"] for t in json.loads(run.stdout)["tools"]}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_http_without_a_token_prints_no_header() -> None:
    proc, lines = _started_http(server_env())
    proc.terminate()
    proc.wait(timeout=10)
    assert not any("header" in line for line in lines)
    assert "--header" not in next(line for line in lines if line.strip().startswith("npx "))
