"""`research-mcp agent`: ask the ReAct agent a question, run a family workflow, resume a thread.

    research-mcp agent "What is the mean NDVI of the bundled Landsat 8 scene?"
    research-mcp agent --workflow eo --input '{"scene": "sample://eo/landsat8", "index": "NDVI"}'
    research-mcp agent --resume 3f2a9c01d4e7 --approve
    research-mcp agent --http http://127.0.0.1:8000/mcp --token $RESEARCH_MCP_TOKEN "..."

Exit status: 0 answered, 1 the run failed, 2 a configuration or input problem (for example no LLM
endpoint), 3 paused for approval (continue with `--resume THREAD --approve` or `--reject`), 4 the run
ended without the model calling any tool (its reply, if any, is printed, but no tool backs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_PAUSED, EXIT_NO_TOOL = 0, 1, 2, 3, 4


def _parser() -> argparse.ArgumentParser:
    from agents.workflows.registry import WORKFLOWS

    p = argparse.ArgumentParser(prog="research-mcp agent", description="Run an agent or a workflow over the tools.")
    p.add_argument("question", nargs="?", help="the question for the ReAct agent")
    p.add_argument("--workflow", choices=sorted(WORKFLOWS), help="run a family workflow instead of the ReAct agent")
    p.add_argument("--input", default="{}", help="workflow inputs as a JSON object, or @file.json")
    p.add_argument("--list-workflows", action="store_true", help="list the workflows and their inputs")
    p.add_argument("--resume", metavar="THREAD", help="continue a stopped, killed or paused run")
    p.add_argument("--thread", metavar="ID", help="thread id for a new run (default: random)")
    p.add_argument("--http", metavar="URL", help="reach the server over streamable HTTP (e.g. http://127.0.0.1:8000/mcp)"
                   "; default: spawn `research-mcp serve` over stdio")
    p.add_argument("--token", help="bearer token for --http (default RESEARCH_MCP_TOKEN)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--approve", action="store_true", help="approve every tool call that needs approval")
    g.add_argument("--reject", action="store_true", help="reject every tool call that needs approval")
    p.add_argument("--max-steps", type=int, default=30, help="most model turns of the ReAct agent (default 30)")
    p.add_argument("--quiet", action="store_true", help="do not stream the steps")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    return p


def _load_json(text: str) -> dict[str, Any]:
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as fh:
            text = fh.read()
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("--input must be a JSON object")
    return value


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    from tools.errors import ResearchError

    args = _parser().parse_args(argv)
    err = Console(stderr=True, quiet=args.quiet)
    if args.list_workflows:
        from agents.workflows.registry import WORKFLOWS

        for name, wf in sorted(WORKFLOWS.items()):
            print(f"{name}: {wf.summary}\n  inputs: {json.dumps(wf.example)}")
        return EXIT_OK
    if not args.question and not args.workflow and not args.resume:
        print("research-mcp agent: give a question, --workflow NAME or --resume THREAD (see --help).", file=sys.stderr)
        return EXIT_CONFIG
    try:
        inputs = _load_json(args.input)
    except (OSError, ValueError) as exc:
        print(f"research-mcp agent: bad --input ({exc}).", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return _run(args, inputs, err)
    except ResearchError as exc:
        print(f"research-mcp agent: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print("research-mcp agent: interrupted; continue with --resume THREAD (the thread id is printed above).",
              file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:
        root = exc
        while isinstance(root, BaseExceptionGroup) and root.exceptions:
            root = root.exceptions[0]
        print(f"research-mcp agent: the run failed: {type(root).__name__}: {root}", file=sys.stderr)
        return EXIT_FAILED


def _run(args: argparse.Namespace, inputs: dict[str, Any], err: Any) -> int:
    import anyio

    from agents.connection import ServerTarget
    from agents.runner import load_trace
    from tools.settings import get_settings

    settings = get_settings()
    token = args.token or (settings.token.get_secret_value() if settings.token else None)
    target = ServerTarget(url=args.http, token=token) if args.http else ServerTarget()
    approval = "yes" if args.approve else "no" if args.reject else "ask"
    kind, question = "react", args.question
    if args.resume:
        old = load_trace(args.resume)
        if old is None:
            print(f"research-mcp agent: no run with thread id {args.resume!r} in this output folder.",
                  file=sys.stderr)
            return EXIT_CONFIG
        kind = old.get("kind", "react")
        question = old.get("question")
        inputs = (old.get("options") or {}).get("inputs", inputs)
    elif args.workflow:
        kind = args.workflow

    if kind == "react":
        from agents.model import chat_model
        from agents.react import ask

        model = chat_model()

        async def go() -> Any:
            return await ask(None if args.resume else question, target=target, thread_id=args.resume or args.thread,
                             resume=bool(args.resume), approval=approval, max_steps=args.max_steps, console=err,
                             model=model)
    else:
        from agents.workflows.registry import run_workflow

        async def go() -> Any:
            return await run_workflow(kind, inputs, target=target, thread_id=args.resume or args.thread,
                                      resume=bool(args.resume), approval=approval, console=err)

    result = anyio.run(go)
    if args.json:
        print(json.dumps({"thread_id": result.thread_id, "status": result.status, "answer": result.answer,
                          "trace": str(result.trace_path), "pending": result.pending}, default=str))
    elif result.answer:
        print(result.answer)
    err.print(f"[dim]trace: {result.trace_path}[/]")
    if result.status == "awaiting_approval":
        return EXIT_PAUSED
    if result.status == "no_tool_call":
        print("research-mcp agent: the model called no tool, so no tool result backs its reply. Use a model that "
              "calls tools (see README, Agents), or ask again.", file=sys.stderr)
        return EXIT_NO_TOOL
    return EXIT_OK if result.status == "done" else EXIT_FAILED
