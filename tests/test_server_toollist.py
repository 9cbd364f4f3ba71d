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
# before descriptions were shortened and single-use models inlined, 59,049 before the portable schema form; the five
# jobs_ tools are within it.
BUDGET_CHARS = 60_000


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


def _without_null_members(value: object) -> object:
    """`value` with every object member whose value is null left out (what a caller does instead of sending null)."""
    if isinstance(value, dict):
        return {k: _without_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_null_members(v) for v in value]
    return value


def test_the_published_schemas_accept_what_the_full_ones_accept_with_nulls_left_out() -> None:
    """The published (compact, portable) schema never accepts what the server refuses, and accepts everything the
    server accepts once null-valued optional members are left out (for those, leaving out means null)."""
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
            optional_null = name not in full.get("required", []) and prop.get("default", 0) is None
            _agree(f"{tool.name}.{name}", a, b, values, optional_null)


def _agree(where: str, full, published, values: list, optional_null: bool) -> None:
    rng = random.Random(where)
    for value in values + [_random_json(rng) for _ in range(60)]:
        if published.is_valid(value):
            assert full.is_valid(value), (where, value)
        if full.is_valid(value) and not (value is None and optional_null):
            assert published.is_valid(_without_null_members(value)), (where, value)


# ------------------------------------------------------------------ every host accepts the schemas

# The MCP Inspector's tool-schema portability rules (core/json/schemaLint.ts, @modelcontextprotocol/inspector 2.x),
# applied here to every schema position it walks: a `type` list ("type-union", which a single-type dialect such as
# Gemini's OpenAPI subset rejects), a bare boolean where a schema is expected, a `$ref` outside the document, and a
# schema that constrains nothing.
_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_BOOLEAN_OK = {"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
_SUB = ["items", "contains", "not", "propertyNames", "if", "then", "else", "additionalProperties",
        "unevaluatedProperties", "additionalItems", "unevaluatedItems", "contentSchema"]
_SUB_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"]
_SUB_MAPS = ["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"]
_CONSTRAINING = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
                 "maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding", "contentSchema",
                 "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
                 "minProperties", "required", "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items",
                 "prefixItems", "contains", "additionalItems", "unevaluatedItems", "properties", "patternProperties",
                 "additionalProperties", "unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies",
                 "$ref", "$dynamicRef", "$recursiveRef"}


def portability_findings(schema: object, path: str = "", keyword: str | None = None) -> list[tuple[str, str]]:
    """(rule, path) for each place in `schema` the Inspector's portability lint flags."""
    if isinstance(schema, bool):
        return [] if keyword in _BOOLEAN_OK else [("boolean-schema", path)]
    if not isinstance(schema, dict):
        return []
    out = []
    kinds = schema.get("type")
    if isinstance(kinds, list) and kinds and all(k in _TYPES for k in kinds) and len(set(kinds)) == len(kinds):
        out.append(("type-union", path))
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref and not ref.startswith("#"):
        out.append(("remote-ref", path))
    if not (set(schema) & _CONSTRAINING or ("if" in schema and ("then" in schema or "else" in schema))) \
            and keyword != "not":
        out.append(("untyped-schema", path))
    for key in _SUB_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                out += portability_findings(sub, f"{path}.{key}.{name}", key)
    for key in _SUB_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                out += portability_findings(sub, f"{path}.{key}[{i}]", key)
    for key in _SUB:
        if key in schema:
            subs = schema[key] if key == "items" and isinstance(schema[key], list) else [schema[key]]
            for sub in subs:
                out += portability_findings(sub, f"{path}.{key}", key)
    return out


def test_the_portability_rules_catch_what_the_inspector_flags() -> None:
    assert portability_findings({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}) == [
        ("type-union", ".properties.a")]
    assert portability_findings({"type": "object", "properties": {"a": True, "b": {"description": "x"}}}) == [
        ("boolean-schema", ".properties.a"), ("untyped-schema", ".properties.b")]
    assert portability_findings({"anyOf": [{"type": "string"}, {"type": "null"}]}) == []
    assert portability_findings({"type": "object", "additionalProperties": False}) == []


async def test_every_tool_schema_is_portable_and_valid_draft_2020_12() -> None:
    from jsonschema import Draft202012Validator

    tools, size = await _listing()
    findings = {t.name: portability_findings(t.input_schema)
                + (portability_findings(t.output_schema) if t.output_schema is not None else []) for t in tools}
    assert not {k: v for k, v in findings.items() if v}, findings
    for t in tools:
        Draft202012Validator.check_schema(t.input_schema)
        if t.output_schema is not None:
            Draft202012Validator.check_schema(t.output_schema)
    assert size <= BUDGET_CHARS


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
