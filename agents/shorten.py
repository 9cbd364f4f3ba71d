"""Tool results cut to a size a small model can read: long lists and strings elided, the structure kept.

A tool result goes back to the model whole in its next prompt, and every later step's prompt keeps it. A
library's per-molecule checks or a molecule's feature vector run to tens of thousands of tokens, which a
small model prefills at 30-60 tokens a second and then reads badly. `fit_result` keeps a JSON result's
keys and scalars, shortens its lists to their first items with a count of the rest, and its long strings
to their start with their length, tightening until the text fits; other text is cut at the limit.
"""

from __future__ import annotations

import json
from typing import Any

ELIDED = "... ({n} more items)"


def _shrink(value: Any, items: int, chars: int) -> Any:
    if isinstance(value, dict):
        return {k: _shrink(v, items, chars) for k, v in value.items()}
    if isinstance(value, list):
        kept = [_shrink(v, items, chars) for v in value[:items]]
        return [*kept, ELIDED.format(n=len(value) - items)] if len(value) > items else kept
    if isinstance(value, str) and len(value) > chars:
        return f"{value[:chars]}... ({len(value)} characters)"
    return value


def fit_result(text: str, max_chars: int) -> str:
    """`text` in at most about `max_chars` characters: JSON compacted, then its lists and strings elided with
    what was left out said; text that is not JSON is cut at the limit with a note of its full length."""
    if len(text) <= max_chars:
        return text
    stripped = text.strip()
    try:
        data = json.loads(stripped) if stripped.startswith(("{", "[")) else None
    except json.JSONDecodeError:
        data = None
    if data is not None:
        for items, chars in ((20, 400), (10, 200), (5, 120), (3, 80), (2, 60), (1, 40)):
            out = json.dumps(_shrink(data, items, chars), ensure_ascii=False)
            if len(out) <= max_chars:
                return out
    return f"{stripped[:max_chars]}... (result cut at {max_chars} of {len(stripped)} characters)"
