"""The embedded model as an OpenAI-compatible HTTP API (the subset research-mcp and its agents use).

- `GET /v1/models`, `GET /health`
- `POST /v1/completions`: `prompt` (a string or a list), `max_tokens`, `temperature`, `stop`, `seed`,
  `echo` with `logprobs` (prompt log-probs in the legacy format: `tokens`, `token_logprobs`,
  `top_logprobs`, `text_offset`), as vLLM and llama.cpp give them.
- `POST /v1/chat/completions`: `messages`, `max_tokens`, `temperature`, `stop`, `seed`, `tools`
  (calls come back as `tool_calls` with `finish_reason: "tool_calls"`). The key/value cache of the
  system text and tool list is kept for the next chats that repeat them (the steps of an agent);
  `usage.prompt_tokens_details.cached_tokens` says how many prompt tokens it covered.

Concurrent generations decode together, one forward pass a token (`batching.DecodeBatcher`, at most
`max_batch` rows); the prompts of one completions request are decoded as such concurrent rows. A client
that disconnects stops its generation at the next token.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tools.embedded.batching import MAX_BATCH, DecodeBatcher
from tools.embedded.chat import STOP_STRINGS, parse_tool_calls, prompt_head, render_prompt
from tools.embedded.runtime import LocalLM
from tools.errors import ResearchError

MAX_PROMPTS = 256
MAX_NEW_TOKENS = 4096


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


class _Cancel:
    """A flag the worker thread polls; set when the request's task is cancelled (client gone)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self) -> bool:
        return self.event.is_set()


def build_app(lm: LocalLM, *, on_request: Any = None, max_batch: int = MAX_BATCH) -> Starlette:
    """The ASGI app serving `lm`. `on_request()` is called on every request (idle tracking); `max_batch`:
    generations decoded together at most."""
    batcher = DecodeBatcher(lm, max_batch)

    def scored(*args: Any, **kwargs: Any):
        return batcher.run(lm.prompt_logprobs, *args, **kwargs)

    async def run(request: Request, fn, *args, **kwargs):
        cancel = _Cancel()

        async def watch() -> None:
            while not cancel.event.is_set():
                if await request.is_disconnected():
                    cancel.event.set()
                    return
                await anyio.sleep(0.25)

        watcher = asyncio.ensure_future(watch())
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, should_stop=cancel, **kwargs),
                                                  abandon_on_cancel=True)
        finally:
            cancel.event.set()
            watcher.cancel()

    async def body(request: Request) -> dict[str, Any] | JSONResponse:
        if on_request is not None:
            on_request()
        try:
            data = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "The request body is not JSON.")
        if not isinstance(data, dict):
            return _error(400, "The request body must be a JSON object.")
        if data.get("stream"):
            return _error(400, "Streaming is not supported by the embedded server; send stream=false.")
        if int(data.get("n") or 1) != 1:
            return _error(400, "Only n=1 is supported.")
        return data

    def options(data: dict[str, Any]) -> dict[str, Any]:
        max_tokens = data.get("max_tokens", data.get("max_completion_tokens"))
        max_tokens = 256 if max_tokens is None else int(max_tokens)
        if not 0 <= max_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"max_tokens must be between 0 and {MAX_NEW_TOKENS}.")
        stop = data.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        temperature = float(data.get("temperature") or 0.0)
        seed = data.get("seed")
        return {"max_tokens": max_tokens, "stop": stop, "temperature": temperature,
                "seed": int(seed) if seed is not None else None}

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            {"id": lm.name, "object": "model", "created": 0, "owned_by": "research-mcp"}]})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": lm.name})

    async def completions(request: Request) -> JSONResponse:
        data = await body(request)
        if isinstance(data, JSONResponse):
            return data
        prompts = data.get("prompt")
        prompts = [prompts] if isinstance(prompts, str) else prompts
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
            return _error(400, "prompt must be a string or a non-empty list of strings.")
        if len(prompts) > MAX_PROMPTS:
            return _error(400, f"At most {MAX_PROMPTS} prompts per request.")
        try:
            opts = options(data)
            echo = bool(data.get("echo"))
            top = data.get("logprobs")
            top = None if top is None else int(top)
            logprobs = await run(request, scored, prompts, top=top or 0) if echo and top is not None else None
            gens = (await asyncio.gather(*(run(request, batcher.generate, p, **opts) for p in prompts))
                    if opts["max_tokens"] > 0 else [None] * len(prompts))
            choices, p_tok, c_tok = [], 0, 0
            for i, (prompt, gen) in enumerate(zip(prompts, gens, strict=True)):
                text = gen.text if gen else ""
                p_tok += gen.prompt_tokens if gen else lm.count_tokens(prompt)
                c_tok += gen.completion_tokens if gen else 0
                choice: dict[str, Any] = {"index": i, "text": (prompt + text) if echo else text,
                                          "finish_reason": gen.finish_reason if gen else "length", "logprobs": None}
                if logprobs is not None:
                    lp = logprobs[i]
                    choice["logprobs"] = {"tokens": lp.tokens, "token_logprobs": lp.token_logprobs,
                                          "top_logprobs": lp.top_logprobs if top else None,
                                          "text_offset": lp.text_offset}
                choices.append(choice)
        except ResearchError as exc:
            return _error(400, str(exc))
        except ValueError as exc:
            return _error(400, str(exc))
        return JSONResponse({
            "id": f"cmpl-{uuid.uuid4().hex[:16]}", "object": "text_completion", "created": int(time.time()),
            "model": lm.name, "choices": choices,
            "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok},
        })

    async def chat(request: Request) -> JSONResponse:
        data = await body(request)
        if isinstance(data, JSONResponse):
            return data
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return _error(400, "messages must be a non-empty list of {role, content} objects.")
        tools = data.get("tools") or None
        if data.get("tool_choice") == "none":
            tools = None
        try:
            opts = options(data)
            opts["stop"] = opts["stop"] + STOP_STRINGS
            gen = await run(request, batcher.generate, render_prompt(messages, tools),
                            head_chars=len(prompt_head(messages, tools)), **opts)
        except ResearchError as exc:
            return _error(400, str(exc))
        except ValueError as exc:
            return _error(400, str(exc))
        message: dict[str, Any] = {"role": "assistant", "content": gen.text.strip()}
        finish = gen.finish_reason
        if tools:
            known = {t.get("function", t).get("name") for t in tools}
            text, calls = parse_tool_calls(gen.text, known)
            if calls:
                message = {"role": "assistant", "content": text or None, "tool_calls": [
                    {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                     "function": {"name": c.name, "arguments": c.arguments}} for c in calls]}
                finish = "tool_calls"
        return JSONResponse({
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time()),
            "model": lm.name, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                      "total_tokens": gen.prompt_tokens + gen.completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": gen.cached_tokens}},
        })

    return Starlette(routes=[
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
    ])
