"""Scorers: one interface, token statistics of the identifier inside each context, computed in batches.

- `ByteLMScorer`: the project's own byte-level LM checkpoint (exact full-distribution statistics).
- `HFScorer`: a local Hugging Face causal LM directory (needs the `transformers` package).
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
        with torch.inference_mode():
            for (prefix, n_id), members in groups.items():
                if len(members) == 1 or step == 1:
                    continue
                for lo in range(0, len(members), step):
                    idx = members[lo : lo + step]
                    pre = torch.tensor([[BOS, *prefix]], dtype=torch.long)
                    cont = torch.tensor([list(prepared[i][0][len(prefix) : len(prefix) + n_id - 1]) for i in idx],
                                        dtype=torch.long).reshape(len(idx), n_id - 1)
                    h = self.model.hidden_shared(pre, cont).reshape(-1, self.model.config.d_model)
                    tgt = torch.tensor([list(prepared[i][0][len(prefix) :]) for i in idx], dtype=torch.long)
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
    """Scores with a local Hugging Face causal LM (a folder with config.json and weights)."""

    def __init__(self, path: Path) -> None:
        if importlib.util.find_spec("transformers") is None:
            raise NotConfigured(
                f"{path} is a Hugging Face model folder, but the 'transformers' package is not installed.",
                hint="Install it (pip install transformers) or score with the project's own byte-level LM "
                "(nid_train_model) or an OpenAI-compatible completions endpoint.",
            )
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if not getattr(self.tokenizer, "is_fast", False):
            raise NotConfigured(f"The tokenizer in {path} has no fast version, which character offsets need.",
                                hint="Install the 'tokenizers' package or save a fast tokenizer with the model.")
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "right"
        self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        self.model.eval()
        self.name = f"hf:{path.name}"

    def token_stats(self, contexts: list[Context], batch_size: int = 16) -> list[TokenStats]:
        import torch

        out: list[TokenStats] = []
        for lo in range(0, len(contexts), max(1, batch_size)):
            chunk = contexts[lo : lo + max(1, batch_size)]
            enc = self.tokenizer([c.text for c in chunk], return_tensors="pt", padding=True,
                                 return_offsets_mapping=True)
            offsets = enc.pop("offset_mapping")
            with torch.inference_mode():
                logp = torch.log_softmax(self.model(**enc).logits.float(), dim=-1)
            for row, ctx in enumerate(chunk):
                ids = enc["input_ids"][row]
                keep = [t for t in range(1, int(enc["attention_mask"][row].sum()))
                        if offsets[row, t, 0] < ctx.end and offsets[row, t, 1] > ctx.start]
                sel = torch.tensor(keep, dtype=torch.long)
                out.append(_stats_from_logprobs(logp[row, sel - 1], ids[sel]))
        return out


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
    """The scorer for a model path: the project's byte-LM checkpoint file or a Hugging Face causal-LM folder."""
    from tools.nid.bytelm import is_checkpoint

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
        return HFScorer(path)
    if path.is_file() and is_checkpoint(path):
        return ByteLMScorer(path)
    raise InvalidInput(f"{path} is not a causal language model: neither a byte-LM checkpoint from nid_train_model "
                       "nor a Hugging Face model folder.",
                       hint="Train one with nid_train_model, or pass a folder holding a *ForCausalLM config.json.")
