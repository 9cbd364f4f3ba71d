"""The noise model: power-law fit, chunked decomposition, regimes, Proposition 3.1, against scipy and hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from evals.longctx.scripted import PaperRules
from tools.errors import InvalidInput
from tools.longctx.models import ChunkedPoint, SinglePoint
from tools.longctx.noise import (
    accuracy_to_loss,
    best_chunk_for_noise,
    crossover_length,
    fit_chunked,
    fit_power_law,
    longctx_fit_noise,
)


def test_exact_power_law_is_recovered() -> None:
    lengths = [1000, 2000, 4000, 8000, 16000]
    losses = [3e-7 * t**1.7 for t in lengths]
    law = fit_power_law(lengths, losses)
    assert law.alpha == pytest.approx(3e-7, rel=1e-9)
    assert law.beta == pytest.approx(1.7, rel=1e-9)
    assert law.r2 == pytest.approx(1.0)


def test_noisy_fit_matches_scipy_linregress_on_logs() -> None:
    rng = np.random.default_rng(0)
    lengths = np.array([500, 1000, 2000, 4000, 8000, 16000, 32000], dtype=float)
    losses = 2e-5 * lengths**1.3 * np.exp(rng.normal(0, 0.2, lengths.size))
    law = fit_power_law(lengths.tolist(), losses.tolist())
    ref = stats.linregress(np.log(lengths), np.log(losses))
    assert law.beta == pytest.approx(ref.slope, rel=1e-9)
    assert law.alpha == pytest.approx(math.exp(ref.intercept), rel=1e-9)
    assert law.r2 == pytest.approx(ref.rvalue**2, rel=1e-9)


def test_fit_needs_two_lengths_with_loss() -> None:
    with pytest.raises(InvalidInput, match="two or more distinct lengths"):
        fit_power_law([1000, 2000], [0.0, 0.3])


def test_accuracy_to_loss() -> None:
    assert accuracy_to_loss(1.0) == 0.0
    assert accuracy_to_loss(0.5) == pytest.approx(math.log(2))
    assert accuracy_to_loss(0.0, n_items=50) == pytest.approx(math.log(100))
    with pytest.raises(InvalidInput):
        accuracy_to_loss(95.0)


def test_chunked_fit_is_least_squares() -> None:
    n = [2, 4, 8, 16]
    y = [0.05 + 0.01 * k for k in n]
    fit = fit_chunked(n, y)
    assert fit.per_chunk_loss == pytest.approx(0.01)
    assert fit.agg_loss == pytest.approx(0.05)
    ref = stats.linregress(n, [0.05 + 0.01 * k + e for k, e in zip(n, [0.01, -0.01, 0.005, 0], strict=True)])
    fit2 = fit_chunked(n, [0.05 + 0.01 * k + e for k, e in zip(n, [0.01, -0.01, 0.005, 0], strict=True)])
    assert fit2.per_chunk_loss == pytest.approx(ref.slope) and fit2.agg_loss == pytest.approx(ref.intercept)


def test_crossover_closed_form_and_root() -> None:
    # alpha*T^1.5 = kappa*T  ->  T* = (kappa/alpha)^2 = 100^2.
    assert crossover_length(1e-6, 1.5, 1e-4) == pytest.approx(10_000)
    # With an aggregator offset a, T* solves alpha*T^beta = a + kappa*T (checked against scipy fsolve).
    t = crossover_length(1e-6, 1.5, 1e-4, a=0.3)
    ref = optimize.fsolve(lambda x: 1e-6 * x**1.5 - 1e-4 * x - 0.3, 20_000)[0]
    assert t == pytest.approx(ref, rel=1e-6)
    assert t > 10_000
    assert crossover_length(1e-3, 0.9, 1e-4) is None


def test_best_chunk_matches_numeric_minimum() -> None:
    alpha, beta, tau = 2e-7, 1.6, 0.02
    c = best_chunk_for_noise(alpha, beta, tau)
    ref = optimize.minimize_scalar(lambda x: (alpha * x**beta + tau) / x, bounds=(10, 1e6), method="bounded",
                                   options={"xatol": 1e-3})
    assert c == pytest.approx(ref.x, rel=1e-3)
    assert best_chunk_for_noise(alpha, 1.0, tau) is None


def test_regimes() -> None:
    trivial = longctx_fit_noise(single_shot=[SinglePoint(tokens=t, accuracy=1.0, items=100) for t in (1000, 8000)])
    assert trivial.regime == "trivial" and trivial.alpha is None

    single = [SinglePoint(tokens=t, accuracy=math.exp(-3e-7 * t**1.6)) for t in (1000, 2000, 4000, 8000, 16000)]
    fog = longctx_fit_noise(single_shot=single, chunked=[
        ChunkedPoint(tokens=t, chunk_tokens=1000, accuracy=math.exp(-(0.02 + 0.03 * t / 1000)))
        for t in (2000, 4000, 8000, 16000)])
    assert fog.regime == "brain_fog"
    assert fog.beta == pytest.approx(1.6) and fog.per_chunk_loss == pytest.approx(0.03)
    assert fog.aggregator_loss == pytest.approx(0.02)
    assert fog.model_noise_per_chunk == pytest.approx(3e-7 * 1000**1.6)
    assert fog.task_noise_per_chunk == pytest.approx(0.03 - 3e-7 * 1000**1.6)
    # Prop. 3.1: chunked loss 0.02 + 3e-5 T meets 3e-7 T^1.6.
    t = fog.crossover_tokens
    assert 3e-7 * t**1.6 == pytest.approx(0.02 + 3e-5 * t, rel=1e-6)
    assert fog.chunked_loss_at_target < fog.single_loss_at_target

    silo = longctx_fit_noise(single_shot=single, chunked=[
        ChunkedPoint(tokens=t, chunk_tokens=1000, accuracy=math.exp(-0.5 * t / 1000)) for t in (2000, 8000, 16000)])
    assert silo.regime == "silo"
    assert silo.task_noise_per_chunk > silo.model_noise_per_chunk

    linear = longctx_fit_noise(single_shot=[SinglePoint(tokens=t, accuracy=math.exp(-1e-5 * t))
                                            for t in (1000, 4000, 16000)])
    assert linear.regime == "silo" and linear.beta == pytest.approx(1.0)


def test_fit_recovers_the_scripted_single_shot_law() -> None:
    rules = PaperRules(alpha=0.02, beta=1.5)
    single = [SinglePoint(tokens=t, accuracy=rules.p_correct(t)) for t in (1000, 2000, 4000, 8000, 16000)]
    fit = longctx_fit_noise(single_shot=single)
    # alpha is per token: 0.02 per (1000 tokens)^1.5.
    assert fit.beta == pytest.approx(1.5)
    assert fit.alpha == pytest.approx(0.02 / 1000**1.5)
    assert fit.regime == "brain_fog"


def test_points_at_zero_accuracy_are_left_out_of_the_fit() -> None:
    # Loss at accuracy 0 is censored at -ln(1/(2n)); fitting it would flatten beta.
    good = [SinglePoint(tokens=t, accuracy=math.exp(-3e-7 * t**1.6), items=10) for t in (1000, 4000, 8000)]
    dead = [SinglePoint(tokens=t, accuracy=0.0, items=10) for t in (64000, 128000)]
    fit = longctx_fit_noise(single_shot=good + dead)
    assert fit.beta == pytest.approx(1.6) and fit.alpha == pytest.approx(3e-7)
    assert "2 single-shot points at accuracy 0" in fit.notes[0]
