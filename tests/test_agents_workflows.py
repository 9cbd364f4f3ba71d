"""Every family workflow as a LangGraph StateGraph over one MCP session, with ScriptedLLM as the model.

Values are checked against independent references: numpy/rasterio for EO, networkx for the graph
answers the scripted model gives, a regex count of the identifiers in the sample file for NID.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import shutil

import networkx as nx
import pytest

from agents.connection import ServerTarget
from agents.model import chat_model
from agents.runner import open_session
from agents.workflows.registry import WORKFLOWS, run_workflow
from evals.agents import reference as ref
from tests.scripted_llm import ScriptedLLM
from tools.settings import reload_settings


def graph_reply(prompt: str) -> str:
    """Answer a graph prompt with networkx: right for connectivity and shortest paths, wrong for triangles."""
    adj = ast.literal_eval(re.search(r"(\{\d+: \{.*\})\s*\n", prompt).group(1))
    g = nx.Graph()
    for u, vs in adj.items():
        g.add_node(u)
        g.add_edges_from((u, v) for v in vs)
    m = re.search(r"node (\d+) to node (\d+)", prompt) or re.search(r"node (\d+) and node (\d+)", prompt)
    if "shortest path" in prompt:
        return f"Answer: {nx.shortest_path(g, int(m.group(1)), int(m.group(2)))}"
    if "triangle" in prompt.lower():
        return f"Answer: {sum(nx.triangles(g).values()) // 3 + 7}"
    return "Answer: " + ("Yes" if nx.has_path(g, int(m.group(1)), int(m.group(2))) else "No")


def rule(body: dict) -> str:
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    if "graph problems" in system:
        return graph_reply(user)
    if system.startswith("You are a worker"):
        return "The bottle was labelled DRINK ME." if "DRINK ME" in user else "NA"
    if system.startswith("You are the manager"):
        return "Answer: DRINK ME" if "DRINK ME" in user else "Answer: NA"
    if "earth-observation" in system:
        stats = json.loads(re.search(r"Results: (\{.*\})", user).group(1))["statistics"]
        return f"The mean is plausible for vegetation.\nAnswer: {stats['mean']:.4f}"
    return "Answer: unknown"


@pytest.mark.anyio
async def test_every_workflow_runs_over_one_session(monkeypatch: pytest.MonkeyPatch, isolated_settings, tmp_path):
    with ScriptedLLM(rule) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        reload_settings()
        model = chat_model()
        async with open_session(ServerTarget()) as session:
            names = set(session.box.names())
            ran = []
            # EO analysis: scene, index, statistics, area, answer (the model writes the answer from the numbers)
            eo = await run_workflow("eo", {"scene": "sample://eo/landsat8_c1_l1t", "product": "NDVI",
                                           "area_rules": [{"op": ">", "value": 0.3}],
                                           "question": "What is the mean NDVI?"},
                                    session=session, model=model, thread_id="wf-eo")
            ndvi = ref.landsat_index("NDVI")
            assert eo.status == "done"
            assert eo.values["statistics"]["stats"]["mean"] == pytest.approx(ref.mean(ndvi), abs=1e-6)
            assert eo.values["area"]["rows"][0]["percent_of_valid"] == pytest.approx(ref.share_above(ndvi, 0.3),
                                                                                     abs=1e-6)
            assert eo.answer.endswith(f"Answer: {ref.mean(ndvi):.4f}")
            assert [c["name"] for c in eo.executed] == ["eo_describe_scene", "eo_spectral_index", "eo_statistics",
                                                        "eo_area"]
            ran.append("eo")

            # a workflow step that may write outside the output folder waits for approval; resuming runs only
            # the steps that had not run (the scene description is not repeated)
            scene = tmp_path / "scene"
            shutil.copytree(ref.LANDSAT, scene)
            paused = await run_workflow("eo", {"scene": str(scene), "product": "NDVI"}, session=session, model=model,
                                        thread_id="wf-eo-approval", approval="pause")
            assert paused.status == "awaiting_approval"
            assert [c["name"] for c in paused.executed] == ["eo_describe_scene"]
            assert paused.pending[0]["action_requests"][0]["name"] == "eo_spectral_index"
            resumed = await run_workflow("eo", None, session=session, model=model, thread_id="wf-eo-approval",
                                         resume=True, approval="yes")
            assert resumed.status == "done"
            assert [c["name"] for c in resumed.executed] == ["eo_spectral_index", "eo_statistics"]
            assert resumed.values["statistics"]["stats"]["mean"] == pytest.approx(ref.mean(ndvi), abs=1e-6)

            # graph benchmark: generate, prompt, model, check, aggregate
            gb = await run_workflow("graph", {"tasks": ["connectivity", "shortest_path", "triangle"],
                                              "generator": "ERP", "n_nodes": 8, "seeds": [0, 1]},
                                    session=session, model=model, thread_id="wf-graph")
            by_task = gb.values["summary"]["by_task"]
            assert by_task["connectivity"]["accuracy"] == 1.0 and by_task["shortest_path"]["accuracy"] == 1.0
            assert by_task["triangle"]["accuracy"] == 0.0 and by_task["triangle"]["n"] == 2
            assert gb.values["summary"]["overall"] == pytest.approx(4 / 6)
            ran.append("graph")

            # chunked QA: chunk with the server's tool, one worker per chunk (Send), then the manager
            if "longctx_chunk" in names:
                doc = (ref.SAMPLES / "longctx" / "alice.txt").read_text(encoding="utf-8")
                before = len(llm.requests)
                qa = await run_workflow("qa", {"task": "What was written on the little bottle?",
                                               "path": "sample://longctx/alice.txt", "chunk_tokens": 8000,
                                               "encoding": "approx"}, session=session, model=model, thread_id="wf-qa")
                spans = qa.values["chunking"]["spans"]
                covered = sorted(spans)
                assert covered[0][0] == 0 and covered[-1][1] == len(doc)
                assert all(a[1] >= b[0] for a, b in itertools.pairwise(covered))  # no gap
                notes = qa.values["notes"]
                assert sorted(n["index"] for n in notes) == list(range(len(spans)))
                assert len(llm.requests) - before == len(spans) + 1            # one call per worker + the manager
                holding = [i for i, (a, b) in enumerate(spans) if "DRINK ME" in doc[a:b]]
                assert holding and sorted(n["index"] for n in notes if not n["na"]) == holding
                assert qa.answer == "Answer: DRINK ME"
                ran.append("qa")

            # NID audit: detect, generate, train a small model, score, DP audit
            if "nid_detect" in names:
                text = (ref.SAMPLES / "nid" / "jsonlite_MD5.txt").read_text()
                md5s = set(re.findall(r"(?<![0-9a-fA-F])[0-9a-f]{32}(?![0-9a-fA-F])", text))
                nid = await run_workflow("nid", {"path": "sample://nid/jsonlite_MD5.txt", "dataset": "jsonlite_md5",
                                                 "mode": "audit", "train": {"per_dataset": 16, "epochs": 1,
                                                                            "d_model": 32, "n_layer": 1},
                                                 "n_gids": 3, "max_nids": 8},
                                         session=session, model=model, thread_id="wf-nid")
                assert nid.values["detected"]["unique"] == len(md5s)
                gids = nid.values["generated"]["gids"]
                assert len(gids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", g) for g in gids)
                r = nid.values["result"]
                assert r["n_nids"] == 8 and r["candidates_per_nid"] == 4 and r["eps_lower_bound"] >= 0.0
                ran.append("nid")

            # DTI screening: validate, model card, screen, explain, report (the report says when no model ships)
            if "dti_screen" in names:
                seq = (ref.SAMPLES / "dti" / "targets.csv").read_text().splitlines()[1].split(",")[2]
                lib = ref.SAMPLES / "dti" / "screening_library.smi"
                n_lib = sum(1 for line in lib.read_text().splitlines() if line.strip() and not line.startswith("#"))
                dti = await run_workflow("dti", {"target": seq, "library": "sample://dti/screening_library.smi",
                                                 "top_k": 5}, session=session, model=model, thread_id="wf-dti")
                assert dti.status == "done"
                assert dti.values["validation"]["molecules_checked"] == n_lib
                assert dti.values["validation"]["proteins_valid"] == 1
                if "error" in dti.values["card"]:
                    assert "No screen: the model is not available" in dti.answer
                else:
                    top = dti.values["screen"]["top"]
                    scores = [float(h["score"]) for h in top]
                    assert len(top) == 5 and scores == sorted(scores, reverse=True)
                    assert all(0.0 <= x <= 1.0 for x in scores)
                    assert dti.values["explanation"]["smiles"]
                ran.append("dti")
    assert set(ran) >= {"eo", "graph"}
    assert set(WORKFLOWS) >= set(ran)
