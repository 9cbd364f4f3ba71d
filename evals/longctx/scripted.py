"""Rules for a scripted chat endpoint that behaves like the divide-and-conquer paper's agents.

Workers look the asked-for thing up in their chunk or say NA; the manager picks the answer that is
not NA; chain steps carry what they found in their notes; map calls give a confidence; collapse and
reduce keep the most confident answer. The single-shot reader finds the answer too, but gets it
wrong with probability 1 - exp(-alpha * (T/1000)^beta) for a text of T tokens (a deterministic
draw per question and length), so its accuracy decays with length the way the noise model
assumes. Workers can be given the same law over their chunk length (`worker_noise`).

What can be looked up: a UUID key (`Key: "<uuid>"` in the task), a QA question registered with
its evidence passage and answer, or `occurrences of "<word>"` for counting, `values after "<tag>"`
for min and max.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

from tools.longctx.prompts import NA, parse_structured
from tools.longctx.tokens import default_tokenizer

_KEY = re.compile(r'Key:\s*"([0-9a-fA-F-]{36})"')
_COUNT = re.compile(r'occurrences of "([^"]+)"')
_VALUES = re.compile(r'values after "([^"]+)"')


def last_user(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def section(prompt: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
    return m.group(1) if m else ""


def task_of(prompt: str) -> str:
    m = re.search(r"\nTask: (.*?)\n", prompt, re.DOTALL)
    return m.group(1) if m else ""


def _draw(*parts: object) -> float:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


@dataclass
class PaperRules:
    """A callable rule for `ScriptedLLM`; see the module docstring."""

    qa: dict[str, tuple[str, str]] = field(default_factory=dict)  # question -> (evidence, answer)
    alpha: float = 0.02
    beta: float = 1.5
    worker_noise: bool = False
    seed: int = 0

    def register_qa(self, question: str, evidence: str, answer: str) -> None:
        self.qa[question.strip()] = (evidence, answer)

    # What a perfect reader finds in `text` for `task` (None when it is not there).
    def find(self, text: str, task: str) -> str | None:
        m = _KEY.search(task)
        if m:
            v = re.search(rf'"{re.escape(m.group(1))}":\s*"([^"]+)"', text)
            return v.group(1) if v else None
        m = _COUNT.search(task)
        if m:
            n = text.count(m.group(1))
            return f"Result: {n}" if n else None
        m = _VALUES.search(task)
        if m:
            vals = [float(x) for x in re.findall(rf"{re.escape(m.group(1))}\s*(-?\d+(?:\.\d+)?)", text)]
            if not vals:
                return None
            pick = min(vals) if "smallest" in task or "minimum" in task else max(vals)
            return f"Result: {pick:g}"
        for question, (evidence, answer) in self.qa.items():
            if question in task:
                return answer if evidence in text else None
        return None

    def p_correct(self, tokens: int) -> float:
        return math.exp(-self.alpha * (tokens / 1000) ** self.beta)

    def _noisy(self, text: str, task: str, stage: str) -> str | None:
        found = self.find(text, task)
        if found is None:
            return None
        tokens = default_tokenizer().count(text)
        if _draw(self.seed, stage, task, tokens) < self.p_correct(tokens):
            return found
        return "wrong-" + hashlib.sha1(f"{task}{tokens}".encode()).hexdigest()[:8] if stage == "single" else None

    def __call__(self, body: dict[str, Any]) -> str:
        p = last_user(body)
        task = task_of(p)
        if p.startswith("Part ") and "<notes>" in p:  # chain step
            notes = section(p, "notes")
            found = self.find(section(p, "text"), task)
            if found is None:
                return notes
            if found.startswith("Result: ") and notes.startswith("Result: "):
                return f"Result: {float(notes[8:]) + float(found[8:]):g}"
            return found
        if p.startswith("Part "):
            text = section(p, "text")
            found = self._noisy(text, task, "worker") if self.worker_noise else self.find(text, task)
            if "Extracted information" in p:
                if found is None:
                    return "Extracted information: NA\nRationale: NA\nAnswer: NA\nConfidence: 0"
                return f"Extracted information: {found}\nRationale: stated in this part\nAnswer: {found}\nConfidence: 5"
            if found is None:
                return NA
            return f"{found}\nEvidence: {found}" if self.qa and not found.startswith("Result") else found
        if p.startswith("Reports from"):
            for line in section(p, "reports").splitlines():
                m = re.match(r"Worker \d+ \(part \d+\): (.*)", line)
                if m and m.group(1).strip() != NA:
                    return m.group(1).strip()
            return NA
        if p.startswith("Notes gathered"):
            notes = section(p, "notes").strip()
            return notes or NA
        if p.startswith(("Results from", "Final results from")):
            best, conf = NA, -1
            for block in section(p, "results").split("\n\n"):
                a, c = parse_structured(block)
                if a != NA and c > conf:
                    best, conf = a, c
            if p.startswith("Final"):
                return best
            return f"Extracted information: {best}\nRationale: merged\nAnswer: {best}\nConfidence: {max(conf, 0)}"
        if p.startswith("A long text is split"):
            return f"Report exactly what this asks, or NA if your part lacks it: {task}"
        if p.startswith("The full text."):
            return self._noisy(section(p, "text"), task, "single") or NA
        return NA
