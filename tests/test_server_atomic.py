"""A writer killed mid-write leaves no file under the final name (agent traces, longctx chunk files)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, server_env
from tools.atomic import is_partial

TRACE_WRITER = """
import sys
from pathlib import Path
from agents.trace import RunTrace
trace = RunTrace(Path(sys.argv[1]), thread_id="t", kind="react", question="q", model="m", server="s")
trace.data["messages"] = ["x" * 1_000_000 for _ in range(400)]  # about 400 MB of JSON
print("ready", flush=True)
trace.save()
"""

CHUNK_WRITER = """
import json, time
import tools.longctx.splitting as splitting
from tools.longctx.splitting import longctx_chunk

def slow_dumps(obj, **kw):  # a slow producer: the chunk file is written over several seconds
    time.sleep(0.02)
    return json.dumps(obj, **kw)

splitting.json = type("J", (), {"dumps": staticmethod(slow_dumps)})
print("ready", flush=True)
longctx_chunk(text="word " * 200_000, chunk_tokens=2000, overlap_tokens=0, encoding="approx", write_file=True)
"""


def _writing(folder: Path) -> bool:
    """Whether a non-empty partial file is in `folder`."""
    try:
        return folder.is_dir() and any(is_partial(p) and p.stat().st_size for p in folder.rglob("*"))
    except FileNotFoundError:  # renamed while we looked
        return False


def _kill_mid_write(script: str, args: list[str], folder: Path, env: dict[str, str]) -> list[Path]:
    """Run `script`, SIGKILL it once a non-empty partial file shows in `folder`, and return what is left there."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 120
        while not _writing(folder):
            assert proc.poll() is None, f"the writer finished before it could be killed: {proc.stderr.read()!r}"
            assert time.monotonic() < deadline, "no partial file appeared"
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return sorted(folder.rglob("*"))


def test_a_killed_trace_writer_leaves_no_trace_file(tmp_path: Path) -> None:
    final = tmp_path / "runs" / "thread.json"
    left = _kill_mid_write(TRACE_WRITER, [str(final)], final.parent, server_env())
    assert not final.exists()
    assert left and all(is_partial(p) for p in left)


def test_a_killed_chunk_writer_leaves_no_chunk_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    left = _kill_mid_write(CHUNK_WRITER, [], out, server_env(RESEARCH_MCP_OUTPUT_DIR=str(out)))
    finished = [p for p in left if p.suffix == ".jsonl" and not is_partial(p)]
    assert finished == []
    assert any(is_partial(p) and p.stat().st_size > 0 for p in left)


def test_atomic_folder_replaces_only_when_complete(tmp_path) -> None:
    import pytest

    from tools.atomic import atomic_folder

    final = tmp_path / "adapter"
    with atomic_folder(final) as tmp:
        tmp.mkdir()
        (tmp / "a.txt").write_text("one")
    assert (final / "a.txt").read_text() == "one"
    with pytest.raises(RuntimeError), atomic_folder(final) as tmp:
        tmp.mkdir()
        (tmp / "a.txt").write_text("two")
        raise RuntimeError("killed mid-write")
    assert (final / "a.txt").read_text() == "one"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]
