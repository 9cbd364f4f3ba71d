"""The noise model of divide and conquer: fit, decompose, name the regime, find the crossover.

Fidelity (accuracy) rho maps to loss L = -ln(rho), so fidelities that multiply give losses that add:
L_sys = L_task + L_agg + L_model. Single-shot model noise is fitted as L(T) = alpha * T^beta by least
squares on log L against log T (T in tokens). Chunked runs over n chunks are fitted as
L_chunked = L_agg + n * l_chunk; of the per-chunk loss l_chunk, the part alpha * c^beta is model
noise on a chunk of c tokens and the rest is task noise (what a chunk cannot see).

Regimes at a target length T: trivial (single-shot loss is already small: don't bother), brain fog
(model noise dominates and chunked loss is lower: chunk), silo (task noise dominates and chunked loss
is not lower: don't chunk). Proposition 3.1: when single-shot loss alpha*T^beta grows superlinearly
(beta > 1) and chunked loss a + kappa*T linearly, they cross at a length T* beyond which chunking
wins, even with a weaker worker model; for a = 0, T* = (kappa/alpha)^(1/(beta-1)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from tools.errors import InvalidInput, LimitExceeded
from tools.longctx.models import ChunkedPoint, FitRow, NoiseFitResult, SinglePoint
from tools.settings import get_settings

TRIVIAL_LOSS = 0.05  # about 95% accuracy
SUPERLINEAR_BETA = 1.05  # beta above this counts as superlinear when no chunked runs are given


def accuracy_to_loss(accuracy: float, n_items: int | None = None) -> float:
    """L = -ln(rho), with rho clipped to [1/(2n), 1] (n items; 1e-3 when n is unknown)."""
    if not 0.0 <= accuracy <= 1.0 or math.isnan(accuracy):
        raise InvalidInput(f"An accuracy must lie in [0, 1], got {accuracy}.", hint="Pass fractions, not percents.")
    floor = 1.0 / (2 * n_items) if n_items else 1e-3
    return -math.log(max(accuracy, floor))


@dataclass(frozen=True)
class PowerLaw:
    alpha: float
    beta: float
    r2: float
    points: int

    def __call__(self, tokens: float) -> float:
        return self.alpha * tokens**self.beta


def fit_power_law(lengths: list[float], losses: list[float]) -> PowerLaw:
    """Least squares of log L on log T over the points with L > 0; needs two distinct lengths."""
    import numpy as np

    pts = [(t, loss) for t, loss in zip(lengths, losses, strict=True) if loss > 0 and t > 0]
    if len({t for t, _ in pts}) < 2:
        raise InvalidInput(
            "Fitting L(T) = alpha*T^beta needs losses above 0 (accuracy below 1) at two or more distinct lengths.",
            hint="Add single-shot measurements at longer lengths, where accuracy drops.",
        )
    x = np.log([t for t, _ in pts])
    y = np.log([loss for _, loss in pts])
    beta, log_alpha = np.polyfit(x, y, 1)
    pred = log_alpha + beta * x
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return PowerLaw(float(math.exp(log_alpha)), float(beta), r2, len(pts))


@dataclass(frozen=True)
class ChunkedFit:
    """L_chunked = agg_loss + per_chunk_loss * n_chunks."""

    per_chunk_loss: float
    agg_loss: float
    points: int


def fit_chunked(n_chunks: list[int], losses: list[float]) -> ChunkedFit:
    """Least squares of chunked loss on the chunk count (intercept = aggregator noise, both kept >= 0)."""
    import numpy as np

    if not n_chunks:
        raise InvalidInput("No chunked measurements were given.", hint="Add measurements with their chunk size.")
    n = np.asarray(n_chunks, dtype=float)
    y = np.asarray(losses, dtype=float)
    if len(set(n_chunks)) >= 2:
        slope, intercept = np.polyfit(n, y, 1)
        if intercept < 0:  # refit through the origin
            slope, intercept = float(n @ y / (n @ n)), 0.0
        elif slope < 0:
            slope, intercept = 0.0, float(y.mean())
    else:
        slope, intercept = float(n @ y / (n @ n)), 0.0
    return ChunkedFit(float(max(slope, 0.0)), float(max(intercept, 0.0)), len(n_chunks))


def crossover_length(alpha: float, beta: float, kappa: float, a: float = 0.0) -> float | None:
    """The length T* > 0 where alpha*T^beta = a + kappa*T (Proposition 3.1); None when beta <= 1 or none exists."""
    if beta <= 1 or alpha <= 0:
        return None
    if a <= 0:
        if kappa <= 0:
            return 0.0
        return (kappa / alpha) ** (1.0 / (beta - 1.0))
    from scipy.optimize import brentq

    def f(t: float) -> float:
        return alpha * t**beta - kappa * t - a

    hi = 1.0
    while f(hi) < 0:
        hi *= 2
        if hi > 1e15:
            return None
    return float(brentq(f, 0.0, hi, xtol=1e-9 * hi))


def best_chunk_for_noise(alpha: float, beta: float, task_per_chunk: float) -> float | None:
    """The chunk size minimising (T/c) * (alpha*c^beta + tau): c* = (tau / (alpha*(beta-1)))^(1/beta)."""
    if beta <= 1 or alpha <= 0 or task_per_chunk <= 0:
        return None
    return (task_per_chunk / (alpha * (beta - 1.0))) ** (1.0 / beta)


@dataclass(frozen=True)
class Regime:
    name: str  # trivial | silo | brain_fog
    single_loss: float
    chunked_loss: float | None
    model_share: float | None
    explanation: str


def name_regime(single: PowerLaw | None, single_loss_at_t: float, chunked_loss_at_t: float | None,
                model_noise_at_t: float | None, trivial_loss: float = TRIVIAL_LOSS) -> Regime:
    """trivial / brain_fog / silo at one target length; see the module docstring."""
    share = None
    if chunked_loss_at_t is not None and model_noise_at_t is not None and chunked_loss_at_t > 0:
        share = min(1.0, model_noise_at_t / chunked_loss_at_t)
    if single_loss_at_t <= trivial_loss and (chunked_loss_at_t is None or chunked_loss_at_t >= single_loss_at_t):
        return Regime("trivial", single_loss_at_t, chunked_loss_at_t, share,
                      f"Single-shot loss {single_loss_at_t:.3f} (accuracy {math.exp(-single_loss_at_t):.1%}) is "
                      "already small at this length: read it whole.")
    if chunked_loss_at_t is None:
        if single is not None and single.beta > SUPERLINEAR_BETA:
            return Regime("brain_fog", single_loss_at_t, None, None,
                          f"Single-shot loss grows superlinearly (beta={single.beta:.2f}): model noise dominates at "
                          "length, so chunking should help (predicted from single-shot runs alone; confirm with "
                          "chunked runs).")
        beta = f"{single.beta:.2f}" if single is not None else "unknown"
        return Regime("silo", single_loss_at_t, None, None,
                      f"Single-shot loss grows about linearly or slower (beta={beta}): chunking cannot cut model "
                      "noise, so its task and aggregator noise would dominate. Do not chunk.")
    if chunked_loss_at_t < single_loss_at_t:
        return Regime("brain_fog", single_loss_at_t, chunked_loss_at_t, share,
                      f"Chunked loss {chunked_loss_at_t:.3f} < single-shot {single_loss_at_t:.3f}: model noise of "
                      "long inputs dominates. Chunk.")
    return Regime("silo", single_loss_at_t, chunked_loss_at_t, share,
                  f"Chunked loss {chunked_loss_at_t:.3f} >= single-shot {single_loss_at_t:.3f}: task noise "
                  "(information chunks cannot see together) dominates. Do not chunk, or use larger chunks.")


def longctx_fit_noise(
    single_shot: Annotated[list[SinglePoint], Field(description="Single-shot accuracy at several lengths.")],
    chunked: Annotated[list[ChunkedPoint], Field(description="Chunked accuracy at several lengths and chunk "
                                                 "sizes.")] = [],  # noqa: B006
    target_tokens: Annotated[int | None, Field(gt=0, description="Length to judge at; default: the longest.")] = None,
    trivial_loss: Annotated[float, Field(gt=0, description="Single-shot loss that is good enough (0.05: about "
                                         "95% accuracy).")] = TRIVIAL_LOSS,
    plot: bool = True,
) -> NoiseFitResult:
    """Say whether to chunk: fit the noise model to accuracies measured at several lengths.

    Returns the regime at the target length (trivial: read whole; brain_fog: chunk; silo: don't), the crossover
    length, the best chunk size and a plot of accuracy against length. No model calls.
    """
    lim = get_settings().longctx.max_measurements
    if len(single_shot) > lim or len(chunked) > lim:
        raise LimitExceeded("The number of measurements", max(len(single_shot), len(chunked)), lim,
                            "RESEARCH_MCP_LONGCTX__MAX_MEASUREMENTS")
    if not single_shot:
        raise InvalidInput("No single-shot measurements were given.",
                           hint="Measure single-shot accuracy at 2 or more lengths (longctx_single_shot).")
    s_loss = [accuracy_to_loss(p.accuracy, p.items) for p in single_shot]
    rows = []
    target = target_tokens or max([p.tokens for p in single_shot] + [p.tokens for p in chunked])
    notes: list[str] = []
    fit_points = [(p.tokens, loss) for p, loss in zip(single_shot, s_loss, strict=True) if p.accuracy > 0]
    if len({t for t, loss in fit_points if loss > 0}) < 2:
        fit_points = list(zip([p.tokens for p in single_shot], s_loss, strict=True))
    elif len(fit_points) < len(single_shot):
        notes.append(f"{len(single_shot) - len(fit_points)} single-shot points at accuracy 0 were left out of the "
                     "fit: their loss is only known to be at least the floor -ln(1/(2n)).")
    try:
        law: PowerLaw | None = fit_power_law([t for t, _ in fit_points], [loss for _, loss in fit_points])
    except InvalidInput:
        if not all(loss <= trivial_loss for loss in s_loss):
            raise
        law = None  # accuracy (near) perfect everywhere: nothing to fit, the regime is trivial
    for p, loss in zip(single_shot, s_loss, strict=True):
        rows.append(FitRow(series="single_shot", tokens=p.tokens, chunk_tokens=None, accuracy=p.accuracy, loss=loss,
                           fitted_loss=law(p.tokens) if law else None))
    single_at = law(target) if law else max(s_loss)
    cfit = None
    ref = None
    chunked_at = None
    model_pc = task_pc = None
    crossover = best_c = None
    if chunked:
        c_loss = [accuracy_to_loss(p.accuracy, p.items) for p in chunked]
        counts = [p.n_chunks or math.ceil(p.tokens / p.chunk_tokens) for p in chunked]
        cfit = fit_chunked(counts, c_loss)
        by_size: dict[int, list[float]] = {}
        for p, loss in zip(chunked, c_loss, strict=True):
            by_size.setdefault(p.chunk_tokens, []).append(loss)
        ref = min(by_size, key=lambda c: (sum(by_size[c]) / len(by_size[c]), -c))
        chunked_at = cfit.agg_loss + cfit.per_chunk_loss * math.ceil(target / ref)
        for p, loss, n in zip(chunked, c_loss, counts, strict=True):
            rows.append(FitRow(series="chunked", tokens=p.tokens, chunk_tokens=p.chunk_tokens, accuracy=p.accuracy,
                               loss=loss, fitted_loss=cfit.agg_loss + cfit.per_chunk_loss * n))
        if law:
            model_pc = law(ref)
            task_pc = max(0.0, cfit.per_chunk_loss - model_pc)
            crossover = crossover_length(law.alpha, law.beta, cfit.per_chunk_loss / ref, cfit.agg_loss)
            best_c = best_chunk_for_noise(law.alpha, law.beta, task_pc)
    regime = name_regime(law, single_at, chunked_at, (model_pc or 0.0) * math.ceil(target / ref) if ref else None,
                         trivial_loss)
    fit = NoiseFitResult(
        alpha=law.alpha if law else None, beta=law.beta if law else None, r2=law.r2 if law else None,
        per_chunk_loss=cfit.per_chunk_loss if cfit else None, aggregator_loss=cfit.agg_loss if cfit else None,
        reference_chunk_tokens=ref, model_noise_per_chunk=model_pc, task_noise_per_chunk=task_pc,
        target_tokens=target, single_loss_at_target=single_at, chunked_loss_at_target=chunked_at,
        single_accuracy_at_target=math.exp(-single_at),
        chunked_accuracy_at_target=math.exp(-chunked_at) if chunked_at is not None else None,
        regime=regime.name, explanation=regime.explanation, crossover_tokens=crossover,
        predicted_best_chunk_tokens=best_c, rows=rows, notes=notes,
    )
    if plot:
        from tools.longctx.plots import fit_plot
        from tools.paths import output_path

        fit.plot_png = str(fit_plot(fit, single_shot, chunked, output_path("longctx_noise_fit", ".png")))
    return fit
