"""The ReAct agent end to end: ScriptedLLM issues real tool calls, so ChatOpenAI, MCP and the tools all run.

Answers are checked against `evals.agents.reference` (numpy and rasterio on the bundled files).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agents.connection import ServerTarget
from agents.react import ask
from agents.runner import open_session
from evals.agents import reference as ref
from evals.agents.metrics import Expected, answer_correct
from evals.agents.oracle import Oracle, tool_results
from evals.agents.suite import L8, Ref, Step, Task
from tests.conftest import REPO, free_port, server_env, start_http_server
from tests.scripted_llm import ScriptedLLM
from tools.settings import reload_settings

NDVI_MEAN = ref.mean(ref.landsat_index("NDVI"))


def ndvi_task(scene: str = L8, task_id: str = "ndvi") -> Task:
    return Task(
        id=task_id, family="eo", goal=f"What is the mean NDVI of {scene}? Give 4 decimals.",
        steps=[Step("eo_spectral_index", {"scene": scene, "index": "NDVI"}, "index"),
               Step("eo_statistics", {"raster": Ref(0, "output", "output://NDVI*.tif")}, "statistics")],
        truth=lambda: Expected("number", NDVI_MEAN, abs_tol=0.001),
        read=lambda r: f"{r[-1]['stats']['mean']:.4f}",
    )


def three_step_task() -> Task:
    return Task(
        id="three", family="eo",
        goal=f"Compute the NDVI of {L8}, describe the scene, then the NDVI statistics; report the mean NDVI.",
        steps=[Step("eo_spectral_index", {"scene": L8, "index": "NDVI", "quicklook": False}, "ndvi"),
               Step("eo_describe_scene", {"scene": L8}, "describe"),
               Step("eo_statistics", {"raster": Ref(0, "output", "output://NDVI*.tif")}, "statistics")],
        truth=lambda: Expected("number", NDVI_MEAN, abs_tol=0.001),
        read=lambda r: f"{r[-1]['stats']['mean']:.4f}",
    )


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch):
    """A ScriptedLLM whose rule a test sets, configured as the LLM endpoint."""
    holder: dict = {}
    with ScriptedLLM(lambda body: holder["rule"](body)) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        reload_settings()
        llm.holder = holder
        yield llm


def outputs(out: Path, stem: str) -> list[Path]:
    return sorted(p for p in out.glob(f"{stem}-*.tif") if "quicklook" not in p.name)


@pytest.mark.anyio
async def test_agent_over_stdio_answers_traces_and_waits_for_approval(endpoint, tmp_path: Path,
                                                                     isolated_settings: Path):
    task = ndvi_task()
    scene = tmp_path / "my_scene"
    shutil.copytree(ref.LANDSAT, scene)
    approved, rejected = ndvi_task(str(scene), "a"), ndvi_task(str(scene) + "/", "b")
    endpoint.holder["rule"] = Oracle([task, approved, rejected], styles=("goal",))
    async with open_session(ServerTarget()) as session:   # one server process for the three threads
        r = await ask(task.question("goal"), session=session, approval="no")
        assert r.status == "done"
        assert answer_correct(task.expected, r.answer), r.answer
        # the tool ran on the server: its raster is in the output folder
        assert len(outputs(isolated_settings, "NDVI")) == 1
        trace = json.loads(r.trace_path.read_text())
        assert [c["name"] for c in trace["tool_calls"]] == ["eo_spectral_index", "eo_statistics"]
        assert trace["tool_calls"][0]["args"] == {"scene": L8, "index": "NDVI"}
        assert abs(trace["tool_calls"][1]["structured_content"]["stats"]["mean"] - NDVI_MEAN) < 1e-6
        assert trace["tokens"]["total"] > 0 and len(trace["llm_calls"]) == 3
        last_reply = trace["llm_calls"][-1]["reply"]  # what each model step wrote is in the trace
        assert last_reply.strip() and last_reply == trace["messages"][-1]["content"]
        assert [m["type"] for m in trace["messages"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
        # the model saw the tools' JSON schemas and the sample resources in its prompt
        first = endpoint.requests[0]
        assert {t["function"]["name"] for t in first["tools"]} >= {"eo_spectral_index", "eo_statistics"}
        assert first["temperature"] == pytest.approx(0.1)
        assert "sample://eo/" in first["messages"][0]["content"]
        # the quicklook and the resource links go to the user's host, not to the model, which reads text only
        replies = [m["content"] for m in endpoint.requests[-1]["messages"] if m["role"] == "tool"]
        assert len(replies) == 2 and all(isinstance(c, str) or {b["type"] for b in c} == {"text"} for c in replies)

        # a writing tool given a scene outside the output folder waits for approval
        first_run = await ask(approved.question("goal"), session=session, thread_id="appr", approval="pause")
        assert first_run.status == "awaiting_approval"
        action = first_run.pending[0]["action_requests"][0]
        assert action["name"] == "eo_spectral_index" and "outside the output folder" in action["description"]
        assert len(outputs(isolated_settings, "NDVI")) == 1          # nothing ran before the approval
        done = await ask(None, session=session, thread_id="appr", resume=True, approval="yes")
        assert done.status == "done" and answer_correct(approved.expected, done.answer)
        assert len(outputs(isolated_settings, "NDVI")) == 2

        second = await ask(rejected.question("goal"), session=session, thread_id="rej", approval="pause")
        assert second.status == "awaiting_approval"
        endpoint.holder["rule"] = lambda body: "The call was declined, so I cannot compute it.\nAnswer: unknown"
        final = await ask(None, session=session, thread_id="rej", resume=True, approval="no")
    assert final.status == "done" and "unknown" in final.answer
    assert len(outputs(isolated_settings, "NDVI")) == 2             # the rejected call never ran
    rejection = [m for m in endpoint.requests[-1]["messages"] if m["role"] == "tool"]
    assert rejection and "rejected" in str(rejection[-1]["content"]).lower()


@pytest.mark.anyio
async def test_agent_over_http_with_a_bearer_token(endpoint, tmp_path: Path, isolated_settings: Path):
    task = ndvi_task()
    endpoint.holder["rule"] = Oracle([task], styles=("goal",))
    port = free_port()
    env = server_env(RESEARCH_MCP_TOKEN="0123456789abcdef" * 3, RESEARCH_MCP_OUTPUT_DIR=str(isolated_settings),
                     RESEARCH_MCP_ROOTS=json.dumps([str(tmp_path), str(REPO)]))
    proc = start_http_server(port, env)
    try:
        r = await ask(task.question("goal"), target=ServerTarget(url=f"http://127.0.0.1:{port}/mcp",
                                                                 token="0123456789abcdef" * 3), approval="no")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
    assert r.status == "done" and answer_correct(task.expected, r.answer), r.answer
    assert "http://127.0.0.1" in json.loads(r.trace_path.read_text())["server"]


def test_cli_without_an_endpoint_says_how_to_configure_one(capsys: pytest.CaptureFixture[str]):
    from agents.cli import main

    assert main(["What is the mean NDVI of sample://eo/landsat8_c1_l1t?"]) == 2
    err = capsys.readouterr().err
    assert "No LLM endpoint is configured" in err and "OPENAI_BASE_URL" in err
    assert "Traceback" not in err


def test_a_run_killed_after_step_k_resumes_at_step_k_plus_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, isolated_settings: Path, capsys: pytest.CaptureFixture[str]):
    k = 2
    task = three_step_task()
    oracle = Oracle([task], styles=("goal",))
    reached, release = threading.Event(), threading.Event()

    def rule(body):
        if len(tool_results(body)) == k and not release.is_set():
            reached.set()          # k tool results are checkpointed: the process is killed while waiting here
            release.wait(60)
        return oracle(body)

    with ScriptedLLM(rule) as llm:
        env = server_env(OPENAI_BASE_URL=llm.base_url, RESEARCH_MCP_OUTPUT_DIR=str(isolated_settings),
                         RESEARCH_MCP_ROOTS=json.dumps([str(tmp_path), str(REPO)]))
        proc = subprocess.Popen([sys.executable, "-m", "server", "agent", task.question("goal"), "--thread", "kill1",
                                 "--approve"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            assert reached.wait(120), "the agent did not reach step k"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        assert len(outputs(isolated_settings, "NDVI")) == 1
        release.set()
        before = len(llm.requests)

        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        reload_settings()
        from agents.cli import main

        assert main(["--resume", "kill1", "--approve", "--quiet"]) == 0
        resumed = llm.requests[before:]
    printed = capsys.readouterr().out
    assert answer_correct(task.expected, printed), printed       # the answer is printed on stdout
    # the resumed run started with the k results from the checkpoint and ran only step k+1
    assert len(tool_results(resumed[0])) == k
    trace = json.loads((isolated_settings / "agent-runs" / "kill1.json").read_text())
    assert [c["name"] for c in trace["tool_calls"] if c["segment"] == 1] == ["eo_statistics"]
    assert [c["name"] for c in trace["tool_calls"] if c["segment"] == 0] == ["eo_spectral_index", "eo_describe_scene"]
    assert [s["status"] for s in trace["segments"]] == ["killed", "done"]
    assert len(outputs(isolated_settings, "NDVI")) == 1            # the index was not computed again
    assert answer_correct(task.expected, trace["answer"]), trace["answer"]
