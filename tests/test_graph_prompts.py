"""Prompt schemes, exemplars made from solved instances, and self-consistency voting."""

import threading

import anyio
import pytest

from evals.graph.scripted import networkx_answer, read_question, scheme_of
from tests.scripted_llm import ScriptedLLM, last_user_text
from tools.graph.benchmark import make_item, run_items
from tools.graph.generate import generate
from tools.graph.prompts import SCHEMES, build_prompt, majority_vote, make_exemplars
from tools.graph.tasks import check, get_task, solve
from tools.llm import OpenAIChat


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_each_scheme_has_its_layout(scheme):
    task = get_task("shortest_path")
    G = generate("ERP", n_nodes=8, seed=4)
    p = {"source": 0, "target": 7} if solve(task, G, {"source": 0, "target": 7}).answer else {"source": 0,
                                                                                            "target": 1}
    prompt = build_prompt(task, G, p, "adjacency_set", scheme, k=2)
    assert scheme_of(prompt) == scheme
    assert prompt.count("\nQ: ") == (3 if scheme in ("CoT", "k-shot", "Instruct", "Algorithm") else 1)
    assert "Graph: Adjacency Set is \n{0: {" in prompt
    key, fmt, H, q = read_question(prompt)  # the question part reads back to the same graph and nodes
    assert (key, fmt, q) == ("shortest_path", "adjacency_set", p)
    assert sorted(H.edges()) == sorted(G.edges())


def test_exemplars_are_solved_instances_of_the_same_kind():
    task = get_task("topological_sort")
    G = generate("BAG", n_nodes=9, seed=2, directed=True, acyclic=True)
    exs = make_exemplars(task, G, 3, seed=1)
    assert len(exs) == 3
    for ex in exs:
        assert ex.graph.is_directed() and 5 <= ex.graph.number_of_nodes() <= 10
        # each exemplar answer is checked against its own graph, by networkx's topological sort as well
        assert check(task, ex.graph, ex.params, str(ex.solution.answer), ex.solution).correct
        assert check(task, ex.graph, ex.params, str(networkx_answer("topological_sort", ex.graph, {}))).correct


def test_majority_vote_picks_the_most_common_reading():
    task = get_task("triangle")
    reply, votes = majority_vote(task, ["Answer: 3", "I think 4", "So there are 3 triangles.", "no idea"])
    assert votes == 2 and reply == "Answer: 3"
    path = get_task("shortest_path")
    reply, votes = majority_vote(path, ["0 -> 2", "[0, 1, 2]", "Answer: 0, 1, 2"])
    assert votes == 2 and reply == "[0, 1, 2]"


def test_self_consistency_recovers_from_a_wrong_first_sample():
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def rule(body):
        prompt = last_user_text(body)
        with lock:
            seen[prompt] = seen.get(prompt, 0) + 1
            first = seen[prompt] == 1
        key, _, G, p = read_question(prompt)
        ans = networkx_answer(key, G, p)
        return f"Answer: {'yes' if ans != first else 'no'}"  # the first sample of each prompt is wrong

    items = [make_item("connectivity", "ERP", "edge_set", "LTM", "easy", s) for s in range(6)]
    with ScriptedLLM(rule) as llm:
        model = OpenAIChat(base_url=llm.base_url, api_key="x", model="scripted")
        single = anyio.run(lambda: run_items(items, model))
        seen.clear()
        voted = anyio.run(lambda: run_items(items, model, samples=3))
    assert sum(r.correct for r in single) == 0
    assert sum(r.correct for r in voted) == 6 and all(r.votes == 2 for r in voted)
