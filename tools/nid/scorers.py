"""Scorers: one interface, token statistics of the identifier inside each context, computed in batches.

- `ByteLMScorer`: the project's own byte-level LM checkpoint (exact full-distribution statistics).
- `HFScorer`: a transformers causal LM (a local folder, the embedded Gemma 3 270M or LoRA adapters on it): exact
  full-vocabulary statistics, prefix passes shared between an NID and its GIDs.
- `CompletionsScorer`: an OpenAI-compatible /v1/completions endpoint that echoes prompt logprobs (vLLM,
  llama.cpp server); mu, sigma and the best other token come from the returned top-k, renormalised.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Protocol

import numpy as np

from tools.errors import InvalidInput, NotConfigured, UpstreamError
from tools.nid.contexts import Context
from tools.nid.scores import TokenStats


class Scorer(Protocol):
    name: str

    def token_stats(self, contexts: list[Context], batch_size: int = 64) -> list[TokenStats]: ...


def _stats_from_logprobs(logp_rows, targets) -> TokenStats:
    """TokenStats from full log-softmax rows (torch, [n, V]) and the true token ids ([n])."""
    import torch

    if logp_rows.shape[0] == 0:
        z = np.zeros(0)
        return TokenStats(z, z, z, z)
    p = logp_rows.exp()
    true_lp = logp_rows.gather(1, targets.unsqueeze(1)).squeeze(1)
    mu = (p * logp_rows).sum(1)
    var = (p * logp_rows.square()).sum(1) - mu.square()
    other = logp_rows.clone()
    other.scatter_(1, targets.unsqueeze(1), -math.inf)
    max_other = other.max(1).values
    as_np = [t.detach().double().numpy() for t in (true_lp, mu, torch.sqrt(var.clamp_min(0.0)), max_other)]
    return TokenStats(*as_np)


class ByteLMScorer:
    """Scores with a checkpoint of the project's byte-level LM."""

    def __init__(self, path: Path) -> None:
        from tools.nid.bytelm import load_checkpoint

        self.path = path
        self.model, self.training = load_checkpoint(path)
        self.name = f"bytelm:{path.name}"

    def token_stats(self, contexts: list[Context], batch_size: int = 64) -> list[TokenStats]:
        import torch

        from tools.nid.bytelm import BOS, encode_batch

        block = self.model.config.block_size
        prepared: list[tuple[bytes, int, int]] = []
        for ctx in contexts:
            head = ctx.text[: ctx.end].encode("utf-8")
            n_id = len(head) - len(ctx.text[: ctx.start].encode("utf-8"))
            if n_id > block:
                raise InvalidInput(f"An identifier of {n_id} bytes is longer than the model's block ({block} bytes).",
                                   hint="Train a model with a larger block_size.")
            keep = head[-block:]
            prepared.append((keep, len(keep) - n_id, len(keep)))
        out: list[TokenStats | None] = [None] * len(contexts)
        step = max(1, batch_size)
        # candidates that share the bytes before the identifier (an NID and its GIDs) share one prefix pass
        groups: dict[tuple[bytes, int], list[int]] = {}
        for i, (keep, s, e) in enumerate(prepared):
            groups.setdefault((keep[:s], e - s), []).append(i)
        singles = [i for g in groups.values() if len(g) == 1 or step == 1 for i in g]
        # groups of one size whose prefixes and identifiers have equal lengths run together, each prefix once
        buckets: dict[tuple[int, int, int], list[tuple[bytes, list[int]]]] = {}
        for (prefix, n_id), members in groups.items():
            if len(members) == 1 or step == 1:
                continue
            for lo in range(0, len(members), step):
                idx = members[lo : lo + step]
                buckets.setdefault((len(prefix), n_id, len(idx)), []).append((prefix, idx))
        with torch.inference_mode():
            for (_, n_id, size), items in buckets.items():
                per_call = max(1, step // size)
                for lo in range(0, len(items), per_call):
                    part = items[lo : lo + per_call]
                    idx = [i for _, ids in part for i in ids]
                    pre = torch.tensor([[BOS, *prefix] for prefix, _ in part], dtype=torch.long)
                    cont = torch.tensor([list(prepared[i][0][len(prefix) : len(prefix) + n_id - 1])
                                         for prefix, ids in part for i in ids],
                                        dtype=torch.long).reshape(len(idx), n_id - 1)
                    h = self.model.hidden_shared(pre, cont).reshape(-1, self.model.config.d_model)
                    tgt = torch.tensor([list(prepared[i][0][len(prefix) :]) for prefix, ids in part for i in ids],
                                       dtype=torch.long)
                    self._fill(out, idx, [n_id] * len(idx), h, tgt.reshape(-1))
            order = sorted(singles, key=lambda i: len(prepared[i][0]))
            for lo in range(0, len(order), step):
                idx = order[lo : lo + step]
                x, y = encode_batch([prepared[i][0] for i in idx], block)
                # the output head and the statistics only at identifier positions
                rows = torch.tensor([row for row, i in enumerate(idx) for _ in range(prepared[i][1], prepared[i][2])])
                cols = torch.tensor([t for i in idx for t in range(prepared[i][1], prepared[i][2])])
                self._fill(out, idx, [prepared[i][2] - prepared[i][1] for i in idx], self.model.hidden(x)[rows, cols],
                           y[rows, cols])
        return [o for o in out if o is not None]


    def _fill(self, out: list, idx: list[int], lengths: list[int], h, targets) -> None:
        """Statistics from hidden states h (N, d) and target bytes (N,), split into consecutive runs."""
        import torch

        logp = torch.log_softmax(self.model.head(h).float(), dim=-1)
        tgt = targets.unsqueeze(-1)
        true_lp = logp.gather(1, tgt).squeeze(-1)
        p = logp.exp()
        mu = (p * logp).sum(-1)
        sigma = ((p * logp.square()).sum(-1) - mu.square()).clamp_min(0.0).sqrt()
        max_other = logp.scatter(1, tgt, -math.inf).max(-1).values
        arrays = [t.double().numpy() for t in (true_lp, mu, sigma, max_other)]
        pos = 0
        for i, n in zip(idx, lengths, strict=True):
            out[i] = TokenStats(*(a[pos : pos + n].copy() for a in arrays))
            pos += n


class HFScorer:
    """Exact token log-probabilities from a transformers causal LM: a local folder or the embedded model.

    Each context is tokenized whole (so the identifier's tokens are those the model sees in the text); the
    tokens after the identifier's last token are dropped, since they cannot change its log-probabilities.
    Contexts whose tokens before the identifier agree (an NID and its GIDs) share one prefix pass: its
    key/value cache is repeated over the batch, and the continuations run together. The output head and
    the full-vocabulary statistics are computed only where an identifier token is predicted, and the
    shared first prediction once per group.
    """

    checks_progress = True  # token_stats takes `progress` and stops within one group when cancelled

    def __init__(self, model, tokenizer, name: str) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise NotConfigured(f"The tokenizer of {name} has no fast version, which character offsets need.",
                                hint="Install the 'tokenizers' package or save a fast tokenizer with the model.")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        inner = model.get_base_model() if hasattr(model, "get_base_model") else model
        self._decoder = inner.get_decoder()
        self._head = inner.get_output_embeddings()
        self._softcap = getattr(inner.config, "final_logit_softcapping", None)
        import inspect

        # transformers 5.24 renamed past_key_values to cache (the old name is deprecated)
        params = inspect.signature(self._decoder.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._buffers = None  # (logits, scratch) of _row_stats

    @classmethod
    def from_folder(cls, path: Path) -> HFScorer:
        _need_transformers(path)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
        return cls(model, tokenizer, f"hf:{path.name}")

    @classmethod
    def embedded(cls, progress=None) -> HFScorer:
        """The embedded Gemma 3 270M base model of this process (shared; never modified)."""
        from tools.embedded.runtime import load_causal_lm
        from tools.embedded.weights import MODEL_NAME

        model, tokenizer = load_causal_lm(progress)
        return cls(model, tokenizer, f"embedded:{MODEL_NAME}")

    @classmethod
    def from_adapter(cls, path: Path, progress=None) -> HFScorer:
        """A LoRA adapter folder from nid_finetune, on a fresh copy of the embedded base model."""
        from tools.nid.finetune import load_adapter_model

        model, tokenizer = load_adapter_model(path, progress)
        return cls(model, tokenizer, f"lora:{path.name}")

    def _spans(self, contexts: list[Context]) -> list[tuple[list[int], int, int]]:
        """(token ids up to the identifier's last token, first identifier token, end) per context."""
        enc = self.tokenizer([c.text for c in contexts], add_special_tokens=True, return_offsets_mapping=True)
        out = []
        for ctx, ids, offs in zip(contexts, enc["input_ids"], enc["offset_mapping"], strict=True):
            keep = [t for t in range(1, len(ids)) if offs[t][0] < ctx.end and offs[t][1] > ctx.start]
            if not keep:
                out.append((list(ids), len(ids), len(ids)))
                continue
            out.append((list(ids[: keep[-1] + 1]), keep[0], keep[-1] + 1))
        return out

    def _head_into(self, h, out):
        """Logits of hidden rows h (n, d) into out (n, V), float32, soft-capped as the model does."""
        import torch

        head = self._head
        if type(head) is torch.nn.Linear and head.weight.dtype == torch.float32 and h.dtype == torch.float32:
            if head.bias is None:
                torch.mm(h, head.weight.t(), out=out)
            else:
                torch.addmm(head.bias, h, head.weight.t(), out=out)
        else:
            out.copy_(head(h).float())
        if self._softcap:
            out.div_(self._softcap).tanh_().mul_(self._softcap)
        return out

    def _row_stats(self, h, targets: list[list[int]], rows: list[list[int]]) -> list[TokenStats]:
        """Statistics of each target list from hidden states h (N, d); rows[i][j] = the row predicting targets[i][j].

        Per row, with x = logit - max logit and e = exp(x): log p(true) = x_true - log S0, mu = S1/S0 - log S0 and
        sigma^2 = S2/S0 - (S1/S0)^2, where S0, S1, S2 = sum e, sum e x, sum e x^2. The logits of a block of rows
        go into one reused buffer; the exp and the sums run on a few rows at a time, which stay in cache.
        """
        import torch

        n = h.shape[0]
        flat_rows = torch.tensor([r for rr in rows for r in rr], dtype=torch.long)
        flat_tgt = torch.tensor([t for tt in targets for t in tt], dtype=torch.long)
        vocab = self._vocab_size()
        block, sub = 128, 4  # rows of logits held at once (128 MiB); rows whose exp and sums run together (4 MiB)
        if self._buffers is None or self._buffers[0].shape[1] != vocab:
            # kept between calls: fresh 128 MiB buffers cost a page fault per 4 KiB on every group
            f32 = torch.float32
            self._buffers = (torch.empty((block, vocab), dtype=f32), torch.empty((sub, vocab), dtype=f32))
        logits, scratch = self._buffers
        s = torch.empty((n, 3), dtype=torch.float64)
        top2 = torch.empty((n, 2), dtype=torch.float32)
        top2_idx = torch.empty((n, 2), dtype=torch.long)
        true_x = torch.empty(flat_rows.numel(), dtype=torch.float64)
        for lo in range(0, n, block):
            hi = min(n, lo + block)
            buf = self._head_into(h[lo:hi], logits[: hi - lo])
            v, i = buf.topk(2, dim=-1)
            top2[lo:hi], top2_idx[lo:hi] = v, i
            buf.sub_(v[:, :1])
            sel = (flat_rows >= lo) & (flat_rows < hi)
            if bool(sel.any()):
                true_x[sel] = buf[flat_rows[sel] - lo, flat_tgt[sel]].double()
            for a in range(0, hi - lo, sub):
                x = buf[a : a + sub]
                e = torch.exp(x, out=scratch[: x.shape[0]])
                r = lo + a
                s[r : r + x.shape[0], 0] = e.sum(-1).double()
                s[r : r + x.shape[0], 1] = torch.linalg.vecdot(e, x).double()
                s[r : r + x.shape[0], 2] = torch.linalg.vecdot(e.mul_(x), x).double()
        log_s0 = s[:, 0].log()
        m1 = s[:, 1] / s[:, 0]
        mu = m1 - log_s0
        sigma = (s[:, 2] / s[:, 0] - m1.square()).clamp_min(0.0).sqrt()
        true_lp = true_x - log_s0[flat_rows]
        # the best other token: the top logit unless it is the true token, else the second; as a log-probability
        best_is_true = top2_idx[flat_rows, 0] == flat_tgt
        other_x = torch.where(best_is_true, top2[flat_rows, 1] - top2[flat_rows, 0], torch.zeros(()))
        max_other = other_x.double() - log_s0[flat_rows]
        out, pos = [], 0
        arrays = [true_lp.numpy(), mu[flat_rows].numpy(), sigma[flat_rows].numpy(), max_other.numpy()]
        for tt in targets:
            out.append(TokenStats(*(a[pos : pos + len(tt)].copy() for a in arrays)))
            pos += len(tt)
        return out

    def _vocab_size(self) -> int:
        head = self._head
        weight = getattr(head, "weight", None)
        if weight is None:
            weight = head.base_layer.weight
        return int(weight.shape[0])

    def token_stats(self, contexts: list[Context], batch_size: int = 16, progress=None) -> list[TokenStats]:
        import torch

        spans = self._spans(contexts)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (ids, a, _) in enumerate(spans):
            groups.setdefault(tuple(ids[:a]), []).append(i)
        out: list[TokenStats | None] = [None] * len(contexts)
        step = max(1, batch_size)
        with torch.inference_mode():
            for prefix, members in groups.items():
                for lo in range(0, len(members), step):
                    if progress is not None:
                        progress.check()
                    idx = members[lo : lo + step]
                    self._group(prefix, [spans[i] for i in idx], idx, out)
        return [o if o is not None else _empty_stats() for o in out]

    def _group(self, prefix: tuple[int, ...], spans, idx: list[int], out: list) -> None:
        import torch

        conts = [ids[a:e] for ids, a, e in spans]  # the identifier tokens of each member
        if not prefix or all(not c for c in conts):
            for i in idx:
                out[i] = _empty_stats()
            return
        pre = self._decoder(input_ids=torch.tensor([list(prefix)]), use_cache=True)
        h_rows = [pre.last_hidden_state[0, -1:]]  # predicts every member's first identifier token
        longest = max(len(c) for c in conts) - 1
        rows: list[list[int]] = [[0] for _ in conts]
        if longest > 0:
            cache = getattr(pre, "cache", None) or pre.past_key_values
            cache.batch_repeat_interleave(len(conts))
            # right padding: a padded position comes after every real one, so causal attention never sees it
            x = torch.zeros((len(conts), longest), dtype=torch.long)
            for r, c in enumerate(conts):
                x[r, : len(c) - 1] = torch.tensor(c[:-1], dtype=torch.long)
            h = self._decoder(input_ids=x, use_cache=True, **{self._cache_kw: cache}).last_hidden_state
            sel_r = [r for r, c in enumerate(conts) for _ in range(len(c) - 1)]
            sel_t = [t for c in conts for t in range(len(c) - 1)]
            h_rows.append(h[sel_r, sel_t])
            pos = 1
            for r, c in enumerate(conts):
                rows[r] += list(range(pos, pos + len(c) - 1))
                pos += len(c) - 1
        stats = self._row_stats(torch.cat(h_rows), [list(c) for c in conts], rows)
        for i, st in zip(idx, stats, strict=True):
            out[i] = st


def _empty_stats() -> TokenStats:
    z = np.zeros(0)
    return TokenStats(z, z, z, z)


def _need_transformers(path: Path) -> None:
    if importlib.util.find_spec("transformers") is None:
        raise NotConfigured(
            f"{path} is a Hugging Face model folder, but the 'transformers' package is not installed.",
            hint="Install it (pip install transformers) or score with the project's own byte-level LM "
            "(nid_train_model) or an OpenAI-compatible completions endpoint.",
        )


class CompletionsScorer:
    """Scores through an OpenAI-compatible completions endpoint with `echo=True` and prompt logprobs."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, top_logprobs: int = 5,
                 timeout_s: float = 120.0, max_retries: int = 2) -> None:
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s,
                             max_retries=max_retries)
        self.base_url = base_url
        self.model = model
        self.top_logprobs = top_logprobs
        self.name = f"endpoint:{model}"

    def token_stats(self, contexts: list[Context], batch_size: int = 32) -> list[TokenStats]:
        import openai

        out: list[TokenStats] = []
        for lo in range(0, len(contexts), max(1, batch_size)):
            chunk = contexts[lo : lo + max(1, batch_size)]
            try:
                resp = self.client.completions.create(model=self.model, prompt=[c.text for c in chunk],
                                                      max_tokens=1, echo=True, logprobs=self.top_logprobs,
                                                      temperature=0.0)
            except openai.APIStatusError as exc:
                raise UpstreamError(
                    f"The completions endpoint {self.base_url} answered HTTP {exc.status_code}: {exc.message}",
                    hint="It must support echo=True with logprobs (vLLM does).",
                ) from exc
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                raise UpstreamError(f"The completions endpoint {self.base_url} could not be reached "
                                    f"({type(exc).__name__}).", hint="Check the URL and that the server runs.") from exc
            choices = sorted(resp.choices, key=lambda ch: ch.index)
            if len(choices) != len(chunk):
                raise UpstreamError(f"The endpoint returned {len(choices)} choices for {len(chunk)} prompts.",
                                    hint="Use a server that accepts a list of prompts.")
            for ctx, ch in zip(chunk, choices, strict=True):
                out.append(self._stats(ctx, ch.logprobs))
        return out

    @staticmethod
    def _stats(ctx: Context, lp) -> TokenStats:
        if lp is None or not lp.tokens or lp.text_offset is None:
            raise UpstreamError("The endpoint returned no prompt logprobs.",
                                hint="It must support echo=True with logprobs (vLLM, llama.cpp server).")
        n_prompt = len(ctx.text)
        offs = list(lp.text_offset)
        rows = []
        for t, tok in enumerate(lp.tokens):
            start = offs[t]
            end = offs[t + 1] if t + 1 < len(offs) else start + len(tok)
            if start >= n_prompt:
                break
            if t == 0 or lp.token_logprobs[t] is None or not (start < ctx.end and end > ctx.start):
                continue
            true_lp = float(lp.token_logprobs[t])
            top = dict(lp.top_logprobs[t] or {}) if lp.top_logprobs else {}
            top[tok] = true_lp
            vals = np.array(list(top.values()), dtype=float)
            p = np.exp(vals - vals.max())
            p /= p.sum()
            mu = float(np.sum(p * vals))
            sigma = float(np.sqrt(max(0.0, np.sum(p * vals**2) - mu**2)))
            others = [v for k, v in top.items() if k != tok]
            best_other = max(others) if others else math.log1p(-min(math.exp(true_lp), 1 - 1e-12))
            rows.append((true_lp, mu, sigma, best_other))
        arr = np.array(rows, dtype=float).reshape(-1, 4)
        return TokenStats(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])


def _is_causal_lm_config(config: dict) -> bool:
    archs = config.get("architectures") or []
    return any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in archs)


def open_model(path: Path) -> Scorer:
    """The scorer for a model path: a byte-LM checkpoint, a LoRA adapter folder (nid_finetune) or a Hugging Face
    causal-LM folder."""
    from tools.nid.bytelm import is_checkpoint

    if path.is_dir() and (path / "adapter_config.json").is_file():
        return HFScorer.from_adapter(path)
    if path.is_dir():
        cfg_file = path / "config.json"
        if not cfg_file.is_file():
            raise InvalidInput(f"{path} is a folder without config.json, so it is not a Hugging Face model.",
                               hint="Pass a causal-LM folder (config.json + weights) or a byte-LM checkpoint (.pt).")
        try:
            config = json.loads(cfg_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"{cfg_file} is not readable JSON ({exc}).", hint="Check the model folder.") from exc
        if not _is_causal_lm_config(config):
            archs = config.get("architectures") or ["none listed"]
            raise InvalidInput(f"{path} is not a causal language model (architectures: {', '.join(archs)}).",
                               hint="Membership scores need next-token log-probabilities: use a *ForCausalLM model.")
        return HFScorer.from_folder(path)
    if path.is_file() and is_checkpoint(path):
        return ByteLMScorer(path)
    raise InvalidInput(f"{path} is not a causal language model: neither a byte-LM checkpoint from nid_train_model "
                       "nor a Hugging Face model folder.",
                       hint="Train one with nid_train_model, or pass a folder holding a *ForCausalLM config.json.")
