"""The factor optimizer on a fixed accuracy table: Cost <= 0.25 and Rate >= 0.95 averaged over tasks."""

import statistics

import anyio
import pytest

from tools.graph.optimize import accuracy_table, factor_search, measured_format_tokens, table_evaluator
from tools.graph.prompts import SCHEMES
from tools.graph.serialize import GRAPHOMNI_FORMATS
from tools.graph.tasks import GRAPHOMNI_TASKS


def format_tokens() -> dict[str, float]:
    return measured_format_tokens(GRAPHOMNI_FORMATS)


def run(table):
    return anyio.run(lambda: factor_search(GRAPHOMNI_FORMATS, list(SCHEMES), table_evaluator(table)))


def test_cost_and_rate_over_graphomni_tasks(capsys):
    toks = format_tokens()
    rates, costs = [], []
    for task in GRAPHOMNI_TASKS:
        table = accuracy_table(task, GRAPHOMNI_FORMATS, list(SCHEMES), format_tokens=toks, seed=0)
        res = run(table)
        assert res.arms_evaluated == len(res.stats)
        rates.append(table[res.best] / max(table.values()))
        costs.append(res.cost)
    with capsys.disabled():
        print(f"\nfactor optimizer on the fixed table: Cost {statistics.mean(costs):.3f}, "
              f"Rate {statistics.mean(rates):.3f} (min {min(rates):.3f}) over {len(rates)} tasks")
    assert statistics.mean(costs) <= 0.25
    assert statistics.mean(rates) >= 0.95


def test_separable_table_is_solved_exactly():
    toks = format_tokens()
    table = accuracy_table("triangle", GRAPHOMNI_FORMATS, list(SCHEMES), format_tokens=toks, interaction_sd=0.0)
    res = run(table)
    assert table[res.best] == max(table.values())


def test_random_search_at_the_same_cost_does_worse():
    import random

    toks = format_tokens()
    arms = [(f, s) for f in GRAPHOMNI_FORMATS for s in SCHEMES]
    ours, rand = [], []
    for seed in range(5):
        for task in GRAPHOMNI_TASKS:
            table = accuracy_table(task, GRAPHOMNI_FORMATS, list(SCHEMES), format_tokens=toks, seed=seed)
            best = max(table.values())
            ours.append(table[run(table).best] / best)
            pick = random.Random(seed).sample(arms, 15)
            rand.append(max(table[a] for a in pick) / best)
    assert statistics.mean(ours) > statistics.mean(rand)


def test_bad_budget_is_refused():
    from tools.errors import InvalidInput

    with pytest.raises(InvalidInput):
        anyio.run(lambda: factor_search(["a"], ["b"], table_evaluator({("a", "b"): 0.5}), budget=0))
