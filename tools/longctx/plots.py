"""The noise-model fit as a picture: accuracy against document length, measured and fitted.

Single-shot accuracies are drawn as points with the fitted curve exp(-alpha T^beta); chunked accuracies as points
per chunk size with the fitted exp(-(L_agg + ceil(T/c) l_chunk)) at the reference chunk size c; the target
length and the crossover length (where chunked starts to win) as vertical lines.
"""

from __future__ import annotations

import math
from pathlib import Path

from tools.longctx.models import ChunkedPoint, NoiseFitResult, SinglePoint


def fit_plot(fit: NoiseFitResult, single: list[SinglePoint], chunked: list[ChunkedPoint], out: Path) -> Path:
    """Write the PNG of `fit` over its measurements to `out`."""
    import numpy as np

    from tools.figures import figure, save_png

    lengths = [p.tokens for p in single] + [p.tokens for p in chunked] + [fit.target_tokens]
    if fit.crossover_tokens and math.isfinite(fit.crossover_tokens):
        lengths.append(int(fit.crossover_tokens))
    lo, hi = min(lengths) / 1.5, max(lengths) * 1.5
    grid = np.geomspace(lo, hi, 200)
    fig = figure(7.2, 4.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.scatter([p.tokens for p in single], [p.accuracy for p in single], color="#1f77b4", zorder=3,
               label="single-shot, measured")
    if fit.alpha is not None and fit.beta is not None:
        ax.plot(grid, np.exp(-fit.alpha * grid**fit.beta), color="#1f77b4",
                label=f"single-shot fit: exp(-{fit.alpha:.3g} T^{fit.beta:.2f})")
    sizes = sorted({p.chunk_tokens for p in chunked})
    marks = ["s", "^", "D", "v", "P", "X"]
    for i, size in enumerate(sizes):
        pts = [p for p in chunked if p.chunk_tokens == size]
        ax.scatter([p.tokens for p in pts], [p.accuracy for p in pts], color="#ff7f0e", marker=marks[i % len(marks)],
                   zorder=3, label=f"chunked ({size:,}-token chunks), measured")
    if fit.per_chunk_loss is not None and fit.aggregator_loss is not None and fit.reference_chunk_tokens:
        c = fit.reference_chunk_tokens
        loss = fit.aggregator_loss + fit.per_chunk_loss * np.ceil(grid / c)
        ax.plot(grid, np.exp(-loss), color="#ff7f0e", label=f"chunked fit ({c:,}-token chunks)")
    ax.axvline(fit.target_tokens, color="#555555", linestyle=":", label=f"target {fit.target_tokens:,} tokens")
    if fit.crossover_tokens and lo <= fit.crossover_tokens <= hi:
        ax.axvline(fit.crossover_tokens, color="#2ca02c", linestyle="--",
                   label=f"crossover {fit.crossover_tokens:,.0f} tokens")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("document length (tokens)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"Chunking noise model: regime {fit.regime} at {fit.target_tokens:,} tokens", fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return save_png(fig, out)
