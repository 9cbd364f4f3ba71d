"""The workflows as MCP prompts: listed with their arguments, rendered as the workflow's tool calls, bad
arguments refused with what would do, and argument completion."""

from __future__ import annotations

import csv
import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from server.app import build_server
from tools.paths import output_dir, sample_path
from tools.settings import reload_settings

pytestmark = pytest.mark.anyio
L8 = "sample://eo/landsat8_c1_l1t"


async def test_the_five_workflows_are_listed_with_their_arguments() -> None:
    async with Client(build_server(log_level="CRITICAL")) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"eo", "nid", "dti", "qa", "graph"}
    required = {name: [a.name for a in p.arguments if a.required] for name, p in prompts.items()}
    assert required == {"eo": ["scene", "product"], "nid": [], "dti": ["target"], "qa": ["task"], "graph": []}
    assert all(p.title and p.description and all(a.description for a in p.arguments) for p in prompts.values())


async def test_each_prompt_renders_the_workflow_as_tool_calls() -> None:
    with sample_path("dti/targets.csv").open() as fh:
        first = next(csv.DictReader(fh))
    async with Client(build_server(log_level="CRITICAL")) as client:
        async def text(name: str, args: dict) -> str:
            r = await client.get_prompt(name, args)
            assert len(r.messages) == 1 and r.messages[0].role == "user"
            return r.messages[0].content.text

        eo = await text("eo", {"scene": L8, "product": "NDVI", "threshold": "0.3"})
        lst = await text("eo", {"scene": L8, "product": "lst"})
        dti = await text("dti", {"target": first["id"], "top_k": "5"})
        nid = await text("nid", {"mode": "inference", "n_gids": "3"})
        qa = await text("qa", {"task": "What was written on the bottle?", "chunk_tokens": "2000"})
        graph = await text("graph", {"tasks": "cycle,max_cut", "n_nodes": "10", "seeds": "3"})
    assert json.dumps({"scene": L8, "index": "NDVI"}) in eo and '"value": 0.3' in eo and "eo_statistics" in eo
    assert "eo_land_surface_temperature" in lst and "eo_area" not in lst
    assert first["sequence"] in dti and '"top_k": 5' in dti and "dti_explain" in dti  # the id became its sequence
    assert "nid_dataset_inference" in nid and '"n": 3' in nid and "nid_dp_audit" not in nid
    assert '"chunk_tokens": 2000' in qa and "longctx_chunk" in qa
    assert json.dumps({"generator": "ERP", "n_nodes": 10}) in graph and "['cycle', 'max_cut']" in graph
    assert "graph_check_answer" in graph and "[3]" in graph


async def test_bad_arguments_are_refused_with_what_would_do() -> None:
    cases = [("eo", {"scene": L8}, "needs product"),
             ("eo", {"scene": L8, "product": "NDVI", "threshold": "high"}, "must be a number"),
             ("eo", {"scene": L8, "product": "NDVI", "colour": "red"}, "no argument colour"),
             ("graph", {"tasks": "cycle,colouring"}, "Unknown graph task(s) colouring"),
             ("graph", {"n_nodes": "500"}, "from 2 to 60"),
             ("nid", {"dataset": "wiki"}, "one of tweets"),
             ("dti", {"target": "hsa:0"}, "No target 'hsa:0'")]
    async with Client(build_server(log_level="CRITICAL")) as client:
        for name, args, reason in cases:
            with pytest.raises(MCPError) as err:
                await client.get_prompt(name, args)
            assert reason in str(err.value), (name, args, str(err.value))


async def test_completion_of_sample_uris_index_names_models_and_tasks() -> None:
    (output_dir() / "NDVI-1234abcd.tif").write_bytes(b"II*\x00")
    async with Client(build_server(log_level="CRITICAL")) as client:
        async def values(ref, name: str, typed: str) -> list[str]:
            return (await client.complete(ref, {"name": name, "value": typed})).completion.values

        scenes = await values(PromptReference(name="eo"), "scene", "sample://eo/")
        indices = await values(PromptReference(name="eo"), "product", "ndv")
        models = await values(PromptReference(name="dti"), "model", "human")
        tasks = await values(PromptReference(name="graph"), "tasks", "cycle,max_")
        outputs = await values(ResourceTemplateReference(uri="output://{+path}"), "path", "ND")
        nothing = await values(PromptReference(name="qa"), "task", "What")
    assert scenes == ["sample://eo/landsat8_c1_l1t", "sample://eo/sentinel2_l1c"]
    assert "NDVI" in indices and all(v.lower().startswith("ndv") for v in indices)
    assert models == ["human_cold", "human_random"]
    assert tasks == ["cycle,max_flow", "cycle,max_clique", "cycle,max_independent_set", "cycle,max_cut"]
    assert outputs == ["NDVI-1234abcd.tif"] and nothing == []


async def test_only_the_prompts_of_the_enabled_families_are_served(monkeypatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_FAMILIES", "eo,longctx")
    reload_settings()
    async with Client(build_server(log_level="CRITICAL")) as client:
        assert {p.name for p in (await client.list_prompts()).prompts} == {"eo", "qa"}
