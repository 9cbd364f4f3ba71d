"""The README's commands stay true: its tool calls are the demo's, and each one succeeds."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from mcp import Client

from server.app import build_server
from server.examples import EXAMPLES
from server.jobcli import call_and_wait
from server.jobs import is_handle
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


async def _no_progress(done: float, total: float | None, message: str | None) -> None:
    return None


async def test_every_readme_call_succeeds(embedded_llm: str) -> None:
    async with Client(build_server(log_level="CRITICAL")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        for tool, args in readme_calls():
            assert tool in names
            result = await call_and_wait(client, tool, args, _no_progress)
            assert not result.is_error, (tool, result.content)
            assert not is_handle(result.structured_content), (tool, result.structured_content)


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


def readme_commands() -> list[list[str]]:
    """Every `research-mcp ...` command of the README's shell blocks, as the shell splits it."""
    commands = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", README, re.DOTALL):
        buffer = ""
        for line in block.splitlines():
            buffer += line + "\n"
            try:
                words = shlex.split(buffer, comments=True)
            except ValueError:  # a quote still open: the command goes on on the next line
                continue
            buffer = ""
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                words = words[1:]
            if words and words[0] == "research-mcp":
                commands.append(words[1:])
    return commands


def test_the_readme_says_how_research_mcp_gets_on_path_before_its_first_use() -> None:
    activate = README.index("source .venv/bin/activate")
    first_bare = min(m.start() for m in re.finditer(r"^research-mcp ", README, re.MULTILINE))
    assert activate < first_bare
    assert "source .venv/bin/activate" in (REPO / "scripts" / "setup.sh").read_text()
    assert (Path(sys.executable).parent / "research-mcp").is_file()  # activating this venv puts it on PATH


def test_every_readme_command_is_one_the_cli_takes() -> None:
    from server.cli import _parser
    from server.registry import load_specs

    commands = readme_commands()
    subcommands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    tools = {s.name for s in load_specs()}
    assert len(commands) >= 20
    for words in commands:
        assert words[0] in subcommands, words
        if words[0] in ("serve", "tools", "call", "demo"):
            _parser().parse_args(words)  # exits (failing the test) on an option the CLI lacks
        if words[0] == "call":
            assert words[1] in tools, words
            json.loads(words[2])
        if words[0] == "eval":
            assert importlib.util.find_spec(f"evals.{words[1]}.run") is not None, words
