"""The one settings object of research-mcp (environment prefix `RESEARCH_MCP_`).

Nested values use `__`: `RESEARCH_MCP_GRAPH__MAX_NODES=5000`. The LLM endpoint also reads the usual
`OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from tools.dti.limits import DTILimits
from tools.eo.limits import EOLimits
from tools.graph.limits import GraphLimits
from tools.longctx.limits import LongctxLimits
from tools.nid.limits import NIDLimits


class LLMSettings(BaseSettings):
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp server, Ollama...)."""

    model_config = SettingsConfigDict(env_prefix="RESEARCH_MCP_LLM_", extra="ignore")

    base_url: str | None = Field(None, validation_alias=AliasChoices("RESEARCH_MCP_LLM_BASE_URL", "OPENAI_BASE_URL"))
    api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("RESEARCH_MCP_LLM_API_KEY", "OPENAI_API_KEY"))
    model: str = Field("gpt-4o-mini", validation_alias=AliasChoices("RESEARCH_MCP_LLM_MODEL", "OPENAI_MODEL"))
    timeout_s: float = 120.0
    max_retries: int = 4
    concurrency: int = 8
    temperature: float = 0.0

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)


class Settings(BaseSettings):
    """Roots, output folder, transport, LLM endpoint and every family's bounds."""

    model_config = SettingsConfigDict(env_prefix="RESEARCH_MCP_", env_nested_delimiter="__", extra="ignore")

    roots: list[Path] = Field(
        default_factory=lambda: [Path.cwd()],
        description="Folders whose files tools may read (JSON list). Bundled samples are always readable.",
    )
    output_dir: Path = Field(Path("research-mcp-output"), description="Where tools write files.")
    host: str = "127.0.0.1"
    port: int = 8000
    token: SecretStr | None = Field(None, description="Bearer token HTTP clients must send.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header values the HTTP server accepts (JSON list, e.g. [\"mcp.example.org\"]).",
    )
    log_level: str = Field("INFO", description="Server log level (DEBUG, INFO, WARNING, ERROR); logs go to stderr.")
    max_result_chars: int = Field(200_000, description="Largest tool result text; bigger results go to files.")
    llm: LLMSettings = Field(default_factory=LLMSettings)
    graph: GraphLimits = Field(default_factory=GraphLimits)
    eo: EOLimits = Field(default_factory=EOLimits)
    nid: NIDLimits = Field(default_factory=NIDLimits)
    longctx: LongctxLimits = Field(default_factory=LongctxLimits)
    dti: DTILimits = Field(default_factory=DTILimits)


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()


def reload_settings() -> Settings:
    """Re-read the environment (tests and the CLI use this after changing variables)."""
    get_settings.cache_clear()
    return get_settings()
