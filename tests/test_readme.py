"""The README's commands stay true: its tool calls are the demo's, and each one succeeds."""

from __future__ import annotations

import json
import re

import pytest
from mcp import Client

from server.app import build_server
from server.examples import EXAMPLES
from tests.conftest import REPO

pytestmark = pytest.mark.anyio
README = (REPO / "README.md").read_text(encoding="utf-8")
CALL = re.compile(r"^research-mcp call (\w+) '(.*)'$", re.MULTILINE)


def readme_calls() -> list[tuple[str, dict]]:
    return [(m.group(1), json.loads(m.group(2))) for m in CALL.finditer(README)]


def test_the_readme_shows_every_demo_call() -> None:
    shown = readme_calls()
    assert len(shown) >= len(EXAMPLES)
    for ex in EXAMPLES:
        line = f"research-mcp call {ex.tool} '{json.dumps(ex.arguments)}'"
        assert (ex.tool, ex.arguments) in shown, f"README lacks: {line}"


def test_ci_runs_the_readme_test_command() -> None:
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci[-1] in README


def test_python_snippets_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


async def test_every_readme_call_succeeds(embedded_llm: str) -> None:
    async with Client(build_server(log_level="CRITICAL")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        for tool, args in readme_calls():
            assert tool in names
            result = await client.call_tool(tool, args)
            assert not result.is_error, (tool, result.content)


def test_the_demo_checks_each_known_answer_and_says_when_one_is_wrong() -> None:
    by_tool = {ex.tool: ex for ex in EXAMPLES}
    qa = by_tool["longctx_answer"]
    assert qa.verdict({"answer": "<text> <text> <text>", "model": "m"}) == ("<text> <text> <text> (m)", False)
    assert qa.verdict({"answer": "a watch", "model": "m"}) == ("a watch (m)", True)
    ndvi = by_tool["eo_spectral_index"]
    assert ndvi.verdict({"stats": {"mean": 0.53063}})[1] is True
    assert ndvi.verdict({"stats": {"mean": 0.5410}})[1] is False
    assert ndvi.verdict({"stats": {}}) == ("(no answer in the result)", False)
    path = by_tool["graph_solve"]
    assert path.verdict({"answer": [0, 1, 2, 3]})[1] is False and path.verdict({"answer": [0, 4, 3]})[1] is True
    assert by_tool["nid_detect"].verdict({"anything": 1}) == ("", None)


def test_the_demo_prints_the_embedded_models_answer_with_its_check(embedded_llm: str) -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ) | {"RESEARCH_MCP_LLM_EMBEDDED_URL": embedded_llm, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "server", "demo", "--family", "longctx"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("answer:"))
    assert "watch" in line.lower() and "qwen2.5-coder-1.5b-instruct (embedded)" in line and "right" in line
