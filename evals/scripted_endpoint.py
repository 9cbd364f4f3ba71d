"""A scripted OpenAI-compatible chat endpoint: a real HTTP server on 127.0.0.1.

Replies follow a rule over the request, so the real `openai` client path (HTTP, JSON, retries) runs
without model weights: the evals' oracle policies and the tests use it. A rule gets the request body
(`messages`, `tools`, ...) and returns either reply text or an assistant message dict
(`{"content": ..., "tool_calls": [...]}`).

    with ScriptedLLM(lambda body: "42") as llm:
        OpenAIChat(base_url=llm.base_url, api_key="x", model="scripted")
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Rule = Callable[[dict[str, Any]], "str | dict[str, Any]"]


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat request."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return "".join(part.get("text", "") for part in c if isinstance(part, dict))
            return c or ""
    return ""


class ScriptedLLM:
    """Serve `/v1/chat/completions` (and `/v1/models`, `/health`) from a rule, with optional latency and faults.

    `faults` is a list of HTTP status codes (or "timeout") served, in order, before normal replies:
    `[429, 500]` makes the first two requests fail. `latency_s` delays every reply. A "timeout" fault
    holds the request unanswered for `stall_s` seconds (released at once when the server closes).
    `retry_after_s`, when set, is sent with each fault status as `Retry-After` and `retry-after-ms`,
    which the `openai` client honours instead of its own backoff.
    """

    def __init__(self, rule: Rule, *, latency_s: float = 0.0, faults: list[int | str] | None = None,
                 model: str = "scripted", retry_after_s: float | None = None, stall_s: float = 30.0) -> None:
        self.rule = rule
        self.latency_s = latency_s
        self.faults = list(faults or [])
        self.model = model
        self.retry_after_s = retry_after_s
        self.stall_s = stall_s
        self._closing = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLM:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                if status >= 400 and outer.retry_after_s is not None:
                    self.send_header("Retry-After", str(max(1, round(outer.retry_after_s))))
                    self.send_header("retry-after-ms", str(int(outer.retry_after_s * 1000)))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": outer.model, "object": "model"}]})
                elif self.path.rstrip("/") == "/health":  # as the embedded model's server answers it
                    self._send(200, {"status": "ok", "model": outer.model})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with outer._lock:
                    outer.requests.append(body)
                    fault = outer.faults.pop(0) if outer.faults else None
                    outer.active += 1
                    outer.max_active = max(outer.max_active, outer.active)
                try:
                    if fault == "timeout":
                        outer._closing.wait(outer.stall_s)
                        self.close_connection = True
                        return
                    if fault is not None:
                        self._send(int(fault), {"error": {"message": f"scripted fault {fault}", "type": "fault"}})
                        return
                    if outer.latency_s:
                        time.sleep(outer.latency_s)
                    reply = outer.rule(body)
                    message = {"role": "assistant", "content": reply} if isinstance(reply, str) else {
                        "role": "assistant", "content": reply.get("content"), **{
                            k: v for k, v in reply.items() if k not in ("content", "finish_reason")}}
                    finish = reply.get("finish_reason") if isinstance(reply, dict) else None
                    for call in message.get("tool_calls") or []:
                        call.setdefault("id", "call_" + uuid.uuid4().hex[:12])
                        call.setdefault("type", "function")
                        if not isinstance(call["function"].get("arguments"), str):
                            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
                    prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
                    completion_chars = len(message.get("content") or "")
                    self._send(200, {
                        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", outer.model),
                        "choices": [{"index": 0, "message": message,
                                     "finish_reason": finish or ("tool_calls" if message.get("tool_calls")
                                                                 else "stop")}],
                        "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4,
                                  "total_tokens": (prompt_chars + completion_chars) // 4},
                    })
                finally:
                    with outer._lock:
                        outer.active -= 1

        self._closing.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
