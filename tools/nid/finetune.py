"""LoRA fine-tuning of the embedded Gemma 3 270M on a suspect corpus, plain or with DP-SGD (Opacus).

Only the low-rank adapters (peft LoRA on the attention projections) train; the base weights stay frozen
and are never copied: a checkpoint is the adapter folder (adapter_config.json + adapter weights + a
training record), which `load_adapter_model` puts on a fresh copy of the base. With DP-SGD each text is
one example, batches are Poisson-sampled and per-example gradients of the adapter parameters are
clipped and noised, so the accountant's (eps, delta) holds under adding or removing one text.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from tools.atomic import atomic_folder
from tools.progress import Progress

RECORD = "nid_finetune.json"


@dataclass
class LoRAConfig:
    steps: int = 20
    batch_size: int = 8
    lr: float = 2e-3
    rank: int = 8
    alpha: int = 16
    max_tokens: int = 64
    seed: int = 0
    dp_epsilon: float | None = None  # target eps (add/remove one text); None: no DP
    dp_delta: float = 1e-5
    max_grad_norm: float = 1.0
    top_layers: int | None = None  # adapters on the last N decoder layers only (backward stops below them)


@dataclass
class LoRAResult:
    adapter: Path
    steps: int
    final_loss: float
    trainable_parameters: int
    epsilon: float | None
    delta: float | None
    noise_multiplier: float | None
    sample_rate: float | None
    seconds: float


def fresh_base(progress: Progress | None = None):
    """(model, tokenizer): a private float32 copy of the embedded base model (the shared one is never touched)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tools.embedded.weights import converted_dir

    folder = converted_dir(progress)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    return model, tokenizer


def load_adapter_model(path: Path, progress: Progress | None = None):
    """(peft model in eval mode, tokenizer) of an adapter folder written by `finetune_lora`."""
    from peft import PeftModel

    base, tokenizer = fresh_base(progress)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        model = PeftModel.from_pretrained(base, str(path)).eval()
    return model, tokenizer


def _encode(tokenizer, texts: list[str], max_tokens: int, spans: list[tuple[int, int]] | None = None):
    """(input ids, targets, attention mask); targets are -100 except where a token of the text's span is predicted."""
    import torch

    enc = tokenizer(texts, add_special_tokens=True, return_offsets_mapping=True)
    ids = [list(e)[:max_tokens] for e in enc["input_ids"]]
    width = max(len(e) for e in ids)
    x = torch.zeros((len(ids), width), dtype=torch.long)
    y = torch.full((len(ids), width), -100, dtype=torch.long)
    m = torch.zeros((len(ids), width), dtype=torch.long)
    for i, e in enumerate(ids):
        x[i, : len(e)] = torch.tensor(e)
        m[i, : len(e)] = 1
        if spans is None:
            y[i, : len(e) - 1] = torch.tensor(e[1:])
            continue
        a, b = spans[i]
        offs = enc["offset_mapping"][i]
        for t in range(1, len(e)):
            if offs[t][0] < b and offs[t][1] > a:
                y[i, t - 1] = e[t]
    if spans is not None:  # positions after the last labelled one cannot change the loss (causal attention)
        last = int(torch.nonzero((y != -100).any(0)).max()) + 1 if bool((y != -100).any()) else width
        x, y, m = x[:, :last], y[:, :last], m[:, :last]
    return x, y, m


def _span_loss(model, xb, yb, mb):
    """Mean over texts of the mean next-token loss on the labelled positions; the output head runs only there."""
    import torch
    from torch.nn import functional as F

    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    h = inner.get_decoder()(input_ids=xb, attention_mask=mb).last_hidden_state
    rows, cols = torch.nonzero(yb != -100, as_tuple=True)
    logits = inner.get_output_embeddings()(h[rows, cols]).float()
    cap = getattr(inner.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    tok = F.cross_entropy(logits, yb[rows, cols], reduction="none")
    n = xb.shape[0]
    per_text = torch.zeros(n, dtype=tok.dtype).index_add(0, rows, tok)
    count = torch.zeros(n, dtype=tok.dtype).index_add(0, rows, torch.ones_like(tok))
    return (per_text / count.clamp_min(1.0)).mean()


def finetune_lora(texts: list[str], out: Path, cfg: LoRAConfig, *, spans: list[tuple[int, int]] | None = None,
                  model=None, tokenizer=None, progress: Progress | None = None) -> LoRAResult:
    """Train LoRA adapters on `texts` for `cfg.steps` steps and save the adapter folder at `out` (atomically).

    With `spans` (one character span [start, end) per text, e.g. the identifier's) the loss covers only the
    tokens overlapping the span; otherwise every next-token prediction of the text. `model`/`tokenizer`: a
    private base model to put the adapters on (it is modified); a fresh copy of the embedded base when omitted.
    """
    import torch
    from peft import LoraConfig, get_peft_model

    t0 = time.perf_counter()
    if progress is not None:
        progress.check()
    torch.manual_seed(cfg.seed)
    if model is None:
        model, tokenizer = fresh_base(progress)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        n_layers = int(model.config.num_hidden_layers)
        layers = None if cfg.top_layers is None else list(range(max(0, n_layers - cfg.top_layers), n_layers))
        peft_model = get_peft_model(model, LoraConfig(r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=0.0,
                                                      target_modules=["q_proj", "v_proj"], bias="none",
                                                      layers_to_transform=layers))
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    if spans is not None and len(spans) != len(texts):
        raise ValueError(f"{len(spans)} spans for {len(texts)} texts")
    x, y, m = _encode(tokenizer, texts, cfg.max_tokens, spans)
    data = torch.utils.data.TensorDataset(x, y, m)
    n = len(texts)
    batches_per_epoch = max(1, math.ceil(n / cfg.batch_size))
    epochs = max(1, math.ceil(cfg.steps / batches_per_epoch))
    loader = torch.utils.data.DataLoader(data, batch_size=cfg.batch_size, shuffle=True,
                                         generator=torch.Generator().manual_seed(cfg.seed))
    params = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    eps = noise = rate = None
    module = peft_model
    if cfg.dp_epsilon is not None:
        from opacus import PrivacyEngine

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine = PrivacyEngine(accountant="rdp", secure_mode=False)
            module, optimizer, loader = engine.make_private_with_epsilon(
                module=peft_model, optimizer=optimizer, data_loader=loader, target_epsilon=cfg.dp_epsilon,
                target_delta=cfg.dp_delta, epochs=epochs, max_grad_norm=cfg.max_grad_norm,
                noise_generator=torch.Generator().manual_seed(cfg.seed + 1), grad_sample_mode="hooks")
        noise = float(optimizer.noise_multiplier)
        rate = 1.0 / len(loader)
    module.train()
    step, last = 0, float("nan")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        while step < cfg.steps:
            for xb, yb, mb in loader:
                if step >= cfg.steps:
                    break
                optimizer.zero_grad(set_to_none=True)
                if xb.shape[0] == 0:
                    # an empty Poisson batch is still one DP-SGD step: noise only, and the accountant counts it
                    for p in params:
                        p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype)
                    optimizer.step()
                    step += 1
                    continue
                loss = _span_loss(peft_model, xb, yb, mb)
                loss.backward()
                optimizer.step()
                step += 1
                last = float(loss.detach())
                if progress is not None:
                    progress.update(step, cfg.steps, f"step {step}/{cfg.steps}: loss {last:.3f} nats/token")
    if cfg.dp_epsilon is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eps = float(engine.get_epsilon(cfg.dp_delta))
        module.remove_hooks()  # the adapters are scored in place afterwards, without per-example hooks
    peft_model.eval()
    record = {"config": asdict(cfg), "examples": n, "steps": step, "final_loss": last, "epsilon": eps,
              "delta": cfg.dp_delta if eps is not None else None, "noise_multiplier": noise, "sample_rate": rate,
              "neighbouring": "add/remove one text" if eps is not None else None, "base": "embedded",
              "loss_on": "text" if spans is None else "span"}
    with atomic_folder(out) as tmp:
        peft_model.save_pretrained(str(tmp))
        (tmp / RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return LoRAResult(out, step, last, trainable, eps, record["delta"], noise, rate, time.perf_counter() - t0)
