"""`research-mcp llm serve`: the embedded model as an OpenAI-compatible server on 127.0.0.1.

Shows a progress bar while the weights assemble and load, prints the `OPENAI_BASE_URL` to use, writes a
state file (pid, URL) that other processes attach to, and stops cleanly on Ctrl-C or SIGTERM (the state
file is removed). `--idle-exit-s` ends a server started on demand once nobody has used it for a while.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from tools.atomic import write_text
from tools.progress import Progress

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="research-mcp llm serve", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (0 picks a free one; default 8080)")
    p.add_argument("--state-file", type=Path, default=None, help="where to record pid and URL (default: the cache)")
    p.add_argument("--idle-exit-s", type=float, default=0, help="exit after this many idle seconds (0: never)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _bar(quiet: bool):
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


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.host not in LOOPBACK:
        print(f"research-mcp llm serve: refusing to bind {args.host}: the embedded server has no authentication "
              "and listens on loopback only (127.0.0.1).", file=sys.stderr)
        return 2
    from tools.embedded.launcher import default_state_file
    from tools.embedded.runtime import load_local_lm

    bar, progress = _bar(args.quiet)
    try:
        if bar is not None:
            bar.start()
        lm = load_local_lm(progress)
    finally:
        if bar is not None:
            bar.stop()

    import uvicorn

    from tools.embedded.openai_api import build_app

    last = [time.monotonic()]
    from tools.settings import get_settings

    app = build_app(lm, on_request=lambda: last.__setitem__(0, time.monotonic()),
                    max_batch=get_settings().llm.embedded_max_batch)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        print(f"research-mcp llm serve: cannot bind {args.host}:{args.port} ({exc}); pick another --port "
              "(0 picks a free one).", file=sys.stderr)
        return 2
    sock.listen(64)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{port}/v1"
    state = args.state_file or default_state_file()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    def stop(*_: object) -> None:
        server.should_exit = True

    signal.signal(signal.SIGTERM, stop)
    if args.idle_exit_s > 0:
        def idle() -> None:
            while not server.should_exit:
                time.sleep(1.0)
                if time.monotonic() - last[0] > args.idle_exit_s:
                    server.should_exit = True

        threading.Thread(target=idle, daemon=True).start()
    write_text(state, json.dumps({"pid": os.getpid(), "url": url, "model": lm.name}))
    print(f"Serving {lm.name} on {url}\nexport OPENAI_BASE_URL={url} OPENAI_MODEL={lm.name} OPENAI_API_KEY=local",
          flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        try:
            if json.loads(state.read_text()).get("pid") == os.getpid():
                state.unlink()
        except (OSError, ValueError):
            pass
    print("research-mcp llm serve: stopped.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
