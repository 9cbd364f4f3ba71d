"""A fixed-latency OpenAI-compatible chat endpoint in its own process, for the chunked-QA concurrency row.

It serves the divide-and-conquer paper's scripted agents (`evals.longctx.scripted.PaperRules`) and sleeps
`--latency` seconds before every reply. Run apart from the benchmark so its request handling does not share
the benchmark's interpreter, as a real endpoint would not. Prints its base URL on the first line of stdout and
serves until stdin closes.

    python -m evals.perf.endpoint --latency 0.2
"""

from __future__ import annotations

import argparse
import sys

from evals.longctx.scripted import PaperRules
from evals.scripted_endpoint import ScriptedLLM


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.perf.endpoint", description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="seconds slept before each reply")
    args = ap.parse_args(argv)
    with ScriptedLLM(PaperRules(), latency_s=args.latency) as llm:
        print(llm.base_url, flush=True)
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
