"""The scripted oracle policy: a ScriptedLLM rule that follows each task's expected chain.

It recognises the task by the question in the request, issues the chain's next tool call (filling
references from the earlier tool results in the conversation), and when the chain is done answers
from those results with the task's reading of them. Run through the real agent (ChatOpenAI, MCP,
tools), it checks the harness and the tools end to end; its accuracy measures the tools (given the
right chain) against the independent reference answers, not a model.
"""

from __future__ import annotations

import json
from typing import Any

from evals.agents.suite import Task, resolve_refs


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def first_user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages", []):
        if m.get("role") == "user":
            return _content_text(m.get("content"))
    return ""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in the conversation so far, parsed from JSON (text results as `{"text": ...}`)."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            text = _content_text(m.get("content"))
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = {"text": text}
            out.append(value if isinstance(value, dict) else {"value": value})
    return out


class Oracle:
    """A rule for `ScriptedLLM` over `tasks`: `Oracle(tasks)(body) -> reply`."""

    def __init__(self, tasks: list[Task], styles: tuple[str, ...] = ("instruction", "goal")) -> None:
        self.by_question = {t.question(s): t for t in tasks for s in styles}

    def task_of(self, body: dict[str, Any]) -> Task | None:
        """The task whose question the request's first user message asks (the agent may add a line after it:
        the tools it chose for the question)."""
        text = first_user_text(body)
        if text in self.by_question:
            return self.by_question[text]
        asked = [q for q in self.by_question if text.startswith(q + "\n")]
        return self.by_question[max(asked, key=len)] if asked else None

    def __call__(self, body: dict[str, Any]) -> str | dict[str, Any]:
        task = self.task_of(body)
        if task is None:
            return "I do not know this task. Answer: unknown"
        results = tool_results(body)
        step = len(results)
        if step < len(task.steps):
            s = task.steps[step]
            try:
                args = resolve_refs(s.args, results)
            except (KeyError, IndexError) as exc:
                return f"Step {step} did not return {exc}: {json.dumps(results[-1])[:300]}\nAnswer: unknown"
            plan = "Plan: " + "; ".join(f"{i + 1}. {x.name}" for i, x in enumerate(task.steps)) if step == 0 else ""
            return {"content": plan or f"Step {step + 1}: {s.name}.",
                    "tool_calls": [{"function": {"name": s.name, "arguments": args}}]}
        try:
            return f"The tool results give the answer.\nAnswer: {task.read(results)}"
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            return f"The results could not be read ({type(exc).__name__}: {exc}).\nAnswer: unknown"


EXTRA_CALL = {"eo": ("eo_list_scenes", {}), "graph": ("graph_list_tasks", {}),
              "dti": ("dti_validate", {"smiles": ["CCO"]}), "nid": ("nid_generate", {"identifier": "0" * 32, "n": 2})}
PERTURBATIONS = ("none", "absolute_path", "extra_call", "skip_last", "wrong_argument")


def _absolute(value: Any) -> Any:
    from tools.paths import SAMPLE_DIR

    if isinstance(value, str) and value.startswith("sample://"):
        return str(SAMPLE_DIR / value.removeprefix("sample://"))
    if isinstance(value, dict):
        return {k: _absolute(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v) for v in value]
    return value


def _shift(value: Any, by: int) -> Any:
    from evals.agents.suite import Ref

    if isinstance(value, Ref):
        return Ref(value.step + by, value.field, value.pattern)
    if isinstance(value, dict):
        return {k: _shift(v, by) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(v, by) for v in value]
    return value


def _wrong(args: dict[str, Any]) -> dict[str, Any]:
    out = dict(args)
    if "index" in out:
        out["index"] = "NDWI" if out["index"] != "NDWI" else "NDVI"
    elif "source" in out and "target" in out:
        out["source"], out["target"] = out["target"], out["source"]
        out["task"] = "diameter" if out.get("task") == "shortest_path" else out.get("task")
    elif "n" in out:
        out["n"] = out["n"] + 1
    elif "smiles" in out:
        out["smiles"] = list(reversed(out["smiles"]))
    return out


class Perturbed(Oracle):
    """The oracle with one deterministic deviation per task (cycling through `PERTURBATIONS`).

    absolute_path gives bundled files as absolute paths (the Parameter metric must still match);
    extra_call adds a look-up first (Exact-Match drops, In-Order does not, efficiency rises);
    skip_last drops the chain's last step and answers from what it has (Any-Order drops);
    wrong_argument changes an argument of the first step (Parameter drops, the answer usually fails).
    """

    def __init__(self, tasks: list[Task], styles: tuple[str, ...] = ("instruction", "goal")) -> None:
        super().__init__(tasks, styles)
        self.kind = {t.id: PERTURBATIONS[i % len(PERTURBATIONS)] for i, t in enumerate(tasks)}

    def plan(self, task: Task) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """The calls to make and how many leading results the answer ignores."""
        steps = [(s.name, s.args) for s in task.steps]
        kind = self.kind[task.id]
        if kind == "absolute_path":
            return [(n, _absolute(a)) for n, a in steps], 0
        if kind == "extra_call":
            return [EXTRA_CALL[task.family], *[(n, _shift(a, 1)) for n, a in steps]], 1
        if kind == "skip_last" and len(steps) > 1:
            return steps[:-1], 0
        if kind == "wrong_argument":
            return [(steps[0][0], _wrong(steps[0][1])), *steps[1:]], 0
        return steps, 0

    def __call__(self, body: dict[str, Any]) -> str | dict[str, Any]:
        task = self.task_of(body)
        if task is None:
            return "I do not know this task. Answer: unknown"
        plan, skip = self.plan(task)
        results = tool_results(body)
        if len(results) < len(plan):
            name, args = plan[len(results)]
            try:
                args = resolve_refs(args, results)
            except (KeyError, IndexError) as exc:
                return f"A step did not return {exc}.\nAnswer: unknown"
            return {"content": f"Step {len(results) + 1}: {name}.",
                    "tool_calls": [{"function": {"name": name, "arguments": args}}]}
        try:
            return f"From the tool results.\nAnswer: {task.read(results[skip:])}"
        except (KeyError, IndexError, TypeError, ValueError, StopIteration) as exc:
            return f"The results could not be read ({type(exc).__name__}).\nAnswer: unknown"
