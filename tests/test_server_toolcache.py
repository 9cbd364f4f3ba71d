"""The tool-schema cache: a server listed from it publishes exactly what a fully built one does, its tools work
and word errors the same at their first call, and a changed, missing or corrupt cache only costs a rebuild."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import networkx as nx
import pytest
from mcp import Client, StdioServerParameters

from server import toolcache
from server.registry import ResearchTool
from server.sampling import chat_model_for
from tests.conftest import REPO, server_env
from tools.settings import reload_settings

# The 5-cycle 0-1-2-3-4-0 plus a pendant 5 on 0: networkx gives the reference diameter.
EDGES = [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [0, 5]]
DIAMETER = nx.diameter(nx.Graph([tuple(e) for e in EDGES]))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RESEARCH_MCP_LLM_MODEL_CACHE", str(folder))
    reload_settings()
    return folder


def _published(tool: ResearchTool) -> dict:
    return {"name": tool.name, "title": tool.title, "description": tool.description,
            "parameters": tool.parameters, "output_schema": tool.output_schema,
            "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True)}


def test_listing_from_the_cache_equals_building_every_tool(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_NODES", "1234")  # descriptions follow the settings of this start
    monkeypatch.setenv("RESEARCH_MCP_SCHEMA_CACHE", "false")
    reload_settings()
    built = toolcache.server_tools(None, chat_model_for)
    assert not list(cache_dir.glob("schemas/*.json"))  # off: nothing written
    monkeypatch.setenv("RESEARCH_MCP_SCHEMA_CACHE", "true")
    reload_settings()
    first = toolcache.server_tools(None, chat_model_for)  # a miss: built and written
    files = list(cache_dir.glob("schemas/tools-*.json"))
    assert len(files) == 1 and files[0].name == f"tools-{toolcache.source_key()}.json"
    listed = toolcache.server_tools(None, chat_model_for)
    assert all(isinstance(t, toolcache.LazyTool) for t in listed)
    assert not any(isinstance(t, toolcache.LazyTool) for t in first)
    assert [_published(t) for t in listed] == [_published(t) for t in first] == [_published(t) for t in built]
    assert any("max_nodes=1234" in t.description for t in listed)


def test_families_are_cached_one_by_one(cache_dir: Path) -> None:
    graph = toolcache.server_tools(["graph"], chat_model_for)
    both = toolcache.server_tools(["graph", "nid"], chat_model_for)  # graph from the cache, nid built and added
    assert [isinstance(t, toolcache.LazyTool) for t in both] == [True] * len(graph) + [False] * (len(both) - len(graph))
    data = json.loads(next(cache_dir.glob("schemas/tools-*.json")).read_text())
    assert sorted(data["families"]) == ["graph", "nid"]
    assert all(isinstance(t, toolcache.LazyTool) for t in toolcache.server_tools(["nid"], chat_model_for))


def test_a_corrupt_cache_is_rebuilt(cache_dir: Path) -> None:
    path = toolcache.cache_file(toolcache.source_key())
    path.parent.mkdir(parents=True)
    path.write_text('{"families": [1, 2')
    tools = toolcache.server_tools(["graph"], chat_model_for)
    assert tools and not any(isinstance(t, toolcache.LazyTool) for t in tools)
    assert "graph" in json.loads(path.read_text())["families"]


def test_the_key_follows_every_source_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for rel in ("tools/a.py", "tools/sub/b.py", "server/c.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    monkeypatch.setattr(toolcache, "_PACKAGE_ROOT", tmp_path)
    keys = {toolcache.source_key()}
    (tmp_path / "tools/sub/b.py").write_text("x = 2\n")
    keys.add(toolcache.source_key())
    (tmp_path / "server/d.py").write_text("")
    keys.add(toolcache.source_key())
    (tmp_path / "tools/notes.txt").write_text("not code")
    keys.add(toolcache.source_key())
    assert len(keys) == 3


@pytest.mark.anyio
async def test_a_server_started_from_the_cache_serves_and_words_errors_alike(tmp_path: Path) -> None:
    """Two stdio servers on one cache folder: the first builds and writes it, the second lists from it."""
    env = server_env(RESEARCH_MCP_OUTPUT_DIR=str(tmp_path / "out"), RESEARCH_MCP_LLM_MODEL_CACHE=str(tmp_path / "c"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "server", "serve"], cwd=str(REPO), env=env)
    seen = []
    for _ in range(2):
        async with Client(params) as client:
            listing = [t.model_dump() for t in (await client.list_tools()).tools]
            good = await client.call_tool("graph_solve", {"task": "diameter", "graph": {"edges": EDGES}})
            assert not good.is_error and good.structured_content["answer"] == DIAMETER
            unknown = await client.call_tool("graph_solve", {"task": "diameter", "graph": {"edges": EDGES}, "nodes": 3})
            wrong = await client.call_tool("graph_solve", {"task": "diameter", "graph": {"edges": [["a b", "c"]]}})
            assert unknown.is_error and wrong.is_error
            seen.append((listing, unknown.content[0].text, wrong.content[0].text))
        assert list((tmp_path / "c" / "schemas").glob("tools-*.json"))
    assert seen[0] == seen[1]


def test_a_start_from_the_cache_imports_no_tool_module(tmp_path: Path) -> None:
    """With the cache written, building the server imports the families' limits and nothing else of them."""
    import subprocess

    code = ("import sys, server.app; server.app.build_server(); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('tools.'))))")
    env = server_env(RESEARCH_MCP_LLM_MODEL_CACHE=str(tmp_path / "c"), RESEARCH_MCP_OUTPUT_DIR=str(tmp_path / "o"))
    runs = [subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=300, check=True).stdout.split() for _ in range(2)]
    assert any(m.endswith(".catalog") for m in runs[0])  # the first start builds every tool
    family_modules = [m for m in runs[1] if m.count(".") >= 2 or m.endswith(".catalog")]
    assert family_modules and all(m.endswith(".limits") for m in family_modules), family_modules
