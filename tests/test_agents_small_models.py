"""The ReAct agent with models that write their tool calls as text, repeat themselves, err or call nothing.

The parser is checked on the exact strings such models write; the agent end to end against the scripted
endpoint (real ChatOpenAI, MCP session and tools), one rule a scenario; and once against a real model
(the embedded one), bounded, skipped with the reason when it cannot start.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agents.choices import options, with_choice
from agents.connection import ServerTarget, ToolInfo
from agents.react import NO_TOOL_CALL, ask, system_prompt
from agents.runner import open_session
from agents.selection import (
    carried_kinds,
    catalogue,
    compact_schema,
    data_words,
    fit_schema,
    fold_resources,
    select_tools,
    words,
)
from agents.shorten import fit_result
from agents.toolcalls import parse_tool_calls, prose, resolve_name
from agents.tooluse import FINAL, FIX_HINT, NUDGE, REPEAT_NOTICE, SCHEMA_NOTICE, UNSUPPORTED
from evals.agents import reference as ref
from evals.agents.metrics import Expected, answer_correct
from evals.agents.oracle import tool_results
from tests.scripted_llm import ScriptedLLM
from tools.settings import get_settings, reload_settings

NAMES = ["eo_spectral_index", "eo_statistics", "eo_area", "graph_solve"]
FAMILIES = ["eo", "graph"]
L8 = "sample://eo/landsat8_c1_l1t"
NDVI_MEAN = ref.mean(ref.landsat_index("NDVI"))
QUESTION = f"What is the mean NDVI of {L8}?"
NDVI_RANGES = {"A": (-1.0, 0.2), "B": (0.2, 0.4), "C": (0.4, 0.6), "D": (0.6, 1.0)}
NDVI_OPTIONS = {"A": "below 0.2 (bare or water)", "B": "0.2 to 0.4 (sparse vegetation)",
                "C": "0.4 to 0.6 (moderate vegetation)", "D": "above 0.6 (dense vegetation)"}


def calls(text: str) -> list[tuple[str, dict, bool]]:
    return [(c.name, c.args, c.known) for c in parse_tool_calls(text, NAMES, families=FAMILIES)]


# the parser, on the strings models write -------------------------------------------------------------------

# Qwen2.5-Coder 1.5B on llama.cpp, asked for the NDVI of the bundled scene (its reply, verbatim)
QWEN_FENCE = ('```json\n{\n  "name": "eo_spectral_index",\n  "arguments": {\n    "scene": "sample://eo/landsat8_c1_l1t",'
              '\n    "index": "NDVI"\n  }\n}\n```')


@pytest.mark.parametrize(("text", "expected"), [
    (QWEN_FENCE, [("eo_spectral_index", {"scene": L8, "index": "NDVI"}, True)]),
    ('{"name": "eo_statistics", "arguments": {"raster": "/out/NDVI-1a2b3c4d.tif"}}',
     [("eo_statistics", {"raster": "/out/NDVI-1a2b3c4d.tif"}, True)]),
    ('<tool_call>\n{"name": "eo_statistics", "arguments": {"raster": "a.tif"}}\n</tool_call>',
     [("eo_statistics", {"raster": "a.tif"}, True)]),
    ('I will compute it.\n<tool_call>{"name": "eo_statistics", "arguments": {"raster": "a.tif"}}',  # unclosed tag
     [("eo_statistics", {"raster": "a.tif"}, True)]),
    ('{"tool": "eo_statistics", "args": {"raster": "a.tif"}}', [("eo_statistics", {"raster": "a.tif"}, True)]),
    ('{"type": "function", "function": {"name": "eo_statistics", "arguments": "{\\"raster\\": \\"a.tif\\"}"}}',
     [("eo_statistics", {"raster": "a.tif"}, True)]),
    ('{"name": "eo_statistics", "parameters": {"raster": "a.tif"}}', [("eo_statistics", {"raster": "a.tif"}, True)]),
    ("{'name': 'eo_area', 'arguments': {'raster': 'a.tif', 'rules': [{'op': '>', 'value': 0.3}], 'mask': None}}",
     [("eo_area", {"raster": "a.tif", "rules": [{"op": ">", "value": 0.3}], "mask": None}, True)]),
    ('[TOOL_CALLS] [{"name": "eo_statistics", "arguments": {"raster": "a.tif"}}]',
     [("eo_statistics", {"raster": "a.tif"}, True)]),
    # Qwen2.5-Coder 1.5B asked for the sun elevation (verbatim): XML elements, the chain at once, the last unclosed
    ('<tools>\n  <tool name="eo_spectral_index">\n    <arguments>\n      <scene>sample://eo/landsat8_c1_l1t</scene>\n'
     '      <index>NDVI</index>\n    </arguments>\n  </tool>\n  <tool name="eo_statistics">\n    <arguments>\n'
     '      <raster>a.tif</raster>\n      <percentiles>[50, 95]</percentiles>\n    </arguments>\n',
     [("eo_spectral_index", {"scene": L8, "index": "NDVI"}, True),
      ("eo_statistics", {"raster": "a.tif", "percentiles": [50, 95]}, True)]),
    # Qwen2.5-Coder 1.5B on a graph question (verbatim shape): the arguments object unquoted in the attribute
    ('<tools>\n<tool name="graph_solve" arguments={"task": "shortest_path", "graph": {"edges": [[0, 1], [1, 2]]}, '
     '"source": 0, "target": 2} />',
     [("graph_solve", {"task": "shortest_path", "graph": {"edges": [[0, 1], [1, 2]]}, "source": 0, "target": 2},
       True)]),
    ('<tool_call><name>eo_statistics</name><arguments>{"raster": "a.tif"}</arguments></tool_call>',
     [("eo_statistics", {"raster": "a.tif"}, True)]),
    # Qwen2.5-Coder 1.5B after a failed call (verbatim)
    ("<tools>\n<tool name=\"eo_statistics\" arguments=\"{'raster': 'a.tif', 'band': 1}\"/>",
     [("eo_statistics", {"raster": "a.tif", "band": 1}, True)]),
    ('```tool_call\n{"name": "Statistics", "arguments": {"raster": "a.tif"}}\n```',    # a name without its family
     [("eo_statistics", {"raster": "a.tif"}, True)]),
    ('{"name": "eo_ndvi", "arguments": {"scene": "x"}}', [("eo_ndvi", {"scene": "x"}, False)]),  # told it is wrong
    ('Two calls:\n{"name": "eo_spectral_index", "arguments": {"scene": "s", "index": "NDVI"}}\n'
     '{"name": "eo_spectral_index", "arguments": {"scene": "s", "index": "EVI"}}',
     [("eo_spectral_index", {"scene": "s", "index": "NDVI"}, True),
      ("eo_spectral_index", {"scene": "s", "index": "EVI"}, True)]),
])
def test_calls_written_as_text_are_read(text: str, expected: list) -> None:
    assert calls(text) == expected


@pytest.mark.parametrize("text", [
    "The mean NDVI is 0.5306.\nAnswer: 0.5306",
    'The statistics are {"mean": 0.5306, "std": 0.1154}.\nAnswer: 0.5306',     # a result quoted
    '```json\n{"mean": 0.5306}\n```',                                          # JSON, but no call's shape
    '{"name": "Landsat 8", "mean": 0.53}',                                     # a record with a name
    '{"name": "make_coffee", "arguments": {"cups": 2}}',                       # no known tool or family
    'I called {"name": "eo_statistics", "arguments": {"raster": "a.tif"}} and got 0.53.\nAnswer: 0.5306',
    "Use a [-1, 1] range.",
    "The <b>mean</b> is 0.53 and 3 < 4.",
    "",
])
def test_replies_that_only_contain_json_are_not_calls(text: str) -> None:
    assert calls(text) == []


def test_names_resolve_only_when_unambiguous() -> None:
    assert resolve_name("eo_statistics", NAMES) == "eo_statistics"
    assert resolve_name("EO-Statistics", NAMES) == "eo_statistics"
    assert resolve_name("functions.eo_area", NAMES) == "eo_area"
    assert resolve_name("spectral_index", NAMES) == "eo_spectral_index"
    assert resolve_name("eo_spectral_indices", NAMES) == "eo_spectral_index"
    assert resolve_name("eo_stats", NAMES) is None
    text = "Let me compute.\n" + QWEN_FENCE
    assert prose(text, parse_tool_calls(text, NAMES)) == "Let me compute."


@pytest.mark.parametrize(("text", "numbers"), [
    (f"The mean NDVI of {L8} is 0.5306.", ["0.5306"]),
    ("The Landsat 8 scene has 11 bands; Sentinel-2 has 13.", ["11", "13"]),
    ("The sun elevation is 64.74 degrees.", ["64.74"]),
])
def test_the_numbers_a_reply_states_leave_out_those_in_names(text: str, numbers: list[str]) -> None:
    from agents.tooluse import stated_numbers

    assert stated_numbers(text) == numbers


# what a small model reads --------------------------------------------------------------------------------

def _info(name: str, description: str, props: dict, required: list[str]) -> ToolInfo:
    return ToolInfo(name, description, {"type": "object", "properties": props, "required": required,
                                        "additionalProperties": False, "title": name})


def test_catalogue_schemas_and_selection_are_compact_and_stable() -> None:
    infos = {i.name: i for i in [
        _info("eo_spectral_index", "Compute a spectral index of a scene from calibrated reflectance, as a GeoTIFF."
              "\n\nBounds (RESEARCH_MCP_EO__<NAME>): max_pixels=400M.",
              {"scene": {"type": "string", "description": "Scene folder, e.g. sample://eo/landsat8_c1_l1t."},
               "index": {"type": "string", "description": "Name, e.g. NDVI, EVI, NDWI."},
               "mask": {"type": ["array", "null"], "default": None, "title": "Mask"}}, ["scene", "index"]),
        _info("eo_statistics", "Statistics of a raster band's valid pixels: count, min, max, mean, std.",
              {"raster": {"type": "string", "description": "GeoTIFF (any GDAL raster)."}}, ["raster"]),
        _info("eo_tvdi", "Temperature-Vegetation Dryness Index from NDVI and LST rasters.",
              {"ndvi": {"type": "string"}, "lst": {"type": "string"}}, ["ndvi", "lst"]),
        _info("graph_solve", "Solve a graph task exactly: the answer, a witness and a random baseline.",
              {"task": {"type": "string"}}, ["task"]),
    ]}
    cat = catalogue(infos)
    lines = cat.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["[eo]", "eo_spectral_index(scene, index)", "eo_statistics(raster)",
                                                  "eo_tvdi(ndvi, lst)", "[graph]", "graph_solve(task)"]
    assert lines[1].endswith("Compute a spectral index of a scene from calibrated…")   # cut at a word, bounds gone
    assert all(len(ln.split(": ", 1)[-1]) <= 60 for ln in lines)
    compact = compact_schema(infos["eo_spectral_index"].input_schema)
    assert compact["properties"]["mask"] == {"type": "array"} and "title" not in compact
    assert compact["required"] == ["scene", "index"]
    # the tool that makes the product, then the one that measures it; the tools used so far stay bound
    assert select_tools(QUESTION, infos, k=2) == ["eo_spectral_index", "eo_statistics"]
    assert select_tools(QUESTION, infos, k=2, used=["graph_solve"]) == ["eo_spectral_index", "eo_statistics",
                                                                        "graph_solve"]
    assert select_tools("Use eo_tvdi on these rasters", infos) == ["eo_tvdi"]
    assert fold_resources(["sample://eo/README.txt", "sample://eo/l8/B1.tif", "sample://eo/l8/B2.tif",
                           "sample://eo/l8/B3.tif", "sample://eo/l8/MTL.txt", "sample://nid/a.txt",
                           "sample://nid/licenses/x.txt"]) == ["sample://eo/l8 (a scene: pass the folder)",
                                                               "sample://nid/a.txt"]



async def _server_infos() -> dict[str, ToolInfo]:
    from mcp import Client

    from server.app import build_server

    async with Client(build_server(log_level="CRITICAL")) as client:
        tools = (await client.list_tools()).tools
    return {t.name: ToolInfo(t.name, t.description or "", t.input_schema) for t in tools}


@pytest.mark.anyio
async def test_fitted_schemas_show_what_the_question_cues_and_keep_every_argument_a_suite_chain_passes() -> None:
    from evals.agents.families import all_tasks

    infos = await _server_infos()
    tool_words = frozenset(w for n in infos for w in words(n))

    def shown(name: str, question: str) -> set[str]:
        return set(fit_schema(infos[name].input_schema, question, tool_words)["properties"])

    savi = f"What is the mean SAVI of {L8} with the soil adjustment factor L = 0.5?"
    assert shown("eo_spectral_index", savi) == {"scene", "index", "constants"}
    assert shown("eo_spectral_index", QUESTION) == {"scene", "index"}        # no mask, cog, quicklook, resolution
    assert "percentiles" in shown("eo_statistics", "What is the 95th percentile of NDVI over that raster?")
    assert "percentiles" not in shown("eo_statistics", "What is the median NDVI of that raster?")
    # a question that names eo_cloud_mask asks for that tool, not for the mask argument
    assert "mask" not in shown("eo_spectral_index", f"Mask clouds in {L8} with eo_cloud_mask, then NDVI.")
    # the file argument shows when the question holds a file, not for the word "path" in "shortest path"
    assert "path" not in shown("graph_solve", "How long is the shortest path from node 0 to node 3?")
    assert "path" in shown("graph_solve", "Solve shortest_path on the graph in /data/g.json")
    # an object argument's own optional properties are fitted too: a graph's weights only when asked for
    spec = fit_schema(infos["graph_solve"].input_schema, "Is there a path between node 4 and node 1 in the graph with "
                      "nodes [0, 1, 4] and edges [[0, 4], [0, 1]]?", tool_words)["properties"]["graph"]
    assert set(spec["properties"]) == {"nodes", "edges"}
    spec = fit_schema(infos["graph_solve"].input_schema, "The weighted shortest path with these edge weights",
                      tool_words)["properties"]["graph"]
    assert "weights" in spec["properties"] and "features" not in spec["properties"]
    # nothing required: every input without a default is one to choose from
    assert shown("dti_validate", "Is CCO a valid SMILES?") >= {"smiles", "path"}
    levels = fit_schema(infos["eo_spectral_index"].input_schema, "the Sentinel-2 L2A scene", tool_words)
    assert levels["properties"]["product"]["enum"][:2] == ["sentinel-2-l1c", "sentinel-2-l2a"]  # named ones first
    # the data a question names is not what to do with it; a tool that needs a raster comes after one that makes it
    assert data_words(f"the Landsat 8 scene ({L8})") == {"landsat"}
    share = f"What percentage of the valid area of the bundled Landsat 8 scene ({L8}) has NDVI above 0.3?"
    assert select_tools(share, infos, k=3)[:2] == ["eo_spectral_index", "eo_area"]
    assert select_tools(f"What is the median NDVI of the bundled Landsat 8 scene ({L8})?", infos)[0] == \
        "eo_spectral_index"
    firsts = {style: sum(select_tools(t.question(style), infos)[0] == t.steps[0].name for t in all_tasks())
              for style in ("instruction", "goal")}
    assert firsts["instruction"] == len(all_tasks()) and firsts["goal"] >= 26, firsts
    total = kept = 0
    for task in all_tasks():
        for style in ("instruction", "goal"):
            q = task.question(style)
            for step in task.steps:
                props = shown(step.name, q)
                assert set(step.args) <= props, (task.id, style, step.name, set(step.args) - props)
                optional = set(infos[step.name].input_schema["properties"]) - set(
                    infos[step.name].input_schema.get("required") or [])
                total, kept = total + len(optional), kept + len(props & optional)
    assert kept < total / 3      # most optional arguments are not shown to the model

@pytest.mark.parametrize(("question", "kinds"), [
    ("What canonical SMILES does the toolkit give for aspirin written as CC(=O)Oc1ccccc1C(O)=O?", {"smiles"}),
    ("Which of these cannot be parsed?\nA. c1ccccc1\nB. C1CC\nC. CCO", {"smiles"}),
    ("How many heavy atoms has sodium acetate (CC(=O)[O-].[Na+]) once its salt is stripped?", {"smiles"}),
    ("Score imatinib against MTEYKLVVVGAGGVGKSALTIQLIQNHF.", {"protein"}),
    ("Draw stand-ins for the commit 3f2c1b8e9d0a4b5c6d7e8f90a1b2c3d4e5f60718.", {"identifier"}),
    (f"What is the 95th percentile of NDVI of {L8}? Give 4 decimals.", set()),   # a URI, p95, a number
    ("Bands B4 and B8 of Sentinel-2 in EPSG:32616, NBR-2 and C4 [Hello]", set()),
    ("The graph with nodes (0, 4) and edges [[0, 1], [1, 2]]", set()),
])
def test_the_values_a_question_carries_are_told_from_words(question: str, kinds: set[str]) -> None:
    assert carried_kinds(question) == kinds


# results cut to size, and range options answered by letter ---------------------------------------------------

def test_long_results_keep_their_structure_and_say_what_was_left_out() -> None:
    data = {"molecules_checked": 240, "ok": 239, "note": "x" * 5000,
            "molecules": [{"smiles": "C" * 40 + str(i), "ok": i != 7, "heavy_atoms": i} for i in range(240)]}
    text = json.dumps(data)
    for limit in (4000, 1500, 600):
        out = fit_result(text, limit)
        assert len(out) <= limit, (limit, len(out))
        short = json.loads(out)
        assert short["molecules_checked"] == 240 and short["ok"] == 239       # scalars kept whole
        kept = short["molecules"][:-1]
        assert kept == data["molecules"][:len(kept)]                          # the first items, unchanged
        assert short["molecules"][-1] == f"... ({240 - len(kept)} more items)"
        assert short["note"].endswith("... (5000 characters)")
    assert fit_result(text, len(text)) == text                               # a result that fits is untouched
    plain = "line\n" * 2000
    cut = fit_result(plain, 500)
    assert cut.startswith(plain.strip()[:500])
    assert cut.endswith(f"(result cut at 500 of {len(plain.strip())} characters)")


@pytest.mark.parametrize(("reply", "expected"), [
    ("The mean is 0.33.\nAnswer: 0.33", "The mean is 0.33.\nAnswer: B (0.33)"),
    ("Answer: 0.6", "Answer: D (0.6)"),                       # a shared bound belongs to the range it starts
    ("Answer: -0.05", "Answer: A (-0.05)"),
    ("Answer: B", "Answer: B"),                                # already a letter
    ("Answer: sparse vegetation", "Answer: sparse vegetation"),
    ("The mean is 0.33.", "The mean is 0.33."),                # no answer line: nothing to map
])
def test_a_value_given_for_range_options_becomes_the_letter_that_holds_it(reply: str, expected: str) -> None:
    question = "Which range holds the mean NDVI?\n" + "\n".join(f"{k}. {v}" for k, v in NDVI_OPTIONS.items())
    assert options(question) == NDVI_OPTIONS
    assert with_choice(reply, question) == expected
    lst = "Which range?\nA. below 275 K\nB. 275 to 285 K\nC. 285 to 300 K\nD. above 300 K"
    assert with_choice("Answer: 291.4 K", lst) == "Answer: C (291.4 K)"
    # options that are not all ranges, or no options, leave the reply as it is
    assert with_choice("Answer: 0.33", "Which?\nA. the Landsat 8 scene\nB. 0.2 to 0.4") == "Answer: 0.33"
    assert with_choice("Answer: 0.33", QUESTION) == "Answer: 0.33"


# the agent end to end ------------------------------------------------------------------------------------

def fence(name: str, args: dict) -> str:
    return "```json\n" + json.dumps({"name": name, "arguments": args}, indent=2) + "\n```"


# each scenario's marker in the question: a number, which tool selection ignores, so the tools chosen for
# the question are the same in every scenario
MARKERS = {"fence": "1", "bare": "2", "tags": "3", "error": "4", "repeat": "5", "none": "6", "plain": "7",
           "steps": "8", "echo": "9", "chain": "10", "late": "11", "schema": "12",
           "long": "13", "scalar": "14", "choice": "15", "big": "16",
           "unsupported": "17"}


def scenario(body: dict) -> str | dict:
    """The scripted model: the scenario is the marker in the question."""
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    kind = {v: k for k, v in MARKERS.items()}[re.match(r"\[(\w+)\]", question).group(1)]
    results = tool_results(body)
    last_user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if kind == "unsupported" and last_user != FINAL and last_user.endswith(FINAL):  # asked again, from the results
        mean = [r for r in results if "stats" in r][-1]["stats"]["mean"]
        return f"The mean NDVI is {mean:.4f}.\nAnswer: {mean:.4f}"
    if last_user == FINAL:
        mean = [r for r in results if "stats" in r][-1]["stats"]["mean"]
        if kind == "late":    # asked for its answer, states it without the answer line (Qwen 1.5B, verbatim shape)
            return f"The mean NDVI of the bundled Landsat 8 scene is {mean:.4f}."
        return f"From the results, the mean is {mean:.4f}.\nAnswer: {mean:.4f}"
    first = {"scene": L8, "index": "NDVI"}
    if kind == "none":
        return "The mean NDVI of a Landsat scene is usually about 0.3."
    if kind == "long" and not results:        # the call runs past the reply cap: cut there, as a server does
        whole = fence("eo_spectral_index", first)
        cap = body.get("max_completion_tokens") or body.get("max_tokens") or 10**6
        return whole if cap > 256 else {"content": whole[:40], "finish_reason": "length"}
    if kind == "schema" and not results:      # the bound schema itself as the arguments (Qwen 1.5B did)
        bound = next(t["function"]["parameters"] for t in body["tools"] if t["function"]["name"] == "eo_spectral_index")
        return fence("eo_spectral_index", bound)
    if kind == "error" and not results:
        return fence("eo_spectral_index", {"scene": L8, "index": "NDVl"})
    if kind == "repeat":
        return fence("eo_spectral_index", first)      # the same call, whatever the results say
    if not results or (kind in ("error", "schema") and len(results) == 1):
        if kind == "chain":   # the whole chain at once, the second call guessing the first one's file
            return fence("eo_spectral_index", first) + "\n" + fence("eo_statistics", {"raster": "NDVI.tif"})
        if kind == "bare":
            return json.dumps({"name": "eo_spectral_index", "arguments": first})
        if kind == "tags":
            return "<tool_call>\n" + json.dumps({"name": "eo_spectral_index", "arguments": first}) + "\n</tool_call>"
        return fence("eo_spectral_index", first)
    if kind == "echo" and results:  # copies the template's wrapping of the result; the server stops at it
        text = "<tool_response>\n" + json.dumps(results[-1]) + "\n</tool_response>"
        return text.split(body["stop"][0])[0] if body.get("stop") and body["stop"][0] in text else text
    if kind == "steps" and len(results) == 1 and not last_user.startswith("The question's steps also use"):
        return "The index is computed."                # stops after step 1 of 2: reminded of step 2
    if kind == "late":     # after the first result it only opens the template's tool block
        return "<tools>\n"
    if "stats" in results[-1] and "output" in results[-1]:
        if kind == "scalar":       # one value where the schema asks for a list
            return fence("eo_statistics", {"raster": results[-1]["output"], "percentiles": 50, "bins": "10"})
        if kind == "big":          # a result of about 9,000 characters: a 900-bin histogram
            return fence("eo_statistics", {"raster": results[-1]["output"], "bins": 900})
        return fence("eo_statistics", {"raster": results[-1]["output"]})
    if kind == "unsupported":  # "Give 4 decimals" answered with the 4 (Qwen 1.5B did, beside a std of 0.1154)
        return "4.0000"
    if kind == "choice":  # the value, where the question asks for a letter
        return f"The mean NDVI is {results[-1]['stats']['mean']:.4f}.\nAnswer: {results[-1]['stats']['mean']:.4f}"
    if kind == "plain":  # the number stated, no answer line (a scene name with digits before it)
        return f"The mean NDVI of {L8} is {results[-1]['stats']['mean']:.4f}."
    return f"The mean NDVI is {results[-1]['stats']['mean']:.4f}.\nAnswer: {results[-1]['stats']['mean']:.4f}"


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch):
    with ScriptedLLM(scenario) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        reload_settings()
        yield llm


def _tools_in(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


@pytest.mark.anyio
async def test_text_calls_repeats_errors_and_no_call_end_to_end(scripted: ScriptedLLM, isolated_settings: Path):
    runs = {}
    async with open_session(ServerTarget()) as session:
        for kind in ("fence", "bare", "tags", "error", "repeat", "none", "plain", "steps", "echo", "chain", "late",
                     "schema", "long", "scalar", "choice", "big", "unsupported"):
            start = len(scripted.requests)
            steps = "\nFollow these steps:\n1. Use eo_spectral_index.\n2. Use eo_statistics." if kind == "steps" else ""
            if kind == "choice":
                steps = "\n" + "\n".join(f"{k}. {v}" for k, v in NDVI_OPTIONS.items())
            r = await ask(f"[{MARKERS[kind]}] {QUESTION} Give 4 decimals.{steps}", session=session,
                          thread_id=f"small-{kind}", approval="yes", max_steps=8)
            runs[kind] = (r, scripted.requests[start:], json.loads(r.trace_path.read_text()))
        system = system_prompt(session.box)
    for kind in ("fence", "bare", "tags", "error", "plain", "steps", "chain"):
        r, requests, trace = runs[kind]
        assert r.status == "done", kind
        assert abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3, (kind, r.answer)
        assert [c["name"] for c in trace["tool_calls"] if c["status"] != "error"] == ["eo_spectral_index",
                                                                                       "eo_statistics"], kind
        # the call the model wrote as text ran as a real call, and the model sees it as one
        ai = [m for m in trace["messages"] if m["type"] == "ai"]
        assert ai[0]["tool_calls"][0]["args"]["scene"] == L8 and ai[0]["content"] == ""
        # every step sent the same system prompt and the same bound tools: a prompt cache keeps the prefix
        assert all(b["messages"][0] == {"role": "system", "content": system} for b in requests)
        assert [_tools_in(b) for b in requests] == [_tools_in(requests[0])] * len(requests), kind
        assert _tools_in(requests[0])[:2] == ["eo_spectral_index", "eo_statistics"]
        hint = requests[0]["messages"][1]["content"]
        assert hint.endswith("(Tools that fit this question, in order: eo_spectral_index, eo_statistics. Call one "
                             "at a time.)") if kind != "steps" else "Tools that fit" not in hint
        assert len(_tools_in(requests[0])) <= 4
    assert [c["status"] for c in runs["chain"][2]["tool_calls"]] == ["success", "success"]  # one call at a time
    assert runs["plain"][0].answer == f"The mean NDVI of {L8} is {NDVI_MEAN:.4f}.\nAnswer: {NDVI_MEAN:.4f}"
    # an answer given when asked for it after an echo also gets its answer line from the number it states
    late = runs["late"][0]
    assert late.status == "done" and late.answer.endswith(f"is {NDVI_MEAN:.4f}.\nAnswer: {NDVI_MEAN:.4f}"), late.answer
    # the first prompt is compact: the system prompt, a few schemas and the question, about 2,500 tokens
    first = runs["fence"][1][0]
    chars = sum(len(m["content"]) for m in first["messages"]) + len(json.dumps(first["tools"]))
    assert chars < 9000, chars
    assert "eo_area(raster, rules)" in system and "graph_solve(task)" in system and L8 in system

    # a tool's error goes back with the server's "did you mean" and the model fixes its call
    r, requests, trace = runs["error"]
    err = next(m for m in requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "Did you mean 'NDVI'" in err and FIX_HINT in err
    assert [c["args"].get("index") for c in trace["tool_calls"]][:2] == ["NDVl", "NDVI"]

    # the schema sent as the arguments: not run, the model shown values to send, and it sends them
    r, requests, trace = runs["schema"]
    notice = next(m for m in requests[1]["messages"] if m["role"] == "tool")["content"]
    assert notice.startswith(SCHEMA_NOTICE) and f'{{"scene": "{L8}", "index": "NDVI"}}' in notice, notice
    assert r.status == "done" and abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3

    # one value for a list and a number as a string are mended before the call, which then runs
    r, requests, trace = runs["scalar"]
    stats = json.loads(next(m["content"] for m in reversed(requests[-1]["messages"]) if m["role"] == "tool"))
    assert list(stats["percentiles"]) == ["p50"] and len(stats["histogram_counts"]) == 10, stats.keys()
    assert r.status == "done" and abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3

    # a value given for a range question: its answer line names the option that holds it, the value kept
    r, requests, trace = runs["choice"]
    letter = next(k for k, (lo, hi) in NDVI_RANGES.items() if lo <= NDVI_MEAN < hi)
    assert r.status == "done" and r.answer.endswith(f"Answer: {letter} ({NDVI_MEAN:.4f})"), r.answer
    assert answer_correct(Expected("choice", letter, options=NDVI_OPTIONS), r.answer)

    # an answer no tool result holds is asked for again from the results, once
    r, requests, trace = runs["unsupported"]
    assert requests[-1]["messages"][-1]["content"] == UNSUPPORTED.format(value="4.0000") + FINAL
    assert not requests[-1].get("tools") and r.answer.endswith(f"Answer: {NDVI_MEAN:.4f}"), r.answer
    # ... and one that a result holds is not: no run above asked twice
    for kind in ("fence", "plain", "choice", "chain"):
        assert not any(m["content"].startswith("The value") for b in runs[kind][1] for m in b["messages"]
                       if m["role"] == "user"), kind

    # a long result reaches the model shortened: its scalars kept, its long list cut with the rest counted
    r, requests, trace = runs["big"]
    whole = next(c for c in trace["tool_calls"] if c["name"] == "eo_statistics")
    seen = next(m["content"] for m in reversed(requests[-1]["messages"]) if m["role"] == "tool")
    stats = json.loads(seen)
    assert len(seen) <= get_settings().llm.agent_result_chars < 9000
    assert stats["stats"]["mean"] == pytest.approx(NDVI_MEAN, abs=1e-9)
    assert stats["histogram_counts"][-1] == f"... ({900 - len(stats['histogram_counts']) + 1} more items)"
    assert whole["status"] == "success"
    assert r.status == "done" and abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3

    # a call cut at the reply cap is asked for again with four times the cap, and runs
    r, requests, trace = runs["long"]
    assert [b.get("max_completion_tokens") or b.get("max_tokens") for b in requests[:2]] == [256, 1024]
    assert r.status == "done" and abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3

    # the same call again: not run, the model told once; again: the run ends with an answer from the results
    r, requests, trace = runs["repeat"]
    assert r.status == "done" and [c["name"] for c in trace["tool_calls"]] == ["eo_spectral_index"]
    notices = [m for m in trace["messages"] if m["type"] == "tool" and m["content"].startswith(REPEAT_NOTICE)]
    assert len(notices) == 1
    assert requests[-1]["messages"][-1]["content"] == FINAL and not requests[-1].get("tools")
    assert abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3

    # a reply that only copies the tool's result back stops at once, and the model is asked for its answer
    r, requests, trace = runs["echo"]
    assert requests[1]["stop"] == ["<tool_response>", "</tools>"] and requests[-1]["messages"][-1]["content"] == FINAL
    assert r.status == "done" and abs(float(r.answer.rsplit("Answer:", 1)[1]) - NDVI_MEAN) < 1e-3

    # no tool at all: reminded once, then the run says so in its status
    r, requests, trace = runs["none"]
    assert r.status == NO_TOOL_CALL and trace["segments"][-1]["status"] == NO_TOOL_CALL
    assert len(requests) == 2 and requests[1]["messages"][-1]["content"] == NUDGE
    assert r.answer == "The mean NDVI of a Landsat scene is usually about 0.3."


def test_cli_exits_4_when_the_model_calls_no_tool(scripted: ScriptedLLM, capsys: pytest.CaptureFixture[str]):
    from agents.cli import EXIT_NO_TOOL, main

    assert main([f"[{MARKERS['none']}] What is the mean NDVI?", "--quiet"]) == EXIT_NO_TOOL == 4
    captured = capsys.readouterr()
    assert "usually about 0.3" in captured.out and "called no tool" in captured.err


# one real model, bounded -----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.anyio
async def test_a_real_small_model_reads_a_compact_prompt_and_ends_with_a_status(request: pytest.FixtureRequest,
                                                                               isolated_settings: Path):
    try:
        url = request.getfixturevalue("embedded_llm")
    except Exception as exc:  # no weights, no runtime, no free port: nothing to measure here
        pytest.skip(f"the embedded model did not start: {type(exc).__name__}: {exc}")
    from agents.model import chat_model

    model = chat_model()
    r = await ask(QUESTION, approval="yes", max_steps=4, model=model)
    trace = json.loads(r.trace_path.read_text())
    assert trace["llm_calls"], url
    # the server's own count of the first prompt: the compact catalogue, a few schemas and the question
    assert 0 < trace["llm_calls"][0]["prompt_tokens"] <= 3000, trace["llm_calls"][0]
    assert r.status in ("done", NO_TOOL_CALL)
    ran = [c for c in trace["tool_calls"] if not c["result"].startswith(REPEAT_NOTICE)]
    assert (r.status == NO_TOOL_CALL) == (not ran)
    assert r.answer is not None


# the workflows' model steps -----------------------------------------------------------------------------

class _Reply:
    def __init__(self, text: str | Exception) -> None:
        self.text = text

    async def ainvoke(self, messages: list) -> object:
        from langchain_core.messages import AIMessage

        if isinstance(self.text, Exception):
            raise self.text
        return AIMessage(content=self.text)


@pytest.mark.anyio
async def test_a_workflow_answer_always_states_the_tool_results() -> None:
    from agents.workflows.steps import ask_model, stated_answer

    report = "NDVI of the scene: mean 0.5306 over 378081 pixels."
    assert stated_answer("The mean is plausible.\nAnswer: 0.5306") == "0.5306"
    assert stated_answer("Answer: <value>") is None and stated_answer("no line") is None
    # a placeholder copied from the prompt, no answer line, or a failed model: the report is the answer
    assert await ask_model(_Reply("Answer: <value>"), "s", "u", fallback=report) == f"Answer: <value>\n\n{report}"
    assert await ask_model(_Reply(""), "s", "u", fallback=report) == report
    failed = await ask_model(_Reply(TimeoutError("slow")), "s", "u", fallback=report)
    assert failed.startswith("(The model did not answer: TimeoutError: slow)") and failed.endswith(report)
    assert await ask_model(_Reply("It is high.\nAnswer: 0.5306"), "s", "u", fallback=report) == \
        "It is high.\nAnswer: 0.5306"
    with pytest.raises(TimeoutError):     # no report to fall back on: the error is the step's
        await ask_model(_Reply(TimeoutError("slow")), "s", "u")
