"""Continuous batching for the embedded model: concurrent requests decode together, one forward pass a token.

On a CPU a decoding step of this model is bound by reading its weights (about 1 GB in float32), not by
arithmetic, so a step for eight rows costs little more than a step for one. `DecodeBatcher` owns the model
in one thread: a request that arrives is prefilled on its own (from the longest kept prefix, as
`LocalLM.start` does), then joins the running batch at the next step; a row that ends (EOS, a stop string,
its `max_tokens`, a cancel) leaves at once. Rows of different lengths share one key/value cache, padded on
the left and masked, each with its own positions, so every row's tokens are those it would get alone (to
float rounding). Other work on the model (`run`: prompt log-probs) waits for the current step.
"""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from tools.embedded.runtime import Decoding, Generation, LocalLM
from tools.errors import Cancelled

MAX_BATCH = 8


def _pad_layers(cache: object, frame: int) -> None:
    """Left-pad every layer of a key/value cache to a frame of `frame` positions (a sliding-window layer to
    its window's share of it)."""
    import torch

    for layer in cache.layers:
        keys, values = layer.keys, layer.values
        want = min(frame, layer.sliding_window - 1) if getattr(layer, "is_sliding", False) else frame
        keys, values = keys[:, :, max(0, keys.shape[-2] - want):], values[:, :, max(0, values.shape[-2] - want):]
        n = want - keys.shape[-2]
        if n > 0:
            keys = torch.cat([keys.new_zeros(*keys.shape[:2], n, keys.shape[-1]), keys], dim=-2)
            values = torch.cat([values.new_zeros(*values.shape[:2], n, values.shape[-1]), values], dim=-2)
        layer.keys, layer.values = keys, values
        if getattr(layer, "is_sliding", False):
            layer.cumulative_length = frame


class _Batch:
    """The rows decoding together and their shared, left-padded key/value cache."""

    def __init__(self) -> None:
        self.rows: list[Decoding] = []
        self.futures: list[Future] = []
        self.cache: object = None
        self.frame = 0

    def add(self, row: Decoding, future: Future) -> None:
        import torch

        frame = max(self.frame, row.position)
        if self.cache is not None:
            _pad_layers(self.cache, frame)
        _pad_layers(row.past, frame)
        if self.cache is None:
            self.cache = row.past
        else:
            for mine, theirs in zip(self.cache.layers, row.past.layers, strict=True):
                mine.keys = torch.cat([mine.keys, theirs.keys], dim=0)
                mine.values = torch.cat([mine.values, theirs.values], dim=0)
        row.past = None
        self.frame = frame
        self.rows.append(row)
        self.futures.append(future)

    def keep(self, alive: list[int]) -> None:
        """Keep only the rows at `alive` and drop the padding columns that none of them needs."""
        import torch

        if not alive:
            self.rows, self.futures, self.cache, self.frame = [], [], None, 0
            return
        if len(alive) < len(self.rows):
            index = torch.tensor(alive)
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[index], layer.values[index]
            self.rows = [self.rows[i] for i in alive]
            self.futures = [self.futures[i] for i in alive]
        frame = max(r.position for r in self.rows)
        if frame < self.frame:
            for layer in self.cache.layers:
                if not getattr(layer, "is_sliding", False):
                    layer.keys = layer.keys[:, :, self.frame - frame:]
                    layer.values = layer.values[:, :, self.frame - frame:]
            _pad_layers(self.cache, frame)
            self.frame = frame

    def step(self, lm: LocalLM) -> None:
        """One forward pass over every row's next token; each row then takes its next token."""
        import torch

        pad = [self.frame - r.position for r in self.rows]
        mask = torch.ones((len(self.rows), self.frame + 1), dtype=torch.long)
        for i, n in enumerate(pad):
            mask[i, :n] = 0
        res = lm.model(input_ids=torch.tensor([[r.next_input] for r in self.rows]), attention_mask=mask,
                       position_ids=torch.tensor([[r.position] for r in self.rows]), past_key_values=self.cache,
                       use_cache=True, logits_to_keep=1)
        self.cache = res.past_key_values
        self.frame += 1
        for i, row in enumerate(self.rows):
            row.position += 1
            lm.advance(row, res.logits[i, -1])


class DecodeBatcher:
    """Serves `LocalLM.generate` calls from many threads through one model thread that batches their decoding.

    `max_batch` rows decode together at most (1: one request after another, as a plain lock would)."""

    def __init__(self, lm: LocalLM, max_batch: int = MAX_BATCH) -> None:
        self.lm = lm
        self.max_batch = max(1, int(max_batch))
        self._jobs: queue.Queue = queue.Queue()
        self._waiting: list[tuple[str, Any, Future]] = []
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.steps = 0  # batched forward passes so far
        self.row_steps = 0  # tokens decoded in them

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="embedded-decoder", daemon=True)
                self._thread.start()

    def generate(self, prompt: str, **options: Any) -> Generation:
        """As `LocalLM.generate` (same options, `should_stop` included), decoded alongside concurrent calls."""
        return self.submit(prompt, **options).result()

    def submit(self, prompt: str, **options: Any) -> Future:
        """Queue a generation; its future gives the `Generation` or raises what the model raised."""
        future: Future = Future()
        self._ensure_thread()
        self._jobs.put(("generate", (prompt, options), future))
        return future

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` on the model thread between decoding steps; return what it returns."""
        future: Future = Future()
        self._ensure_thread()
        self._jobs.put(("call", (fn, args, kwargs), future))
        return future.result()

    def _take(self, block: bool) -> None:
        try:
            self._waiting.append(self._jobs.get(block=block))
            while True:
                self._waiting.append(self._jobs.get_nowait())
        except queue.Empty:
            pass

    def _loop(self) -> None:
        import torch

        batch = _Batch()
        while True:
            self._take(block=not batch.rows and not self._waiting)
            still: list[tuple[str, Any, Future]] = []
            for kind, payload, future in self._waiting:
                if kind == "generate" and len(batch.rows) >= self.max_batch:
                    still.append((kind, payload, future))
                    continue
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    if kind == "call":
                        fn, args, kwargs = payload
                        future.set_result(fn(*args, **kwargs))
                        continue
                    prompt, options = payload
                    row = self.lm.start(prompt, **options)
                except Exception as exc:  # the caller's future carries it
                    future.set_exception(exc)
                    continue
                if row.finished:
                    future.set_result(row.result())
                else:
                    batch.add(row, future)
            self._waiting = still
            if not batch.rows:
                continue
            alive = []
            for i, row in enumerate(batch.rows):
                try:
                    row.check_cancel()
                    alive.append(i)
                except Cancelled as exc:
                    batch.futures[i].set_exception(exc)
            batch.keep(alive)
            if not batch.rows:
                continue
            try:
                with torch.inference_mode(), warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    batch.step(self.lm)
            except Exception as exc:  # every row of a failed step gets the error
                for future in batch.futures:
                    future.set_exception(exc)
                batch.keep([])
                continue
            self.steps += 1
            self.row_steps += len(batch.rows)
            alive = []
            for i, row in enumerate(batch.rows):
                if row.finished:
                    batch.futures[i].set_result(row.result())
                else:
                    alive.append(i)
            batch.keep(alive)
