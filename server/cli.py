"""The `research-mcp` command: serve, list tools, call one tool, run an agent, run an eval, the local model."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

EVAL_HELP = "run a benchmark: research-mcp eval NAME [ARGS...] (e.g. graph --quick; research-mcp eval lists them)"


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 1 to 65535, not {text!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="research-mcp", description="An MCP tool server for research methods.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="serve the tools over MCP (stdio by default)")
    s.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    s.add_argument("--host", default=None, help="HTTP host (default RESEARCH_MCP_HOST or 127.0.0.1)")
    s.add_argument("--port", type=_port, default=None, help="HTTP port (default RESEARCH_MCP_PORT or 8000)")
    s.add_argument("--workers", type=int, default=1,
                   help="HTTP server processes on the one port (stateless; batch jobs go to one shared Dask cluster)")

    t = sub.add_parser("tools", help="list the tools with one-line descriptions")
    t.add_argument("--json", action="store_true", help="print names, descriptions and input/output schemas as JSON")

    c = sub.add_parser("call", help="call one tool and print its structured result")
    c.add_argument("tool", help="tool name, e.g. graph_solve")
    c.add_argument("arguments", nargs="?", default="{}", help="arguments as a JSON object, or @file.json")

    d = sub.add_parser("demo", help="call one tool of every family on the bundled samples over a stdio session")
    d.add_argument("--family", action="append", help="only these families (repeatable)")

    a = sub.add_parser("agent", help="run an agent or workflow over the tools", add_help=False)
    a.add_argument("rest", nargs=argparse.REMAINDER)
    e = sub.add_parser("eval", help=EVAL_HELP, add_help=False)
    e.add_argument("rest", nargs=argparse.REMAINDER)
    j = sub.add_parser("jobs", help="the jobs long calls became: jobs list | status ID | wait ID | result ID | "
                       "cancel ID", add_help=False)
    j.add_argument("rest", nargs=argparse.REMAINDER)
    m = sub.add_parser("llm", help="the embedded model: llm serve | llm status | llm stop", add_help=False)
    m.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _list_tools(as_json: bool) -> int:
    import anyio
    from mcp import Client
    from rich.console import Console
    from rich.table import Table

    from server.app import build_server

    async def fetch() -> list[Any]:
        async with Client(build_server(log_level="WARNING")) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(fetch)
    if as_json:
        _print_utf8(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools], indent=2,
                               ensure_ascii=False))
        return 0
    table = Table(title=f"research-mcp: {len(tools)} tools")
    table.add_column("tool", style="bold cyan", no_wrap=True)
    table.add_column("what it does")
    for t in tools:
        table.add_row(t.name, summary_line(t.description or ""))
    Console().print(table)
    return 0


def summary_line(description: str) -> str:
    """The first paragraph of a tool description, on one line."""
    return " ".join(description.strip().split("\n\n")[0].split())


def _load_arguments(text: str) -> dict[str, Any]:
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise SystemExit(f"research-mcp call: cannot read the arguments file {text[1:]!r} ({reason}). "
                             "Give @PATH to a JSON file, or the JSON itself in quotes.") from None
    try:
        args = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"research-mcp call: the arguments are not valid JSON ({exc}). "
                         "Quote them for the shell: research-mcp call graph_solve '{\"task\": ...}'") from exc
    if not isinstance(args, dict):
        raise SystemExit("research-mcp call: the arguments must be a JSON object, e.g. '{\"n\": 10}'.")
    return args


def _call(tool: str, arguments: str) -> int:
    import anyio
    from mcp import Client
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from server.app import build_server
    from server.jobcli import call_and_wait

    args = _load_arguments(arguments)
    err = Console(stderr=True)

    async def run() -> Any:
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:g}/{task.total}"),
                      TimeElapsedColumn(), console=err, transient=True) as bar:
            task = bar.add_task(tool, total=None)

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                bar.update(task, completed=done, total=total, description=message or tool)

            async with Client(build_server(log_level="CRITICAL")) as client:
                return await call_and_wait(client, tool, args, on_progress)  # a long call's job is waited for

    result = anyio.run(run)
    from rich.markup import escape

    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        err.print(f"[bold red]error[/] {escape(text)}", soft_wrap=True)
        return 1
    if result.structured_content is not None:
        _print_utf8(json.dumps(result.structured_content, indent=2, default=str, ensure_ascii=False))
    else:
        _print_utf8("\n".join(getattr(c, "text", str(c)) for c in result.content))
    problem = _unusable(tool, result.structured_content)
    if problem:
        err.print(f"[bold red]nothing usable[/] {tool}: {escape(problem)}", soft_wrap=True, highlight=False)
        return 1
    return 0


def _unusable(tool: str, content: dict[str, Any] | None) -> str | None:
    """Why the tool's result holds nothing usable, where its `ToolSpec` can tell."""
    from server.registry import family_names, load_specs

    family = tool.split("_")[0]
    spec = next((s for s in load_specs([family]) if s.name == tool), None) if family in family_names() else None
    if spec is None or spec.unusable is None or content is None:
        return None
    return spec.unusable(content)


def _print_utf8(text: str) -> None:
    """`text` on stdout as UTF-8, whatever the terminal's encoding."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    if encoding == "utf8" or not hasattr(sys.stdout, "buffer"):
        print(text)
        return
    sys.stdout.flush()
    sys.stdout.buffer.write((text + "\n").encode("utf-8"))
    sys.stdout.buffer.flush()


def _brief(result: Any) -> str:
    """The scalar fields of a structured result on one line (lists and nested objects summarised)."""
    if not isinstance(result, dict):
        return str(result)[:200]
    parts = []
    for key, value in result.items():
        if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 90):
            parts.append(f"{key}={value}")
        elif isinstance(value, list):
            parts.append(f"{key}=[{len(value)} items]" if len(str(value)) > 90 else f"{key}={value}")
        elif isinstance(value, dict) and len(str(value)) <= 90:
            parts.append(f"{key}={value}")
    return ", ".join(parts)


def _demo(families: list[str] | None) -> int:
    import anyio
    from mcp import Client, StdioServerParameters
    from rich.console import Console

    from server.examples import EXAMPLES
    from server.jobcli import call_and_wait
    from tools.atomic import write_text
    from tools.paths import output_dir

    console = Console()
    examples = [e for e in EXAMPLES if not families or e.family in families]
    params = StdioServerParameters(command=sys.executable, args=["-m", "server", "serve"],
                                   env=dict(os.environ) | {"RESEARCH_MCP_LOG_LEVEL": "WARNING"})

    async def run() -> list[dict[str, Any]]:
        records = []
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            console.print(f"[bold]research-mcp[/] over stdio: {len(tools)} tools, {len(resources)} sample resources")
            for ex in examples:
                with console.status(f"{ex.tool}: {ex.what}") as status:
                    async def on_progress(done: float, total: float | None, message: str | None,
                                          status: Any = status, ex: Any = ex) -> None:
                        status.update(f"{ex.tool}: {message or ex.what}")

                    result = await call_and_wait(client, ex.tool, ex.arguments, on_progress)
                text = (json.dumps(result.structured_content, default=str) if not result.is_error
                        else " ".join(getattr(c, "text", "") for c in result.content))
                records.append({"tool": ex.tool, "what": ex.what, "arguments": ex.arguments,
                                "ok": not result.is_error, "result": result.structured_content or text})
        return records

    from tools.embedded.launcher import running_endpoint

    model_before = running_endpoint()
    try:
        records = anyio.run(run)
    finally:
        stopped = _stop_started_model(model_before)
    from rich.markup import escape

    by_tool = {(e.tool, json.dumps(e.arguments, sort_keys=True)): e for e in examples}
    wrong = []
    for r in records:
        mark = "[green]ok[/]" if r["ok"] else "[red]error[/]"
        console.print(f"{mark} [bold cyan]{r['tool']}[/]: {r['what']}")
        console.print("    " + escape(_brief(r["result"]) if r["ok"] else str(r["result"])), soft_wrap=True)
        ex = by_tool[(r["tool"], json.dumps(r["arguments"], sort_keys=True))]
        if r["ok"] and isinstance(r["result"], dict):
            shown, right = ex.verdict(r["result"])
            r["answer"], r["answer_right"] = shown, right
            if right is True:
                console.print(f"    [bold]answer:[/] {escape(shown)}  [green]right[/] (expected {ex.expected})")
            elif right is False:
                wrong.append(r["tool"])
                console.print(f"    [bold]answer:[/] {escape(shown)}  [red]WRONG[/]: expected {ex.expected}")
    report = output_dir() / "demo.json"
    write_text(report, json.dumps(records, indent=2, default=str))
    failed = [r["tool"] for r in records if not r["ok"]]
    console.print(f"Full results: {report}")
    if stopped:
        console.print(stopped)
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]")
    if wrong:
        console.print(f"[red]wrong answers: {', '.join(wrong)}[/]")
    return 1 if failed or wrong else 0


def _stop_started_model(before: str | None) -> str | None:
    """Stop the embedded model server if this command started it (none ran before); say what was done."""
    import signal

    from tools.embedded.launcher import default_state_file, running_endpoint

    if before is not None or running_endpoint() is None:
        return None
    try:
        state = json.loads(default_state_file().read_text())
        os.kill(int(state["pid"]), signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        return None
    return (f"Stopped the embedded model server ({state.get('model')}) started for this demo; a tool that needs a "
            "model starts it again (or keep one running with `research-mcp llm serve`).")


def _serve(http: bool, host: str | None, port: int | None, workers: int = 1) -> int:
    from server.app import build_server
    from tools.settings import get_settings

    settings = get_settings()
    server = build_server()
    if not http:
        server.run("stdio")
        return 0
    from server.http import serve_http
    from tools.errors import ResearchError

    try:
        serve_http(server, host or settings.host, port or settings.port,
                   settings.token.get_secret_value() if settings.token else None, settings.allowed_hosts,
                   workers=workers)
    except ResearchError as exc:
        print(f"research-mcp serve: {exc}", file=sys.stderr)
        return 2
    return 0


LLM_USAGE = """usage: research-mcp llm serve [--model NAME] [--host 127.0.0.1] [--port 8080] [--idle-exit-s S]
       research-mcp llm status
       research-mcp llm stop

serve   run the embedded chat model (Qwen2.5-Coder 1.5B Instruct by default, on llama.cpp) as an
        OpenAI-compatible server on 127.0.0.1; --model qwen2.5-coder-0.5b-instruct for the small one
status  say whether one is running (started by `serve` or on demand by a tool) and where
stop    stop the one recorded in the model cache"""


def _llm(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(LLM_USAGE)
        return 0 if argv else 2
    if argv[0] == "serve":
        from tools.embedded.serve import main as serve_main

        return serve_main(argv[1:])
    from tools.embedded.launcher import default_state_file, running_endpoint

    url = running_endpoint()
    if argv[0] == "status":
        model = json.loads(default_state_file().read_text()).get("model", "?") if url else None
        print(f"embedded model server: {model} at {url}" if url else "embedded model server: not running")
        return 0 if url else 1
    if argv[0] == "stop":
        if not url:
            print("embedded model server: not running")
            return 0
        import signal

        pid = json.loads(default_state_file().read_text())["pid"]
        os.kill(int(pid), signal.SIGTERM)
        print(f"embedded model server at {url} (pid {pid}): stopping")
        return 0
    print(LLM_USAGE, file=sys.stderr)
    return 2


def eval_names() -> list[str]:
    """Every eval: each `evals/<name>/` package with a `run` module (found without importing one)."""
    import pkgutil
    from importlib.util import find_spec

    spec = find_spec("evals")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(info.name for info in pkgutil.iter_modules(spec.submodule_search_locations)
                  if info.ispkg and find_spec(f"evals.{info.name}.run") is not None)


def _delegate(module: str, argv: list[str], what: str, command: str) -> int:
    """`module.main(argv)`; a missing or unreadable file and a `ResearchError` are one line and status 2."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            print(f"research-mcp: no {what} named by {module!r}.", file=sys.stderr)
            return 2
        raise
    from tools.errors import ResearchError

    try:
        return int(mod.main(argv) or 0)
    except OSError as exc:
        if exc.filename is None:
            raise
        print(f"research-mcp {command}: cannot use {exc.filename} ({exc.strerror}).", file=sys.stderr)
    except ResearchError as exc:
        print(f"research-mcp {command}: {exc}", file=sys.stderr)
    return 2


def _check_settings() -> None:
    """Read the settings once, so that a malformed RESEARCH_MCP_* variable is one line, not a traceback."""
    from pydantic import ValidationError

    from tools.settings import get_settings

    try:
        get_settings()
    except ValidationError as exc:
        import tools.settings

        model = getattr(tools.settings, exc.title, None)
        prefix = model.model_config.get("env_prefix", "") if model is not None else "RESEARCH_MCP_"
        problems = []
        for e in exc.errors():
            name = "__".join(str(p) for p in e["loc"]).upper()
            name = name if name.startswith(("RESEARCH_MCP_", "OPENAI_")) else f"{prefix}{name}"
            problems.append(f"{name}: {e['msg']} (got {e.get('input')!r})")
        raise SystemExit(f"research-mcp: invalid setting in the environment: {'; '.join(problems)}") from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _check_settings()
    if argv and argv[0] == "agent":  # REMAINDER does not take leading options (--resume, --workflow...)
        return _delegate("agents.cli", argv[1:], "agent runner", "agent")
    if argv and argv[0] == "llm":
        return _llm(argv[1:])
    if argv and argv[0] == "jobs":
        from server.jobcli import main as jobs_main

        return jobs_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "serve":
        if args.workers < 1 or (args.workers > 1 and not args.http):
            print("research-mcp serve: --workers needs --http and a count of 1 or more.", file=sys.stderr)
            return 2
        return _serve(args.http, args.host, args.port, args.workers)
    if args.command == "tools":
        return _list_tools(args.json)
    if args.command == "call":
        return _call(args.tool, args.arguments)
    if args.command == "demo":
        return _demo(args.family)
    if args.command == "eval":
        if not args.rest or args.rest[0].startswith("-"):
            print(f"usage: research-mcp eval NAME [--quick] [ARGS...]; evals: {', '.join(eval_names())} "
                  "(research-mcp eval NAME --help says what one measures; --quick runs its small variant)",
                  file=sys.stderr)
            return 0 if args.rest and args.rest[0] in ("-h", "--help") else 2
        return _delegate(f"evals.{args.rest[0]}.run", args.rest[1:], f"eval for family {args.rest[0]!r}", "eval")
    return 2


if __name__ == "__main__":
    sys.exit(main())
