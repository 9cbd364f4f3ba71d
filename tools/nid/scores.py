"""Membership scores of one identifier from its tokens' log-probabilities (higher = more member-like).

- loss: minus the mean negative log-likelihood of the identifier's tokens.
- zlib: minus the identifier's total NLL (nats) over its zlib-compressed length in bytes (Carlini et al. 2021).
- min_k: mean of the k% lowest token log-probabilities (Shi et al. 2024).
- min_k_pp: mean of the k% lowest standardised log-probabilities (log p - mu) / sigma, where mu and sigma
  are the mean and spread of log p under the model's own next-token distribution (Zhang et al. 2024).
- recall: LL(x | P) / LL(x), the mean log-likelihood with a non-member prefix P over that without
  (Xie et al. 2024); members lose more when a non-member prefix is put in front.
- hinge: mean over tokens of log p(true token) - max log p(any other token) (Carlini et al. 2022).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

SCORE_NAMES = ("loss", "zlib", "min_k", "min_k_pp", "recall", "hinge")


@dataclass
class TokenStats:
    """Per identifier token: log p of the true token, mean and std of log p under the model, best other log p."""

    logp: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    max_other: np.ndarray

    def __len__(self) -> int:
        return int(self.logp.size)


def _lowest_mean(x: np.ndarray, k: float) -> float:
    n = max(1, math.ceil(k * x.size))
    return float(np.mean(np.sort(x)[:n]))


def membership_scores(stats: TokenStats, identifier: str, *, k: float = 0.2,
                      with_prefix: TokenStats | None = None) -> dict[str, float]:
    """The six scores of one identifier; `recall` is NaN unless the prefixed pass `with_prefix` is given."""
    if len(stats) == 0:
        return dict.fromkeys(SCORE_NAMES, math.nan)
    lp = stats.logp.astype(float)
    mean_ll = float(np.mean(lp))
    zlen = len(zlib.compress(identifier.encode("utf-8")))
    z = (lp - stats.mu) / np.maximum(stats.sigma, 1e-6)
    out = {
        "loss": mean_ll,
        "zlib": float(np.sum(lp)) / zlen,
        "min_k": _lowest_mean(lp, k),
        "min_k_pp": _lowest_mean(z, k),
        "hinge": float(np.mean(lp - stats.max_other)),
        "recall": math.nan,
    }
    if with_prefix is not None and len(with_prefix):
        out["recall"] = float(np.mean(with_prefix.logp)) / min(mean_ll, -1e-9)
    return out
