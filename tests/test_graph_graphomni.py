"""The bundled GraphOmni slice: graph_solve agrees with every gt answer that validates against its graph."""

import json

import pytest

from tools.graph.catalog import graph_check_answer, graph_solve
from tools.graph.graphomni import SAMPLE_NAME, audit, read_records, record_graph, record_params
from tools.graph.model import to_spec
from tools.paths import sample_path


@pytest.fixture(scope="module")
def records():
    return list(read_records(sample_path(SAMPLE_NAME)))


def test_audit_counts_match_the_records_own_consistency_flags(records, capsys):
    a = audit(records)
    # The data's own flags were computed independently (BFS / triangle enumeration on graph_info).
    flagged_bad = {r["id"] for r in records if not r["gt_consistent_with_graph_info"]}
    flagged_differs = sum(1 for r in records if not r["query_graph_matches_graph_info"])
    assert a.records == len(records) == 3442
    assert set(a.invalid_ids) == flagged_bad
    assert a.gt_invalid == len(flagged_bad) == 41
    assert a.gt_valid == a.records - a.gt_invalid == 3401
    assert a.solve_agrees == a.gt_valid
    assert a.query_graph_differs == flagged_differs == 29
    assert all(v["gt_valid"] == v["records"] for k, v in a.by_task.items() if k != "shortest_path")
    with capsys.disabled():
        print(f"\nGraphOmni LTM x Adjacency Set slice: {a.records} records, {a.gt_valid} gt answers validate "
              f"against graph_info, graph_solve agrees on {a.solve_agrees}, {a.gt_invalid} gt answers are not "
              f"valid ({a.node_not_in_graph} name a node graph_info lacks), {a.query_graph_differs} query graphs "
              f"differ from graph_info; by task: " + json.dumps({k: dict(v) for k, v in a.by_task.items()}))


def test_tools_accept_gt_answers_through_the_public_api(records):
    # A spread of records through graph_solve / graph_check_answer exactly as a client calls them.
    picked = [r for r in records if r["gt_consistent_with_graph_info"]][::97]
    assert len(picked) >= 30
    for r in picked:
        spec = to_spec(record_graph(r)).model_dump()
        p = record_params(r)
        c = graph_check_answer(r["task"], str(r["gt_answer"]), graph=spec, **p)
        assert c.correct, (r["id"], c.reason)
        s = graph_solve(r["task"], graph=spec, **p)
        again = graph_check_answer(r["task"], s.answer_text, graph=spec, **p)
        assert again.correct
