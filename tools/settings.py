"""The one settings object of research-mcp (environment prefix `RESEARCH_MCP_`).

Nested values use `__`: `RESEARCH_MCP_GRAPH__MAX_NODES=5000`. The LLM endpoint also reads the usual
`OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, SecretStr, create_model, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from tools.limits import family_limits


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
    agent_max_tokens: int = Field(
        256, ge=16, description="Most tokens the ReAct agent's model writes per reply (a tool call or an answer): "
        "a small model on a CPU writes about 15 a second, and a reply that loops stops here.",
    )
    agent_result_chars: int = Field(
        4000, ge=200, description="Most characters of one tool result the ReAct agent's model reads: longer JSON "
        "results keep their keys and scalars with long lists and strings elided (about 1,200 tokens; a small model "
        "prefills 30-60 tokens a second).",
    )
    embedded: bool = Field(True, description="Use the embedded local model when no endpoint is configured.")
    embedded_model: str = Field(
        "qwen2.5-coder-1.5b-instruct", description="The embedded chat model: qwen2.5-coder-1.5b-instruct (default; "
        "plans and calls tools) or qwen2.5-coder-0.5b-instruct (faster chunk workers, small machines).",
    )
    embedded_max_tokens: int = Field(
        512, ge=1, description="Most tokens the embedded model writes per reply (it decodes ~15 tokens a second on "
        "two CPU cores).",
    )
    embedded_max_batch: int = Field(
        4, ge=1, le=64, description="Requests the embedded model serves at once (llama.cpp parallel slots with "
        "continuous batching: concurrent chunk readers share its forward passes); 1 serves one after another.",
    )
    embedded_context: int = Field(
        32768, ge=2048, le=131072, description="Tokens of context the embedded model's server holds, shared by its "
        "slots (one prompt may use all of it); Qwen2.5-Coder reads up to 32,768.",
    )
    embedded_threads: int = Field(
        default_factory=lambda: os.cpu_count() or 2, ge=1,
        description="CPU threads of the embedded model's server (default: every core; run one server per machine).",
    )
    embedded_url: str | None = Field(
        None, description="Base URL of an already running embedded-model server to attach to (research-mcp llm serve)."
    )
    model_cache: Path = Field(
        Path.home() / ".cache" / "research-mcp", description="Where the embedded model's converted weights are kept."
    )

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)


class Settings(BaseSettings):
    """Roots, output folder, transport and LLM endpoint; `get_settings()` adds every family's bounds (the
    limits each family registers, `tools.limits`) as a field named for the family."""

    model_config = SettingsConfigDict(env_prefix="RESEARCH_MCP_", env_nested_delimiter="__", extra="ignore")

    roots: list[Path] = Field(
        default_factory=lambda: [Path.cwd()],
        description="Folders whose files tools may read (JSON list). Bundled samples are always readable.",
    )
    output_dir: Path = Field(Path("research-mcp-output"), description="Where tools write files.")
    schema_cache: bool = Field(
        True, description="List the tools from a cache of their schemas (in the model cache folder) at start-up and "
        "build each at its first call; false: build every tool at start-up.",
    )
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    token: SecretStr | None = Field(None, description="Bearer token HTTP clients must send.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header values the HTTP server accepts (JSON list, e.g. [\"mcp.example.org\"]).",
    )
    families: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Tool families to serve, comma-separated (e.g. eo,graph); empty: all of them.",
    )
    allowed_endpoints: list[str] = Field(
        default_factory=list,
        description="Base-URL prefixes a caller may name as an endpoint (JSON list, e.g. "
        "[\"http://127.0.0.1:8080/v1\"]). Such calls never carry the server's key.",
    )
    heavy_workers: int = Field(
        default_factory=lambda: max(2, (os.cpu_count() or 2) // 2), ge=1,
        description="CPU-heavy tool calls run at the same time (default: half the CPU cores, at least 2).",
    )
    heavy_queue: int = Field(16, ge=0, description="CPU-heavy calls that may wait for a worker; more get `busy`.")
    light_workers: int = Field(16, ge=1, description="Light (quick) tool calls run at the same time.")
    output_retention_days: float = Field(
        30.0, ge=0, description="Output files older than this are deleted at start-up and after writes; 0 keeps all."
    )
    output_quota_mb: float = Field(
        10_000.0, ge=0, description="Largest total size of the output folder; the oldest files go first; 0: no quota."
    )
    log_level: str = Field("INFO", description="Server log level (DEBUG, INFO, WARNING, ERROR); logs go to stderr.")
    max_argument_values: int = Field(
        1_000_000, description="Most JSON values (list items, object members) in one call's arguments."
    )
    max_result_chars: int = Field(200_000, description="Largest tool result text; bigger results go to files.")
    inline_images: bool = Field(
        True, description="Tool results also carry their PNG pictures as MCP image content (files are written anyway)."
    )
    max_resource_mb: float = Field(
        8.0, gt=0, description="Largest output file resources/read returns (output://...); larger ones are refused."
    )
    inline_budget_s: float = Field(
        40.0, ge=0, description="A tool call still running after this many seconds answers with a job handle and "
        "goes on as a job (jobs_wait collects its result); below every MCP host's request timeout. 0: never a job.",
    )
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @field_validator("families", mode="before")
    @classmethod
    def _split_families(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value


@functools.cache
def settings_class() -> type[Settings]:
    """`Settings` with a field per family holding its registered limits (`RESEARCH_MCP_<FAMILY>__<NAME>`)."""
    limits = family_limits()
    clash = sorted(set(limits) & set(Settings.model_fields))
    if clash:
        raise ValueError(f"Families {clash} are named like settings of their own; rename the family.")
    fields: dict = {name: (model, Field(default_factory=model)) for name, model in limits.items()}
    return create_model("Settings", __base__=Settings, __doc__=Settings.__doc__, **fields)


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return settings_class()()


def reload_settings() -> Settings:
    """Re-read the environment (tests and the CLI use this after changing variables)."""
    get_settings.cache_clear()
    return get_settings()
