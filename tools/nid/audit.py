"""The one-run DP audit with natural identifiers: the rank version of Steinke, Nasr and Jagielski (2023).

Each audited NID i is ranked among its c_i candidates (itself and c_i - 1 GIDs of the same format)
by a membership score. A guess succeeds when the NID lands in the top r_i. Let v be the number of
successes. If training is eps-DP with respect to replacing one candidate by another, each guess
succeeds with probability at most p_i(eps) = r_i e^eps / (c_i - 1 + e^eps) given the others, so

    P[V >= v] <= P[sum_i Bernoulli(p_i(eps)) >= v] + delta * a * sum_i |V_i|,

a Poisson-binomial tail (a binomial when all c_i, r_i agree). The delta term follows Steinke et al.'s
Appendix D: a = max_{1<=j<=v} P[v - j <= V' < v] / j with V' the Poisson-binomial variable, and
sum_i |V_i| the total number of candidates over every NID, guessed or not (2m for their binary game).
The lower bound is the largest eps whose p-value stays below alpha.

Binary mode (c = 2, r = 1) is Steinke et al.'s game with abstention: each NID is paired with one GID,
the guesser answers only on the k pairs with the largest score gap, and a guess is right when the NID
scores higher.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from tools.errors import InvalidInput


def check_audit_args(c: np.ndarray, r: np.ndarray, alpha: float, delta: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"alpha must lie strictly between 0 and 1, got {alpha}.",
                           hint="Use a significance level such as 0.05.")
    if not 0.0 <= delta < 1.0:
        raise InvalidInput(f"delta must lie in [0, 1), got {delta}.", hint="Use 0 for pure DP or e.g. 1e-5.")
    if c.size and int(c.min()) < 2:
        raise InvalidInput(f"Every NID needs c >= 2 candidates (itself and at least one GID); got c = {int(c.min())}.",
                           hint="Generate at least one GID per NID.")
    if r.size and (int(r.min()) < 1 or bool(np.any(r >= c))):
        bad = int(np.argmax((r < 1) | (r >= c)))
        raise InvalidInput(f"The top-r threshold must satisfy 1 <= r < c; NID {bad} has r = {int(r[bad])}, "
                           f"c = {int(c[bad])}.", hint="Use r = 1 (the NID must rank first) or any r below c.")


def success_probability(eps: float, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """p_i(eps) = r e^eps / (c - 1 + e^eps), capped at 1."""
    if eps > 700:
        return np.minimum(1.0, r.astype(float))
    e = math.exp(eps)
    return np.minimum(1.0, r * e / (c - 1 + e))


def _groups(c: np.ndarray, r: np.ndarray) -> list[tuple[int, int, int]]:
    """(c, r, count) for each distinct (c, r) pair."""
    if c.size == 0:
        return []
    keys, counts = np.unique(np.stack([c, r], axis=1), axis=0, return_counts=True)
    return [(int(k[0]), int(k[1]), int(n)) for k, n in zip(keys, counts, strict=True)]


def _pmf_groups(groups: list[tuple[int, int, int]], eps: float) -> np.ndarray:
    pmf = np.ones(1)
    for ci, ri, count in groups:
        p = float(success_probability(eps, np.array([ci]), np.array([ri]))[0])
        pmf = np.convolve(pmf, stats.binom.pmf(np.arange(count + 1), count, p))
    return pmf


def poisson_binomial_pmf(c: np.ndarray, r: np.ndarray, eps: float) -> np.ndarray:
    """The pmf of sum_i Bernoulli(p_i(eps)): binomials per (c, r) group, convolved together."""
    return _pmf_groups(_groups(np.asarray(c), np.asarray(r)), eps)


def _p_value_groups(groups: list[tuple[int, int, int]], eps: float, v: int, delta: float, total: int) -> float:
    pmf = _pmf_groups(groups, eps)
    n = pmf.size - 1
    if v > n:
        return 0.0
    tail = float(pmf[v:].sum()) if v > 0 else 1.0
    if delta > 0 and v > 0:
        below = pmf[:v][::-1]  # P[V' = v-1], P[V' = v-2], ...
        a = float(np.max(np.cumsum(below) / np.arange(1, v + 1)))
        tail += a * delta * total
    return min(1.0, tail)


def p_value(eps: float, c: np.ndarray, r: np.ndarray, v: int, *, delta: float = 0.0,
            total_candidates: int | None = None) -> float:
    """Upper bound on P[V >= v] under (eps, delta)-DP for guesses with c_i candidates and top-r_i success."""
    c = np.asarray(c, dtype=np.int64)
    r = np.asarray(r, dtype=np.int64)
    total = int(c.sum()) if total_candidates is None else total_candidates
    return _p_value_groups(_groups(c, r), eps, v, delta, total)


def eps_lower_bound(c: np.ndarray, r: np.ndarray, v: int, *, alpha: float = 0.05, delta: float = 0.0,
                    total_candidates: int | None = None, iterations: int = 50) -> float:
    """The largest eps whose p-value stays below alpha (0 when even eps = 0 is not rejected)."""
    c = np.asarray(c, dtype=np.int64)
    r = np.asarray(r, dtype=np.int64)
    check_audit_args(c, r, alpha, delta)
    groups = _groups(c, r)
    total = int(c.sum()) if total_candidates is None else total_candidates

    def pv(e: float) -> float:
        return _p_value_groups(groups, e, v, delta, total)

    if pv(0.0) >= alpha:
        return 0.0
    lo, hi = 0.0, 1.0
    while pv(hi) < alpha:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            return math.inf
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if pv(mid) < alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return lo


def eps_lower_bound_closed_form(n: int, c: int, r: int, v: int, *, alpha: float = 0.05) -> float:
    """delta = 0 and equal c, r: invert the binomial tail with the Clopper-Pearson quantile.

    P[Binomial(n, p) >= v] = alpha at p* = Beta^{-1}(alpha; v, n - v + 1); then solve
    r e^eps / (c - 1 + e^eps) = p*, i.e. eps = log((c - 1) p* / (r - p*)), clipped at 0.
    """
    check_audit_args(np.array([c]), np.array([r]), alpha, 0.0)
    if v <= 0:
        return 0.0
    p_star = float(stats.beta.ppf(alpha, v, n - v + 1))
    if p_star >= r:
        return math.inf
    return max(0.0, math.log((c - 1) * p_star / (r - p_star)))


def ranks_of_nids(scores: np.ndarray) -> np.ndarray:
    """Rank (1 = best) of column 0 within each row, ties counted against the NID.

    `scores[i, 0]` is NID i's score, `scores[i, 1:]` its GIDs' scores (higher = more member-like).
    """
    s = np.asarray(scores, dtype=float)
    return 1 + np.sum(s[:, 1:] >= s[:, :1], axis=1)


@dataclass(frozen=True)
class AuditResult:
    eps_lower_bound: float
    guesses: int
    correct: int
    total_nids: int
    p_value_at_zero: float
    mode: str


def rank_audit(scores: list[np.ndarray] | np.ndarray, *, r: int | list[int] = 1, alpha: float = 0.05,
               delta: float = 0.0) -> AuditResult:
    """Rank version: NID i counts as a success when its rank among its c_i candidates is <= r_i.

    `scores` is an (n, c) array or a list of rows of varying length (NID first, then its GIDs).
    """
    rows = [np.asarray(x, dtype=float).ravel() for x in scores]
    if not rows:
        raise InvalidInput("No NIDs to audit.", hint="Pass at least one row of scores: the NID's, then its GIDs'.")
    c = np.array([row.size for row in rows], dtype=np.int64)
    r_arr = np.full(len(rows), r, dtype=np.int64) if np.isscalar(r) else np.asarray(r, dtype=np.int64)
    if r_arr.shape != c.shape:
        raise InvalidInput(f"r has {r_arr.size} entries for {c.size} NIDs.", hint="Give one r, or one per NID.")
    check_audit_args(c, r_arr, alpha, delta)
    ranks = np.array([1 + int(np.sum(row[1:] >= row[0])) for row in rows])
    v = int(np.sum(ranks <= r_arr))
    eps = eps_lower_bound(c, r_arr, v, alpha=alpha, delta=delta)
    return AuditResult(eps, len(rows), v, len(rows), p_value(0.0, c, r_arr, v, delta=delta), "rank")


def binary_audit(nid_scores: np.ndarray, gid_scores: np.ndarray, *, guesses: int | None = None,
                 alpha: float = 0.05, delta: float = 0.0) -> AuditResult:
    """Steinke et al.'s game (c = 2, r = 1) with abstention on all but the `guesses` largest score gaps."""
    a = np.asarray(nid_scores, dtype=float).ravel()
    b = np.asarray(gid_scores, dtype=float).ravel()
    if a.size != b.size or a.size == 0:
        raise InvalidInput(f"Binary mode needs one GID score per NID score; got {a.size} and {b.size}.",
                           hint="Pair each NID with exactly one GID.")
    m = a.size
    k = m if guesses is None else int(guesses)
    if not 1 <= k <= m:
        raise InvalidInput(f"guesses must lie in [1, {m}], got {k}.", hint="Guess on at most as many pairs as exist.")
    gap = a - b
    order = np.argsort(-np.abs(gap), kind="stable")[:k]
    v = int(np.sum(gap[order] > 0))
    c = np.full(k, 2, dtype=np.int64)
    r = np.ones(k, dtype=np.int64)
    eps = eps_lower_bound(c, r, v, alpha=alpha, delta=delta, total_candidates=2 * m)
    return AuditResult(eps, k, v, m, p_value(0.0, c, r, v, delta=delta, total_candidates=2 * m), "binary")
