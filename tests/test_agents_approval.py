"""Which tool calls wait for approval: a writing tool given a path outside the output folder."""

from __future__ import annotations

from pathlib import Path

from agents.approval import approval_reason
from agents.connection import ToolInfo
from tools.paths import SAMPLE_DIR

SCHEMA = {"properties": {"scene": {"type": "string"}, "index": {"type": "string"}, "out_file": {"type": "string"}}}
WRITER = ToolInfo("eo_spectral_index", "", SCHEMA, {"read_only_hint": False})
READER = ToolInfo("eo_statistics", "", SCHEMA, {"read_only_hint": True})


def test_read_only_tools_never_wait(tmp_path: Path):
    assert approval_reason(READER, {"scene": "/etc/passwd"}, tmp_path / "out", tmp_path) is None


def test_writing_tool_waits_only_for_paths_outside_the_output_folder(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    assert approval_reason(WRITER, {"scene": "sample://eo/landsat8_c1_l1t", "index": "NDVI"}, out, tmp_path) is None
    assert approval_reason(WRITER, {"scene": str(SAMPLE_DIR / "eo" / "landsat8_c1_l1t")}, out, tmp_path) is None
    assert approval_reason(WRITER, {"scene": str(out / "ndvi.tif")}, out, tmp_path) is None
    assert approval_reason(WRITER, {"scene": "out/ndvi.tif"}, out, tmp_path) is None          # relative to cwd
    reason = approval_reason(WRITER, {"scene": str(tmp_path / "mine" / "scene")}, out, tmp_path)
    assert reason and "scene=" in reason and "outside the output folder" in reason
    assert approval_reason(WRITER, {"out_file": "../elsewhere.tif"}, out, tmp_path / "out")   # escapes by ..
    assert approval_reason(WRITER, {"scene": [str(out / "a.tif"), "/data/b.tif"]}, out, tmp_path)  # lists too
    # plain words are not paths
    assert approval_reason(WRITER, {"index": "NDVI", "scene": "sample://eo/x"}, out, tmp_path) is None


def test_an_unknown_tool_waits(tmp_path: Path):
    assert approval_reason(None, {}, tmp_path, tmp_path)
