"""The `research-mcp` command's answers to bad input: one line that says what to fix, and a non-zero status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from server.cli import main
from tests.conftest import REPO, server_env
from tools.settings import get_settings


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def test_an_arguments_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "server", "call", "graph_solve", "@missing.json"], cwd=tmp_path,
                          env=server_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and proc.stdout == ""
    line = _one_line(proc.stderr)
    assert "'missing.json'" in line and "No such file or directory" in line
    not_utf8 = tmp_path / "args.json"
    not_utf8.write_bytes(b'{"task": "\xff"}')
    for arg, reason in ((f"@{tmp_path}", "Is a directory"), (f"@{not_utf8}", "utf-8")):
        with pytest.raises(SystemExit) as exc:
            main(["call", "graph_solve", arg])
        assert reason in _one_line(str(exc.value))


def test_a_malformed_setting_names_its_variable(monkeypatch, capsys) -> None:
    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_NODES", "many")
    monkeypatch.setenv("RESEARCH_MCP_PORT", "70000")
    get_settings.cache_clear()  # as in a new process
    with pytest.raises(SystemExit) as exc:
        main(["tools"])
    line = _one_line(str(exc.value))
    assert "RESEARCH_MCP_GRAPH__MAX_NODES" in line and "'many'" in line
    assert "RESEARCH_MCP_PORT" in line and "65535" in line
    monkeypatch.delenv("RESEARCH_MCP_GRAPH__MAX_NODES")
    monkeypatch.delenv("RESEARCH_MCP_PORT")
    get_settings.cache_clear()
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--http", "--port", "70000"])
    assert exc.value.code == 2
    assert "1 to 65535" in capsys.readouterr().err


def test_an_eval_given_a_missing_file_is_one_line(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "rows.csv"
    assert main(["eval", "graph", "--from-rows", str(missing)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == f"research-mcp eval: cannot use {missing} (No such file or directory)."


def test_an_unknown_eval_is_one_line(capsys) -> None:
    assert main(["eval", "nosuch"]) == 2
    assert "nosuch" in _one_line(capsys.readouterr().err)



def test_eval_lists_every_eval_and_each_has_a_quick_variant(capsys) -> None:
    from server.cli import eval_names

    on_disk = sorted(p.parent.name for p in (REPO / "evals").glob("*/run.py"))
    assert {"agents", "perf", "dti", "eo", "graph", "longctx", "nid"} <= set(on_disk)
    assert eval_names() == on_disk
    assert main(["eval"]) == 2
    assert f"evals: {', '.join(on_disk)}" in _one_line(capsys.readouterr().err)
    for name in on_disk:
        with pytest.raises(SystemExit) as exc:
            main(["eval", name, "--help"])
        assert exc.value.code == 0
        assert "--quick" in capsys.readouterr().out, name


def test_nid_bench_takes_quick(tmp_path: Path, monkeypatch) -> None:
    import evals.nid.bench as bench
    from evals.nid.run import main as nid_main

    seen: dict[str, object] = {}
    row = {"contexts": 1, "batched_s": 1.0, "loop_s": 2.0, "ratio": 2.0, "max_abs_diff": 0.0, "looped_contexts": 1,
           "per_context_batched_ms": 1.0, "per_context_loop_ms": 2.0, "identifier_tokens": 1, "head_rows_ratio": 1.0}

    def bytelm(out, **kw):
        seen["byte_contexts"] = kw["contexts"]
        return row

    def gemma(**kw):
        seen["datasets"], seen["loop_every"] = kw["datasets"], kw["loop_every"]
        return {d: row for d in kw["datasets"]}

    monkeypatch.setattr(bench, "bench_bytelm", bytelm)
    monkeypatch.setattr(bench, "bench_gemma", gemma)
    assert nid_main(["--bench", "--out", str(tmp_path / "full")]) == 0
    full = dict(seen)
    assert full == {"byte_contexts": 512, "datasets": bench.BENCH_DATASETS, "loop_every": 4}
    assert nid_main(["--bench", "--quick", "--out", str(tmp_path / "quick")]) == 0
    assert seen["byte_contexts"] < full["byte_contexts"] and len(seen["datasets"]) < len(full["datasets"])
    assert seen["loop_every"] > full["loop_every"]  # the slow per-string loop on fewer contexts


@pytest.mark.anyio
async def test_unknown_names_get_the_closest_known_ones_and_the_tool_that_lists_them() -> None:
    import re

    from mcp import Client

    from server.app import build_server
    from tools.eo.discovery import eo_list_indices

    async with Client(build_server(log_level="CRITICAL")) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        typo = await client.call_tool("graph_solv", {})
        index = await client.call_tool("eo_spectral_index", {"scene": "sample://eo/landsat8_c1_l1t", "index": "NDVIX"})
    text = typo.content[0].text
    assert typo.is_error and "Unknown tool 'graph_solv'. Did you mean 'graph_solve'" in text
    assert f"lists all {len(names)}" in text
    text = index.content[0].text
    assert index.is_error and "eo_list_indices" in text and "'NDVI'" in text and "  " not in text
    size = eo_list_indices(limit=1).catalogue_size
    documented = re.search(r"Search the (\d+) spectral indices", eo_list_indices.__doc__ or "")
    assert f"Known: {size} names" in text and documented and int(documented.group(1)) == size


def test_a_tool_error_is_one_line_with_its_kind(capsys) -> None:
    assert main(["call", "graph_solve", '{"task": "diameter"}']) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("error Error executing tool graph_solve: [invalid_input] Give the graph exactly one way")
    assert "  " not in line


def test_results_print_as_utf8_whatever_the_terminal_encoding() -> None:
    args = '{"path": "sample://longctx/alice_chapter1.txt", "chunk_tokens": 1000}'
    proc = subprocess.run([sys.executable, "-m", "server", "call", "longctx_chunk", args], cwd=REPO,
                          env=server_env(PYTHONIOENCODING="ascii"), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout.decode("utf-8")
    assert "\u201cI " in text and "\\u201c" not in text


def test_dti_calls_that_give_nothing_usable_say_so_and_fail(capsys) -> None:
    import json

    protein = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"
    bad = json.dumps({"pairs": [{"smiles": "C1CC", "protein": protein}, {"smiles": "CCO", "protein": "MKT"}]})
    assert main(["call", "dti_score", bad]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["scored"] == 0
    assert _one_line(out.err) == "nothing usable dti_score: 0 of 2 rows could be scored (each row's error says why)"
    good = json.dumps({"pairs": [{"smiles": "C1CC", "protein": protein}, {"smiles": "CCO", "protein": protein}]})
    assert main(["call", "dti_score", good]) == 0
    assert json.loads(capsys.readouterr().out)["scored"] == 1
    assert main(["call", "dti_validate", json.dumps({"smiles": ["C1CC", "xx"], "proteins": [protein]})]) == 1
    assert "0 of 2 molecules valid" in _one_line(capsys.readouterr().err)
    assert main(["call", "dti_validate", json.dumps({"smiles": ["C1CC", "CCO"]})]) == 0
