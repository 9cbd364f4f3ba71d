"""Training the byte-level LM on a list of texts, with plain Adam or with DP-SGD through Opacus.

With DP, batches are Poisson-sampled and each text is one example, so the guarantee the Opacus
accountant reports is (eps, delta)-DP under adding or removing one text.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tools.nid.bytelm import ByteLMConfig, build_model, cosine_lr, encode_batch, parameter_count, save_checkpoint
from tools.progress import Progress, report


@dataclass
class TrainConfig:
    epochs: int = 30
    batch_size: int = 32
    lr: float = 3e-3
    seed: int = 0
    dp_epsilon: float | None = None  # target eps under add/remove-one; None trains without DP
    dp_delta: float = 1e-5
    max_grad_norm: float = 1.0
    model: ByteLMConfig = field(default_factory=ByteLMConfig)


@dataclass
class TrainResult:
    checkpoint: Path
    steps: int
    final_loss: float
    epsilon: float | None
    delta: float | None
    noise_multiplier: float | None
    seconds: float
    parameters: int


def _per_example_loss(model, x, y):
    from torch.nn import functional as F

    logits = model(x)
    tok = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-100, reduction="none")
    tok = tok.view(y.shape)
    mask = (y != -100).float()
    return (tok * mask).sum(1) / mask.sum(1).clamp_min(1.0)


def train_byte_lm(texts: list[str], out: Path, cfg: TrainConfig | None = None,
                  progress: Progress | None = None) -> TrainResult:
    """Train on `texts` (one example each, cut to the block from the left) and save a checkpoint at `out`."""
    import torch

    cfg = cfg or TrainConfig()
    torch.manual_seed(cfg.seed)
    t0 = time.perf_counter()
    model = build_model(cfg.model)
    x, y = encode_batch(texts, cfg.model.block_size)
    data = torch.utils.data.TensorDataset(x, y)
    gen = torch.Generator().manual_seed(cfg.seed)
    loader = torch.utils.data.DataLoader(data, batch_size=cfg.batch_size, shuffle=True, generator=gen)
    eps = noise = None
    if cfg.dp_epsilon is None:
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    else:
        from opacus import PrivacyEngine

        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # secure_mode=False (a seeded RNG) is announced as a warning
            engine = PrivacyEngine(accountant="rdp", secure_mode=False)
            model, optimizer, loader = engine.make_private_with_epsilon(
                module=model, optimizer=optimizer, data_loader=loader, target_epsilon=cfg.dp_epsilon,
                target_delta=cfg.dp_delta, epochs=cfg.epochs, max_grad_norm=cfg.max_grad_norm,
                noise_generator=torch.Generator().manual_seed(cfg.seed + 1),
            )
        noise = float(optimizer.noise_multiplier)
    total = cfg.epochs * max(1, len(loader))
    model.train()
    with warnings.catch_warnings():
        # Opacus' per-sample hooks fire on the embedding input, which needs no gradient; that is expected.
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        last = _epochs(model, optimizer, loader, cfg, total, progress)
    if cfg.dp_epsilon is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eps = float(engine.get_epsilon(cfg.dp_delta))
    model.eval()
    inner = getattr(model, "_module", model)
    steps = total
    record = {"config": {k: v for k, v in asdict(cfg).items() if k != "model"}, "examples": len(texts),
              "steps": steps, "final_loss": last, "epsilon": eps, "noise_multiplier": noise,
              "neighbouring": "add/remove one text" if eps is not None else None}
    path = save_checkpoint(inner, out, record)
    return TrainResult(path, steps, last, eps, cfg.dp_delta if eps is not None else None, noise,
                       time.perf_counter() - t0, parameter_count(inner))


def _epochs(model, optimizer, loader, cfg: TrainConfig, total: int, progress: Progress | None) -> float:
    step = 0
    last = float("nan")
    for epoch in range(cfg.epochs):
        running = 0.0
        seen = 0
        for xb, yb in loader:
            for g in optimizer.param_groups:
                g["lr"] = cosine_lr(step, total, cfg.lr)
            optimizer.zero_grad(set_to_none=True)
            if xb.shape[0] == 0:
                optimizer.step()
                step += 1
                continue
            loss = _per_example_loss(model, xb, yb).mean()
            loss.backward()
            optimizer.step()
            running += float(loss.detach()) * xb.shape[0]
            seen += xb.shape[0]
            step += 1
        last = running / max(1, seen)
        report(progress, epoch + 1, cfg.epochs, f"epoch {epoch + 1}/{cfg.epochs}: loss {last:.3f} nats/byte")
    return last
