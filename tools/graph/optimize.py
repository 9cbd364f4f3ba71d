"""Choosing a (serialization, prompt scheme) pair under a budget: factor-wise successive halving.

An arm is one (format, scheme) combination; pulling it means asking the model a batch of questions
in that combination. Cost is the fraction of the combinations that were ever evaluated, Rate the true
accuracy of the chosen combination over the best one (known only when the whole table is known).

The search exploits that the factors act mostly separately (the premise of GraphOmni's factor study):
1. with the scheme held at an anchor, successive halving over the formats (each round gives every
   surviving arm `batch` more questions, then keeps the better half) picks a format;
2. with that format, successive halving over the schemes picks a scheme;
3. while distinct-arm budget remains, the runner-up formats are tried with the chosen scheme.
With 7 formats and 9 schemes, steps 1-2 touch 7 + 9 - 1 = 15 of 63 arms (Cost 0.238). The returned
arm is the one with the best observed accuracy among those evaluated.

`accuracy_table` builds the deterministic per-combination table the tests use (see its docstring).
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tools.errors import InvalidInput

Arm = tuple[str, str]  # (format, scheme)
Evaluate = Callable[[Arm, int], Awaitable[tuple[int, int]]]  # -> (correct, asked)


@dataclass
class ArmStats:
    correct: int = 0
    asked: int = 0

    @property
    def mean(self) -> float:
        return self.correct / self.asked if self.asked else 0.0


@dataclass
class SearchResult:
    best: Arm
    best_observed: float
    arms_evaluated: int
    arms_total: int
    questions_asked: int
    stats: dict[Arm, ArmStats] = field(default_factory=dict)
    trace: list[str] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return self.arms_evaluated / self.arms_total


async def _halving(arms: list[Arm], stats: dict[Arm, ArmStats], evaluate: Evaluate, batch: int,
                   trace: list[str], label: str) -> Arm:
    alive = list(arms)
    rnd = 0
    while True:
        for arm in alive:
            c, n = await evaluate(arm, batch * (2**rnd))
            s = stats.setdefault(arm, ArmStats())
            s.correct += c
            s.asked += n
        alive.sort(key=lambda a: (-stats[a].mean, arms.index(a)))
        trace.append(f"{label} round {rnd}: " + ", ".join(f"{a[0]}/{a[1]}={stats[a].mean:.3f}" for a in alive))
        if len(alive) == 1:
            return alive[0]
        alive = alive[: math.ceil(len(alive) / 2)]
        rnd += 1
        if len(alive) == 1:
            return alive[0]


async def factor_search(formats: list[str], schemes: list[str], evaluate: Evaluate, *, budget: float = 0.25,
                        batch: int = 8, anchor_scheme: str | None = None) -> SearchResult:
    """Pick a (format, scheme) pair touching at most `budget` of all pairs (see the module docstring)."""
    if not formats or not schemes:
        raise InvalidInput("Give at least one format and one scheme.", hint="e.g. formats=['adjacency_set'].")
    if not 0 < budget <= 1:
        raise InvalidInput(f"budget = {budget} is not a fraction in (0, 1].", hint="Use e.g. 0.25.")
    total = len(formats) * len(schemes)
    max_arms = max(1, math.floor(budget * total + 1e-9))
    anchor = anchor_scheme if anchor_scheme in schemes else ("CoT" if "CoT" in schemes else schemes[0])
    stats: dict[Arm, ArmStats] = {}
    trace: list[str] = []
    fmt_pool = formats[: max(1, min(len(formats), max_arms - 1 if len(schemes) > 1 else max_arms))]
    f_best = await _halving([(f, anchor) for f in fmt_pool], stats, evaluate, batch, trace, "formats")
    left = max_arms - len(stats)
    scheme_pool = [anchor, *[s for s in schemes if s != anchor][:max(0, left)]]
    s_best = await _halving([(f_best[0], s) for s in scheme_pool], stats, evaluate, batch, trace, "schemes")
    ranked_formats = sorted(fmt_pool, key=lambda f: -stats[(f, anchor)].mean)
    extra = [(f, s_best[1]) for f in ranked_formats if (f, s_best[1]) not in stats]
    extra += [(f, s_best[1]) for f in formats if f not in fmt_pool]
    room = max_arms - len(stats)
    if room > 0 and extra:
        candidates = extra[:room]
        await _halving([s_best, *candidates], stats, evaluate, batch, trace, "formats again")
    best = max(stats, key=lambda a: (stats[a].mean, stats[a].asked))
    return SearchResult(best=best, best_observed=stats[best].mean, arms_evaluated=len(stats), arms_total=total,
                        questions_asked=sum(s.asked for s in stats.values()), stats=stats, trace=trace)


def table_evaluator(table: dict[Arm, float]) -> Evaluate:
    """An `evaluate` that reads exact accuracies from a table (asked = n, correct = accuracy * n)."""

    async def evaluate(arm: Arm, n: int) -> tuple[int, int]:
        if arm not in table:
            raise InvalidInput(f"The accuracy table has no entry for {arm}.", hint="Give every (format, scheme).")
        return round(table[arm] * n * 1000), n * 1000

    return evaluate


def accuracy_table(task: str, formats: list[str], schemes: list[str], *, format_tokens: dict[str, float],
                   interaction_sd: float = 0.35, seed: int = 0) -> dict[Arm, float]:
    """A deterministic per-combination accuracy table from a logistic factor model.

    logit(accuracy) = b_task + b_format + b_scheme + e, where
    - b_format = -0.8 * z(log tokens): the measured mean prompt length of each serialization on this
      task's graphs (`format_tokens`), standardised; longer encodings are read less reliably;
    - b_scheme: a fixed ordering, few-shot with reasoning > zero-shot reasoning cues > bare answers
      (Algorithm 0.9, CoT 0.8, Instruct 0.6, k-shot 0.4, 0-Algorithm 0.3, 0-CoT 0.2, LTM 0.1,
      0-Instruct 0.0, none -0.4);
    - b_task: a seeded draw in [-1, 1] per task; e: seeded N(0, interaction_sd) per combination, the
      part no factor-wise search can anticipate.
    """
    rng = random.Random(f"table|{task}|{seed}")
    scheme_effect = {"Algorithm": 0.9, "CoT": 0.8, "Instruct": 0.6, "k-shot": 0.4, "0-Algorithm": 0.3,
                     "0-CoT": 0.2, "LTM": 0.1, "0-Instruct": 0.0, "none": -0.4}
    logs = {f: math.log(max(format_tokens[f], 1.0)) for f in formats}
    mu = sum(logs.values()) / len(logs)
    sd = (sum((x - mu) ** 2 for x in logs.values()) / len(logs)) ** 0.5 or 1.0
    b_task = rng.uniform(-1, 1)
    table = {}
    for f in formats:
        for s in schemes:
            z = b_task - 0.8 * (logs[f] - mu) / sd + scheme_effect.get(s, 0.0) + rng.gauss(0, interaction_sd)
            table[(f, s)] = 1 / (1 + math.exp(-z))
    return table


def measured_format_tokens(formats: list[str]) -> dict[str, float]:
    """Mean serialized length (chars / 4) of each format over GraphOmni-style graphs of all three difficulties."""
    from tools.graph.generate import generate
    from tools.graph.serialize import serialize

    graphs = [generate(g, difficulty=d, seed=1) for g in ("ERP", "BAG", "SF") for d in ("easy", "medium", "hard")]
    return {f: sum(len(serialize(G, f)) / 4 for G in graphs) / len(graphs) for f in formats}


async def table_study(tasks: list[str], formats: list[str], schemes: list[str], *, seeds: int = 10,
                      sds: tuple[float, ...] = (0.0, 0.35, 0.7, 1.0), budget: float = 0.25) -> list[dict]:
    """Cost and Rate of `factor_search` over many fixed tables, beside random search touching as many arms."""
    toks = measured_format_tokens(formats)
    arms = [(f, s) for f in formats for s in schemes]
    out = []
    for sd in sds:
        rates, costs, rand = [], [], []
        for seed in range(seeds):
            for task in tasks:
                table = accuracy_table(task, formats, schemes, format_tokens=toks, interaction_sd=sd, seed=seed)
                best = max(table.values())
                res = await factor_search(formats, schemes, table_evaluator(table), budget=budget)
                rates.append(table[res.best] / best)
                costs.append(res.cost)
                pick = random.Random(f"{seed}|{task}").sample(arms, res.arms_evaluated)
                rand.append(max(table[a] for a in pick) / best)
        out.append({"interaction_sd": sd, "tables": len(rates), "cost": sum(costs) / len(costs),
                    "rate": sum(rates) / len(rates), "min_rate": min(rates),
                    "random_search_rate": sum(rand) / len(rand)})
    return out
