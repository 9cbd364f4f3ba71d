"""Heavy and light calls have separate pools; a full heavy queue answers `busy`; heavy calls give memory back."""

from __future__ import annotations

import threading
from typing import Annotated

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from server.registry import build_tool, capacity, release_memory
from server.sampling import chat_model_for
from tools.progress import checkpoint
from tools.settings import reload_settings
from tools.spec import ToolSpec

pytestmark = pytest.mark.anyio

RELEASE = threading.Event()
RUNNING: list[int] = []
LOCK = threading.Lock()


class Done(BaseModel):
    value: int = Field(description="What the call computed.")


def demo_block(key: Annotated[int, Field(description="Any number.")]) -> Done:
    """Hold a heavy worker until the test releases it."""
    with LOCK:
        RUNNING.append(key)
    try:
        while not RELEASE.wait(0.01):
            checkpoint()
    finally:
        with LOCK:
            RUNNING.remove(key)
    return Done(value=key)


def demo_quick(x: Annotated[int, Field(description="Any number.")]) -> Done:
    """A trivial call."""
    return Done(value=x + 1)


def demo_fragment(mb: Annotated[int, Field(description="Megabytes to churn through.")]) -> Done:
    """Allocate `mb` MB in 50 kB blocks, keep one block in 500 (fragmenting the heap), free the rest."""
    blocks = [bytearray(50_000) for _ in range(mb * 20)]
    kept = blocks[::500]
    del blocks
    return Done(value=len(kept))


def _server() -> MCPServer:
    specs = [ToolSpec(demo_block, "block", heavy=True), ToolSpec(demo_quick, "quick"),
             ToolSpec(demo_fragment, "fragment", heavy=True)]
    return MCPServer("capacity", tools=[build_tool(s, chat_model_for) for s in specs])


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


@pytest.fixture
def small_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_HEAVY_WORKERS", "2")
    monkeypatch.setenv("RESEARCH_MCP_HEAVY_QUEUE", "1")
    monkeypatch.setenv("RESEARCH_MCP_LIGHT_WORKERS", "4")
    reload_settings()
    RELEASE.clear()


async def test_light_calls_pass_heavy_ones_and_a_full_queue_is_busy(small_pools) -> None:
    results: dict[int, object] = {}
    async with Client(_server()) as client, anyio.create_task_group() as tg:

        async def heavy(key: int) -> None:
            results[key] = await client.call_tool("demo_block", {"key": key})

        for key in (1, 2, 3):
            tg.start_soon(heavy, key)
        with anyio.fail_after(30):
            while len(RUNNING) < 2 or capacity().heavy_pending < 3:
                await anyio.sleep(0.01)
        assert len(RUNNING) == 2  # two workers, the third call waits in the queue

        busy = await client.call_tool("demo_block", {"key": 4})
        assert busy.is_error and "[busy]" in busy.content[0].text and "Retry" in busy.content[0].text

        for x in range(10):  # light calls are answered while every heavy worker is taken
            quick = await client.call_tool("demo_quick", {"x": x})
            assert quick.structured_content == {"value": x + 1}
        assert len(RUNNING) == 2 and 3 not in results

        RELEASE.set()
    assert sorted(r.structured_content["value"] for r in results.values()) == [1, 2, 3]
    assert not RUNNING


async def test_a_heavy_call_gives_its_freed_memory_back() -> None:
    assert release_memory() is True  # glibc
    async with Client(_server()) as client:
        await client.call_tool("demo_fragment", {"mb": 5})  # warm up the thread and its arena
        before = _rss_mb()
        result = await client.call_tool("demo_fragment", {"mb": 300})
        after = _rss_mb()
    assert result.structured_content == {"value": 12}
    # 300 MB were allocated; without giving pages back the fragmented heap keeps almost all of them
    assert after - before < 60, f"RSS grew by {after - before:.0f} MB"
