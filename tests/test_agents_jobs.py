"""The agents treat a job handle as a slow answer: they wait for the job and go on with the tool's own result,
and a run killed while it waited, once resumed, collects that job's result instead of starting the work again.

The server's inline budget is 1 s, so the small trainings here become jobs.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agents.connection import ServerTarget
from agents.jobs import BOOK_NAME
from agents.react import ask
from tests.conftest import REPO, free_port, server_env, start_http_server, stop_server
from tests.scripted_llm import ScriptedLLM
from tools.settings import reload_settings

TRAIN = {"datasets": ["jsonlite_md5"], "per_dataset": 12, "epochs": 8, "d_model": 16, "n_layer": 1}


def _final_loss(text: str) -> float:
    return float(re.search(r'"final_loss": ([0-9.e+-]+)', text).group(1))


def _tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages", []) if m.get("role") == "tool"]


@pytest.mark.anyio
async def test_the_react_agent_gets_the_result_of_a_call_that_became_a_job(monkeypatch: pytest.MonkeyPatch,
                                                                            isolated_settings: Path) -> None:
    seen: list[str] = []

    def rule(body: dict[str, Any]) -> str | dict[str, Any]:
        done = _tool_messages(body)
        if not done:
            return {"content": "", "tool_calls": [{"function": {"name": "nid_train_model", "arguments": TRAIN}}]}
        seen.append(str(done[-1]["content"]))
        return f"Answer: {_final_loss(seen[-1])}"

    monkeypatch.setenv("RESEARCH_MCP_INLINE_BUDGET_S", "1")
    with ScriptedLLM(rule) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        reload_settings()
        result = await ask("Train a small byte model and report its final loss.", target=ServerTarget(),
                           approval="yes")
    job_rows = sqlite3.connect(isolated_settings / ".research-mcp-jobs.sqlite").execute(
        "SELECT tool, state, result FROM jobs").fetchall()
    assert [(tool, state) for tool, state, _ in job_rows] == [("nid_train_model", "done")]  # it was a job
    stored = json.loads(job_rows[0][2])["structuredContent"]
    assert len(seen) == 1 and '"job"' not in seen[0]  # the model saw the tool's result, not the handle
    assert _final_loss(seen[0]) == stored["final_loss"]
    assert result.status == "done" and result.answer == f"Answer: {stored['final_loss']}"
    assert not (isolated_settings / "agent-runs" / BOOK_NAME).exists() or not sqlite3.connect(
        isolated_settings / "agent-runs" / BOOK_NAME).execute("SELECT * FROM calls").fetchall()


def _agent(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "server", "agent", *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _booked(book: Path) -> list[tuple[str, str]]:
    if not book.exists():
        return []
    try:
        return sqlite3.connect(book, timeout=5).execute("SELECT tool, job_id FROM calls").fetchall()
    except sqlite3.OperationalError:  # the table is being created
        return []


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_killed_workflow_run_resumes_with_its_jobs_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = server_env(RESEARCH_MCP_OUTPUT_DIR=str(out), RESEARCH_MCP_INLINE_BUDGET_S="1",
                     RESEARCH_MCP_LOG_LEVEL="WARNING")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = start_http_server(port, env)
    inputs = {"path": "sample://nid/jsonlite_MD5.txt", "dataset": "jsonlite_md5", "mode": "audit",
              "train": TRAIN | {"epochs": 40}, "n_gids": 3, "max_nids": 6}
    book = out / "agent-runs" / BOOK_NAME
    try:
        first = _agent(["--workflow", "nid", "--http", url, "--thread", "t-resume", "--approve", "--quiet",
                        "--input", json.dumps(inputs)], env)
        deadline = time.monotonic() + 300
        while not any(tool == "nid_train_model" for tool, _ in _booked(book)):
            assert first.poll() is None, first.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the run never waited for its training job"
            time.sleep(0.1)
        job_id = dict(_booked(book))["nid_train_model"]
        first.send_signal(signal.SIGKILL)  # killed while it waits for the job
        first.communicate(timeout=30)
        async with Client(streamable_http_client(url)) as client:
            while True:  # the job goes on without the agent
                waited = await client.call_tool("jobs_wait", {"job_id": job_id})
                if "job" not in (waited.structured_content or {}):
                    break
            assert not waited.is_error, waited.content
            resumed = _agent(["--resume", "t-resume", "--http", url, "--approve", "--quiet", "--json"], env)
            stdout, stderr = resumed.communicate(timeout=600)
            trainings = (await client.call_tool("jobs_list", {"tool": "nid_train_model"})).structured_content
    finally:
        stop_server(server)
    assert resumed.returncode == 0, stderr[-3000:]
    run = json.loads(stdout.strip().splitlines()[-1])
    assert run["status"] == "done" and run["answer"].rstrip().splitlines()[-1].startswith("Answer: ")
    assert trainings["total"] == 1, trainings  # the resumed run did not train again
    trace = json.loads(Path(run["trace"]).read_text())
    assert json.dumps(waited.structured_content["checkpoint"]) in json.dumps(trace)  # it scored the job's model
    assert _booked(book) == []  # delivered, so nothing is left pending
