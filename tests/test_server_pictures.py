"""The pictures tools draw, checked against what they must show, and delivered inline through MCP beside links
whose `resources/read` gives back the files byte for byte."""

from __future__ import annotations

import base64
import csv
import io
import itertools
import re

import networkx as nx
import numpy as np
import pytest
from mcp import Client
from PIL import Image

from server.app import build_server
from server.images import MAX_BYTES, MAX_SIDE
from tools.dti.depiction import PANEL, THRESHOLD, atom_colours, grid_shape
from tools.graph.drawing import MAX_NODES, highlight
from tools.graph.model import from_spec
from tools.nid.plots import roc_points
from tools.paths import sample_path
from tools.settings import reload_settings

pytestmark = pytest.mark.anyio
L8 = "sample://eo/landsat8_c1_l1t"


def decoded(block) -> Image.Image:
    """The PNG of an image content block, decoded (and so checked to be a valid PNG)."""
    assert block.type == "image" and block.mime_type == "image/png"
    data = base64.b64decode(block.data)
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) <= MAX_BYTES
    image = Image.open(io.BytesIO(data))
    image.load()
    assert max(image.size) <= MAX_SIDE
    return image


async def read_back(client: Client, link) -> bytes:
    content = (await client.read_resource(link.uri)).contents[0]
    return base64.b64decode(content.blob) if getattr(content, "blob", None) else content.text.encode()


async def check_call(client: Client, tool: str, args: dict, picture: str, files: tuple[str, ...] = ()) -> Image.Image:
    """Call `tool`: its picture (result field `picture`) is inline, and every file named by `picture` and `files`
    is linked, with `resources/read` giving back its bytes. Returns the decoded picture."""
    from pathlib import Path

    r = await client.call_tool(tool, args)
    assert not r.is_error, r.content
    images = [c for c in r.content if c.type == "image"]
    links = {c.uri: c for c in r.content if c.type == "resource_link"}
    png = Path(r.structured_content[picture])
    assert len(images) == 1 and base64.b64decode(images[0].data) == png.read_bytes()
    for field in (picture, *files):
        path = Path(r.structured_content[field])
        link = links[f"output://{path.name}"]
        assert link.size == path.stat().st_size
        assert await read_back(client, link) == path.read_bytes()
    return decoded(images[0])


# ------------------------------------------------------------------ EO


async def test_eo_index_quicklook_is_inline_and_the_geotiff_reads_back() -> None:
    async with Client(build_server(["eo"], log_level="CRITICAL")) as client:
        image = await check_call(client, "eo_spectral_index", {"scene": L8, "index": "NDVI"}, "quicklook",
                                 ("output",))
    assert 400 <= image.size[0] <= 900 and 400 <= image.size[1] <= 800


def test_the_quicklook_caption_names_the_scene_and_its_date() -> None:
    from tools.eo.arguments import scene_caption
    from tools.eo.detection import open_scene

    mtl = sample_path("eo/landsat8_c1_l1t/l8_MTL.txt").read_text()
    scene_id = re.search(r'LANDSAT_SCENE_ID = "(\w+)"', mtl).group(1)
    date = re.search(r"DATE_ACQUIRED = ([\d-]+)", mtl).group(1)
    assert scene_caption(open_scene(L8)) == f"{scene_id} · Landsat 8 · {date}"


# ------------------------------------------------------------------ DTI


@pytest.fixture
def one_dti_thread(monkeypatch):
    monkeypatch.setenv("RESEARCH_MCP_DTI__THREADS", "1")
    reload_settings()


def _target() -> str:
    with sample_path("dti/targets.csv").open() as fh:
        return next(csv.DictReader(fh))["sequence"]


async def test_a_screen_draws_its_top_hits_as_a_grid(one_dti_thread) -> None:
    args = {"target": _target(), "library": "sample://dti/screening_library.smi", "top_k": 10, "write_sdf": False}
    async with Client(build_server(["dti"], log_level="CRITICAL")) as client:
        image = await check_call(client, "dti_screen", args, "hits_png", ("hits_csv",))
    cols, rows = grid_shape(8)
    assert image.size == (cols * PANEL[0], rows * PANEL[1]) == (1200, 520)


def test_the_atoms_that_drive_a_score_are_highlighted(one_dti_thread) -> None:
    from rdkit import Chem

    from tools.dti.occlusion import occlude

    colours = atom_colours([1.0, -0.5, 0.1, 0.0, THRESHOLD])
    assert set(colours) == {0, 1, 4}
    assert colours[0][0] == 1.0 and colours[0][1] < 1.0  # red: supports binding
    assert colours[1][2] == 1.0 and colours[1][0] < 1.0  # blue: against
    smiles = Chem.MolToSmiles(Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)O"))
    occ = occlude(smiles, _target(), "default")
    assert len(occ.weights) == occ.mol.GetNumAtoms()
    # each bit's drop is shared over its atoms, so the atom weights add up to the sum of the bit drops
    assert float(np.sum(occ.weights)) == pytest.approx(sum(e.delta for e in occ.bits), abs=1e-5)
    best = occ.top_atoms[0]
    assert occ.weights[best] > 0 and best in atom_colours(occ.weights)


async def test_an_explanation_is_drawn_inline(one_dti_thread) -> None:
    async with Client(build_server(["dti"], log_level="CRITICAL")) as client:
        image = await check_call(client, "dti_explain", {"smiles": "CC(=O)Oc1ccccc1C(=O)O", "protein": _target()},
                                 "png", ("svg",))
    assert image.size == (520, 400)


# ------------------------------------------------------------------ graph


def _graph(edges) -> nx.Graph:
    return from_spec({"edges": [list(e) for e in edges]})


def test_a_highlighted_path_or_cycle_is_the_witness() -> None:
    G = _graph(nx.petersen_graph().edges())
    path = nx.shortest_path(G, 0, 7)
    hl = highlight("shortest_path", G, path, {"length": len(path) - 1}, {"source": 0, "target": 7})
    assert hl.edges == list(itertools.pairwise(path)) and all(G.has_edge(*e) for e in hl.edges)
    cycle = [u for u, _ in nx.find_cycle(G)]
    hl = highlight("cycle", G, True, {"cycle": [*cycle, cycle[0]]})
    assert {frozenset(e) for e in hl.edges} == {frozenset(e) for e in nx.find_cycle(G)}


def test_cuts_and_matchings_are_highlighted_as_networkx_finds_them() -> None:
    from tools.graph.catalog import graph_solve

    G = nx.gnp_random_graph(12, 0.35, seed=4)
    spec = {"edges": [list(e) for e in G.edges()], "nodes": list(G.nodes())}
    solved = graph_solve("max_flow", graph=spec, source=0, target=11, draw=False)
    hl = highlight("max_flow", from_spec(spec), solved.answer, solved.witness, {"source": 0, "target": 11})
    D = G.to_directed()
    nx.set_edge_attributes(D, 1, "capacity")
    # unit capacities: the edges the minimum cut crosses are as many as the maximum flow
    assert len(hl.edges) == nx.maximum_flow_value(D, 0, 11) == solved.answer > 0
    assert all(G.has_edge(*e) for e in hl.edges)
    cut = graph_solve("max_cut", graph=spec, draw=False)
    hl = highlight("max_cut", from_spec(spec), cut.answer, cut.witness)
    side = set(cut.witness["side"])
    assert len(hl.edges) == cut.answer == sum((u in side) != (v in side) for u, v in G.edges())
    B = nx.complete_bipartite_graph(3, 4)
    matching = graph_solve("bipartite_matching", graph={"edges": [list(e) for e in B.edges()]}, draw=False)
    hl = highlight("bipartite_matching", B, matching.answer, matching.witness)
    assert len(hl.edges) == matching.answer == 3 and nx.is_matching(B, set(hl.edges))


async def test_graph_drawings_are_inline_for_readable_graphs_only() -> None:
    small = {"edges": [list(e) for e in nx.petersen_graph().edges()]}
    big = {"edges": [[i, i + 1] for i in range(MAX_NODES)]}
    async with Client(build_server(["graph"], log_level="CRITICAL")) as client:
        image = await check_call(client, "graph_solve", {"task": "cycle", "graph": small}, "drawing")
        large = await client.call_tool("graph_solve", {"task": "diameter", "graph": big})
    assert 500 <= image.size[0] <= 800
    assert large.structured_content["drawing"] is None and [c.type for c in large.content] == ["text"]


# ------------------------------------------------------------------ NID and long context


def test_the_roc_matches_sklearn_ties_included() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    pos, neg = np.round(rng.normal(0.5, 1, 40), 1), np.round(rng.normal(0, 1, 200), 1)  # rounded: many ties
    fpr, tpr, auc = roc_points(pos, neg)
    assert auc == pytest.approx(roc_auc_score(np.r_[np.ones(40), np.zeros(200)], np.r_[pos, neg]))
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0)


async def test_nid_audit_and_noise_fit_plots_are_inline() -> None:
    rng = np.random.default_rng(0)
    table = np.c_[rng.normal(1.0, 1, 40), rng.normal(0, 1, (40, 7))].round(4).tolist()
    single = [{"tokens": t, "accuracy": round(float(np.exp(-3e-7 * t**1.6)), 4)} for t in (1000, 4000, 16000)]
    async with Client(build_server(["nid", "longctx"], log_level="CRITICAL")) as client:
        audit = await check_call(client, "nid_dp_audit", {"scores": table}, "plot_png")
        fit = await check_call(client, "longctx_fit_noise", {"single_shot": single}, "plot_png")
    assert audit.size[0] > audit.size[1] and fit.size[0] > fit.size[1]
