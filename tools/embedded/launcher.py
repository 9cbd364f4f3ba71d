"""Finds the embedded model's server, or starts one, for any process that needs a model and has no endpoint.

Order: `RESEARCH_MCP_LLM_EMBEDDED_URL` (attach to a server you run yourself with `research-mcp llm serve`),
then the server recorded in the state file of the model cache (started earlier by any process), then a new
one started here in the background on a free loopback port. It exits by itself after
`IDLE_EXIT_S` seconds without requests. Starting is serialised by a file lock, so concurrent callers
share one server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tools.embedded.assemble import cache_root
from tools.errors import Cancelled, UpstreamError
from tools.progress import Progress, report
from tools.settings import get_settings

IDLE_EXIT_S = 1800
START_TIMEOUT_S = 900


def default_state_file() -> Path:
    return cache_root() / "local-llm.json"


def _healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(url.rstrip("/").removesuffix("/v1") + "/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def running_endpoint() -> str | None:
    """The base URL of a live embedded server recorded in the state file, or None."""
    try:
        state = json.loads(default_state_file().read_text())
        pid, url = int(state["pid"]), str(state["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return url if _healthy(url) else None


def served_model(url: str) -> str | None:
    """The model name a running OpenAI-compatible server at `url` reports first in `/v1/models`."""
    try:
        data = httpx.get(url.rstrip("/") + "/models", timeout=5.0).json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return str(data[0].get("id")) if data and isinstance(data[0], dict) else None


def ensure_local_endpoint(progress: Progress | None = None, timeout_s: float = START_TIMEOUT_S) -> str:
    """The base URL (`http://127.0.0.1:PORT/v1`) of a running embedded server, started if needed."""
    configured = get_settings().llm.embedded_url
    if configured:
        if not _healthy(configured, timeout=5.0):
            raise UpstreamError(f"The embedded model server at {configured} does not answer.",
                                hint="Start it with `research-mcp llm serve`, or unset RESEARCH_MCP_LLM_EMBEDDED_URL.")
        return configured
    url = running_endpoint()
    if url:
        return url
    lock_path = cache_root() / "local-llm.lock"
    with lock_path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            url = running_endpoint()
            return url or _start(progress, timeout_s)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _start(progress: Progress | None, timeout_s: float) -> str:
    log = cache_root() / "local-llm.log"
    state = default_state_file()
    with contextlib.suppress(FileNotFoundError):
        state.unlink()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.embedded.serve", "--port", "0", "--quiet", "--state-file", str(state),
             "--idle-exit-s", str(IDLE_EXIT_S)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
        )
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if progress is not None and progress.cancelled:
            proc.terminate()
            raise Cancelled("Starting the embedded model was cancelled.")
        report(progress, min(time.monotonic() - started, 60), 60, "starting the embedded model")
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:]
            raise UpstreamError(f"The embedded model server exited while starting (status {proc.returncode}).",
                                hint=f"Its log ({log}) ends with: {tail}")
        url = running_endpoint()
        if url:
            return url
        time.sleep(0.5)
    proc.terminate()
    raise UpstreamError(f"The embedded model server did not start within {timeout_s:.0f} s.",
                        hint=f"See {log}; or start it yourself with `research-mcp llm serve`.")
