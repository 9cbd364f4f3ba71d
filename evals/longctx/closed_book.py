"""The closed-book control of the needle-QA suite: each question asked with the single-shot prompt and no text.

A NaturalQuestions answer can come from what the model learned in pretraining rather than from the gold passage
inserted into the book. A question this control answers right says nothing about reading; the QA accuracies of
`python -m evals.longctx` are read against it.

    python -m evals.longctx.closed_book --qa-items 30 --out DIR     # the configured endpoint, else the embedded model

Writes DIR/closed_book.csv (one row a question) and prints the count answered right.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from evals.longctx.run import nq_questions
from evals.rows import write_rows_csv
from tools.llm import ChatModel, default_llm
from tools.longctx.prompts import TaskSpec
from tools.longctx.scoring import substring_match
from tools.longctx.topologies import run_single_shot


async def closed_book(model: ChatModel, questions: list[dict[str, Any]], parallel: int = 8) -> list[dict[str, Any]]:
    """One row a question: the reply to the single-shot prompt with an empty text, scored by substring match."""
    gate = asyncio.Semaphore(max(1, parallel))

    async def one(index: int, q: dict[str, Any]) -> dict[str, Any]:
        async with gate:
            answer, c = await run_single_shot(model, TaskSpec(q["question"], "qa"), "")
        return {"question_index": index, "question": q["question"], "answers": " | ".join(q["answers"]),
                "correct": int(substring_match(answer, q["answers"])), "answer": answer[:80],
                "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "model": c.model}

    return list(await asyncio.gather(*(one(i, q) for i, q in enumerate(questions))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evals.longctx.closed_book", description=__doc__.splitlines()[0])
    ap.add_argument("--qa-items", type=int, default=30, help="the first N questions, as the eval's QA suite takes")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    async def go() -> list[dict[str, Any]]:
        model = default_llm()
        try:
            return await closed_book(model, nq_questions(args.qa_items), args.parallel)
        finally:
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()

    rows = asyncio.run(go())
    args.out.mkdir(parents=True, exist_ok=True)
    write_rows_csv(args.out / "closed_book.csv", rows)
    print(f"closed book ({rows[0]['model']}): {sum(r['correct'] for r in rows)}/{len(rows)} answered right "
          f"with no text; rows in {args.out / 'closed_book.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
