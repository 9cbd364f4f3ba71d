"""The connected client's own model as a `ChatModel`, through MCP sampling (no API key needed)."""

from __future__ import annotations

import warnings

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import SamplingMessage, TextContent
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tools.errors import UpstreamError
from tools.llm import ChatModel, Completion, EmbeddedChat, Message, OpenAIChat
from tools.settings import get_settings


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
        system = "\n\n".join(m.content for m in messages if m.role == "system") or None
        turns = [
            SamplingMessage(role="assistant" if m.role == "assistant" else "user",
                            content=TextContent(type="text", text=m.content))
            for m in messages
            if m.role != "system"
        ]
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
    if settings.embedded:
        return EmbeddedChat(settings)
    return None
