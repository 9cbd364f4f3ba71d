"""The embedded models, installed from PyPI and run on 127.0.0.1 so that no path needs a key.

Chat, tool calls and chunk reading: Qwen2.5-Coder 1.5B Instruct (or the 0.5B) on llama.cpp. `catalogue`
names the models, `assemble` joins and checks their GGUF, `serve` runs llama.cpp's OpenAI-compatible
server, and `launcher` starts it on demand (or attaches to a running one) for any process that needs a
model and has no endpoint configured. Exact token log-probs for the NID methods: Gemma 3 270M base through
transformers in process (`weights` converts its GGUF once, `runtime` loads it).
"""
