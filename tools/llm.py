"""The one LLM interface every family uses, and its OpenAI-compatible implementation.

A method that needs a language model takes `llm: ChatModel | None = None`. Implementations:
`OpenAIChat` (any OpenAI-compatible endpoint: OpenAI, vLLM, llama.cpp server, Ollama), the MCP
layer's sampling model (the connected client's own model), and in tests a scripted HTTP endpoint that
`OpenAIChat` talks to like any other, and `EmbeddedChat`, the embedded Qwen2.5-Coder Instruct model
that llama.cpp serves on 127.0.0.1 (used when nothing else is configured). Configuration comes from the
settings (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL` or their `RESEARCH_MCP_LLM_` forms), never from code.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tools.errors import NotConfigured, UpstreamError
from tools.settings import LLMSettings, get_settings


@dataclass
class Completion:
    """One model reply with its token accounting."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    finish_reason: str | None = None


@dataclass
class Message:
    role: str
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model: messages in, one completion out."""

    name: str

    async def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
    ) -> Completion: ...


@dataclass
class OpenAIChat:
    """An OpenAI-compatible chat endpoint with timeouts, retries with backoff, and a concurrency cap.

    The `openai` client retries 408/409/429/5xx and connection errors with exponential backoff
    (`max_retries`); this class adds the concurrency limit and turns final failures into
    `UpstreamError` with the endpoint named.
    """

    base_url: str | None
    api_key: str | None
    model: str
    timeout_s: float = 120.0
    max_retries: int = 4
    concurrency: int = 8
    temperature: float = 0.0
    _client: object = field(default=None, init=False, repr=False)
    _sem: asyncio.Semaphore | None = field(default=None, init=False, repr=False)
    _sem_loop: object = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.model

    @classmethod
    def from_settings(cls, settings: LLMSettings | None = None) -> OpenAIChat:
        """The endpoint the settings name; `NotConfigured` when none is set."""
        s = settings or get_settings().llm
        if not s.configured:
            raise NotConfigured(
                "No LLM endpoint is configured.",
                hint="Set OPENAI_BASE_URL (e.g. http://127.0.0.1:8080/v1 for a local vLLM, llama.cpp or Ollama "
                "server) and/or OPENAI_API_KEY, and OPENAI_MODEL; or connect from a client that offers MCP sampling; "
                "or allow the embedded model (RESEARCH_MCP_LLM_EMBEDDED=true).",
            )
        return cls(
            base_url=s.base_url,
            api_key=s.api_key.get_secret_value() if s.api_key else "not-needed",
            model=s.model,
            timeout_s=s.timeout_s,
            max_retries=s.max_retries,
            concurrency=s.concurrency,
            temperature=s.temperature,
        )

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem = asyncio.Semaphore(self.concurrency)
            self._sem_loop = loop
            self._client = None
        return self._sem

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (call before that loop ends)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()  # type: ignore[attr-defined]

    def _openai(self):
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient

            # Our own HTTP client: the openai default one schedules its close on whatever event loop is running
            # when it is garbage-collected, which fails once the loop that opened its connections has closed.
            self._client = AsyncOpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=self.max_retries,
                http_client=DefaultAsyncHttpxClient(timeout=self.timeout_s),
            )
        return self._client

    async def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
    ) -> Completion:
        import openai

        async with self._semaphore():
            try:
                # Unset options are left out rather than sent as null, which some servers reject.
                options = {k: v for k, v in (("max_tokens", max_tokens), ("stop", stop)) if v is not None}
                # The messages go in `extra_body`, which replaces the `messages` key of the request as sent: the
                # client's per-call type walk over them costs ~3 ms of CPU a call, which serialises concurrent
                # chunk calls on the event loop; plain role/content dicts need no transforming.
                resp = await self._openai().chat.completions.create(
                    model=self.model,
                    messages=[],
                    temperature=self.temperature if temperature is None else temperature,
                    extra_body={"messages": [m.as_dict() for m in messages]},
                    **options,
                )
            except openai.APIStatusError as exc:
                if exc.status_code == 400 and "context" in str(exc.message).lower():
                    raise UpstreamError(
                        f"The prompt does not fit the context of the model at {self.base_url or 'api.openai.com'}: "
                        f"{exc.message}",
                        hint="Send less text per call: longctx_answer with a smaller chunk_tokens splits a long "
                        "input; for the embedded model RESEARCH_MCP_LLM_EMBEDDED_CONTEXT sets its context.",
                    ) from exc
                raise UpstreamError(
                    f"The LLM endpoint {self.base_url or 'api.openai.com'} answered HTTP {exc.status_code} "
                    f"after {self.max_retries} retries: {exc.message}",
                    hint="Check the model name, the key and the server's logs.",
                ) from exc
            except openai.APITimeoutError as exc:
                raise UpstreamError(
                    f"The LLM endpoint {self.base_url or 'api.openai.com'} did not answer within "
                    f"{self.timeout_s:g} s ({self.max_retries} retries).",
                    hint="Raise RESEARCH_MCP_LLM_TIMEOUT_S, send less text per call, or check the server's load.",
                ) from exc
            except openai.APIConnectionError as exc:
                raise UpstreamError(
                    f"The LLM endpoint {self.base_url or 'api.openai.com'} could not be reached "
                    f"after {self.max_retries} retries ({type(exc).__name__}).",
                    hint="Check OPENAI_BASE_URL and that the server is running.",
                ) from exc
        choice = resp.choices[0]
        usage = resp.usage
        return Completion(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            model=resp.model or self.model,
            finish_reason=choice.finish_reason,
        )


class EmbeddedChat(OpenAIChat):
    """The embedded chat model behind its local llama.cpp server, started on first use.

    Its replies name the model that served them, e.g. `qwen2.5-coder-1.5b-instruct (embedded)`, so every
    result says which model answered.
    """

    def __init__(self, settings: LLMSettings | None = None) -> None:
        s = settings or get_settings().llm
        # As many requests in flight as the server has slots: concurrent chunk reads share its forward passes.
        super().__init__(base_url=None, api_key="embedded", model=s.embedded_model, timeout_s=max(s.timeout_s, 600.0),
                         max_retries=1, concurrency=s.embedded_max_batch, temperature=s.temperature)
        self.max_tokens_cap = s.embedded_max_tokens

    @property
    def name(self) -> str:
        return f"{self.model} (embedded)"

    async def complete(self, messages: list[Message], **options) -> Completion:
        if self.base_url is None:
            import anyio.to_thread

            from tools.embedded.launcher import ensure_local_endpoint, served_model

            url = await anyio.to_thread.run_sync(ensure_local_endpoint)
            self.model = await anyio.to_thread.run_sync(served_model, url) or self.model
            self.base_url = url
        wanted = options.get("max_tokens")
        options["max_tokens"] = self.max_tokens_cap if wanted is None else min(wanted, self.max_tokens_cap)
        reply = await super().complete(messages, **options)
        reply.model = self.name
        return reply


def default_llm(settings: LLMSettings | None = None) -> ChatModel:
    """The configured endpoint if any, else the embedded model; `NotConfigured` when that is switched off."""
    s = settings or get_settings().llm
    if s.configured:
        return OpenAIChat.from_settings(s)
    if s.embedded:
        return EmbeddedChat(s)
    return OpenAIChat.from_settings(s)


def resolve_llm(llm: ChatModel | None) -> ChatModel:
    """`llm` if given, else the configured endpoint, else the embedded model."""
    return llm if llm is not None else default_llm()
