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
    "and OPENAI_MODEL; the RESEARCH_MCP_LLM_* forms work too.",
)


def chat_model(settings: LLMSettings | None = None, *, temperature: float = AGENT_TEMPERATURE) -> Any:
    """A `ChatOpenAI` for the endpoint in the settings; `NotConfigured` with the fix when there is none."""
    s = settings or get_settings().llm
    if not s.configured:
        raise NO_ENDPOINT
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=s.model,
        base_url=s.base_url,
        api_key=s.api_key.get_secret_value() if s.api_key else "not-needed",
        temperature=temperature,
        timeout=s.timeout_s,
        max_retries=s.max_retries,
    )
