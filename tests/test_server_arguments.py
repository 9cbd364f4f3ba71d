"""Argument names are checked: unknown ones are refused naming the known ones, missing ones with an example."""

from __future__ import annotations

import pytest
from mcp import Client

from server.app import build_server

pytestmark = pytest.mark.anyio

CYCLE = {"edges": [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]]}


async def test_every_input_schema_forbids_unknown_properties() -> None:
    async with Client(build_server(log_level="CRITICAL")) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) > 30
    loose = [t.name for t in tools if t.input_schema.get("additionalProperties") is not False]
    assert loose == []


async def test_a_misspelt_argument_is_an_error_naming_the_closest_first() -> None:
    async with Client(build_server(["graph"], log_level="CRITICAL")) as client:
        typo = await client.call_tool("graph_solve", {"task": "diameter", "grahp": CYCLE})
        extra = await client.call_tool("graph_solve", {"task": "diameter", "graph": CYCLE, "verbose": True})
        good = await client.call_tool("graph_solve", {"task": "diameter", "graph": CYCLE})
    text = typo.content[0].text
    assert typo.is_error and "[invalid_input]" in text and "'grahp'" in text
    assert "Did you mean 'graph'?" in text
    listing = text.split("closest first): ")[1]
    assert listing.startswith("graph,")
    assert {"task", "text", "path", "source", "target", "node", "directed"} <= {x.strip(" .") for x in
                                                                               listing.split(",")}
    assert extra.is_error and "'verbose'" in extra.content[0].text and "Did you mean" not in extra.content[0].text
    assert not good.is_error and good.structured_content["answer"] == 2


async def test_a_missing_argument_says_which_and_gives_an_example_call() -> None:
    async with Client(build_server(["graph", "eo"], log_level="CRITICAL")) as client:
        graph = await client.call_tool("graph_solve", {"graph": CYCLE})
        eo = await client.call_tool("eo_spectral_index", {"index": "NDVI"})
    for result, name in ((graph, "'task'"), (eo, "'scene'")):
        text = result.content[0].text
        assert result.is_error and f"needs the argument {name}" in text
        assert "Example call: " in text
        assert "pydantic" not in text and "https://" not in text
    assert 'eo_spectral_index({"scene": "sample://eo/' in eo.content[0].text


async def test_a_tool_that_requires_nothing_is_shown_with_one_of_its_inputs() -> None:
    async with Client(build_server(["dti"], log_level="CRITICAL")) as client:
        result = await client.call_tool("dti_validate", {"smiles": {"a": 1}})
    text = result.content[0].text
    assert result.is_error and "argument smiles" in text
    assert text.endswith('Example call: dti_validate({"smiles": ["<smiles>"]})'), text


async def test_a_wrong_type_is_worded_without_pydantic_links() -> None:
    async with Client(build_server(["graph"], log_level="CRITICAL")) as client:
        result = await client.call_tool("graph_generate", {"generator": "ERP", "n_nodes": "many"})
    text = result.content[0].text
    assert result.is_error and "argument n_nodes" in text and "valid integer" in text and "'many'" in text
    assert "errors.pydantic.dev" not in text and "Example call: graph_generate(" in text
