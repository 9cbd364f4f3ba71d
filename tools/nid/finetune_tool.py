"""The nid_finetune tool: LoRA adapters on the embedded Gemma 3 270M trained on a suspect corpus of real NIDs."""

from __future__ import annotations

import json
import math
from typing import Annotated

from pydantic import BaseModel, Field

from tools.atomic import write_text
from tools.errors import InvalidInput, LimitExceeded
from tools.nid.sources import ClipNorm, ContextAfter, ContextBefore, DatasetName, DpEpsilon, limits, threads
from tools.paths import output_path
from tools.progress import Progress

SUSPECT_DATASETS: list[str] = ["opacus_git_log", "serialversionuid", "jsonlite_md5"]


class FinetuneOutput(BaseModel):
    adapter: str = Field(description="LoRA adapter folder; pass it to nid_score as model.")
    split_path: str = Field(description="JSON listing member and non-member NIDs; pass it to nid_score as split.")
    members: int
    non_members: int
    steps: int
    final_loss: float = Field(description="Training loss of the last step, nats per token.")
    trainable_parameters: int = Field(description="LoRA parameters (the base weights stay frozen, never copied).")
    dp_epsilon: float | None = Field(description="Opacus RDP accountant eps (add/remove one text), when DP-SGD ran.")
    dp_delta: float | None
    noise_multiplier: float | None
    max_grad_norm: float | None = Field(description="Per-example clipping norm, when DP-SGD ran.")
    sample_rate: float | None = Field(description="Poisson sampling rate per step, when DP-SGD ran.")
    seconds: float


def nid_finetune(
    datasets: Annotated[list[DatasetName] | None, Field(description="Default: opacus_git_log, serialversionuid, "
                                                         "jsonlite_md5.")] = None,
    per_dataset: Annotated[int, Field(description="Records per data set (half become members).")] = 16,
    steps: int = 20,
    batch_size: int = 8,
    lr: float = 2e-3,
    rank: Annotated[int, Field(description="LoRA rank (q_proj, v_proj).")] = 8,
    prefix_chars: ContextBefore = 48,
    suffix_chars: ContextAfter = 8,
    dp_epsilon: DpEpsilon = None,
    dp_delta: float = 1e-5,
    max_grad_norm: ClipNorm = 1.0,
    seed: int = 0,
    progress: Progress | None = None,
) -> FinetuneOutput:
    """LoRA-fine-tune the embedded Gemma 3 270M on texts around real NIDs, optionally DP-SGD (long).

    Half the records become members. Returns the adapter and split (nid_score: model=adapter, split=split_path), and
    the DP eps.
    """
    import torch

    from tools.nid.contexts import make_context
    from tools.nid.corpus import load_documents
    from tools.nid.finetune import LoRAConfig, finetune_lora
    from tools.nid.train_tools import build_split

    lim = limits()
    names = list(datasets) if datasets else list(SUSPECT_DATASETS)
    if not 1 <= steps <= 10 * lim.max_train_epochs:
        raise LimitExceeded("steps", steps, 10 * lim.max_train_epochs, "RESEARCH_MCP_NID__MAX_TRAIN_EPOCHS (x 10)")
    if per_dataset < 2:
        raise InvalidInput(f"per_dataset must be at least 2, got {per_dataset}.", hint="Use e.g. 16.")
    if not 1 <= rank <= 64:
        raise InvalidInput(f"rank must lie in [1, 64], got {rank}.", hint="Use 8.")
    if dp_epsilon is not None and not dp_epsilon > 0:
        raise InvalidInput(f"dp_epsilon must be positive, got {dp_epsilon}.", hint="E.g. 8.0, or omit it.")
    if dp_epsilon is not None and dp_epsilon > 1e6:
        raise InvalidInput(f"dp_epsilon must be at most 1e6, got {dp_epsilon}.", hint="E.g. 8.0, or omit it.")
    if not 1 <= batch_size <= 256:
        raise InvalidInput(f"batch_size must lie in [1, 256], got {batch_size}.", hint="Use 8.")
    if not 2 <= per_dataset <= lim.max_train_examples:
        raise LimitExceeded("per_dataset", per_dataset, lim.max_train_examples, "RESEARCH_MCP_NID__MAX_TRAIN_EXAMPLES")
    if not (math.isfinite(lr) and 0 < lr <= 1):
        raise InvalidInput(f"lr must lie in (0, 1], got {lr}.", hint="Use 2e-3.")
    if not (0 <= prefix_chars <= 4096 and 0 <= suffix_chars <= 4096):
        raise InvalidInput("prefix_chars and suffix_chars must lie in [0, 4096].", hint="Use 48 and 8.")
    if not 0 < dp_delta < 1:
        raise InvalidInput(f"dp_delta must lie in (0, 1), got {dp_delta}.", hint="Use 1e-5.")
    if not (math.isfinite(max_grad_norm) and 0 < max_grad_norm <= 1e4):
        raise InvalidInput(f"max_grad_norm must lie in (0, 1e4], got {max_grad_norm}.", hint="Use 1.0.")
    if not 0 <= seed < 2**32:
        raise InvalidInput(f"seed must lie in [0, 2**32), got {seed}.", hint="Use 0.")
    split = build_split(names, per_dataset, 0.5, seed)
    if len(split["members"]) > lim.max_train_examples:
        raise LimitExceeded("training texts", len(split["members"]), lim.max_train_examples,
                            "RESEARCH_MCP_NID__MAX_TRAIN_EXAMPLES")
    if not split["members"]:
        raise InvalidInput("No member NIDs were selected.", hint="Raise per_dataset.")
    docs = {name: load_documents(name) for name in names}
    texts = [make_context(docs[it["dataset"]][it["doc"]], it["start"], it["end"], prefix_chars=prefix_chars,
                          suffix_chars=suffix_chars).text for it in split["members"]]
    cfg = LoRAConfig(steps=steps, batch_size=batch_size, lr=lr, rank=rank, alpha=2 * rank, seed=seed,
                     dp_epsilon=dp_epsilon, dp_delta=dp_delta, max_grad_norm=max_grad_norm)
    adapter = output_path("nid_lora")
    old = torch.get_num_threads()
    torch.set_num_threads(threads())
    try:
        res = finetune_lora(texts, adapter, cfg, progress=progress)
    finally:
        torch.set_num_threads(old)
    split.update({"prefix_chars": prefix_chars, "suffix_chars": suffix_chars, "checkpoint": str(adapter)})
    split_path = adapter.with_name(adapter.name + ".split.json")
    write_text(split_path, json.dumps(split, indent=1))
    dp = res.epsilon is not None
    return FinetuneOutput(adapter=str(adapter), split_path=str(split_path), members=len(split["members"]),
                          non_members=len(split["non_members"]), steps=res.steps, final_loss=res.final_loss,
                          trainable_parameters=res.trainable_parameters, dp_epsilon=res.epsilon, dp_delta=res.delta,
                          noise_multiplier=res.noise_multiplier, max_grad_norm=max_grad_norm if dp else None,
                          sample_rate=res.sample_rate, seconds=res.seconds)
