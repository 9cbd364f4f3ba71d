"""`research-mcp llm serve`: the embedded chat model as an OpenAI-compatible server on 127.0.0.1.

llama.cpp's own server (`llama-server`, in process through the prebuilt `xllamacpp` wheel) serves the
Qwen2.5-Coder GGUF with the model's own chat template: `/v1/chat/completions` (tools included),
`/v1/completions`, `/v1/models`, `/health`, `/metrics`. Parallel slots share one key/value cache with
continuous batching, and each slot keeps its prompt cache, so an agent's growing transcript or a
document asked again is not prefilled twice. The command assembles and checks the weights on first use,
prints the `OPENAI_BASE_URL` to use, writes a state file (pid, URL, model) that other processes attach
to, and stops on Ctrl-C or SIGTERM (the state file is removed). `--idle-exit-s` ends a server started
on demand once it has served nothing for that long. Run one per machine: two on the same cores slow
each other's decoding about 40-fold.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from tools.atomic import write_text
from tools.errors import ResearchError

LOOPBACK = ("127.0.0.1", "localhost", "::1")



def _parser() -> argparse.ArgumentParser:
    from tools.embedded.catalogue import CHAT_MODELS

    p = argparse.ArgumentParser(prog="research-mcp llm serve", description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(CHAT_MODELS), default=None,
                   help="embedded model (default: RESEARCH_MCP_LLM_EMBEDDED_MODEL, else qwen2.5-coder-1.5b-instruct)")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (0 picks a free one; default 8080)")
    p.add_argument("--state-file", type=Path, default=None, help="where to record pid and URL (default: the cache)")
    p.add_argument("--idle-exit-s", type=float, default=0, help="exit after this many idle seconds (0: never)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--on-demand", action="store_true",
                   help="started by a tool that needed a model: another caller may replace it with the model it needs")
    return p


def _bar(quiet: bool):
    from tools.progress import Progress

    if quiet:
        return None, Progress()
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    bar = Bar(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), transient=True,
              console=Console(stderr=True))
    task = bar.add_task("embedded model", total=1)

    def send(done: float, total: float | None, message: str | None) -> None:
        bar.update(task, completed=done, total=total or 1, description=message or "embedded model")

    return bar, Progress(send)


def reserve_port(host: str, port: int) -> int:
    """`port` if it can be bound on `host` now (a free one for 0); `OSError` when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, port))
        return sock.getsockname()[1]


def server_params(gguf: Path, alias: str, host: str, port: int):
    """llama-server's parameters for the embedded model: chat template, slots, shared context, threads."""
    import xllamacpp

    from tools.settings import get_settings

    s = get_settings().llm
    p = xllamacpp.CommonParams()
    p.model.path = str(gguf)
    p.model_alias = {alias}
    p.hostnames = [host]
    p.port = port
    p.n_parallel = s.embedded_max_batch
    p.n_ctx = s.embedded_context
    p.kv_unified = True  # every slot may use the whole context
    p.cpuparams.n_threads = s.embedded_threads
    p.cpuparams_batch.n_threads = s.embedded_threads
    p.use_jinja = True
    p.endpoint_metrics = True
    p.warmup = False
    return p


def _watch_idle(base: str, idle_s: float, stop: threading.Event) -> None:
    from tools.embedded.launcher import activity

    last, since = None, time.monotonic()
    while not stop.wait(2.0):
        now = activity(base)
        busy = now is not None and (now[2] > 0 or now[3] > 0)
        if busy or now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > idle_s:
            stop.set()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.host not in LOOPBACK:
        print(f"research-mcp llm serve: refusing to bind {args.host}: the embedded server has no authentication "
              "and listens on loopback only (127.0.0.1).", file=sys.stderr)
        return 2
    from tools.embedded.assemble import chat_gguf
    from tools.embedded.catalogue import chat_model_spec
    from tools.embedded.launcher import default_state_file

    try:
        spec = chat_model_spec(args.model)
        port = reserve_port(args.host, args.port)
    except ResearchError as exc:
        print(f"research-mcp llm serve: {exc.message}" + (f" {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"research-mcp llm serve: cannot bind {args.host}:{args.port} ({exc.strerror or exc}); pick another "
              "--port (0 picks a free one), or stop what uses it (`research-mcp llm status` shows a running "
              "embedded server).", file=sys.stderr)
        return 2
    bar, progress = _bar(args.quiet)
    try:
        if bar is not None:
            bar.start()
        gguf = chat_gguf(spec.name, progress)
    except ResearchError as exc:
        print(f"research-mcp llm serve: {exc.message}" + (f" {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.stop()

    import xllamacpp

    try:
        _server = xllamacpp.Server(server_params(gguf, spec.name, args.host, port))  # serves until the process ends
    except Exception as exc:  # llama.cpp reports a failed load or bind as a plain runtime error
        print(f"research-mcp llm serve: llama.cpp could not start {spec.name} on {args.host}:{port}: {exc}",
              file=sys.stderr)
        return 2
    host = f"[{args.host}]" if ":" in args.host else args.host
    base = f"http://{host}:{port}"
    url = base + "/v1"
    state = args.state_file or default_state_file()
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.idle_exit_s > 0:
        threading.Thread(target=_watch_idle, args=(base, args.idle_exit_s, stop), daemon=True).start()
    write_text(state, json.dumps({"pid": os.getpid(), "url": url, "model": spec.name, "on_demand": args.on_demand}))
    print(f"Serving {spec.name} on {url}\nexport OPENAI_BASE_URL={url} OPENAI_MODEL={spec.name} "
          "OPENAI_API_KEY=local", flush=True)
    try:
        while not stop.wait(1.0):
            pass
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(state.read_text()).get("pid") == os.getpid():
                state.unlink()
    print("research-mcp llm serve: stopped.", file=sys.stderr, flush=True)
    # Not `del server`: llama.cpp's destructor waits for a reply in progress to finish, which can take minutes.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
