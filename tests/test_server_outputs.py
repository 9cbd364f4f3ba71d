"""Output retention: the sweep deletes by age and quota, oldest first, and nothing outside the output folder."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tools.paths import MARKER, output_dir, sweep_outputs
from tools.settings import reload_settings

DAY = 86400.0


def _file(path: Path, size: int, age_days: float, now: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age_days * DAY, now - age_days * DAY))
    return path


def test_sweep_by_age_and_quota_oldest_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_RETENTION_DAYS", "10")
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_QUOTA_MB", "1")
    reload_settings()
    out = output_dir()
    assert (out / MARKER).is_file()
    now = time.time()
    mb = 1024 * 1024
    expired = _file(out / "old.tif", 1000, 11, now)
    oldest = _file(out / "sub" / "a.png", mb // 2, 5, now)
    middle = _file(out / "b.csv", mb // 2, 4, now)
    newest = _file(out / "c.json", mb // 4, 1, now)
    fresh = _file(out / ".d.1234.partial.tif", mb // 8, 0, now)  # a writer may still be filling it
    outside = _file(tmp_path / "elsewhere" / "keep.txt", mb, 400, now)
    (out / "link.txt").symlink_to(outside)

    report = sweep_outputs(now=now)
    assert not expired.exists()  # past the retention age
    assert not oldest.exists()  # quota: 1.375 MB -> oldest first until <= 1 MB
    assert middle.exists() and newest.exists() and fresh.exists()
    assert outside.exists() and (out / "link.txt").is_symlink()
    assert report.deleted == 2 and report.freed_bytes == 1000 + mb // 2
    assert (out / MARKER).is_file()


def test_a_folder_research_mcp_did_not_create_is_never_pruned(monkeypatch, tmp_path: Path) -> None:
    theirs = tmp_path / "their-files"
    now = time.time()
    precious = _file(theirs / "thesis.tex", 10, 3650, now)
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_DIR", str(theirs))
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_QUOTA_MB", "0.000001")
    reload_settings()
    report = sweep_outputs(now=now)
    assert precious.exists() and report.deleted == 0 and report.skipped
    assert not (theirs / MARKER).exists()


def test_zero_means_keep_everything(monkeypatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_RETENTION_DAYS", "0")
    monkeypatch.setenv("RESEARCH_MCP_OUTPUT_QUOTA_MB", "0")
    reload_settings()
    now = time.time()
    old = _file(output_dir() / "ancient.csv", 5000, 10_000, now)
    assert sweep_outputs(now=now).deleted == 0 and old.exists()


# ------------------------------------------------------------------ output files as resources

def test_output_uris_resolve_only_inside_the_output_folder(tmp_path: Path) -> None:
    from tools.errors import AccessDenied, NotFound
    from tools.paths import output_file, output_uri, resolve_input

    out = output_dir()
    table = out / "sub" / "table.csv"
    table.parent.mkdir()
    table.write_text("a,b\n1,2\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    (out / "link.txt").symlink_to(secret)
    (out / ".table.1234.partial.csv").write_text("half")
    assert output_uri(table) == "output://sub/table.csv"
    assert output_file("sub/table.csv") == table.resolve() == resolve_input("output://sub/table.csv")
    assert output_file("sub%2Ftable.csv") == table.resolve()
    refused = {"../secret.txt": "'..'", "sub/../../secret.txt": "'..'", "%2e%2e/secret.txt": "'..'",
               "%2E%2E%2Fsecret.txt": "'..'", "/etc/passwd": "absolute", "%2Fetc%2Fpasswd": "absolute",
               "C:/Windows/win.ini": "absolute", "link.txt": "symbolic link", ".research-mcp-output": "hidden",
               ".table.1234.partial.csv": "hidden"}
    for relative, reason in refused.items():
        with pytest.raises(AccessDenied, match=reason):
            output_file(relative)
    with pytest.raises(NotFound, match="folder"):
        output_file("sub")
    with pytest.raises(NotFound, match="does not exist"):
        output_file("gone.csv")


@pytest.mark.anyio
async def test_resources_read_returns_output_files_and_refuses_the_rest(monkeypatch, tmp_path: Path) -> None:
    import base64
    import os

    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from server.app import build_server

    monkeypatch.setenv("RESEARCH_MCP_MAX_RESOURCE_MB", "0.004")  # 4,194 bytes
    reload_settings()
    out = output_dir()
    (out / "table.csv").write_text("rank,id\n1,D00001\n")
    blob = os.urandom(4000)
    (out / "scores.npz").write_bytes(blob)
    (out / "big.csv").write_text("x" * 5000)
    (tmp_path / "secret.txt").write_text("not yours")
    (out / "link.txt").symlink_to(tmp_path / "secret.txt")
    async with Client(build_server(["graph"], log_level="CRITICAL")) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["output://{+path}"]
        text = (await client.read_resource("output://table.csv")).contents[0]
        assert text.text == "rank,id\n1,D00001\n" and text.mime_type == "text/csv"
        raw = (await client.read_resource("output://scores.npz")).contents[0]
        assert base64.b64decode(raw.blob) == blob and raw.mime_type == "application/octet-stream"
        for uri, reason in (("output://../secret.txt", "'..'"), ("output://%2E%2E/secret.txt", "'..'"),
                            ("output:///etc/passwd", "absolute"), ("output://link.txt", "symbolic link"),
                            ("output://.research-mcp-output", "hidden"), ("output://missing.csv", "does not exist")):
            with pytest.raises(MCPError, match=reason):
                await client.read_resource(uri)
        with pytest.raises(MCPError) as too_big:
            await client.read_resource("output://big.csv")
    assert "5,000 bytes" in str(too_big.value) and "4,194 bytes" in str(too_big.value)
    assert "RESEARCH_MCP_MAX_RESOURCE_MB" in str(too_big.value)


CYCLE = {"edges": [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [1, 3]]}


@pytest.mark.anyio
async def test_a_result_links_its_files_and_inlines_its_pictures_unless_switched_off(monkeypatch) -> None:
    import base64
    import io

    from mcp import Client
    from PIL import Image

    from server.app import build_server

    args = {"task": "cycle", "graph": CYCLE}
    async with Client(build_server(["graph"], log_level="CRITICAL")) as client:
        shown = await client.call_tool("graph_solve", args)
        monkeypatch.setenv("RESEARCH_MCP_INLINE_IMAGES", "false")
        reload_settings()
        linked = await client.call_tool("graph_solve", args)
        read_back = (await client.read_resource(linked.content[-1].uri)).contents[0]
    kinds = [c.type for c in shown.content]
    assert kinds == ["text", "image", "resource_link"], kinds
    path = Path(shown.structured_content["drawing"])
    link = shown.content[2]
    assert link.uri == f"output://{path.name}" and link.name == path.name and link.mime_type == "image/png"
    assert link.size == path.stat().st_size
    data = base64.b64decode(shown.content[1].data)
    assert data == path.read_bytes()
    assert Image.open(io.BytesIO(data)).size == Image.open(path).size
    # switched off: the same picture is written and linked, not inlined
    assert [c.type for c in linked.content] == ["text", "resource_link"]
    second = Path(linked.structured_content["drawing"])
    assert second.is_file() and second != path
    assert base64.b64decode(read_back.blob) == second.read_bytes()


def test_only_pictures_within_the_bound_are_inlined(tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    from server.images import MAX_BYTES, MAX_SIDE, image_blocks, png_size

    small, wide, heavy = tmp_path / "small.png", tmp_path / "wide.png", tmp_path / "heavy.png"
    Image.new("RGB", (300, 200), "white").save(small)
    Image.new("RGB", (MAX_SIDE + 1, 10), "white").save(wide)
    noise = np.random.default_rng(0).integers(0, 256, (600, 600, 3), dtype=np.uint8)
    Image.fromarray(noise).save(heavy)
    assert heavy.stat().st_size > MAX_BYTES
    assert png_size(small.read_bytes()[:24]) == (300, 200) and png_size(b"GIF89a" + bytes(18)) is None
    blocks = image_blocks([small, wide, heavy, tmp_path / "not-a-picture.csv"])
    assert len(blocks) == 1 and blocks[0].mime_type == "image/png"
