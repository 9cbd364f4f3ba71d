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
