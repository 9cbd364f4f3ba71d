"""Gemma 3 270M base in this process through transformers: exact full-vocabulary token log-probs.

The NID methods need the exact log-probability of every token of a text under a known base model (and
LoRA fine-tuning of that model), which a chat server does not give. `load_causal_lm()` returns the
process's one float32 copy (about 15 s from the converted cache; the GGUF is dequantized once, see
`weights`). Chat, tool calls and chunk reading go to the llama.cpp server instead (`serve`).
"""

from __future__ import annotations

import threading

from tools.embedded.weights import converted_dir
from tools.progress import Progress, report

_LOCK = threading.Lock()
_INSTANCE: tuple | None = None


def load_causal_lm(progress: Progress | None = None):
    """`(model, tokenizer)` of the embedded Gemma 3 270M base: transformers objects, float32, eval mode, one per
    process (shared: never modify it; `nid_finetune` takes a private copy)."""
    global _INSTANCE
    with _LOCK:
        if _INSTANCE is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            folder = converted_dir(progress)
            report(progress, 0, 1, "loading Gemma 3 270M")
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
            _INSTANCE = (model, tokenizer)
            report(progress, 1, 1, "Gemma 3 270M loaded")
        return _INSTANCE
