"""The chat model every agent and workflow uses: ChatOpenAI on the configured OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import Any

from tools.errors import NotConfigured
from tools.settings import LLMSettings, get_settings

AGENT_TEMPERATURE = 0.1

NO_ENDPOINT = NotConfigured(
    "No LLM endpoint is configured, so the agent has no model to plan with.",
    hint="Set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any OpenAI-compatible server: vLLM "
    "http://127.0.0.1:8000/v1, Ollama http://127.0.0.1:11434/v1, llama.cpp http://127.0.0.1:8080/v1), "
    "and OPENAI_MODEL; the RESEARCH_MCP_LLM_* forms work too; or allow the embedded model "
    "(RESEARCH_MCP_LLM_EMBEDDED=true).",
)


def chat_model(settings: LLMSettings | None = None, *, temperature: float = AGENT_TEMPERATURE) -> Any:
    """A `ChatOpenAI` for the configured endpoint, else for the embedded model (started on demand).

    `NotConfigured` with the fix when there is no endpoint and the embedded model is switched off.
    """
    s = settings or get_settings().llm
    from langchain_openai import ChatOpenAI

    if not s.configured:
        if not s.embedded:
            raise NO_ENDPOINT
        from tools.embedded.launcher import ensure_local_endpoint, served_model

        url = ensure_local_endpoint()
        return ChatOpenAI(model=served_model(url) or s.embedded_model, base_url=url, api_key="embedded",
                          temperature=temperature, timeout=max(s.timeout_s, 600.0), max_retries=1,
                          max_tokens=s.embedded_max_tokens)
    return ChatOpenAI(
        model=s.model,
        base_url=s.base_url,
        api_key=s.api_key.get_secret_value() if s.api_key else "not-needed",
        temperature=temperature,
        timeout=s.timeout_s,
        max_retries=s.max_retries,
    )
