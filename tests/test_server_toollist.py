"""`tools/list` stays small: compact schemas, bounds stated once per tool, families chosen by RESEARCH_MCP_FAMILIES."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from server.app import build_server
from server.registry import enabled_families, family_names
from tools.errors import NotFound
from tools.settings import reload_settings

pytestmark = pytest.mark.anyio

# The wire size of the full list (every family). It was 163,300 characters before schemas were compacted.
BUDGET_CHARS = 90_000


async def _listing() -> tuple[list, int]:
    async with Client(build_server(log_level="CRITICAL")) as client:
        result = await client.list_tools()
    return result.tools, len(result.model_dump_json(by_alias=True, exclude_none=True))


def _schema_keys(schema: object) -> set[str]:
    """Every keyword used in a JSON schema (property names themselves excluded)."""
    if isinstance(schema, list):
        return {k for v in schema for k in _schema_keys(v)}
    if not isinstance(schema, dict):
        return set()
    out = set(schema) - {"properties", "$defs"}
    for key, value in schema.items():
        subs = value.values() if key in ("properties", "$defs") and isinstance(value, dict) else [value]
        for sub in subs:
            out |= _schema_keys(sub)
    return out


async def test_the_full_list_fits_its_budget_and_repeats_nothing_the_schema_says() -> None:
    tools, size = await _listing()
    assert len(tools) >= 40
    assert size < BUDGET_CHARS, f"tools/list is {size:,} characters"
    for t in tools:
        assert "title" not in _schema_keys(t.input_schema), t.name
        assert '"default": null' not in json.dumps(t.input_schema), t.name
        assert t.output_schema is None
        assert t.description.count("Bounds") <= 2


async def test_each_tool_states_only_the_bounds_it_names() -> None:
    tools, _ = await _listing()
    solve = next(t for t in tools if t.name == "graph_solve")
    line = solve.description.rsplit("\n\n", 1)[-1]
    assert line.startswith("Bounds (RESEARCH_MCP_GRAPH__<NAME>): ") and "max_search_steps=300k" in line
    assert "max_benchmark_items" not in line  # graph_benchmark's bound, not graph_solve's


async def test_families_setting_limits_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_FAMILIES", "eo,graph")
    reload_settings()
    tools, _ = await _listing()
    assert {t.name.split("_")[0] for t in tools} == {"eo", "graph"}
    monkeypatch.setenv("RESEARCH_MCP_FAMILIES", "eo,grahp")
    reload_settings()
    with pytest.raises(NotFound) as exc:
        enabled_families()
    assert "'graph'" in str(exc.value) and ", ".join(family_names()) in str(exc.value)
