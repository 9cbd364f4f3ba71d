"""`tools/list` stays small: compact schemas, bounds stated once per tool, families chosen by RESEARCH_MCP_FAMILIES."""

from __future__ import annotations

import json
import random

import pytest
from mcp import Client

from server.app import build_server
from server.registry import enabled_families, family_names
from tools.errors import NotFound
from tools.settings import reload_settings

pytestmark = pytest.mark.anyio

# The wire size of the full list (every family): 163,300 characters before schemas were compacted, then 89,439
# before descriptions were shortened and single-use models inlined; the five jobs_ tools add about 2,500.
BUDGET_CHARS = 62_000


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


def test_a_bound_named_by_its_variable_is_stated(monkeypatch: pytest.MonkeyPatch) -> None:
    from server.registry import bounds_text

    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_NODES", "4321")
    reload_settings()
    line = bounds_text("graph", "Raise RESEARCH_MCP_GRAPH__MAX_NODES for larger graphs.")
    assert line == "Bounds (RESEARCH_MCP_GRAPH__<NAME>): max_nodes=4321."
    assert bounds_text("graph", "Nothing named here.") == ""


async def test_families_setting_limits_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_FAMILIES", "eo,graph")
    reload_settings()
    tools, _ = await _listing()
    assert {t.name.split("_")[0] for t in tools} == {"eo", "graph", "jobs"}  # the job tools serve every family
    monkeypatch.setenv("RESEARCH_MCP_FAMILIES", "eo,grahp")
    reload_settings()
    with pytest.raises(NotFound) as exc:
        enabled_families()
    assert "'graph'" in str(exc.value) and ", ".join(family_names()) in str(exc.value)


# ------------------------------------------------------------------ compaction changes the size, not what validates

def _built_tools() -> list:
    from server.registry import build_tool, load_specs

    return [build_tool(spec, lambda ctx: None) for spec in load_specs()]


def _values_in(schema: object) -> list:
    """Every enum value and default in a schema: the values near its edges."""
    if isinstance(schema, list):
        return [v for x in schema for v in _values_in(x)]
    if not isinstance(schema, dict):
        return []
    own = list(schema.get("enum", [])) + ([schema["default"]] if "default" in schema else [])
    return own + [v for value in schema.values() for v in _values_in(value)]


_LEAVES = [None, True, False, 0, -3, 7, 10**6, -1.5, 0.25, "", "x", "finest", "sample://eo/landsat8_c1_l1t", "a0"]
_KEYS = ["edges", "nodes", "weights", "features", "op", "value", "smiles", "protein", "task", "answers", "tokens",
         "accuracy", "layer", "x"]


def _random_json(rng: random.Random, depth: int = 0) -> object:
    """A small JSON value: leaves, lists and objects with the keys the tools' nested models use."""
    kind = rng.random()
    if depth >= 3 or kind < 0.5:
        return rng.choice(_LEAVES)
    if kind < 0.75:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(_KEYS): _random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}


_EDGE_VALUES = [None, True, 0, -1, 1, 0.5, 1.5, 10**7, "", "x", [], [0], [[0, 1], [1, 2, 4.5]], {}, {"a": 1.0},
                {"edges": [[0, 1]]}, {"edges": [[0, 1]], "weights": [2.0], "features": {"0": [1.0]}},
                {"op": ">", "value": 0.3}, {"smiles": "CCO", "protein": "MKV"}, [{"tokens": 100, "accuracy": 0.5}],
                [{"task": "q", "answers": ["a"]}], [{"layer": "blue", "op": ">", "value": 0.2}]]


def test_the_compact_schemas_accept_exactly_what_the_full_ones_accept() -> None:
    from jsonschema import Draft202012Validator

    for tool in _built_tools():
        full = tool.fn_metadata.arg_model.model_json_schema(by_alias=True)
        compact = tool.parameters
        assert compact["additionalProperties"] is False and compact["type"] == "object", tool.name
        assert sorted(compact.get("required", [])) == sorted(full.get("required", [])), tool.name
        assert list(compact["properties"]) == list(full["properties"]), tool.name
        for name, prop in full["properties"].items():
            a = Draft202012Validator({**prop, "$defs": full.get("$defs", {})})
            b = Draft202012Validator({**compact["properties"][name], "$defs": compact.get("$defs", {})})
            values = _EDGE_VALUES + _values_in(prop) + [[v] for v in _values_in(prop)]
            _agree(f"{tool.name}.{name}", a, b, values)


def _agree(where: str, a, b, values: list) -> None:
    rng = random.Random(where)
    for value in values + [_random_json(rng) for _ in range(60)]:
        assert a.is_valid(value) == b.is_valid(value), (where, value)


async def test_no_description_runs_long() -> None:
    """Each tool's text stays short enough that the whole list fits the budget with room for new tools."""
    tools, _ = await _listing()
    long_docs = {t.name: len(t.description) for t in tools if len(t.description) > 520}
    assert not long_docs, long_docs

    def fields(schema: object) -> list[str]:
        if isinstance(schema, list):
            return [d for x in schema for d in fields(x)]
        if not isinstance(schema, dict):
            return []
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [d for k, v in schema.items() if k != "description" for d in fields(v)]

    long_fields = {(t.name, d[:40]) for t in tools for d in fields(t.input_schema) if len(d) > 400}
    assert not long_fields, long_fields
    per_family: dict[str, int] = {}
    for t in tools:
        per_family[t.name.split("_")[0]] = per_family.get(t.name.split("_")[0], 0) + len(
            t.model_dump_json(by_alias=True, exclude_none=True))
    assert all(size < 20_000 for size in per_family.values()), per_family
