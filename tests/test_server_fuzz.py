"""Fuzzed arguments never crash the server: every tool answers with a result or a clear error."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from server.app import build_server

pytestmark = pytest.mark.anyio

JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40), st.sampled_from(["", "../../etc/passwd", "/etc/shadow", "sample://nope", "NaN", "-1"]),
)
JSON = st.recursive(JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=12)


def _fuzzable(tool) -> bool:
    """Quick, local tools: read-only ones that call no model (training and benchmarks take minutes)."""
    ann = tool.annotations
    return bool(ann and ann.read_only_hint and not ann.open_world_hint)


async def _tools():
    async with Client(build_server(log_level="CRITICAL")) as client:
        return [t for t in (await client.list_tools()).tools if _fuzzable(t)]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_tool_survives_fuzzed_arguments(anyio_backend) -> None:
    tools = await _tools()
    assert tools
    server = build_server(log_level="CRITICAL")
    internal: list[str] = []

    async with Client(server) as client:

        def run_one(tool) -> None:
            @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
            @given(data=st.data())
            def run(data) -> None:
                fuzz(tool, data)

            run()

        def fuzz(tool, data) -> None:
            props = list((tool.input_schema or {}).get("properties", {}))
            keys = data.draw(st.lists(st.sampled_from([*props, "unexpected"]), unique=True, max_size=len(props) + 1))
            args = {k: data.draw(JSON) for k in keys}

            async def call():
                with anyio.fail_after(60):
                    return await client.call_tool(tool.name, args)

            result = anyio.from_thread.run(call)
            if result.is_error and "[internal_error]" in result.content[0].text:
                internal.append(f"{tool.name}({args!r}): {result.content[0].text}")

        for tool in tools:
            await anyio.to_thread.run_sync(run_one, tool)
        alive = await client.list_tools()
    assert alive.tools
    assert not internal, "\n".join(internal[:5])


# ------------------------------------------------------------------ schema-valid but absurd values, every tool

BIG_LIST = 10**6
SLOW_S = 30.0
ABSURD_INTS = [10**9, -1, -(10**9), 0, 2**62]
ABSURD_FLOATS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, -1.0, 5e-324]
ABSURD_STRINGS = ["", "x" * 200_000, "a\x00b", "../" * 2000, "sample://../../etc/passwd", "\u202e\u0000", "NaN"]


def _types(prop: dict) -> list[str]:
    t = prop.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if x != "null"]
    out: list[str] = []
    for option in prop.get("anyOf", []):
        out += _types(option) or (["object"] if "$ref" in option else [])
    return out or (["object"] if "$ref" in prop else [])


def _plain(prop: dict) -> object:
    """An ordinary value of the property's type (for list items)."""
    kind = (_types(prop) or ["string"])[0]
    return {"integer": 1, "number": 0.5, "boolean": True, "string": "x", "array": [0, 1], "object": {}}.get(kind, "x")


def absurd(prop: dict) -> st.SearchStrategy:
    """Values the schema admits (by JSON type) but no sane caller sends."""
    if "enum" in prop:
        return st.sampled_from(prop["enum"])
    options = []
    for kind in _types(prop) or ["string"]:
        if kind == "integer":
            options.append(st.sampled_from(ABSURD_INTS))
        elif kind == "number":
            options.append(st.sampled_from(ABSURD_FLOATS + ABSURD_INTS))
        elif kind == "string":
            options.append(st.sampled_from(ABSURD_STRINGS))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "array":
            item = _plain(prop.get("items") or {})
            options.append(st.sampled_from([[], [item] * BIG_LIST, [item] * 1000]))
        else:
            options.append(st.sampled_from([{}, {"edges": [[0, 1]] * 1000}, {str(i): i for i in range(1000)}]))
    return st.one_of(options)


QUICK = {"nid_train_model": {"epochs": 1, "per_dataset": 8}, "dti_train": {"epochs": 1, "pretrain_epochs": 0},
         "nid_finetune": {"steps": 1, "per_dataset": 2, "batch_size": 1}}


def _base_arguments(tool) -> dict:
    """Working arguments for the required parameters: the bundled example call, else typed placeholders.

    Training tools get a short schedule, so that the values drawn (not a default 30-epoch run) set the time.
    """
    from server.examples import EXAMPLES

    if tool.name in QUICK:
        return dict(QUICK[tool.name])

    for ex in EXAMPLES:
        if ex.tool == tool.name:
            return dict(ex.arguments)
    props = tool.input_schema.get("properties", {})
    return {k: _plain(props.get(k, {})) for k in tool.input_schema.get("required", [])}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_absurd_values_get_clear_errors_quickly_on_every_tool(anyio_backend) -> None:
    server = build_server(log_level="CRITICAL")
    internal: list[str] = []
    slow: list[str] = []
    async with Client(server) as client:
        tools = (await client.list_tools()).tools

        def fuzz_tool(tool) -> None:
            props = tool.input_schema.get("properties", {})
            if not props:
                return

            @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                      derandomize=True)
            @given(data=st.data())
            def run(data) -> None:
                keys = data.draw(st.lists(st.sampled_from(sorted(props)), min_size=1, max_size=3, unique=True))
                args = _base_arguments(tool) | {k: data.draw(absurd(props[k]), label=k) for k in keys}

                async def call():
                    with anyio.move_on_after(SLOW_S) as scope:
                        result = await client.call_tool(tool.name, args)
                    shown = {k: (v if len(repr(v)) < 80 else f"<{type(v).__name__} of {len(v)}>") for k, v in
                             args.items()}
                    if scope.cancelled_caught:
                        slow.append(f"{tool.name}({shown}): over {SLOW_S:.0f} s")
                    elif result.is_error and "[internal_error]" in result.content[0].text:
                        internal.append(f"{tool.name}({shown}): {result.content[0].text[:300]}")

                anyio.from_thread.run(call)

            run()

        for tool in tools:
            await anyio.to_thread.run_sync(fuzz_tool, tool)
        alive = await client.list_tools()
    assert alive.tools
    assert not slow, "\n".join(slow)
    assert not internal, "\n".join(internal)
