"""The NID tools as plain functions and through the MCP server: results, bad-input errors, progress, cancel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tools.errors import Cancelled, InvalidInput, NotFound
from tools.nid.audit_tools import nid_dataset_inference, nid_dp_audit
from tools.nid.identifier_tools import nid_blind_filter, nid_detect, nid_generate
from tools.nid.keccak import is_checksum_address
from tools.nid.score_tool import nid_score
from tools.nid.train_tools import nid_train_model
from tools.progress import Progress

TEXT = ("deploy 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed, see https://t.co/AbC123xyZ9 and "
        "0d75e4c42f8c76d59b84cf3b3ac0420b *DESCRIPTION; again 0d75e4c42f8c76d59b84cf3b3ac0420b")


def test_detect_and_generate() -> None:
    r = nid_detect(text=TEXT)
    assert r.unique == 3 and r.total_occurrences == 4
    assert r.by_type == {"eth_address": 1, "tco": 1, "md5": 1}
    md5 = next(i for i in r.identifiers if i.type == "md5")
    assert md5.occurrences == 2
    g = nid_generate("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", n=5, seed=1)
    assert g.type == "eth_address" and g.casing == "checksum" and all(is_checksum_address(x) for x in g.gids)
    assert nid_generate("-8270183163158333422L").type == "serial_version_uid"
    s = nid_detect(path="sample://nid/jsonlite_MD5.txt", max_results=5)
    assert s.unique == 180 and s.truncated and len(s.identifiers) == 5


def test_bad_inputs() -> None:
    with pytest.raises(NotFound, match=r"Unknown NID type 'sha3'.*sha256"):
        nid_detect(text=TEXT, types=["sha3"])
    with pytest.raises(NotFound, match="Unknown NID type"):
        nid_generate("abc", type="bitcoin")
    with pytest.raises(InvalidInput, match="no natural identifiers"):
        nid_detect(text="nothing to see here, 1L and deadbeef")
    with pytest.raises(InvalidInput, match="no natural identifiers"):
        nid_score(model="x.pt", text="plain words only")
    with pytest.raises(InvalidInput, match="is not a md5"):
        nid_generate("xyz", type="md5")
    rows = [[1.0, 0.5, 0.2]] * 5
    with pytest.raises(InvalidInput, match="c must be at least 2"):
        nid_dp_audit(scores=rows, c=1)
    with pytest.raises(InvalidInput, match="1 <= r < c"):
        nid_dp_audit(scores=rows, r=3)
    for alpha in (0.0, 1.0, 1.2):
        with pytest.raises(InvalidInput, match="alpha must lie strictly between 0 and 1"):
            nid_dp_audit(scores=rows, alpha=alpha)


def test_not_a_causal_lm(tmp_path: Path) -> None:
    bad = tmp_path / "weights.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(InvalidInput, match="not a causal language model"):
        nid_score(model=str(bad), dataset="jsonlite_md5", max_nids=4, n_gids=2)


def test_dp_audit_inline() -> None:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(300, 4))
    rows[:, 0] += 3.0  # NIDs far above their GIDs
    r = nid_dp_audit(scores=rows.tolist())
    assert r.correct >= 290 and r.eps_lower_bound > 2
    b = nid_dp_audit(scores=rows.tolist(), mode="binary", guesses=100)
    assert b.guesses == 100 and b.eps_lower_bound > 1
    null = nid_dp_audit(scores=np.random.default_rng(1).normal(size=(300, 4)).tolist())
    assert null.eps_lower_bound < 0.3 and null.correct < 100


def test_blind_filter_real_and_wrong_generator() -> None:
    ok = nid_blind_filter(dataset="jsonlite_md5", n_gids=15)
    assert 0.45 <= ok.auc <= 0.55 and ok.kept == ok.n_nids == 180
    wrong = nid_blind_filter(dataset="jsonlite_md5", n_gids=15, gid_casing="upper")
    assert wrong.auc >= 0.9


def test_train_score_audit_infer(tmp_path: Path) -> None:
    import torch

    torch.set_num_threads(1)
    seen: list[tuple[float, float | None, str | None]] = []
    t = nid_train_model(datasets=["jsonlite_md5", "tweets"], per_dataset=8, epochs=2, d_model=16, n_layer=1,
                        progress=Progress(lambda d, tot, m: seen.append((d, tot, m))))
    assert [s[0] for s in seen] == [1, 2] and seen[-1][1] == 2
    assert t.members == 8 and t.non_members == 8 and t.dp_epsilon is None
    split = json.loads(Path(t.split_path).read_text())
    assert {it["nid"] for it in split["members"]}.isdisjoint({it["nid"] for it in split["non_members"]})
    s = nid_score(model=t.checkpoint, split=t.split_path, n_gids=5, recall=True)
    assert s.n_nids == 8 and s.candidates_per_nid == 6 and {x.score for x in s.summary} >= {"loss", "recall"}
    with np.load(s.scores_path) as z:
        assert z["features"].shape == (8, 6, 6)
    a = nid_dp_audit(scores_path=s.scores_path, score="min_k")
    assert a.n_nids == 8 and 0 <= a.correct <= 8
    d = nid_dataset_inference(scores_path=s.scores_path, folds=2)
    assert 0 <= d.p_value_ks <= 1 and Path(d.histogram_png or "").stat().st_size > 1000


def test_train_cancel() -> None:
    p = Progress()
    p.cancel()
    with pytest.raises(Cancelled):
        nid_train_model(datasets=["jsonlite_md5"], per_dataset=4, epochs=3, d_model=16, n_layer=1, progress=p)


server_app = pytest.importorskip("server.app")


@pytest.mark.anyio
async def test_nid_over_mcp(anyio_backend: str) -> None:
    from mcp import Client

    async with Client(server_app.build_server(["nid"])) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"nid_detect", "nid_generate", "nid_blind_filter", "nid_score", "nid_dp_audit",
                "nid_dataset_inference", "nid_train_model"} <= names
        r = await c.call_tool("nid_detect", {"text": TEXT})
        assert r.structured_content["unique"] == 3
        g = await c.call_tool("nid_generate", {"identifier": "AbC123xyZ9", "n": 3})
        assert g.structured_content["type"] == "tco" and len(g.structured_content["gids"]) == 3
        bad = await c.call_tool("nid_dp_audit", {"scores": [[1.0, 0.0]] * 4, "alpha": 1.5})
        assert bad.is_error and "alpha" in bad.content[0].text
        none = await c.call_tool("nid_detect", {"text": "no identifiers"})
        assert none.is_error and "no natural identifiers" in none.content[0].text


def test_workflow_report_names_the_default_corpus() -> None:
    from agents.workflows.nid import EXAMPLE, report

    state = {"detected": {"unique": 180, "by_type": {"md5": 180}}, "scores": {"n_nids": 8}, "result": {}}
    text = report(state)  # type: ignore[arg-type]
    assert f"in {EXAMPLE['path']}." in text and "None" not in text.splitlines()[0]
    assert "in /data/x.txt." in report({**state, "path": "/data/x.txt"})  # type: ignore[arg-type]
