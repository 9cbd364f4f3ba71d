"""The connected client's own model as a `ChatModel`, through MCP sampling (no API key needed).

Handshake-era connections (<= 2025-11-25) sample mid-call (`SamplingChat`); newer ones in rounds of
`InputRequiredResult` (`RoundSampling`).
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Mapping
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import SamplingMessage, TextContent
from mcp_types import CreateMessageRequest, CreateMessageRequestParams, InputRequiredResult
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tools.errors import UpstreamError
from tools.llm import ChatModel, Completion, EmbeddedChat, Message, OpenAIChat
from tools.settings import get_settings


def sampling_turns(messages: list[Message]) -> tuple[str | None, list[SamplingMessage]]:
    """The system prompt and the turns of a sampling request for `messages`."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    turns = [SamplingMessage(role="assistant" if m.role == "assistant" else "user",
                             content=TextContent(type="text", text=m.content))
             for m in messages if m.role != "system"]
    return system, turns


class SamplingChat:
    """Sends each completion to the client as `sampling/createMessage`."""

    name = "mcp-sampling"

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
    ) -> Completion:
        system, turns = sampling_turns(messages)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self._ctx.session.create_message(
                    turns, max_tokens=max_tokens or 1024, system_prompt=system, temperature=temperature,
                    stop_sequences=stop,
                )
        except Exception as exc:
            raise UpstreamError(
                f"The client's model could not be sampled: {exc}",
                hint="Configure OPENAI_BASE_URL/OPENAI_API_KEY to use an endpoint instead.",
            ) from exc
        content = result.content
        text = content.text if isinstance(content, TextContent) else ""
        return Completion(text=text, model=result.model or self.name, finish_reason=result.stop_reason)


def chat_model_for(ctx: Context) -> ChatModel | None:
    """The configured endpoint if any, else the client's model when it offers sampling, else the embedded model.

    Sampling needs a server-to-client back-channel, which handshake-era connections have. None means
    no model may be used (the embedded model switched off with RESEARCH_MCP_LLM_EMBEDDED=false).
    """
    settings = get_settings().llm
    if settings.configured:
        return OpenAIChat.from_settings()
    caps = ctx.client_capabilities
    if caps is not None and caps.sampling is not None and ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        return SamplingChat(ctx)
    if wants_rounds(ctx):
        return RoundSampling()
    if settings.embedded:
        return EmbeddedChat(settings)
    return None


class RoundSampling:
    """The client's model on >= 2026-07-28 connections, where a tool asks for input by returning it.

    There the server cannot call the client mid-tool: a tool returns an `InputRequiredResult` listing
    `sampling/createMessage` requests, and the client retries the call with the answers. A tool is run
    with this model; each call whose answer is known (from this or an earlier round) returns it at
    once; an unknown one is recorded and waits. Once the tool has been waiting on unknown answers only
    for `QUIET_S`, the round ends: the recorded requests go to the client (all the calls the tool made
    in parallel, in one batch), and the known answers ride in `request_state` to the next round. The
    tool's own computation is re-run each round and is deterministic given the answers.
    """

    name = "mcp-sampling"
    QUIET_S = 0.3

    def __init__(self, answers: dict[str, dict[str, str]] | None = None) -> None:
        self.answers: dict[str, dict[str, str]] = dict(answers or {})
        self.pending: dict[str, CreateMessageRequestParams] = {}
        self.last_activity = time.monotonic()

    @staticmethod
    def request(messages: list[Message], max_tokens: int | None, temperature: float | None,
                stop: list[str] | None) -> CreateMessageRequestParams:
        system, turns = sampling_turns(messages)
        return CreateMessageRequestParams(messages=turns, max_tokens=max_tokens or 1024, system_prompt=system,
                                          temperature=temperature, stop_sequences=stop)

    @staticmethod
    def key(params: CreateMessageRequestParams) -> str:
        blob = params.model_dump_json(by_alias=True, exclude_none=True)
        return "s" + hashlib.sha256(blob.encode()).hexdigest()[:24]

    async def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
    ) -> Completion:
        params = self.request(messages, max_tokens, temperature, stop)
        key = self.key(params)
        self.last_activity = time.monotonic()
        if key in self.answers:
            known = self.answers[key]
            return Completion(text=known["text"], model=known.get("model") or self.name)
        self.pending[key] = params
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    def absorb(self, request_state: str | None, responses: Mapping[str, Any] | None) -> None:
        """Take the answers of earlier rounds (`request_state`) and of the last one (`responses`)."""
        if request_state:
            try:
                state = json.loads(request_state)
            except json.JSONDecodeError as exc:
                raise UpstreamError("The client sent back a request_state this server did not write.",
                                    hint="Retry the call from the start.") from exc
            self.answers.update(state.get("answers", {}))
        for key, resp in (responses or {}).items():
            content = getattr(resp, "content", None)
            text = getattr(content, "text", None)
            if text is None:
                raise UpstreamError(f"The client's answer to sampling request {key} has no text.",
                                    hint="The client's model must answer with text content.")
            self.answers[key] = {"text": text, "model": getattr(resp, "model", None) or self.name}

    def input_required(self) -> InputRequiredResult:
        return InputRequiredResult(
            input_requests={k: CreateMessageRequest(params=p) for k, p in self.pending.items()},
            request_state=json.dumps({"answers": self.answers}),
        )

    def quiet(self) -> bool:
        return bool(self.pending) and time.monotonic() - self.last_activity > self.QUIET_S


def wants_rounds(ctx: Context) -> bool:
    """Whether this connection lends its model only through `InputRequiredResult` rounds."""
    caps = ctx.client_capabilities
    version = ctx.protocol_version
    return (caps is not None and caps.sampling is not None and version is not None
            and version not in HANDSHAKE_PROTOCOL_VERSIONS)
