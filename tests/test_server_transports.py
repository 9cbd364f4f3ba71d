"""The real transports: a stdio subprocess, a streamable-HTTP subprocess with its token and Host checks,
and the MCP Inspector CLI as an independent client. Over each, the pictures come inline and the files they link
read back byte for byte."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from server.http import INSPECTOR as PRINTED_INSPECTOR
from tests.conftest import REPO, free_port, server_env, start_http_server

pytestmark = pytest.mark.anyio
# Pinned: the 2.x CLI applies the tool-schema portability lint (`--strict`); an older cached copy would not.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
L8 = "sample://eo/landsat8_c1_l1t"

# A call with a result checked against networkx by hand: the 5-cycle 0-1-2-3-4-0 has diameter 2.
GOOD_CALL = ("graph_solve", {"task": "diameter", "graph": {"edges": [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]]}})
BAD_CALL = ("graph_solve", {"task": "diameter", "graph": {"edges": [["a b", "c"]]}})
TOKEN = "9f2c4e6a8b0d1f3a5c7e9b1d3f5a7c9e0b2d4f6a8c0e2b4d"  # openssl rand -hex 24
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INSPECTOR_VERSION = PRINTED_INSPECTOR.rpartition("@")[2]  # the version `serve --http` prints
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


def _target() -> str:
    with (REPO / "tools/sample_data/dti/targets.csv").open() as fh:
        return next(csv.DictReader(fh))["sequence"]


def picture_calls() -> list[tuple[str, dict, str, str | None]]:
    """(tool, arguments, result field of its PNG, result field of a data file it writes) per family drawn."""
    petersen = {"edges": [[i, (i + 1) % 5] for i in range(5)] + [[i, i + 5] for i in range(5)]
                + [[5 + i, 5 + (i + 2) % 5] for i in range(5)]}
    scores = [[1.0 + 0.1 * i] + [0.05 * j for j in range(4)] for i in range(12)]
    return [("eo_spectral_index", {"scene": L8, "index": "NDVI"}, "quicklook", "output"),
            ("dti_screen", {"target": _target(), "library": "sample://dti/screening_library.smi", "top_k": 10,
                            "write_sdf": False}, "hits_png", "hits_csv"),
            ("graph_solve", {"task": "max_cut", "graph": petersen}, "drawing", None),
            ("nid_dp_audit", {"scores": scores}, "plot_png", None)]


def png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(data))
    image.load()  # decodes every row: a truncated or corrupt PNG fails here
    return image.size


async def _pictures_and_files(client: Client) -> None:
    """Each drawing tool answers with its PNG inline and a link per file; reading a link gives back the file."""
    for tool, args, picture, data_file in picture_calls():
        r = await client.call_tool(tool, args)
        assert not r.is_error, r.content
        images = [c for c in r.content if c.type == "image"]
        links = {c.name: c for c in r.content if c.type == "resource_link"}
        png = Path(r.structured_content[picture])
        assert len(images) == 1 and png_size(base64.b64decode(images[0].data))[0] > 300, tool
        for field in (picture, data_file) if data_file else (picture,):
            path = Path(r.structured_content[field])
            content = (await client.read_resource(links[path.name].uri)).contents[0]
            got = base64.b64decode(content.blob) if getattr(content, "blob", None) else content.text.encode()
            assert got == path.read_bytes(), (tool, field)
        assert base64.b64decode(images[0].data) == png.read_bytes()


async def test_stdio_subprocess_lists_calls_and_survives_errors(tmp_path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "server", "serve"], cwd=str(REPO),
        env=server_env(RESEARCH_MCP_OUTPUT_DIR=str(tmp_path / "out")),
    )
    async with Client(params) as client:
        await _exercise(client)
        resources = (await client.list_resources()).resources
        assert any(str(r.uri).startswith("sample://") for r in resources)
        await _pictures_and_files(client)
        assert {p.name for p in (await client.list_prompts()).prompts} == {"eo", "nid", "dti", "qa", "graph"}


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    port = free_port()
    out = tmp_path_factory.mktemp("http-out")
    proc = start_http_server(port, server_env(RESEARCH_MCP_TOKEN=TOKEN, RESEARCH_MCP_OUTPUT_DIR=str(out)))
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


async def test_http_with_the_right_token(http_server) -> None:
    # The SDK client refuses one streamed event over 1 MiB by default; a 1.2 MB GeoTIFF read is 1.6 MB of base64.
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(http_server, http_client=http, max_sse_event_size=16 << 20)) as client,
    ):
        await _exercise(client)
        await _pictures_and_files(client)


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


def inspector(*args: str, target: list[str] | None = None, env: dict[str, str] | None = None,
              ) -> subprocess.CompletedProcess[str]:
    """One MCP Inspector CLI call: over stdio to a fresh `serve` process, or to `target` (a URL and headers)."""
    server = target or [sys.executable, "-m", "server", "serve"]
    return subprocess.run(["npx", "-y", INSPECTOR, "--cli", *server, *args], cwd=REPO, env=env or server_env(),
                          capture_output=True, text=True, timeout=400)


needs_npx = pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")


@needs_npx
def test_mcp_inspector_cli_lists_portable_tools_and_the_prompts() -> None:
    proc = inspector("--method", "tools/list", "--strict")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the lint prints "Schema portability: N errors, M warnings" (and each finding, with --strict) when it finds any
    assert "Schema portability" not in proc.stderr and "type-union" not in proc.stderr, proc.stderr[-3000:]
    names = {t["name"] for t in json.loads(proc.stdout)["tools"]}
    assert {"graph_solve", "graph_generate"} <= names
    prompts = inspector("--method", "prompts/get", "--prompt-name", "eo", "--prompt-args", f"scene={L8}",
                        "product=NDVI")
    assert prompts.returncode == 0, prompts.stderr[-2000:]
    assert json.dumps({"scene": L8, "index": "NDVI"}) in json.loads(prompts.stdout)["messages"][0]["content"]["text"]


@needs_npx
def test_mcp_inspector_cli_gets_the_quicklook_inline_and_reads_the_geotiff_back(tmp_path) -> None:
    env = server_env(RESEARCH_MCP_OUTPUT_DIR=str(tmp_path / "out"))
    call = inspector("--method", "tools/call", "--tool-name", "eo_spectral_index", "--tool-arg", f"scene={L8}",
                     "index=NDVI", env=env)
    assert call.returncode == 0, call.stderr[-2000:]
    result = json.loads(call.stdout)
    image = next(c for c in result["content"] if c["type"] == "image")
    assert image["mimeType"] == "image/png" and png_size(base64.b64decode(image["data"]))[0] > 300
    tif = Path(result["structuredContent"]["output"])
    link = next(c for c in result["content"] if c["type"] == "resource_link" and c["name"] == tif.name)
    assert link["mimeType"] == "image/tiff" and link["size"] == tif.stat().st_size
    # another server process (as another worker would) reads the file by its URI
    read = inspector("--method", "resources/read", "--uri", link["uri"], env=env)
    assert read.returncode == 0, read.stderr[-2000:]
    assert base64.b64decode(json.loads(read.stdout)["contents"][0]["blob"]) == tif.read_bytes()
    refused = inspector("--method", "resources/read", "--uri", "output://%2E%2E/%2E%2E/etc/passwd", env=env)
    assert refused.returncode != 0 and "steps out of the output folder" in refused.stdout + refused.stderr


@needs_npx
def test_mcp_inspector_cli_over_http_draws_a_graph_and_reads_it_back(http_server) -> None:
    target = ["--transport", "http", "--server-url", http_server, "--header", f"Authorization: Bearer {TOKEN}"]
    call = inspector("--method", "tools/call", "--tool-name", "graph_solve", "--tool-arg", "task=shortest_path",
                     'graph={"edges": [[0, 1], [1, 2], [2, 3], [0, 4], [4, 3]]}', "source=0", "target=3",
                     target=target)
    assert call.returncode == 0, call.stderr[-2000:]
    result = json.loads(call.stdout)
    assert result["structuredContent"]["answer"] == [0, 4, 3]
    image = next(c for c in result["content"] if c["type"] == "image")
    link = next(c for c in result["content"] if c["type"] == "resource_link")
    read = inspector("--method", "resources/read", "--uri", link["uri"], target=target)
    assert read.returncode == 0, read.stderr[-2000:]
    assert base64.b64decode(json.loads(read.stdout)["contents"][0]["blob"]) == base64.b64decode(image["data"])




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
