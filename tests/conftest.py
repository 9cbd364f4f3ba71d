"""Shared fixtures: an isolated output folder and settings per test, the anyio backend, server helpers."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.shared_data import shared_data_root
from tools.settings import reload_settings

pytest_plugins = ("tests.shared_data_plugin",)
REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = shared_data_root()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test writes under its own output folder and may read its tmp_path and the repository."""
    out = tmp_path / "out"
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_DIR", str(out))
    monkeypatch.setenv("RESEARCH_MCP_ROOTS", f'["{tmp_path}", "{REPO}"]')
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "RESEARCH_MCP_LLM_BASE_URL",
                "RESEARCH_MCP_LLM_API_KEY", "RESEARCH_MCP_LLM_MODEL", "RESEARCH_MCP_TOKEN",
                "RESEARCH_MCP_LLM_EMBEDDED_URL"):
        monkeypatch.delenv(var, raising=False)
    # Tests that want the embedded model ask for the `embedded_llm` fixture; the rest see "no model".
    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED", "false")
    reload_settings()
    yield out
    monkeypatch.undo()
    reload_settings()


@pytest.fixture(scope="session")
def embedded_server() -> Iterator[None]:
    """The test session's embedded model server: started on demand by the real launcher (one per machine, the
    model each test asks for), and stopped at the end if none was running before."""
    from tools.embedded.launcher import default_state_file, running_endpoint

    before = running_endpoint()
    yield
    if before is None:
        import json
        import signal

        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(int(json.loads(default_state_file().read_text())["pid"]), signal.SIGTERM)


def _embedded(model: str, monkeypatch: pytest.MonkeyPatch) -> str:
    from tools.embedded.launcher import ensure_local_endpoint

    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED", "true")
    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_MODEL", model)
    monkeypatch.delenv("RESEARCH_MCP_LLM_EMBEDDED_URL", raising=False)
    reload_settings()
    url = ensure_local_endpoint()      # swaps the running server for `model` when it serves another
    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_URL", url)
    reload_settings()
    return url


@pytest.fixture
def embedded_llm(embedded_server: None, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test may use the embedded model, Qwen2.5-Coder 1.5B (no endpoint configured); its base URL."""
    return _embedded("qwen2.5-coder-1.5b-instruct", monkeypatch)


@pytest.fixture
def embedded_small_llm(embedded_server: None, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test may use the small embedded model, Qwen2.5-Coder 0.5B; its base URL."""
    return _embedded("qwen2.5-coder-0.5b-instruct", monkeypatch)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(**extra: str) -> dict[str, str]:
    """The environment for a server subprocess: this interpreter's, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RESEARCH_MCP_LLM"))}
    env["RESEARCH_MCP_LLM_EMBEDDED"] = "false"
    env.update(extra)
    return env


def start_http_server(port: int, env: dict[str, str], host: str = "127.0.0.1") -> subprocess.Popen[bytes]:
    """`research-mcp serve --http` as a real subprocess, returned once it accepts connections."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "serve", "--http", "--host", host, "--port", str(port)],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start within 60 s")


def stop_server(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Terminate a server subprocess, killing it if it has not exited within `timeout` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
