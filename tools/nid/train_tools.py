"""The nid_train_model tool: a small byte-level LM trained on contexts of real NIDs, with or without DP-SGD."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, Field

from tools.atomic import write_text
from tools.errors import InvalidInput, LimitExceeded, ResearchError
from tools.nid.sources import (
    ALL_DATASETS,
    ClipNorm,
    ContextAfter,
    ContextBefore,
    DatasetName,
    DpEpsilon,
    limits,
    threads,
)
from tools.paths import output_path
from tools.progress import Progress

# ------------------------------------------------------------------------------------------------ train


class TrainOutput(BaseModel):
    checkpoint: str = Field(description="Byte-LM checkpoint; pass it to nid_score as model.")
    split_path: str = Field(description="JSON listing member and non-member NIDs; pass it to nid_score as split.")
    members: int
    non_members: int
    epochs: int
    steps: int
    final_loss: float = Field(description="Training loss, nats per byte.")
    parameters: int
    dp_epsilon: float | None = Field(description="Opacus RDP accountant eps (add/remove one text), when DP-SGD ran.")
    dp_delta: float | None
    noise_multiplier: float | None
    seconds: float


def build_split(datasets: list[str], per_dataset: int, holdout: float, seed: int) -> dict:
    """Pick up to `per_dataset` NIDs per data set; a `holdout` fraction of them are non-members."""
    import numpy as np

    from tools.nid.corpus import DATASETS, dataset_nids

    rng = np.random.default_rng(seed)
    split: dict = {"members": [], "non_members": [], "seed": seed}
    for name in datasets:
        if name not in DATASETS:
            from tools.errors import unknown_name

            raise unknown_name("data set", name, DATASETS)
        _, occ = dataset_nids(name)
        idx = rng.permutation(len(occ))[: per_dataset]
        n_out = round(holdout * len(idx))
        for j, i in enumerate(idx):
            o = occ[int(i)]
            item = {"dataset": name, "doc": o.doc, "start": o.detection.start, "end": o.detection.end,
                    "nid": o.detection.value}
            split["non_members" if j < n_out else "members"].append(item)
    return split


def nid_train_model(
    datasets: Annotated[list[DatasetName] | None, Field(description="Default: all five.")] = None,
    per_dataset: Annotated[int, Field(description="NIDs per data set (members + non-members).")] = 80,
    holdout: Annotated[float, Field(description="Share of NIDs held out as non-members.")] = 0.5,
    epochs: int = 30,
    batch_size: int = 32,
    lr: float = 3e-3,
    d_model: int = 64,
    n_layer: int = 2,
    prefix_chars: ContextBefore = 64,
    suffix_chars: ContextAfter = 8,
    dp_epsilon: DpEpsilon = None,
    dp_delta: float = 1e-5,
    max_grad_norm: ClipNorm = 1.0,
    seed: int = 0,
    progress: Progress | None = None,
) -> TrainOutput:
    """Train a small byte-level LM on texts around real NIDs, optionally with DP-SGD (long).

    Known members, no downloaded weights. Returns the checkpoint and split (for nid_score), and the DP eps.
    """
    import torch

    from tools.nid.bytelm import ByteLMConfig
    from tools.nid.contexts import make_context
    from tools.nid.corpus import load_documents
    from tools.nid.train import TrainConfig, train_byte_lm

    lim = limits()
    names = list(datasets) if datasets else list(ALL_DATASETS)
    if not 0 <= holdout < 1:
        raise InvalidInput(f"holdout must lie in [0, 1), got {holdout}.", hint="Use e.g. 0.5.")
    if epochs < 1 or epochs > lim.max_train_epochs:
        raise LimitExceeded("epochs", epochs, lim.max_train_epochs, "RESEARCH_MCP_NID__MAX_TRAIN_EPOCHS")
    if d_model > lim.max_model_dim or d_model < 8 or d_model % 4:
        raise InvalidInput(f"d_model must be a multiple of 4 in [8, {lim.max_model_dim}], got {d_model}.",
                           hint="Use e.g. 64; raise RESEARCH_MCP_NID__MAX_MODEL_DIM for larger.")
    if not 1 <= n_layer <= lim.max_model_layers:
        raise InvalidInput(f"n_layer must lie in [1, {lim.max_model_layers}], got {n_layer}.", hint="Use 2.")
    if dp_epsilon is not None and dp_epsilon <= 0:
        raise InvalidInput(f"dp_epsilon must be positive, got {dp_epsilon}.", hint="E.g. 8.0, or omit it.")
    if per_dataset < 2:
        raise InvalidInput(f"per_dataset must be at least 2, got {per_dataset}.", hint="Use e.g. 80.")
    split = build_split(names, per_dataset, holdout, seed)
    if len(split["members"]) > lim.max_train_examples:
        raise LimitExceeded("training texts", len(split["members"]), lim.max_train_examples,
                            "RESEARCH_MCP_NID__MAX_TRAIN_EXAMPLES")
    if not split["members"]:
        raise InvalidInput("No member NIDs were selected.", hint="Lower holdout or raise per_dataset.")
    docs = {name: load_documents(name) for name in names}
    texts = [make_context(docs[it["dataset"]][it["doc"]], it["start"], it["end"], prefix_chars=prefix_chars,
                          suffix_chars=suffix_chars).text for it in split["members"]]
    block = max(32, max(len(t.encode("utf-8")) for t in texts) + 1)
    cfg = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, dp_epsilon=dp_epsilon,
                      dp_delta=dp_delta, max_grad_norm=max_grad_norm,
                      model=ByteLMConfig(block_size=block, d_model=d_model, n_layer=n_layer, n_head=4))
    ckpt = output_path("nid_bytelm", ".pt")
    old = torch.get_num_threads()
    torch.set_num_threads(threads())
    try:
        res = train_byte_lm(texts, ckpt, cfg, progress=progress)
    except ResearchError:
        raise
    except ValueError as exc:
        raise InvalidInput(f"Training could not start: {exc}", hint="Check epochs, batch size and dp_epsilon.") from exc
    finally:
        torch.set_num_threads(old)
    split.update({"prefix_chars": prefix_chars, "suffix_chars": suffix_chars, "checkpoint": str(ckpt)})
    split_path = ckpt.with_suffix(".split.json")
    write_text(split_path, json.dumps(split, indent=1))
    return TrainOutput(checkpoint=str(res.checkpoint), split_path=str(split_path), members=len(split["members"]),
                       non_members=len(split["non_members"]), epochs=epochs, steps=res.steps,
                       final_loss=res.final_loss, parameters=res.parameters, dp_epsilon=res.epsilon,
                       dp_delta=res.delta, noise_multiplier=res.noise_multiplier, seconds=res.seconds)

