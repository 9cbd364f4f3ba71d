"""Earth-Bench's dual-level metrics, computed per task and keyed by task id.

Trajectory level, each a fraction of the expected chain `E` (length n) matched by the agent's calls `P`:
- Tool-Any-Order: set recall, |names(E) ∩ names(P)| / |names(E)|.
- Tool-In-Order: the longest prefix of names(E) that occurs in names(P) as an in-order subsequence
  (other calls may sit between), over n.
- Tool-Exact-Match: the longest prefix of E matched position by position (P[i].name == E[i].name), over n.
- Parameter: the longest prefix of E matched position by position with the same name and the same
  arguments, over n.
Outcome level: answer accuracy (numbers within tolerance, a multiple-choice letter, or text) and
efficiency = agent tool calls / expected tool calls (1.0 is as economical as the reference chain).

Faults of the Earth-Agent evaluator that this module does not repeat:
1. Results were paired with ground truth by list position, so one missing result shifted every later
   task onto the wrong ground truth. Here results are keyed by task id (`score_suite`); a task
   without a result scores zero on every metric and is reported as missing.
2. Expected chains named tools the servers do not expose, so no agent could match them. Here
   `validate_chains` checks every expected tool name against the server's tool list before a run.
3. Arguments were compared as raw strings, so the same file given as a different absolute path (or a
   `sample://` URI, or an output file with its unique suffix) failed the Parameter metric. Here
   `normalize_value` maps paths to canonical forms (bundled files to `sample://...`, output files to
   `output://<name>` without the unique suffix, other paths resolved), numbers compare with a relative
   tolerance, and arguments left at their schema default equal arguments given explicitly.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call: the name and its arguments."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


def _names(calls: Sequence[Call]) -> list[str]:
    return [c.name for c in calls]


def tool_any_order(expected: Sequence[Call], predicted: Sequence[Call]) -> float:
    """Set recall of the expected tool names."""
    want = set(_names(expected))
    if not want:
        return 1.0
    return len(want & set(_names(predicted))) / len(want)


def tool_in_order(expected: Sequence[Call], predicted: Sequence[Call]) -> float:
    """Longest prefix of the expected names found in order (not necessarily adjacent), over its length."""
    if not expected:
        return 1.0
    it = iter(_names(predicted))
    matched = 0
    for name in _names(expected):
        if any(p == name for p in it):
            matched += 1
        else:
            break
    return matched / len(expected)


def tool_exact_match(expected: Sequence[Call], predicted: Sequence[Call]) -> float:
    """Longest positional prefix with the same names, over the expected length."""
    if not expected:
        return 1.0
    matched = 0
    for e, p in zip(expected, predicted, strict=False):
        if e.name != p.name:
            break
        matched += 1
    return matched / len(expected)


# normalisation of arguments -------------------------------------------------------------------------

_UNIQUE_SUFFIX = re.compile(r"-[0-9a-f]{8}(?=(\.[A-Za-z0-9]+)*$)")


@dataclass(frozen=True)
class PathContext:
    """Where paths point: the bundled samples, the output folder, the folder relative paths start at."""

    sample_dir: Path
    output_dir: Path
    cwd: Path


def default_context() -> PathContext:
    from tools.paths import SAMPLE_DIR
    from tools.settings import get_settings

    return PathContext(SAMPLE_DIR.resolve(), get_settings().output_dir.expanduser().resolve(), Path.cwd())


def _looks_like_path(text: str) -> bool:
    if text.startswith(("/", "./", "../", "~", "sample://", "output://", "file://")):
        return True
    return "/" in text and "://" not in text and not any(ch.isspace() for ch in text)


def normalize_path(text: str, ctx: PathContext) -> str:
    """A canonical form of a path: `sample://fam/file`, `output://name.ext` (unique suffix dropped), or resolved."""
    if text.startswith(("sample://", "output://")):
        return text
    raw = text.removeprefix("file://")
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = ctx.cwd / p
    p = Path(str(p.resolve()))
    if p.is_relative_to(ctx.sample_dir):
        return "sample://" + p.relative_to(ctx.sample_dir).as_posix()
    if p.is_relative_to(ctx.output_dir):
        return "output://" + _UNIQUE_SUFFIX.sub("", p.relative_to(ctx.output_dir).as_posix())
    return p.as_posix()


def normalize_value(value: Any, ctx: PathContext) -> Any:
    """Paths to canonical form, tuples to lists, mappings recursively; other values unchanged."""
    if isinstance(value, str):
        v = value.strip()
        return normalize_path(v, ctx) if _looks_like_path(v) else v
    if isinstance(value, Mapping):
        return {k: normalize_value(v, ctx) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize_value(v, ctx) for v in value]
    return value


def with_defaults(args: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """`args` plus every schema default not given, so an omitted default equals an explicit one."""
    out = dict(args)
    for name, prop in ((schema or {}).get("properties") or {}).items():
        if name not in out and isinstance(prop, Mapping) and "default" in prop:
            out[name] = prop["default"]
    return out


def values_equal(expected: Any, got: Any, rel_tol: float = 1e-6) -> bool:
    """Equality after normalisation: numbers within `rel_tol`, strings case-sensitively (with `*` globs
    for `output://` patterns), lists element-wise, mappings key-wise."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected == got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(float(expected), float(got), rel_tol=rel_tol, abs_tol=1e-12)
    if isinstance(expected, str) and isinstance(got, str):
        if "*" in expected and expected.startswith(("output://", "sample://")):
            return fnmatch.fnmatchcase(got, expected)
        return expected == got
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(values_equal(e, g, rel_tol) for e, g in zip(expected, got,
                                                                                           strict=True))
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        return expected.keys() == got.keys() and all(values_equal(expected[k], got[k], rel_tol) for k in expected)
    return expected == got


def same_call(expected: Call, got: Call, ctx: PathContext, schemas: Mapping[str, Mapping[str, Any]] | None = None
              ) -> bool:
    """Same tool and the same arguments, after defaults and path normalisation."""
    if expected.name != got.name:
        return False
    schema = (schemas or {}).get(expected.name)
    e = normalize_value(with_defaults(expected.args, schema), ctx)
    g = normalize_value(with_defaults(got.args, schema), ctx)
    return values_equal(e, g)


def parameter_match(expected: Sequence[Call], predicted: Sequence[Call], ctx: PathContext | None = None,
                    schemas: Mapping[str, Mapping[str, Any]] | None = None) -> float:
    """Longest positional prefix with the same names and arguments, over the expected length."""
    if not expected:
        return 1.0
    ctx = ctx or default_context()
    matched = 0
    for e, p in zip(expected, predicted, strict=False):
        if not same_call(e, p, ctx, schemas):
            break
        matched += 1
    return matched / len(expected)


def efficiency(expected: Sequence[Call], predicted: Sequence[Call]) -> float:
    """Agent tool calls over expected tool calls (1.0 = as economical as the reference)."""
    return len(predicted) / max(1, len(expected))


# answers ------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def answer_text(reply: str | None) -> str:
    """The part of a reply after the last `Answer:` marker (the whole reply when there is none)."""
    if not reply:
        return ""
    idx = reply.lower().rfind("answer:")
    return (reply[idx + len("answer:"):] if idx >= 0 else reply).strip()


def parse_number(text: str) -> float | None:
    """The first number in `text` (thousands commas dropped), or None."""
    m = _NUMBER.search(text.replace(",", "") if re.search(r"\d,\d{3}", text) else text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", "."))
    except ValueError:
        return None


def parse_choice(text: str, options: Iterable[str]) -> str | None:
    """The option letter the reply names (`B`, `(B)`, `B.`), or the letter of the option text it quotes."""
    letters = [o.upper() for o in options]
    m = re.match(r"^\W*\(?([A-Za-z])\)?(?:[\s.):,]|$)", text.strip())
    if m and m.group(1).upper() in letters:
        return m.group(1).upper()
    return None


@dataclass(frozen=True)
class Expected:
    """A task's answer: a number with tolerance, a choice letter among options, or an exact string."""

    kind: str  # "number" | "choice" | "text"
    value: Any
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    options: Mapping[str, str] | None = None


def answer_correct(expected: Expected, reply: str | None) -> bool:
    """Whether `reply` answers correctly (numbers within the tolerance; multiple choice by letter or text)."""
    text = answer_text(reply)
    if expected.kind == "number":
        got = parse_number(text)
        if got is None:
            return False
        tol = max(expected.abs_tol, expected.rel_tol * abs(float(expected.value)))
        return abs(got - float(expected.value)) <= tol
    if expected.kind == "choice":
        opts = expected.options or {}
        letter = parse_choice(text, opts)
        if letter is None:
            low = text.lower()
            hits = [k for k, v in opts.items() if str(v).lower() in low]
            letter = hits[0].upper() if len(hits) == 1 else None
        return letter == str(expected.value).upper()
    return " ".join(text.lower().split()).strip(" .") == " ".join(str(expected.value).lower().split()).strip(" .")


# suites ------------------------------------------------------------------------------------------------


@dataclass
class TaskScore:
    task_id: str
    style: str
    any_order: float
    in_order: float
    exact_match: float
    parameter: float
    correct: bool
    efficiency: float
    missing: bool = False


def score_task(task_id: str, style: str, expected_calls: Sequence[Call], expected_answer: Expected,
               predicted_calls: Sequence[Call] | None, reply: str | None, ctx: PathContext | None = None,
               schemas: Mapping[str, Mapping[str, Any]] | None = None) -> TaskScore:
    """Every metric of one task run; `predicted_calls=None` means the run produced no result."""
    if predicted_calls is None:
        return TaskScore(task_id, style, 0.0, 0.0, 0.0, 0.0, False, 0.0, missing=True)
    return TaskScore(
        task_id, style,
        any_order=tool_any_order(expected_calls, predicted_calls),
        in_order=tool_in_order(expected_calls, predicted_calls),
        exact_match=tool_exact_match(expected_calls, predicted_calls),
        parameter=parameter_match(expected_calls, predicted_calls, ctx, schemas),
        correct=answer_correct(expected_answer, reply),
        efficiency=efficiency(expected_calls, predicted_calls),
    )


def score_suite(tasks: Mapping[str, tuple[Sequence[Call], Expected]], results: Mapping[tuple[str, str], Any],
                styles: Sequence[str], ctx: PathContext | None = None,
                schemas: Mapping[str, Mapping[str, Any]] | None = None) -> list[TaskScore]:
    """Score every (task, style), pairing results with ground truth by task id, never by position.

    `results[(task_id, style)]` is `(predicted_calls, reply)`; a missing key scores zero as missing.
    """
    unknown = sorted({tid for tid, _ in results} - set(tasks))
    if unknown:
        raise KeyError(f"results for tasks not in the suite: {', '.join(unknown)}")
    scores = []
    for tid, (calls, answer) in tasks.items():
        for style in styles:
            got = results.get((tid, style))
            pred, reply = (got if got is not None else (None, None))
            scores.append(score_task(tid, style, calls, answer, pred, reply, ctx, schemas))
    return scores


def validate_chains(chains: Mapping[str, Sequence[Call]], server_tools: Iterable[str]) -> dict[str, list[str]]:
    """Task id -> expected tool names the server does not expose (empty when the suite is valid)."""
    known = set(server_tools)
    bad = {tid: sorted({c.name for c in calls} - known) for tid, calls in chains.items()}
    return {tid: names for tid, names in bad.items() if names}
