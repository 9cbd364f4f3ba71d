"""The agent suite in CI: the scripted oracle follows each expected chain through the real agent and tools."""

from __future__ import annotations

import csv
from pathlib import Path

from evals.agents.families import all_tasks
from evals.agents.metrics import validate_chains
from evals.agents.run import main
from evals.agents.suite import STYLES


def test_suite_has_both_styles_and_enough_tasks_with_independent_answers():
    tasks = all_tasks()
    assert len(tasks) >= 30 and sum(t.family == "eo" for t in tasks) >= 15
    assert len({t.family for t in tasks}) >= 4
    for t in tasks:
        goal, steps = t.question("goal"), t.question("instruction")
        assert steps.startswith(goal) and "Follow these steps" in steps and "Follow" not in goal
        assert t.expected.kind in ("number", "choice", "text")
        if t.expected.kind == "choice":
            assert t.expected.value in (t.options or {})


def test_every_expected_tool_is_one_the_server_exposes():
    from server.registry import load_specs

    names = [s.name for s in load_specs()]
    families = {n.split("_")[0] for n in names}
    chains = {t.id: t.expected_calls() for t in all_tasks() if t.family in families}
    assert chains and validate_chains(chains, names) == {}


def test_quick_suite_runs_end_to_end_with_the_oracle(tmp_path: Path, capsys):
    assert main(["--quick", "--policy", "oracle", "--styles", "goal", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert len(rows) == 5 and {r["style"] for r in rows} == {"goal"}
    # the oracle takes each expected chain, so every trajectory metric is 1, and its answers, read from the
    # tools' results, agree with the independent reference answers
    for r in rows:
        assert r["missing"] == "False"
        assert float(r["parameter"]) == 1.0 and float(r["in_order"]) == 1.0, r
        assert float(r["accuracy"]) == 1.0, r
    assert (tmp_path / "metrics.png").stat().st_size > 1000
    assert "| all / goal | 5 |" in (tmp_path / "summary.md").read_text()
    # every oracle run calls tools, all of them known and with arguments their schemas accept
    assert "| goal | 5 | 1.000 | 1.000 | 1.000 | 1.000 |" in (tmp_path / "summary.md").read_text()
    assert set(STYLES) == {"instruction", "goal"}


def test_perturbed_trajectories_move_each_metric_the_way_it_is_defined(tmp_path: Path):
    # five two-step EO tasks; the perturbed policy deviates in a different way on each (in this order)
    ids = ["eo-l8-ndvi-mean", "eo-l8-evi-mean", "eo-l8-ndwi-mean", "eo-l8-nbr-mean", "eo-l8-vegetated-share"]
    assert main(["--tasks", *ids, "--policy", "perturbed", "--styles", "goal", "--out", str(tmp_path)]) == 0
    rows = {r["task"]: {k: (float(v) if k not in ("task", "family", "style", "missing") else v) for k, v in r.items()}
            for r in csv.DictReader((tmp_path / "results.csv").open())}
    none, absolute, extra, skip, wrong = (rows[i] for i in ids)
    assert none["parameter"] == 1.0 and none["accuracy"] == 1.0 and none["efficiency"] == 1.0
    # the bundled scene given as an absolute path is the same argument: Parameter stays 1
    assert absolute["parameter"] == 1.0 and absolute["exact_match"] == 1.0 and absolute["accuracy"] == 1.0
    # a look-up call first: every position shifts (Exact-Match 0), the order holds (In-Order 1), 3 calls for 2
    assert extra["exact_match"] == 0.0 and extra["parameter"] == 0.0
    assert extra["in_order"] == 1.0 and extra["any_order"] == 1.0 and extra["efficiency"] == 1.5
    assert extra["accuracy"] == 1.0
    # the statistics step skipped: half the tools used; the index tool's own mean still answers
    assert skip["any_order"] == 0.5 and skip["in_order"] == 0.5 and skip["efficiency"] == 0.5
    assert skip["accuracy"] == 1.0
    # NDWI where NDVI was asked: the right tools in the right order, a wrong argument, a wrong answer
    assert wrong["exact_match"] == 1.0 and wrong["parameter"] == 0.0 and wrong["accuracy"] == 0.0


def test_agent_survives_a_model_that_calls_no_tool_an_unknown_tool_or_sends_broken_arguments(
        monkeypatch, isolated_settings: Path):
    import json

    import anyio

    from agents.connection import ServerTarget
    from agents.model import chat_model
    from agents.react import ask
    from agents.runner import open_session
    from evals.scripted_endpoint import ScriptedLLM
    from tools.settings import get_settings

    replies = {
        "none": "The mean is probably about 0.3.",
        "unknown": {"content": None,
                    "tool_calls": [{"function": {"name": "eo_make_coffee", "arguments": {"cups": 2}}}]},
        "broken": {"content": None, "tool_calls": [{"function": {"name": "eo_statistics",
                                                                  "arguments": '{"raster": "sample://x.tif", '}}]},
    }

    def rule(body: dict) -> str | dict:
        kind = next(k for k in replies if f"[{k}]" in body["messages"][1]["content"])
        if any(m.get("role") == "tool" for m in body["messages"]):
            return "Answer: unknown" if kind == "unknown" else ""
        return replies[kind]

    async def go(url: str) -> dict:
        model = chat_model(get_settings().llm.model_copy(update={"base_url": url, "model": "scripted"}))
        out = {}
        async with open_session(ServerTarget()) as session:
            for kind in replies:
                out[kind] = await ask(f"[{kind}] What is the mean NDVI?", session=session, thread_id=f"bad-{kind}",
                                      approval="yes", max_steps=4, model=model)
        return out

    with ScriptedLLM(rule) as llm:
        runs = anyio.run(go, llm.base_url)
    for kind, r in runs.items():
        assert r.status == "no_tool_call", kind  # no tool of the server was called: the status says so
        trace = json.loads(r.trace_path.read_text())
        assert trace["tool_calls"] == [] and r.executed == []  # nothing ran
        runs[kind] = (r, trace["messages"])
    r, msgs = runs["none"]
    assert r.answer == "The mean is probably about 0.3." and not any("tool_calls" in m for m in msgs)
    r, msgs = runs["unknown"]
    assert r.answer == "Answer: unknown"
    tool_msgs = [m for m in msgs if m["type"] == "tool"]
    assert tool_msgs and "eo_make_coffee is not a valid tool" in tool_msgs[0]["content"]
    assert "eo_statistics" in tool_msgs[0]["content"]  # the error lists the family's tools that exist
    r, msgs = runs["broken"]
    bad = [c for m in msgs for c in m.get("invalid_tool_calls", [])]
    assert bad and bad[0]["name"] == "eo_statistics" and bad[0]["args"] == '{"raster": "sample://x.tif", '
    assert r.answer.startswith("Stopped: the model called eo_statistics") and "not valid JSON" in r.answer


def test_call_behaviour_counts_unknown_tools_and_schema_invalid_arguments():
    from evals.agents.metrics import Call
    from evals.agents.run import call_behaviour

    schema = {"type": "object", "properties": {"scene": {"type": "string"}, "index": {"type": "string"}},
              "required": ["scene"], "additionalProperties": False}
    calls = [Call("eo_spectral_index", {"scene": "sample://x", "index": "NDVI"}),  # valid
             Call("eo_spectral_index", {"index": "NDVI"}),  # lacks the required scene
             Call("eo_spectral_index", {"scene": 3}),  # wrong type
             Call("eo_make_coffee", {"cups": 2})]  # no such tool
    got = call_behaviour(calls, {"eo_spectral_index"}, {"eo_spectral_index": schema})
    assert got == {"calls": 4, "known_calls": 3, "valid_calls": 1}


def test_the_cli_with_no_endpoint_runs_the_suite_on_the_oracle(tmp_path: Path, monkeypatch):
    # a fresh clone: no endpoint configured and no policy named; the CLI must run, not ask for a file
    from evals.agents.run import QUICK_TASKS
    from server.cli import main as cli
    from tools.settings import reload_settings

    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "RESEARCH_MCP_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    reload_settings()
    task = sorted(QUICK_TASKS)[0]
    assert cli(["eval", "agents", "--tasks", task, "--styles", "goal", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert [r["task"] for r in rows] == [task] and float(rows[0]["accuracy"]) == 1.0


def test_a_stopped_suite_resumes_without_running_its_finished_pairs_again(tmp_path: Path):
    import json

    first, second = "eo-l8-ndvi-mean", "eo-l8-sun-elevation"
    assert main(["--tasks", first, "--policy", "oracle", "--styles", "goal", "--out", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0])
    assert row["calls_made"][0]["name"] == "eo_spectral_index" and row["reply"].startswith("The tool results")
    assert row["first_prompt_tokens"] > 0 and row["status"] == "done"
    assert main(["--tasks", first, second, "--policy", "oracle", "--styles", "goal", "--out", str(tmp_path),
                 "--resume"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [r["task"] for r in rows] == [first, second]          # the first pair was not run again
    scores = {r["task"]: float(r["accuracy"]) for r in csv.DictReader((tmp_path / "results.csv").open())}
    assert scores == {first: 1.0, second: 1.0}                   # its saved calls and reply were scored


def test_selection_recall_needs_no_model(capsys):
    assert main(["--selection", "--tasks", "eo-l8-ndvi-mean", "--styles", "goal"]) == 0
    # spectral index and statistics bound, and a third pick (the schemas fitted to the question leave room for it)
    assert "| goal | 1 | 1 | 1 | 1 | 3.00 |" in capsys.readouterr().out


def test_heldout_selection_questions_name_real_tools_and_are_all_counted(capsys):
    from evals.agents.heldout import PROBES

    assert main(["--selection", "--heldout"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| held out |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[1]) == len(PROBES) == 30                 # every probe's chain exists on the server
    assert int(cells[2]) >= int(cells[3])                    # a tool picked first is bound
    assert out.count("- held out:") == len(PROBES) - int(cells[3])   # each miss listed once
