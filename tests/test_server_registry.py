"""The MCP adapter over plain tool functions: schemas, annotations, errors, progress, cancel, sampling."""

from __future__ import annotations

import threading
import time
from typing import Annotated

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CreateMessageResult, TextContent
from pydantic import BaseModel, Field

from server.registry import build_tool
from server.sampling import chat_model_for
from tools.errors import InvalidInput, LimitExceeded
from tools.llm import ChatModel, Message, resolve_llm
from tools.progress import Progress, report
from tools.spec import ToolSpec

pytestmark = pytest.mark.anyio


class Total(BaseModel):
    total: int = Field(description="The sum.")


def demo_add(
    a: Annotated[int, Field(description="First addend, >= 0.")],
    b: Annotated[int, Field(description="Second addend.")] = 2,
    progress: Progress | None = None,
) -> Total:
    """Add two integers, reporting one progress step per unit of b."""
    if a < 0:
        raise InvalidInput("a must be >= 0.", hint="Pass a non-negative a.")
    if b > 1000:
        raise LimitExceeded("b", b, 1000, "RESEARCH_MCP_DEMO__MAX_B")
    for i in range(b):
        report(progress, i + 1, b, f"unit {i + 1}")
    return Total(total=a + b)


STOPPED = threading.Event()


def demo_spin(seconds: Annotated[float, Field(description="How long to spin.")], progress: Progress | None = None
              ) -> Total:
    """Spin in small blocks until `seconds` pass or the caller cancels."""
    start = time.monotonic()
    n = 0
    try:
        while time.monotonic() - start < seconds:
            n += 1
            report(progress, n, None, "spinning")
            time.sleep(0.01)
    finally:
        STOPPED.set()
    return Total(total=n)


def demo_crash(x: int) -> Total:
    """Always fails with an unexpected exception."""
    return Total(total=x // 0)


async def demo_ask(question: Annotated[str, Field(description="A question.")], llm: ChatModel | None = None) -> Total:
    """Ask the model a question whose answer is a number."""
    reply = await resolve_llm(llm).complete([Message("system", "Answer with a number."), Message("user", question)])
    return Total(total=int(reply.text))


def make_server() -> MCPServer:
    specs = [ToolSpec(fn, title=fn.__name__.replace("_", " "), read_only=ro, open_world=not ro)
             for fn, ro in ((demo_add, True), (demo_spin, True), (demo_crash, True), (demo_ask, False))]
    return MCPServer("test", tools=[build_tool(spec, chat_model_for) for spec in specs])


async def test_schema_hides_injected_parameters_and_keeps_descriptions() -> None:
    async with Client(make_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    add = tools["demo_add"]
    assert set(add.input_schema["properties"]) == {"a", "b"}
    assert add.input_schema["required"] == ["a"]
    assert add.input_schema["properties"]["a"]["description"] == "First addend, >= 0."
    assert add.input_schema["additionalProperties"] is False
    assert add.output_schema is None  # results still carry structured content
    assert add.description.startswith("Add two integers")
    assert add.annotations.read_only_hint is True and add.annotations.destructive_hint is False
    assert set(tools["demo_ask"].input_schema["properties"]) == {"question"}
    assert tools["demo_ask"].annotations.open_world_hint is True


async def test_structured_result_and_progress_notifications() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with Client(make_server()) as client:
        result = await client.call_tool("demo_add", {"a": 5, "b": 3}, progress_callback=on_progress)
    assert not result.is_error
    assert result.structured_content == {"total": 8}
    assert [s[0] for s in seen] == [1, 2, 3]
    assert seen[-1] == (3, 3, "unit 3")


async def test_errors_carry_the_fix_and_the_server_keeps_serving() -> None:
    async with Client(make_server()) as client:
        bad = await client.call_tool("demo_add", {"a": -1})
        limit = await client.call_tool("demo_add", {"a": 1, "b": 5000})
        crash = await client.call_tool("demo_crash", {"x": 1})
        wrong_type = await client.call_tool("demo_add", {"a": "seven"})
        after = await client.call_tool("demo_add", {"a": 1, "b": 1})
    assert bad.is_error and "[invalid_input] a must be >= 0. Pass a non-negative a." in bad.content[0].text
    assert limit.is_error and "RESEARCH_MCP_DEMO__MAX_B" in limit.content[0].text
    assert crash.is_error and "internal_error" in crash.content[0].text and "ZeroDivisionError" in crash.content[0].text
    assert "Traceback" not in crash.content[0].text
    assert wrong_type.is_error and "valid integer" in wrong_type.content[0].text
    assert after.structured_content == {"total": 2}


async def test_cancel_stops_the_worker_thread_at_its_next_block() -> None:
    STOPPED.clear()
    async with Client(make_server()) as client:
        with anyio.move_on_after(0.3):
            await client.call_tool("demo_spin", {"seconds": 60}, progress_callback=lambda *a: anyio.sleep(0))
        with anyio.fail_after(5):
            while not STOPPED.is_set():
                await anyio.sleep(0.02)
    assert STOPPED.is_set()


async def test_llm_comes_from_mcp_sampling_when_no_endpoint_is_configured() -> None:
    asked: list[str] = []

    async def sampling(context, params) -> CreateMessageResult:
        asked.append(params.messages[-1].content.text)
        assert params.system_prompt == "Answer with a number."
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="42"), model="client-model")

    async with Client(make_server(), sampling_callback=sampling, mode="legacy") as client:
        result = await client.call_tool("demo_ask", {"question": "six times seven?"})
    assert result.structured_content == {"total": 42}
    assert asked == ["six times seven?"]


async def test_no_endpoint_and_no_sampling_says_how_to_configure() -> None:
    async with Client(make_server()) as client:
        result = await client.call_tool("demo_ask", {"question": "?"})
    assert result.is_error
    assert "[not_configured]" in result.content[0].text and "OPENAI_BASE_URL" in result.content[0].text
