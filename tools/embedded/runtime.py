"""The embedded model in this process: generation with stop strings and cancellation, exact token log-probs.

`load_local_lm()` returns the one `LocalLM` of the process (loaded on first use, about 15 s from the
converted cache). `LocalLM.generate` decodes token by token with a KV cache, so a stop string or a
cancel ends it at once; the key/value caches of prompt prefixes that later prompts repeat (a chat's
system text and tool list, a document asked several questions, a chunk read again) are kept within
a byte budget (`prefixes.PrefixCache`), and a prompt that starts with one skips its prefill.
`LocalLM.prompt_logprobs` scores many texts in padded batches.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.embedded.prefixes import MIN_TOKENS, PrefixCache
from tools.embedded.weights import MODEL_NAME, converted_dir
from tools.errors import Cancelled, LimitExceeded
from tools.progress import Progress, report

_LOCK = threading.Lock()
_INSTANCE: LocalLM | None = None
PREFIX_CACHE_MB = 2048
PREFILL_TOKENS = 1024  # a long prompt is prefilled in pieces of this size


@dataclass
class Generation:
    """One generated continuation with its token accounting."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    cached_tokens: int = 0  # prompt tokens whose key/value cache came from an earlier prompt with the same start


@dataclass
class PromptLogprobs:
    """Per-token log-probabilities of a text under the model (the first token has none, as in OpenAI's API)."""

    tokens: list[str]
    token_ids: list[int]
    text_offset: list[int]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None] = field(default_factory=list)


@dataclass
class Decoding:
    """One prompt being continued: its key/value cache, the token to feed next, what it has written so far."""

    prompt_tokens: int
    max_tokens: int
    temperature: float = 0.0
    stops: list[str] = field(default_factory=list)
    should_stop: Callable[[], bool] | None = None
    generator: object = None
    past: object = None
    cached_tokens: int = 0
    position: int = 0  # tokens in the cache
    next_input: int = 0
    out_ids: list[int] = field(default_factory=list)
    text: str = ""
    finished: bool = False
    finish_reason: str = "length"

    def finish(self, reason: str) -> None:
        self.finished, self.finish_reason, self.past = True, reason, None

    def check_cancel(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise Cancelled("The generation was cancelled by the caller.")

    def result(self) -> Generation:
        return Generation(text=self.text, prompt_tokens=self.prompt_tokens, completion_tokens=len(self.out_ids),
                          finish_reason=self.finish_reason, cached_tokens=self.cached_tokens)


class LocalLM:
    """Gemma 3 270M on CPU through transformers (float32, inference mode)."""

    name = MODEL_NAME

    def __init__(self, model, tokenizer, prefix_cache_mb: int = PREFIX_CACHE_MB) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.context_tokens = int(getattr(model.config, "max_position_embeddings", 32768))
        self.eos_ids = self._eos_ids()
        self.prefixes = PrefixCache(int(prefix_cache_mb) * 2**20)

    def _eos_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id}
        for text in ("<end_of_turn>", "<eos>"):
            tid = self.tokenizer.convert_tokens_to_ids(text)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id:
                ids.add(tid)
        return {i for i in ids if i is not None}

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` with the leading BOS the model expects."""
        return list(self.tokenizer(text, add_special_tokens=True).input_ids)

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def generate(self, prompt: str, **options: Any) -> Generation:
        """Continue `prompt`; greedy at temperature 0. Stops at EOS, a stop string, `max_tokens` or a cancel.
        Options as `start`: max_tokens=256, temperature=0.0, stop, seed, should_stop, head_chars=0.

        `head_chars`: the length of the prompt's head that later prompts may repeat (see `chat.prompt_head`);
        its key/value cache is kept at once. Without it a shared start is kept from the second prompt that
        repeats it on. Either way a prompt that starts with a kept prefix continues from its cache.
        (`batching.DecodeBatcher` decodes several such prompts in one forward pass a token.)"""
        import torch

        row = self.start(prompt, **options)
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            while not row.finished:
                row.check_cancel()
                res = self.model(input_ids=torch.tensor([[row.next_input]]), past_key_values=row.past,
                                 use_cache=True, logits_to_keep=1)
                row.past, row.position = res.past_key_values, row.position + 1
                self.advance(row, res.logits[0, -1])
        return row.result()

    def start(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        seed: int | None = None,
        should_stop: Callable[[], bool] | None = None,
        head_chars: int = 0,
    ) -> Decoding:
        """Tokenize and prefill `prompt` (from the longest kept prefix on) and pick the first token: the returned
        state has the whole prompt in its cache and its first token to feed next. Raises LimitExceeded when the prompt
        plus `max_tokens` does not fit the context window, Cancelled on a cancel."""
        import numpy as np
        import torch

        enc = self.tokenizer(prompt, add_special_tokens=True, return_offsets_mapping=head_chars > 0)
        ids = list(enc.input_ids)
        if len(ids) + max_tokens > self.context_tokens:
            raise LimitExceeded("The prompt plus max_tokens (tokens)", len(ids) + max_tokens, self.context_tokens,
                                "", hint="The model's context window is fixed: send a shorter prompt or a smaller "
                                "max_tokens (for a long text, chunked reading: longctx_answer).")
        row = Decoding(prompt_tokens=len(ids), max_tokens=max_tokens, temperature=float(temperature or 0.0),
                       stops=[s for s in (stop or []) if s], should_stop=should_stop,
                       generator=torch.Generator().manual_seed(seed) if seed is not None else None)
        if max_tokens <= 0:
            row.finished = True
            return row
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the KV-cache argument's name is changing upstream
            n_head = _head_tokens(enc.offset_mapping, head_chars, len(ids)) if head_chars > 0 else 0
            row.past, row.cached_tokens, row.position = self._prefill_prefixes(
                np.asarray(ids, dtype=np.int64), n_head, should_stop)
            res = self.model(input_ids=torch.tensor([ids[row.position:]]), past_key_values=row.past, use_cache=True,
                             logits_to_keep=1)
            row.past, row.position = res.past_key_values, len(ids)
            self.advance(row, res.logits[0, -1])
        return row

    def advance(self, row: Decoding, logits) -> None:
        """Take the next token of `row` from its last-position `logits` and update its text and state (the
        caller has put the token that gave `logits` into `row.past` and counted it in `row.position`)."""
        import torch

        logits = logits.float()
        if row.temperature > 0:
            probs = torch.softmax(logits / row.temperature, dim=-1)
            nxt = int(torch.multinomial(probs, 1, generator=row.generator))
        else:
            nxt = int(torch.argmax(logits))
        if nxt in self.eos_ids:
            row.finish("stop")
            return
        row.out_ids.append(nxt)
        row.text = self.tokenizer.decode(row.out_ids, skip_special_tokens=True)
        hit = min((row.text.find(s) for s in row.stops if s in row.text), default=-1)
        if hit >= 0:
            row.text = row.text[:hit]
            row.finish("stop")
        elif len(row.out_ids) >= row.max_tokens:
            row.finish("length")
        else:
            row.next_input = nxt

    def _prefill_prefixes(self, ids, n_head: int, should_stop: Callable[[], bool] | None) -> tuple[object, int, int]:
        """Continue from the longest kept prefix of `ids`, then prefill in pieces of at most `PREFILL_TOKENS`
        (a cancel is seen between pieces), keeping the cache at the head, at the start shared with a recent
        prompt, and at the last two piece boundaries (so that the next prompt over the same document, whose
        shared start is not known yet, still finds most of it). Returns (cache or None, tokens reused, tokens
        now in the cache); at least the last token is left for the first decoding step."""
        import torch

        last = len(ids) - 1
        cached, past = self.prefixes.longest(ids, last + 1)
        pos = cached
        top = last // PREFILL_TOKENS * PREFILL_TOKENS
        keep = {n_head, min(self.prefixes.shared_with_recent(ids), last), top, top - PREFILL_TOKENS}
        self.prefixes.remember(ids)
        kept_at = pos
        for m in sorted(keep):
            if m > last or m - kept_at < MIN_TOKENS:
                keep.discard(m)
            else:
                kept_at = m
        bounds = sorted(keep | set(range((pos // PREFILL_TOKENS + 1) * PREFILL_TOKENS, last + 1, PREFILL_TOKENS)))
        for mark in bounds:
            if should_stop is not None and should_stop():
                raise Cancelled("The generation was cancelled by the caller.")
            past = self.model(input_ids=torch.tensor([ids[pos:mark].tolist()]), past_key_values=past,
                              use_cache=True, logits_to_keep=1).past_key_values
            if mark in keep:
                self.prefixes.keep(ids[:mark], past)
            pos = mark
        return past, cached, pos

    def prompt_logprobs(
        self,
        texts: list[str],
        *,
        top: int = 0,
        batch_size: int = 8,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[PromptLogprobs]:
        """Log-probability of every token of each text given the tokens before it, in padded batches."""
        import torch

        encoded = [self.tokenizer(t, add_special_tokens=True, return_offsets_mapping=True) for t in texts]
        for enc in encoded:
            if len(enc.input_ids) > self.context_tokens:
                raise LimitExceeded("A text (tokens)", len(enc.input_ids), self.context_tokens, "",
                                    hint="The model's context window is fixed: score shorter texts.")
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].input_ids))
        results: list[PromptLogprobs | None] = [None] * len(texts)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        with torch.inference_mode():
            for lo in range(0, len(order), max(1, batch_size)):
                if should_stop is not None and should_stop():
                    raise Cancelled("The scoring was cancelled by the caller.")
                rows = order[lo : lo + max(1, batch_size)]
                width = max(len(encoded[i].input_ids) for i in rows)
                ids = torch.full((len(rows), width), pad, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, i in enumerate(rows):
                    seq = encoded[i].input_ids
                    ids[r, : len(seq)] = torch.tensor(seq)
                    mask[r, : len(seq)] = 1
                logp = torch.log_softmax(self.model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)
                for r, i in enumerate(rows):
                    results[i] = self._row(encoded[i], logp[r], top)
        return [r for r in results if r is not None]

    def _row(self, enc, logp, top: int) -> PromptLogprobs:
        ids = list(enc.input_ids)
        offsets = list(enc.offset_mapping)
        has_bos = bool(ids) and ids[0] == self.tokenizer.bos_token_id
        start = 1 if has_bos else 0
        tokens, tids, offs, lps, tops = [], [], [], [], []
        for t in range(start, len(ids)):
            tokens.append(self.tokenizer.decode([ids[t]]))
            tids.append(ids[t])
            offs.append(int(offsets[t][0]))
            if t == start:
                lps.append(None)
                tops.append(None)
                continue
            row = logp[t - 1]
            lps.append(float(row[ids[t]]))
            if top > 0:
                vals, idx = row.topk(top)
                tops.append({self.tokenizer.decode([int(j)]): float(v) for v, j in zip(vals, idx, strict=True)})
            else:
                tops.append(None)
        return PromptLogprobs(tokens=tokens, token_ids=tids, text_offset=offs, token_logprobs=lps, top_logprobs=tops)


def _head_tokens(offsets: list[tuple[int, int]], head_chars: int, n_ids: int) -> int:
    """How many leading tokens lie wholly inside the first `head_chars` characters (the BOS included), leaving
    at least one token of the prompt to run."""
    n = 0
    for _, end in offsets:
        if end > head_chars:
            break
        n += 1
    return min(n, n_ids - 1)


def load_causal_lm(progress: Progress | None = None):
    """`(model, tokenizer)` of the embedded model: transformers objects, float32, eval mode, one per process."""
    lm = load_local_lm(progress)
    return lm.model, lm.tokenizer


def load_local_lm(progress: Progress | None = None) -> LocalLM:
    """The process's `LocalLM`, loaded from the converted cache (converting the GGUF first if needed)."""
    global _INSTANCE
    with _LOCK:
        if _INSTANCE is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as hf_logging

            from tools.settings import get_settings

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            folder = converted_dir(progress)
            report(progress, 0, 1, "loading the embedded model")
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
            _INSTANCE = LocalLM(model, tokenizer, get_settings().llm.embedded_prefix_cache_mb)
            report(progress, 1, 1, "embedded model loaded")
        return _INSTANCE

