"""LoRA fine-tuning of the embedded Gemma 3 270M on a suspect corpus, with and without DP-SGD, then an audit."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tools.errors import Cancelled, InvalidInput
from tools.nid.audit_tools import nid_dp_audit
from tools.nid.finetune_tool import nid_finetune
from tools.nid.score_tool import nid_score
from tools.progress import Progress


def test_finetune_bad_inputs() -> None:
    with pytest.raises(InvalidInput, match="dp_epsilon must be positive"):
        nid_finetune(dp_epsilon=0.0)
    with pytest.raises(InvalidInput, match="rank must lie"):
        nid_finetune(rank=0)


@pytest.mark.slow
def test_lora_finetune_plain_and_dp_then_audit() -> None:
    import torch

    torch.set_num_threads(1)
    seen: list[float] = []
    plain = nid_finetune(per_dataset=4, steps=2, batch_size=4, progress=Progress(lambda d, t, m: seen.append(d)))
    assert seen == [1, 2] and plain.dp_epsilon is None and plain.members == plain.non_members == 6
    adapter = Path(plain.adapter)
    assert (adapter / "adapter_config.json").is_file()
    # the checkpoint is the adapters alone: no copy of the 268M base weights (1 GB in float32)
    assert sum(f.stat().st_size for f in adapter.iterdir()) < 5_000_000
    split = json.loads(Path(plain.split_path).read_text())
    assert {it["nid"] for it in split["members"]}.isdisjoint({it["nid"] for it in split["non_members"]})

    dp = nid_finetune(per_dataset=4, steps=2, batch_size=4, dp_epsilon=8.0, seed=1)
    assert dp.dp_epsilon is not None and 0 < dp.dp_epsilon <= 8.0 + 1e-6
    assert dp.noise_multiplier and dp.noise_multiplier > 0 and dp.max_grad_norm == 1.0
    assert dp.sample_rate == pytest.approx(4 / 6, rel=0.5)
    record = json.loads((Path(dp.adapter) / "nid_finetune.json").read_text())
    assert record["epsilon"] == pytest.approx(dp.dp_epsilon) and record["neighbouring"] == "add/remove one text"

    s = nid_score(model=dp.adapter, split=dp.split_path, n_gids=3, recall=False, prefix_chars=32, suffix_chars=4)
    assert s.scorer.startswith("lora:") and s.n_nids == 6 and s.candidates_per_nid == 4
    eps_sub = 2 * dp.dp_epsilon  # add/remove-one eps -> replace-one (an NID by a GID), as the eval converts
    a = nid_dp_audit(scores_path=s.scores_path, delta=(1 + math.exp(dp.dp_epsilon)) * 1e-5)
    assert 0 <= a.eps_lower_bound <= eps_sub


def test_finetune_cancel() -> None:
    p = Progress()
    p.cancel()
    with pytest.raises(Cancelled):
        nid_finetune(per_dataset=2, steps=3, batch_size=2, progress=p)


@pytest.mark.slow
def test_dp_finetune_takes_empty_poisson_batches_as_noise_only_steps(tmp_path: Path) -> None:
    # 4 texts at sampling rate 1/4: a batch is empty with probability 0.75**4, so 10 steps meet one with
    # probability 0.98 (the seed fixes which)
    import torch

    from tools.nid.finetune import LoRAConfig, finetune_lora

    torch.set_num_threads(1)
    texts = [f"commit {h} fixes the build" for h in ("3f9a1c2", "b41e0d7", "9c07aa5", "e2d4b68")]
    spans = [(7, 14)] * 4
    cfg = LoRAConfig(steps=10, batch_size=1, max_tokens=16, top_layers=1, dp_epsilon=4.0, seed=3)
    res = finetune_lora(texts, tmp_path / "adapter", cfg, spans=spans)
    assert res.steps == 10 and res.epsilon is not None and 0 < res.epsilon <= 4.0 + 1e-6
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
