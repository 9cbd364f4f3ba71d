"""The dual-level metrics on hand-made trajectories, including the cases Earth-Agent's evaluator got wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.agents.metrics import (
    Call,
    Expected,
    PathContext,
    answer_correct,
    efficiency,
    parameter_match,
    score_suite,
    tool_any_order,
    tool_exact_match,
    tool_in_order,
    validate_chains,
)


def calls(*names: str) -> list[Call]:
    return [Call(n) for n in names]


E = calls("a", "b", "c", "d")


@pytest.mark.parametrize(("pred", "any_order", "in_order", "exact"), [
    (calls("a", "b", "c", "d"), 1.0, 1.0, 1.0),
    (calls("d", "c", "b", "a"), 1.0, 0.25, 0.0),            # all used, reversed: only "a" in order
    (calls("a", "x", "b", "c", "d"), 1.0, 1.0, 0.25),        # an extra call shifts every position after it
    (calls("a", "b", "d"), 0.75, 0.5, 0.5),                  # "c" missing: the in-order prefix stops at it
    (calls("b", "a", "c", "d"), 1.0, 0.25, 0.0),             # no "b" after the "a": the prefix is "a" alone
    ([], 0.0, 0.0, 0.0),
    (calls("a", "a", "a", "a"), 0.25, 0.25, 0.25),
])
def test_trajectory_metrics(pred, any_order, in_order, exact):
    assert tool_any_order(E, pred) == pytest.approx(any_order)
    assert tool_in_order(E, pred) == pytest.approx(in_order)
    assert tool_exact_match(E, pred) == pytest.approx(exact)


def test_in_order_is_a_prefix_not_a_longest_common_subsequence():
    # c, d occur in order, but the prefix a, b does not: the score counts the prefix only
    assert tool_in_order(E, calls("c", "d")) == 0.0
    assert tool_in_order(E, calls("a", "c", "d")) == 0.25


def test_repeated_names_in_expected_chain_need_repeated_calls():
    exp = calls("x", "x", "y")
    assert tool_in_order(exp, calls("x", "y")) == pytest.approx(1 / 3)
    assert tool_in_order(exp, calls("x", "x", "y")) == 1.0
    assert tool_any_order(exp, calls("x")) == 0.5  # set recall: {x} of {x, y}


@pytest.fixture
def ctx(tmp_path: Path) -> PathContext:
    sample = tmp_path / "pkg" / "sample_data"
    (sample / "eo").mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    return PathContext(sample_dir=sample.resolve(), output_dir=out.resolve(), cwd=tmp_path.resolve())


def test_parameter_compares_paths_normalised_not_as_absolute_strings(ctx: PathContext):
    exp = [Call("eo_index", {"scene": "sample://eo/l8", "index": "NDVI"})]
    # the same bundled file given as an absolute path, and as a path relative to the working folder
    assert parameter_match(exp, [Call("eo_index", {"scene": str(ctx.sample_dir / "eo" / "l8"), "index": "NDVI"})],
                           ctx) == 1.0
    assert parameter_match(exp, [Call("eo_index", {"scene": "pkg/sample_data/eo/l8", "index": "NDVI"})], ctx) == 1.0
    assert parameter_match(exp, [Call("eo_index", {"scene": "pkg/sample_data/eo/../eo/l8", "index": "NDVI"})],
                           ctx) == 1.0
    # a different file, or a different argument, does not match
    assert parameter_match(exp, [Call("eo_index", {"scene": "sample://eo/s2", "index": "NDVI"})], ctx) == 0.0
    assert parameter_match(exp, [Call("eo_index", {"scene": "sample://eo/l8", "index": "EVI"})], ctx) == 0.0


def test_parameter_matches_output_files_without_their_unique_suffix(ctx: PathContext):
    exp = [Call("eo_stats", {"raster": "output://ndvi*.tif"})]
    written = str(ctx.output_dir / "ndvi-landsat-3fa9c2d1.tif")
    assert parameter_match(exp, [Call("eo_stats", {"raster": written})], ctx) == 1.0
    assert parameter_match(exp, [Call("eo_stats", {"raster": str(ctx.output_dir / "evi-1234abcd.tif")})], ctx) == 0.0
    exact = [Call("eo_stats", {"raster": "output://ndvi.tif"})]
    assert parameter_match(exact, [Call("eo_stats", {"raster": str(ctx.output_dir / "ndvi-0a1b2c3d.tif")})],
                           ctx) == 1.0


def test_parameter_counts_a_prefix_and_treats_defaults_and_number_types_as_equal(ctx: PathContext):
    schemas = {"t": {"properties": {"k": {"type": "integer", "default": 3}, "x": {"type": "number"}}}}
    exp = [Call("t", {"x": 1}), Call("t", {"x": 2, "k": 3}), Call("t", {"x": 3})]
    pred = [Call("t", {"x": 1.0, "k": 3}), Call("t", {"x": 2}), Call("t", {"x": 4})]
    assert parameter_match(exp, pred, ctx, schemas) == pytest.approx(2 / 3)
    # without the schema an explicit default differs from an omitted one
    assert parameter_match(exp, pred, ctx) == 0.0
    # a mismatch early stops the prefix even when later calls agree
    assert parameter_match(exp, [Call("t", {"x": 9}), Call("t", {"x": 2}), Call("t", {"x": 3})], ctx, schemas) == 0.0


def test_answers_numbers_choices_and_text():
    num = Expected("number", 0.5306, abs_tol=0.005)
    assert answer_correct(num, "The mean NDVI is high.\nAnswer: 0.531")
    assert not answer_correct(num, "Answer: 0.54")
    assert not answer_correct(num, "I could not compute it.")
    rel = Expected("number", 286.73, rel_tol=0.01)
    assert answer_correct(rel, "Answer: 288.5 K")
    assert answer_correct(Expected("number", 1500, abs_tol=0.5), "Answer: 1,500 pixels")
    mc = Expected("choice", "B", options={"A": "Water", "B": "Vegetation", "C": "Urban"})
    assert answer_correct(mc, "Answer: B")
    assert answer_correct(mc, "Answer: (B) Vegetation")
    assert answer_correct(mc, "Answer: vegetation")
    assert not answer_correct(mc, "Answer: A")
    assert not answer_correct(mc, "Answer: vegetation or urban")  # two options named: not an answer
    assert answer_correct(Expected("text", "yes"), "Answer: Yes.")


def test_efficiency_is_agent_calls_over_expected_calls():
    assert efficiency(E, calls("a", "b")) == 0.5
    assert efficiency(E, calls(*"abcdabcd")) == 2.0


def test_results_are_keyed_by_task_id_so_a_missing_result_shifts_nothing():
    tasks = {f"t{i}": ([Call("f", {"i": i})], Expected("number", i, abs_tol=0.1)) for i in range(1, 5)}
    # t2 produced no result; everything else is right
    results = {(tid, "goal"): ([Call("f", {"i": i})], f"Answer: {i}")
               for tid, i in (("t1", 1), ("t3", 3), ("t4", 4))}
    scores = {s.task_id: s for s in score_suite(tasks, results, ["goal"], ctx=PathContext(Path("/s"), Path("/o"),
                                                                                           Path("/")))}
    assert scores["t2"].missing and not scores["t2"].correct and scores["t2"].parameter == 0.0
    assert all(scores[t].correct and scores[t].parameter == 1.0 for t in ("t1", "t3", "t4"))
    # pairing by position (the evaluator's fault) would have scored t3 and t4 against t2's and t3's truth
    positional = list(zip(list(tasks.values())[: len(results)], results.values(), strict=True))
    assert sum(answer_correct(truth[1], got[1]) for truth, got in positional) == 1
    with pytest.raises(KeyError):
        score_suite(tasks, {("nope", "goal"): ([], "")}, ["goal"])


def test_validate_chains_names_tools_the_server_lacks():
    chains = {"ok": calls("a", "b"), "bad": calls("a", "zz", "yy")}
    assert validate_chains(chains, ["a", "b"]) == {"bad": ["yy", "zz"]}
    assert validate_chains({"ok": calls("a")}, ["a"]) == {}
