"""Finds the embedded model's server, or starts one, for any process that needs a model and has no endpoint.

Order: `RESEARCH_MCP_LLM_EMBEDDED_URL` (attach to a server you run yourself with `research-mcp llm serve`),
then the server recorded in the state file of the model cache (started earlier by any process), then a new
one started here in the background on a free loopback port. It exits by itself after
`IDLE_EXIT_S` seconds without requests. Starting is serialised by a file lock, so concurrent callers
share one server.

One model server runs per machine (two llama.cpp servers on the same cores slow each other down many
times over). A server started here that serves another model than `RESEARCH_MCP_LLM_EMBEDDED_MODEL` names is
stopped and the named one started in its place, when it is idle; while it answers a request, or when it
was started by hand (`research-mcp llm serve`), the caller gets an error that says which model runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
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
STOP_TIMEOUT_S = 30.0
ACTIVITY = ("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total", "llamacpp:requests_processing",
            "llamacpp:requests_deferred")


def default_state_file() -> Path:
    return cache_root() / "local-llm.json"


def _healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(url.rstrip("/").removesuffix("/v1") + "/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def activity(base: str) -> tuple[float, ...] | None:
    """The server's token and request counters (None while it does not answer)."""
    try:
        text = httpx.get(base + "/metrics", timeout=5.0).text
    except httpx.HTTPError:
        return None
    values = dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#") and " " in line)
    return tuple(float(values.get(k, "0")) for k in ACTIVITY)


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
    from tools.embedded.catalogue import chat_model_spec

    wanted = chat_model_spec().name
    url = running_endpoint()
    if url and served_model(url) == wanted:
        return url
    lock_path = cache_root() / "local-llm.lock"
    with lock_path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            url = running_endpoint()
            if url:
                running = served_model(url)
                if running == wanted:
                    return url
                _stop_idle(url, running, wanted)
            return _start(progress, timeout_s, wanted)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _stop_idle(url: str, running: str | None, wanted: str) -> None:
    """Stop the recorded server (serving `running`, not `wanted`) if it answers no request now."""
    now = activity(url.rstrip("/").removesuffix("/v1"))
    if now is not None and (now[2] > 0 or now[3] > 0):
        raise UpstreamError(
            f"The embedded model server serves {running} and is answering a request now; one model server runs "
            f"per machine, so {wanted} cannot start beside it.",
            hint=f"Ask again when it is idle, or set RESEARCH_MCP_LLM_EMBEDDED_MODEL={running} to use it.")
    state = json.loads(default_state_file().read_text())
    pid = int(state["pid"])
    if not state.get("on_demand"):
        raise UpstreamError(
            f"The embedded model server at {url} (pid {pid}) serves {running}; it was started with `research-mcp "
            f"llm serve`, so it is not stopped to start {wanted} (one model server runs per machine).",
            hint=f"Stop it (`research-mcp llm stop`) and ask again, or set RESEARCH_MCP_LLM_EMBEDDED_MODEL={running} "
                 "to use it.")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    raise UpstreamError(f"The embedded model server (pid {pid}, serving {running}) did not stop within "
                        f"{STOP_TIMEOUT_S:.0f} s, so {wanted} was not started.",
                        hint=f"Stop it yourself (kill {pid}), then ask again.")


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (one this process started and that has exited is reaped here)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with contextlib.suppress(OSError, IndexError):     # exited, not yet reaped by the process that started it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _start(progress: Progress | None, timeout_s: float, model: str) -> str:
    log = cache_root() / "local-llm.log"
    state = default_state_file()
    with contextlib.suppress(FileNotFoundError):
        state.unlink()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.embedded.serve", "--model", model, "--port", "0", "--quiet", "--on-demand",
             "--state-file", str(state), "--idle-exit-s", str(IDLE_EXIT_S)],
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
