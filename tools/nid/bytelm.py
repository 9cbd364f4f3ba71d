"""A small byte-level causal transformer the project trains itself, and its checkpoint format.

Only layers Opacus computes per-sample gradients for (Embedding, Linear, LayerNorm) carry parameters,
so the same model trains with plain SGD/Adam or with DP-SGD. A checkpoint is a `torch.save` dict with
`format == "research-mcp-nid-bytelm"`, the config, the state dict and a training record; it loads
with `weights_only=True`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tools.atomic import atomic_output

CHECKPOINT_FORMAT = "research-mcp-nid-bytelm"
BOS = 256  # also the padding input id; targets are bytes 0..255


@dataclass
class ByteLMConfig:
    block_size: int = 160
    d_model: int = 128
    n_layer: int = 2
    n_head: int = 4


def build_model(cfg: ByteLMConfig):
    """The torch module for `cfg` (torch is imported here, not at module import)."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d = cfg.d_model
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.out = nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            h = cfg.n_head
            q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

        def forward_shared(self, xp, xc):
            """G prefixes xp (G, P, d) and B continuations xc (B, L, d), B/G of each prefix in order: the same
            result as running each prefix + continuation through `forward`, with each prefix computed once."""
            d, h = xp.shape[-1], cfg.n_head
            p_len, (b, c_len) = xp.shape[1], xc.shape[:2]
            per = b // xp.shape[0]

            def spread(z):
                return z.expand(b, *z.shape[1:]) if z.shape[0] == 1 else z.repeat_interleave(per, dim=0)

            def heads(z):
                return z.view(z.shape[0], z.shape[1], h, d // h).transpose(1, 2)

            qp, kp, vp = (heads(z) for z in self.qkv(self.ln1(xp)).split(d, dim=2))
            qc, kc, vc = (heads(z) for z in self.qkv(self.ln1(xc)).split(d, dim=2))
            yp = F.scaled_dot_product_attention(qp, kp, vp, is_causal=True)
            keys = torch.cat([spread(kp), kc], dim=2)
            values = torch.cat([spread(vp), vc], dim=2)
            mask = torch.ones(c_len, p_len + c_len, dtype=torch.bool)
            mask[:, p_len:] = torch.tril(mask[:, p_len:])
            yc = F.scaled_dot_product_attention(qc, keys, values, attn_mask=mask)
            xp = xp + self.proj(yp.transpose(1, 2).reshape(xp.shape[0], p_len, d))
            xc = xc + self.proj(yc.transpose(1, 2).reshape(b, c_len, d))
            return (xp + self.out(F.gelu(self.fc(self.ln2(xp)))), xc + self.out(F.gelu(self.fc(self.ln2(xc)))))

    class ByteLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = cfg
            self.tok = nn.Embedding(257, cfg.d_model)
            self.pos = nn.Embedding(cfg.block_size, cfg.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layer))
            self.ln_f = nn.LayerNorm(cfg.d_model)
            self.head = nn.Linear(cfg.d_model, 256)

        def hidden(self, idx):
            """Final hidden states (B, T, d) before the output head."""
            b, t = idx.shape
            pos = torch.arange(t, device=idx.device).unsqueeze(0).expand(b, t)
            x = self.tok(idx) + self.pos(pos)
            for blk in self.blocks:
                x = blk(x)
            return self.ln_f(x)

        def hidden_shared(self, prefix, cont):
            """Hidden states predicting the bytes after G prefixes (G, P) for B continuations (B, L), B/G of each
            prefix in order: (B, L + 1, d), row j holding the states at positions P - 1 .. P + L - 1."""
            (g, p_len), (b, c_len) = prefix.shape, cont.shape
            xp = self.tok(prefix) + self.pos(torch.arange(p_len).unsqueeze(0))
            xc = self.tok(cont) + self.pos(torch.arange(p_len, p_len + c_len).unsqueeze(0).expand(b, c_len))
            for blk in self.blocks:
                xp, xc = blk.forward_shared(xp, xc)
            last = xp[:, -1:]
            last = last.expand(b, 1, -1) if g == 1 else last.repeat_interleave(b // g, dim=0)
            return self.ln_f(torch.cat([last, xc], dim=1))

        def forward(self, idx):
            return self.head(self.hidden(idx))

    return ByteLM()


def encode_batch(texts: list[str] | list[bytes], block_size: int):
    """Inputs [BOS, b0, b1, ...] and targets [b0, b1, ...] padded to one length; -100 marks padding targets.

    Texts longer than the block are cut from the left (the end, where identifiers are scored, is kept).
    """
    import torch

    seqs = [(t if isinstance(t, bytes) else t.encode("utf-8"))[-block_size:] for t in texts]
    width = max(1, max(len(s) for s in seqs))
    x = torch.full((len(seqs), width), BOS, dtype=torch.long)
    y = torch.full((len(seqs), width), -100, dtype=torch.long)
    for i, s in enumerate(seqs):
        if not s:
            continue
        b = torch.tensor(list(s), dtype=torch.long)
        x[i, 1 : len(s)] = b[:-1]
        y[i, : len(s)] = b
    return x, y


def save_checkpoint(model, path: Path, training: dict[str, Any]) -> Path:
    import torch

    model = getattr(model, "_module", model)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    with atomic_output(path) as tmp:
        torch.save({"format": CHECKPOINT_FORMAT, "version": 1, "config": asdict(model.config),
                    "state_dict": state, "training": training}, tmp)
    return path


def is_checkpoint(path: Path) -> bool:
    """True when `path` is a file in this project's byte-LM checkpoint format."""
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return False
    return isinstance(obj, dict) and obj.get("format") == CHECKPOINT_FORMAT


def load_checkpoint(path: Path):
    """(model in eval mode, training record) from a checkpoint written by `save_checkpoint`."""
    import torch

    obj = torch.load(path, map_location="cpu", weights_only=True)
    if not (isinstance(obj, dict) and obj.get("format") == CHECKPOINT_FORMAT):
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} checkpoint")
    model = build_model(ByteLMConfig(**obj["config"]))
    model.load_state_dict(obj["state_dict"])
    model.eval()
    return model, obj.get("training", {})


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def cosine_lr(step: int, total: int, base: float, warmup: int = 20) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    return base * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))
