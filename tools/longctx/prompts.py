"""Prompt templates per task kind and stage, and parsers for what the models answer.

Task kinds: retrieval (an exact value), qa (a short answer), summarization, aggregation (min, max or
count over the text). Stages: single-shot (the whole text in one call), worker (one chunk), manager
(the workers' reports), chain step and chain final (Chain-of-Agents), map, collapse and reduce
(LLM x MapReduce), and the planner. Workers answer exactly NA when their chunk lacks the
information; the manager is told that most workers lack it, as in the divide-and-conquer paper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tools.llm import Message

TaskKind = Literal["retrieval", "qa", "summarization", "aggregation"]
Aggregate = Literal["min", "max", "count"]
TASK_KINDS: tuple[str, ...] = ("retrieval", "qa", "summarization", "aggregation")
NA = "NA"

_SYSTEM = "You read long texts carefully and answer only from what they say."

_ANSWER_FORM: dict[str, str] = {
    "retrieval": "Answer with the exact value only, copied from the text.",
    "qa": "Answer with a short phrase only (a name, a number, a date), no explanation.",
    "summarization": "Write the summary only.",
    "aggregation": "Answer with the number only, in the form 'Result: <number>'.",
}

_AGG_WORKER: dict[str, str] = {
    "count": "Count the items in this part that the task asks about.",
    "min": "Find the smallest value in this part among the items the task asks about.",
    "max": "Find the largest value in this part among the items the task asks about.",
}

_WORKER_DUTY: dict[str, str] = {
    "retrieval": "If this part contains what the task asks for, reply with the single line 'Answer: <the exact value, "
    "copied from the text>'. If it does not, reply with the single line 'Answer: NA'.",
    "qa": "First copy the sentence of this part that answers the task, on a line 'Evidence: <sentence>'. Then give "
    "the short answer (a name, a number, a date, a few words) on a line 'Answer: <answer>'. If no sentence of this "
    "part answers the task, reply with the single line 'Answer: NA'.",
    "summarization": "Summarize what this part says that bears on the task, in at most 5 sentences. "
    "If nothing in this part bears on it, answer exactly NA.",
    "aggregation": "{agg} Answer in the form 'Result: <number>' only, or exactly NA if this part has no such items.",
}

_MANAGER_DUTY: dict[str, str] = {
    "retrieval": "Give the value the reports found. If every report is NA, answer NA.",
    "qa": "Decide the answer from the reports that are not NA; when they disagree, prefer the one whose "
    "evidence answers the question most directly. If every report is NA, answer NA.",
    "summarization": "Merge the reports, in the order of the parts, into one coherent summary that serves the task.",
    "aggregation": "Combine the per-part results into the result over the whole text ({agg_combine}).",
}
_AGG_COMBINE = {"count": "add the counts", "min": "take the smallest", "max": "take the largest"}

_STRUCTURED_FORM = (
    "Reply in exactly this form:\n"
    "Extracted information: <the facts that bear on the task, or NA>\n"
    "Rationale: <how they answer the task>\n"
    "Answer: <the answer, or NA>\n"
    "Confidence: <an integer from 0 (no information) to 5 (stated plainly in the text)>"
)


@dataclass(frozen=True)
class TaskSpec:
    """What is asked: the task text, its kind and, for aggregation, the operation."""

    task: str
    kind: TaskKind = "qa"
    aggregate: Aggregate | None = None

    def agg(self) -> str:
        return _AGG_WORKER[self.aggregate or "count"]


def _fill(template: str, spec: TaskSpec) -> str:
    return template.replace("{agg}", spec.agg()).replace("{agg_combine}", _AGG_COMBINE[spec.aggregate or "count"])


def _msgs(user: str) -> list[Message]:
    return [Message("system", _SYSTEM), Message("user", user)]


def single_shot(spec: TaskSpec, text: str) -> list[Message]:
    """The whole text in one call."""
    duty = _ANSWER_FORM[spec.kind]
    if spec.kind == "aggregation":
        duty = f"{spec.agg().replace('this part', 'the text')} {duty}"
    return _msgs(f"The full text.\n<text>\n{text}\n</text>\nTask: {spec.task}\n{_fill(duty, spec)}")


def worker(spec: TaskSpec, text: str, part: int, parts: int, instruction: str | None = None) -> list[Message]:
    """One worker reads one chunk and answers or says NA."""
    task = instruction or spec.task
    return _msgs(
        f"Part {part} of {parts} of a long text. You see only this part.\n<text>\n{text}\n</text>\n"
        f"Task: {task}\n{_fill(_WORKER_DUTY[spec.kind], spec)}"
    )


def manager(spec: TaskSpec, reports: list[tuple[int, str]], parts: int, na_parts: list[int],
            failed_parts: list[int]) -> list[Message]:
    """The manager decides from the workers' reports, warned that most workers lacked the information."""
    lines = [f"Worker {i} (part {i}): {text}" for i, text in reports]
    if na_parts:
        lines.append(f"Workers that answered NA: parts {compress_ranges(na_parts)}.")
    if failed_parts:
        lines.append(f"Parts that could not be read (the model call failed): {compress_ranges(failed_parts)}.")
    body = "\n".join(lines)
    return _msgs(
        f"Reports from {parts} workers, each of whom read one part of a long text. Most workers did not have "
        f"the information and answered NA; only the few other reports can matter, and some of those may be wrong.\n"
        f"<reports>\n{body}\n</reports>\nTask: {spec.task}\n{_fill(_MANAGER_DUTY[spec.kind], spec)} "
        f"{_ANSWER_FORM[spec.kind]}"
    )


def chain_step(spec: TaskSpec, text: str, part: int, parts: int, notes: str,
               instruction: str | None = None) -> list[Message]:
    """A Chain-of-Agents worker: read this part and rewrite the running notes. The part comes before the notes, as
    in the paper's prompt, so a model server that keeps prompt starts reuses the part's prefill across tasks."""
    return _msgs(
        f"Part {part} of {parts} of a long text, read in order.\n<text>\n{text}\n</text>\n"
        f"Notes carried over from the earlier parts:\n<notes>\n{notes or NA}\n</notes>\n"
        f"Task: {instruction or spec.task}\n"
        "Rewrite the notes so that they keep everything from the earlier notes and from this part that helps with "
        "the task, in at most 150 words. Write only the notes."
    )


def chain_final(spec: TaskSpec, notes: str, parts: int, failed_parts: list[int] | None = None) -> list[Message]:
    """The Chain-of-Agents manager answers from the final notes."""
    missing = (f" Parts {compress_ranges(failed_parts)} could not be read (the model call failed)."
               if failed_parts else "")
    return _msgs(
        f"Notes gathered by reading a long text part by part ({parts} parts).{missing}\n"
        f"<notes>\n{notes or NA}\n</notes>\n"
        f"Task: {spec.task}\n{_fill(_MANAGER_DUTY[spec.kind].replace('reports', 'notes'), spec)} "
        f"{_ANSWER_FORM[spec.kind]}"
    )


def map_step(spec: TaskSpec, text: str, part: int, parts: int, instruction: str | None = None) -> list[Message]:
    """An LLM x MapReduce map call: structured output with a confidence score."""
    return _msgs(
        f"Part {part} of {parts} of a long text. You see only this part.\n<text>\n{text}\n</text>\n"
        f"Task: {instruction or spec.task}\n{_fill(_WORKER_DUTY[spec.kind].split('. ')[0], spec)}.\n{_STRUCTURED_FORM}"
    )


def _results_block(results: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"[{label}]\n{text}" for label, text in results)


def collapse_step(spec: TaskSpec, results: list[tuple[str, str]]) -> list[Message]:
    """Merge several structured results into one, resolving conflicts by confidence."""
    return _msgs(
        f"Results from {len(results)} parts of a long text.\n<results>\n{_results_block(results)}\n</results>\n"
        f"Task: {spec.task}\nMerge them into one result. Where they conflict, prefer higher confidence; ignore NA.\n"
        f"{_STRUCTURED_FORM}"
    )


def reduce_step(spec: TaskSpec, results: list[tuple[str, str]]) -> list[Message]:
    """The final answer from the (collapsed) structured results."""
    return _msgs(
        f"Final results from {len(results)} groups of parts of a long text.\n<results>\n{_results_block(results)}\n"
        f"</results>\nTask: {spec.task}\nGive the final answer. Where results conflict, prefer higher confidence; "
        f"ignore NA. If every result is NA, answer NA. {_ANSWER_FORM[spec.kind]}"
    )


def planner(spec: TaskSpec, parts: int) -> list[Message]:
    """Rewrite the task into an instruction for workers who each see one part."""
    return _msgs(
        f"A long text is split into {parts} parts; a worker reads each part alone and cannot see the others.\n"
        f"Task: {spec.task}\nWrite the instruction each worker should follow on its part: what exactly to look for "
        "and what to report. Reply with the instruction only, in at most 80 words."
    )


_NA_RE = re.compile(r"""^\s*["'`*]*\s*(NA|N/A|none|not available|not found)\b""", re.IGNORECASE)
_RESULT_RE = re.compile(r"result\s*:\s*(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)
_NUM_RE = re.compile(r"^\s*(-?\d[\d,]*(?:\.\d+)?)\s*\.?\s*$")


_ANSWER_LINE_RE = re.compile(r"^\s*[*_`]*answer[*_`]*\s*:\s*(.*)$", re.IGNORECASE)


def labelled_answer(text: str) -> str:
    """The value of the last 'Answer: ...' line of a reply (instruct models write their answer so); the whole
    reply, stripped, when it has no such line."""
    for line in reversed(text.strip().splitlines()):
        m = _ANSWER_LINE_RE.match(line)
        if m:
            return m.group(1).strip().strip("*_`").strip()
    return text.strip()


def is_na(text: str) -> bool:
    """Whether a worker's reply says it found nothing (NA, N/A, none...)."""
    return not text.strip() or bool(_NA_RE.match(text))


def first_line(text: str) -> str:
    """The first non-empty line, without quotes or a trailing period."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip().strip("\"'`").rstrip(".").strip()
    return ""


def parse_number(text: str) -> float | None:
    """The number in 'Result: <n>' or a bare number; None when there is none."""
    m = _RESULT_RE.search(text) or _NUM_RE.match(text)
    return float(m.group(1).replace(",", "")) if m else None


def parse_structured(text: str) -> tuple[str, int]:
    """(answer, confidence) from a map/collapse reply; ('NA', 0) when missing."""
    answer = NA
    confidence = 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        k = key.strip().lower()
        if k == "answer" and value.strip():
            answer = value.strip()
        elif k == "confidence":
            m = re.search(r"\d+", value)
            confidence = min(5, int(m.group())) if m else 0
    return answer, confidence


def format_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def compress_ranges(indices: list[int]) -> str:
    """[1,2,3,5,7,8] -> '1-3, 5, 7-8'."""
    out: list[str] = []
    items = sorted(indices)
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        out.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ", ".join(out)
