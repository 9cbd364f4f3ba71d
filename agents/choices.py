"""Multiple-choice questions answered with a value: the option letter whose range holds it.

A question that lists options as lines `A. below 0.2`, `B. 0.2 to 0.4`, ... asks for a letter, but a small
model states the value it computed ("Answer: 0.33"). When the options are numeric ranges and exactly one
holds the stated number, the answer line becomes that letter, with the value kept beside it.
"""

from __future__ import annotations

import math
import re

OPTION = re.compile(r"^\s*\(?([A-H])[.):]\s+(.+?)\s*$", re.MULTILINE)
NUM = r"[-+]?\d+(?:\.\d+)?"
BELOW = re.compile(rf"^(?:below|under|less than|lower than|<)\s*({NUM})", re.IGNORECASE)
ABOVE = re.compile(rf"^(?:above|over|more than|greater than|higher than|>)\s*({NUM})", re.IGNORECASE)
BETWEEN = re.compile(rf"^(?:between\s+)?({NUM})\s*(?:[a-z%°]+\s*)?(?:to|and|-|–)\s*({NUM})", re.IGNORECASE)
ANSWER = re.compile(r"^([ \t*]*(?:final )?answer[ \t*]*:[ \t*]*)(.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
VALUE = re.compile(rf"^\W*({NUM})(?![\w.])")


def options(question: str) -> dict[str, str]:
    """The lettered options a question lists one to a line (`A. text`), when there are two or more in order."""
    found = dict(OPTION.findall(question))
    letters = list(found)
    return found if len(letters) >= 2 and letters == [chr(ord("A") + i) for i in range(len(letters))] else {}


def option_range(text: str) -> tuple[float, float] | None:
    """The interval an option's text names: `below X`, `above X`, `X to Y` (units after the numbers allowed)."""
    text = text.strip()
    if m := BELOW.match(text):
        return -math.inf, float(m.group(1))
    if m := ABOVE.match(text):
        return float(m.group(1)), math.inf
    if m := BETWEEN.match(text):
        lo, hi = float(m.group(1)), float(m.group(2))
        return (lo, hi) if lo < hi else None
    return None


def choice_for(value: float, opts: dict[str, str]) -> str | None:
    """The one option whose range holds `value` (a shared bound counts for the range it starts), if every
    option is a range."""
    ranges = {k: option_range(v) for k, v in opts.items()}
    if not ranges or any(r is None for r in ranges.values()):
        return None
    hits = [k for k, (lo, hi) in ranges.items() if lo <= value < hi]
    return hits[0] if len(hits) == 1 else None


def with_choice(reply: str, question: str) -> str:
    """`reply` with its last `Answer:` line given the option letter, when the question lists range options
    and the line states a number instead of a letter: `Answer: 0.33` becomes `Answer: B (0.33)`."""
    opts = options(question)
    lines = list(ANSWER.finditer(reply))
    if not opts or not lines:
        return reply
    last = lines[-1]
    value = VALUE.match(last.group(2))
    if not value:
        return reply
    letter = choice_for(float(value.group(1)), opts)
    if letter is None:
        return reply
    line = f"{last.group(1)}{letter} ({last.group(2).strip()})"
    return reply[:last.start()] + line + reply[last.end():]
