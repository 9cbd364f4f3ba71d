"""The shared LLM layer against a real local HTTP endpoint: retries on 429/500/timeouts, limits, errors."""

from __future__ import annotations

import asyncio

import pytest

from tests.scripted_llm import ScriptedLLM
from tools.errors import NotConfigured, UpstreamError
from tools.llm import Message, OpenAIChat, resolve_llm

HI = [Message("user", "hi")]


def _chat(server: ScriptedLLM, **kw) -> OpenAIChat:
    opts = {"timeout_s": 5.0, "max_retries": 2} | kw
    return OpenAIChat(base_url=server.base_url, api_key="x", model="scripted", **opts)


async def _many(model: OpenAIChat, n: int) -> list[str]:
    """`n` concurrent calls of `model`; their texts."""
    try:
        return [c.text for c in await asyncio.gather(*(model.complete(HI) for _ in range(n)))]
    finally:
        await model.aclose()


async def _complete(model: OpenAIChat, messages=HI, **kw):
    try:
        return await model.complete(messages, **kw)
    finally:
        await model.aclose()


@pytest.mark.parametrize("faults", [[429], [500], [503, 429]])
def test_status_faults_are_retried(faults) -> None:
    with ScriptedLLM(lambda body: "ok", faults=faults, retry_after_s=0.01) as server:
        out = asyncio.run(_complete(_chat(server)))
        assert out.text == "ok"
        assert len(server.requests) == len(faults) + 1


def test_a_final_timeout_is_reported_as_a_timeout_not_as_unreachable() -> None:
    with ScriptedLLM(lambda body: "ok", faults=["timeout", "timeout"], stall_s=10) as server, \
            pytest.raises(UpstreamError) as err:
        asyncio.run(_complete(_chat(server, timeout_s=0.4, max_retries=1)))
    assert "did not answer within 0.4 s" in str(err.value)
    assert "could not be reached" not in str(err.value)
    assert "RESEARCH_MCP_LLM_TIMEOUT_S" in str(err.value)


def test_timeout_is_retried() -> None:
    with ScriptedLLM(lambda body: "ok", faults=["timeout"], stall_s=10) as server:
        out = asyncio.run(_complete(_chat(server, timeout_s=0.4, max_retries=1)))
        assert out.text == "ok"
        assert len(server.requests) == 2


def test_exhausted_retries_raise_upstream_error_naming_the_endpoint() -> None:
    with ScriptedLLM(lambda body: "ok", faults=[500, 500, 500], retry_after_s=0.01) as server:
        with pytest.raises(UpstreamError, match="HTTP 500") as info:
            asyncio.run(_complete(_chat(server, max_retries=2)))
        assert server.base_url in str(info.value)
        assert len(server.requests) == 3


def test_client_errors_are_not_retried() -> None:
    with ScriptedLLM(lambda body: "ok", faults=[400]) as server:
        with pytest.raises(UpstreamError, match="HTTP 400"):
            asyncio.run(_complete(_chat(server)))
        assert len(server.requests) == 1


def test_concurrency_limit_caps_requests_in_flight() -> None:
    with ScriptedLLM(lambda body: "ok", latency_s=0.05) as server:
        texts = asyncio.run(_many(_chat(server, concurrency=3), 9))
        assert texts == ["ok"] * 9
        assert server.max_active <= 3
        assert server.max_active >= 2  # the requests did overlap


def test_embedded_client_keeps_as_many_requests_in_flight_as_the_server_decodes_together(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent chunk reads reach the embedded server together (up to its batch size), so it can decode them in
    one forward pass a token; one at a time would leave its batching unused."""
    from tools.llm import EmbeddedChat
    from tools.settings import reload_settings

    with ScriptedLLM(lambda body: "ok", latency_s=0.2) as server:
        monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_URL", server.base_url)
        monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_MAX_BATCH", "3")
        reload_settings()
        try:
            texts = asyncio.run(_many(EmbeddedChat(), 7))
        finally:
            monkeypatch.undo()
            reload_settings()
        assert texts == ["ok"] * 7
        assert server.max_active == 3


def test_unset_options_are_not_sent_as_null() -> None:
    with ScriptedLLM(lambda body: "ok") as server:
        asyncio.run(_complete(_chat(server)))
        body = server.requests[0]
        assert "max_tokens" not in body and "stop" not in body
        asyncio.run(_complete(_chat(server), max_tokens=7, stop=["\n"]))
        assert server.requests[1]["max_tokens"] == 7 and server.requests[1]["stop"] == ["\n"]


def test_no_endpoint_configured_says_how_to_fix() -> None:
    with pytest.raises(NotConfigured, match="OPENAI_BASE_URL"):
        resolve_llm(None)
