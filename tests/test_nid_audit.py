"""The rank DP audit against Steinke, Nasr and Jagielski's Appendix-D procedure, closed forms and simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from tools.errors import InvalidInput
from tools.nid.audit import (
    binary_audit,
    eps_lower_bound,
    eps_lower_bound_closed_form,
    p_value,
    rank_audit,
)


# --- Steinke et al. (2023), "Privacy Auditing with One (1) Training Run", Appendix D, written out again here.
def steinke_p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    assert 0 <= v <= r <= m
    q = math.exp(eps) / (math.exp(eps) + 1)
    beta = scipy.stats.binom.sf(v - 1, r, q)  # P[Binomial(r, q) >= v]
    pmf = scipy.stats.binom.pmf(np.arange(v), r, q)
    alpha = 0.0
    total = 0.0  # P[v > Binomial(r, q) >= v - i]
    for i in range(1, v + 1):
        total += pmf[v - i]
        if total > i * alpha:
            alpha = total / i
    return min(beta + alpha * delta * 2 * m, 1.0)


def steinke_eps(m: int, r: int, v: int, delta: float, p: float) -> float:
    eps_min, eps_max = 0.0, 1.0
    while steinke_p_value(m, r, v, eps_max, delta) < p:
        eps_max += 1
    for _ in range(50):
        eps = (eps_min + eps_max) / 2
        if steinke_p_value(m, r, v, eps, delta) < p:
            eps_min = eps
        else:
            eps_max = eps
    return eps_min


@pytest.mark.parametrize(("m", "r", "v", "delta"), [
    (1000, 100, 90, 0.0), (1000, 100, 90, 1e-5), (1000, 1000, 600, 1e-5), (500, 50, 50, 1e-6),
    (200, 200, 150, 0.0), (10_000, 500, 420, 1e-5), (100, 20, 12, 1e-3),
])
def test_equals_steinke_appendix_d(m: int, r: int, v: int, delta: float) -> None:
    c = np.full(r, 2)
    ones = np.ones(r, dtype=int)
    ours = eps_lower_bound(c, ones, v, alpha=0.05, delta=delta, total_candidates=2 * m)
    ref = steinke_eps(m, r, v, delta, 0.05)
    assert ours == pytest.approx(ref, abs=1e-6)
    for eps in (0.0, 0.5, 2.0):
        assert p_value(eps, c, ones, v, delta=delta, total_candidates=2 * m) == pytest.approx(
            steinke_p_value(m, r, v, eps, delta), rel=1e-9, abs=1e-12)


def test_binary_mode_with_abstention_equals_steinke() -> None:
    rng = np.random.default_rng(5)
    m = 400
    nid = rng.normal(size=m) + 0.6
    gid = rng.normal(size=m)
    k = 120
    res = binary_audit(nid, gid, guesses=k, alpha=0.05, delta=1e-5)
    gap = nid - gid
    top = np.argsort(-np.abs(gap))[:k]
    v = int(np.sum(gap[top] > 0))
    assert res.correct == v and res.guesses == k and res.total_nids == m
    assert res.eps_lower_bound == pytest.approx(steinke_eps(m, k, v, 1e-5, 0.05), abs=1e-6)
    assert res.eps_lower_bound > 0


@pytest.mark.parametrize(("n", "c", "r", "v"), [(200, 2, 1, 150), (200, 128, 1, 60), (500, 16, 4, 300),
                                                (50, 10, 3, 49), (300, 4, 1, 80), (100, 2, 1, 100)])
def test_closed_form_equals_search(n: int, c: int, r: int, v: int) -> None:
    num = eps_lower_bound(np.full(n, c), np.full(n, r), v, alpha=0.05)
    closed = eps_lower_bound_closed_form(n, c, r, v, alpha=0.05)
    assert num == pytest.approx(closed, abs=1e-6)


def test_p_value_is_poisson_binomial_tail() -> None:
    """Mixed c and r: compare with brute-force enumeration of the Poisson binomial."""
    c = np.array([2, 2, 5, 8, 8, 3])
    r = np.array([1, 1, 2, 1, 3, 2])
    eps = 0.7
    p = np.minimum(1, r * math.exp(eps) / (c - 1 + math.exp(eps)))
    for v in range(0, 7):
        brute = 0.0
        for mask in range(64):
            bits = [(mask >> i) & 1 for i in range(6)]
            if sum(bits) >= v:
                brute += float(np.prod([p[i] if b else 1 - p[i] for i, b in enumerate(bits)]))
        assert p_value(eps, c, r, v) == pytest.approx(brute, abs=1e-12)


def _kary_rr_trial(rng: np.random.Generator, cs: np.ndarray, eps: float) -> list[np.ndarray]:
    """k-ary randomized response, exactly eps-DP under replacing the inserted candidate: the model 'reveals'
    the true candidate with probability e^eps / (e^eps + c - 1), else a uniformly random other one."""
    rows = []
    for c in cs:
        scores = np.zeros(c)
        if rng.random() < math.exp(eps) / (math.exp(eps) + c - 1):
            scores[0] = 1.0
        else:
            scores[rng.integers(1, c)] = 1.0
        rows.append(scores)
    return rows


@pytest.mark.parametrize(("eps", "mixed"), [(1.0, False), (2.0, True)])
def test_randomized_response_coverage(eps: float, mixed: bool) -> None:
    rng = np.random.default_rng(11)
    trials = 300
    cs = np.array([2, 8] * 50) if mixed else np.full(100, 4)
    exceed = 0
    bounds = []
    for _ in range(trials):
        res = rank_audit(_kary_rr_trial(rng, cs, eps), r=1, alpha=0.05)
        bounds.append(res.eps_lower_bound)
        exceed += res.eps_lower_bound > eps
    rate = exceed / trials
    # at most alpha plus three Monte-Carlo standard errors
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    assert np.median(bounds) > 0.3 * eps  # and the bound is not vacuous


def test_bad_arguments() -> None:
    with pytest.raises(InvalidInput, match="c >= 2"):
        eps_lower_bound(np.array([1, 2]), np.array([1, 1]), 1)
    with pytest.raises(InvalidInput, match="1 <= r < c"):
        eps_lower_bound(np.array([4]), np.array([4]), 1)
    for alpha in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(InvalidInput, match="alpha"):
            eps_lower_bound(np.array([2]), np.array([1]), 1, alpha=alpha)


def test_delta_loosens_and_null_gives_zero() -> None:
    c, r = np.full(300, 2), np.ones(300, dtype=int)
    assert eps_lower_bound(c, r, 250, delta=1e-4) < eps_lower_bound(c, r, 250)
    assert eps_lower_bound(c, r, 150) == 0.0
