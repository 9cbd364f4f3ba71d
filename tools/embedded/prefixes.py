"""Key/value caches of prompt prefixes that later prompts repeat, kept within a byte budget.

A prompt that shares a long start with an earlier one (the same document asked another question, the same
chunk read for another task, an agent's transcript one step longer, a fixed system text and tool list)
skips the prefill of that start. Each kept cache is the state after exactly its prefix tokens, never a
longer cache cut back, so sliding-window layers (which forget old positions) stay exact. A prefix is kept
where a prompt's caller marks its head, and where a prompt meets the longest common start it has with a
recent prompt: the second prompt over a document stores the document's cache, the third and later reuse it.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np

MIN_TOKENS = 32  # shorter prefixes are cheaper to prefill again than to keep and copy
RECENT_PROMPTS = 256  # prompts remembered (token ids only) to find shared starts in


@dataclass
class _Entry:
    ids: np.ndarray
    cache: object
    nbytes: int


def cache_nbytes(cache: object) -> int:
    """Bytes held by a transformers key/value cache (its layers' key and value tensors)."""
    total = 0
    for layer in getattr(cache, "layers", []) or []:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if t is not None and hasattr(t, "untyped_storage"):
                total += t.untyped_storage().nbytes()
    return total


def _compact(cache: object) -> object:
    """A deep copy whose tensors own just their data: a sliding-window layer's keys are a view of a longer
    tensor, which a plain copy would keep whole."""
    out = copy.deepcopy(cache)
    for layer in getattr(out, "layers", []) or []:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if t is not None and hasattr(t, "clone"):
                setattr(layer, name, t.clone())
    return out


def shared_start(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens `a` and `b` have in common."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


class PrefixCache:
    """Least-recently-used key/value caches of prompt prefixes, at most `max_bytes` in all (0: keep none)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._recent: deque[np.ndarray] = deque(maxlen=RECENT_PROMPTS)
        self._lock = threading.Lock()

    @staticmethod
    def _key(ids: np.ndarray) -> bytes:
        return hashlib.blake2b(ids.astype(np.int64).tobytes(), digest_size=16).digest()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def longest(self, ids: np.ndarray, below: int) -> tuple[int, object | None]:
        """The longest kept prefix of `ids` shorter than `below` tokens: (its length, a copy of its cache to
        extend), or (0, None)."""
        with self._lock:
            best_key, best = None, None
            for key, e in self._entries.items():
                n = len(e.ids)
                if n < below and (best is None or n > len(best.ids)) and np.array_equal(ids[:n], e.ids):
                    best_key, best = key, e
            if best is None:
                return 0, None
            self._entries.move_to_end(best_key)
            return len(best.ids), copy.deepcopy(best.cache)

    def shared_with_recent(self, ids: np.ndarray) -> int:
        """The longest start `ids` shares with a recent prompt (0 when none)."""
        with self._lock:
            return max((shared_start(ids, r) for r in self._recent), default=0)

    def remember(self, ids: np.ndarray) -> None:
        """Note a prompt's tokens, so that a later prompt can find the start they share."""
        if self.max_bytes:
            with self._lock:
                self._recent.append(ids)

    def keep(self, ids: np.ndarray, cache: object) -> None:
        """Keep a copy of `cache`, the state after exactly `ids`, dropping the least recently used to fit."""
        if not self.max_bytes or len(ids) < MIN_TOKENS:
            return
        entry = _Entry(ids.copy(), None, 0)
        entry.cache = _compact(cache)
        entry.nbytes = cache_nbytes(entry.cache)
        if entry.nbytes > self.max_bytes:
            return
        with self._lock:
            self._entries[self._key(ids)] = entry
            self._entries.move_to_end(self._key(ids))
            while sum(e.nbytes for e in self._entries.values()) > self.max_bytes:
                self._entries.popitem(last=False)
