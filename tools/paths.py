"""Where tools may read and write: the configured roots, the bundled samples, the output folder.

Inputs are given as a path inside a root, as a `sample://<family>/<file>` URI, or as the `output://<file>`
URI of a file a tool wrote; anything else is refused. Outputs go under the output folder, never elsewhere.
The output folder is swept by age (`RESEARCH_MCP_OUTPUT_RETENTION_DAYS`) and total size
(`RESEARCH_MCP_OUTPUT_QUOTA_MB`), oldest files first, and only when research-mcp created the folder (it
holds a `.research-mcp-output` marker), so a folder of someone else's files is never pruned.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path

from tools.errors import AccessDenied, InvalidInput, NotFound
from tools.settings import get_settings

SAMPLE_DIR = Path(__file__).resolve().parent / "sample_data"
SAMPLE_SCHEME = "sample://"
OUTPUT_SCHEME = "output://"
MAX_PATH_CHARS = 4096
STATE_PREFIX = ".research-mcp-"  # the marker and research-mcp's own state files (the job store): never swept
MARKER = f"{STATE_PREFIX}output"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

logger = logging.getLogger("research_mcp")


def output_dir() -> Path:
    """The output folder, created on first use (with the marker that lets the retention sweep prune it)."""
    out = get_settings().output_dir.expanduser().resolve()
    if not out.is_dir():
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).touch()
    elif not (out / MARKER).exists() and not any(out.iterdir()):
        (out / MARKER).touch()
    return out


def state_path(name: str) -> Path:
    """A file of research-mcp's own state in the output folder (`.research-mcp-<name>`), which the sweep keeps."""
    return output_dir() / f"{STATE_PREFIX}{name}"


def check_path_text(text: str) -> str:
    """`text` when it can name a file: bounded length, no NUL or other control characters."""
    if len(text) > MAX_PATH_CHARS:
        raise InvalidInput(f"A path of {len(text):,} characters was given; paths are at most {MAX_PATH_CHARS:,}.",
                           hint="Pass the path of a file inside the roots, or a sample:// URI.")
    bad = _CONTROL.search(text)
    if bad:
        raise InvalidInput(f"The path {text[:80]!r} contains the control character {bad.group()!r} "
                           f"at position {bad.start()}.",
                           hint="Paths may not contain NUL, newlines or other control characters; "
                           "pass the file's real path.")
    return text


def allowed_roots() -> list[Path]:
    """Every folder an input may come from: the roots, the samples and the output folder."""
    s = get_settings()
    return [p.expanduser().resolve() for p in s.roots] + [SAMPLE_DIR, s.output_dir.expanduser().resolve()]


def sample_path(relative: str) -> Path:
    """The bundled sample file or folder `relative` (e.g. 'eo/landsat8'), which must exist."""
    check_path_text(relative)
    p = (SAMPLE_DIR / relative).resolve()
    if not p.is_relative_to(SAMPLE_DIR) or not p.exists():
        raise NotFound(
            f"No bundled sample {relative!r}.", hint="List the resources (sample://...) to see what ships."
        )
    return p


def resolve_input(path: str | Path, *, must_exist: bool = True) -> Path:
    """Resolve a user path or `sample://` URI and check that it lies inside an allowed root."""
    text = check_path_text(str(path).strip())
    if not text:
        raise NotFound("An empty path was given.", hint="Pass a file path inside the roots or a sample:// URI.")
    if text.startswith(SAMPLE_SCHEME):
        return sample_path(text[len(SAMPLE_SCHEME) :])
    if text.startswith(OUTPUT_SCHEME):
        return output_file(text[len(OUTPUT_SCHEME) :])
    try:
        p = Path(text).expanduser()
        if not p.is_absolute():
            p = Path.cwd() / p
        p = p.resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise InvalidInput(f"The path {text[:80]!r} cannot be resolved ({type(exc).__name__}: {exc}).",
                           hint="Pass the path of an existing file inside the roots, or a sample:// URI.") from exc
    roots = allowed_roots()
    if not any(p.is_relative_to(r) for r in roots):
        raise AccessDenied(
            f"{text!r} is outside the allowed folders ({', '.join(str(r) for r in roots)}).",
            hint="Move the file into a root, or add its folder to RESEARCH_MCP_ROOTS (a JSON list of paths).",
        )
    if must_exist and not p.exists():
        raise NotFound(f"{text!r} does not exist.", hint="Check the path; relative paths start at the server's folder.")
    return p


def output_uri(path: Path) -> str:
    """The `output://` URI of a file under the output folder (its path relative to the folder, %-encoded)."""
    rel = path.resolve().relative_to(output_dir()).as_posix()
    return OUTPUT_SCHEME + urllib.parse.quote(rel, safe="/")


def output_file(relative: str) -> Path:
    """The finished file `relative` (as written after `output://`, %-encoded or not) inside the output folder.

    Refused, with the reason: an absolute path, a `..` step, a hidden name (unfinished `.partial` outputs among
    them), anything that resolves outside the output folder (a symbolic link included), and a folder.
    """
    text = check_path_text(urllib.parse.unquote(check_path_text(relative)))
    shown = f"{OUTPUT_SCHEME}{relative[:120]}"
    fix = "Use an output:// URI exactly as a tool result gave it (a file name inside the output folder)."
    parts = text.replace("\\", "/").split("/")
    if not text or text.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", text):
        raise AccessDenied(f"{shown} names an absolute path; output URIs name files inside the output folder.",
                           hint=fix)
    if ".." in parts:
        raise AccessDenied(f"{shown} steps out of the output folder with '..'.", hint=fix)
    if any(p.startswith(".") for p in parts if p):
        raise AccessDenied(f"{shown} names a hidden file (an unfinished output or the folder's marker).", hint=fix)
    root = output_dir()
    p = (root / text).resolve()
    if not p.is_relative_to(root):
        raise AccessDenied(f"{shown} resolves outside the output folder (through a symbolic link).", hint=fix)
    if not p.is_file():
        what = "is a folder" if p.is_dir() else "does not exist (it may have been removed by the retention sweep)"
        raise NotFound(f"{shown} {what}.", hint="Call the tool again to write a fresh output, then use the URI its "
                       "result gives.")
    return p


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def output_path(name: str, suffix: str = "") -> Path:
    """A fresh file path under the output folder; `name` is sanitised and made unique."""
    stem = _SAFE.sub("_", name).strip("._")[:120] or "output"
    return output_dir() / f"{stem}-{uuid.uuid4().hex[:8]}{_SAFE.sub('_', suffix)[:16]}"


@dataclass
class SweepReport:
    """What one retention sweep removed, and what is left."""

    deleted: int = 0
    freed_bytes: int = 0
    kept: int = 0
    kept_bytes: int = 0
    skipped: str | None = None


MIN_AGE_S = 60.0  # a file this fresh may still be in use (a writer's .partial, a result just returned)
_sweep_lock = threading.Lock()
_last_sweep = 0.0


def sweep_outputs(*, now: float | None = None) -> SweepReport:
    """Delete output files past the retention age, then the oldest ones until the folder fits the quota.

    Only regular files under the output folder are considered (symbolic links are neither followed nor
    removed), files younger than a minute are kept, and nothing happens unless the folder carries the
    marker research-mcp leaves in folders it created.
    """
    s = get_settings()
    out = s.output_dir.expanduser().resolve()
    if not out.is_dir():
        return SweepReport(skipped=f"{out} does not exist yet")
    if not (out / MARKER).is_file():
        return SweepReport(skipped=f"{out} was not created by research-mcp (no {MARKER} file); not pruned")
    now = time.time() if now is None else now
    files: list[tuple[float, int, Path]] = []
    for folder, _dirs, names in os.walk(out, followlinks=False):
        for name in names:
            p = Path(folder) / name
            if folder == str(out) and name.startswith(STATE_PREFIX):
                continue
            try:
                st = p.lstat()
            except OSError:
                continue
            if not os.path.isfile(p) or os.path.islink(p):
                continue
            files.append((st.st_mtime, st.st_size, p))
    files.sort()
    report = SweepReport()
    max_age = s.output_retention_days * 86400.0
    quota = s.output_quota_mb * 1024 * 1024
    total = sum(size for _, size, _ in files)
    for mtime, size, p in files:
        age = now - mtime
        expired = max_age > 0 and age > max_age
        over = quota > 0 and total > quota
        if age < MIN_AGE_S or not (expired or over):
            report.kept += 1
            report.kept_bytes += size
            continue
        if not p.resolve().is_relative_to(out):
            continue
        try:
            p.unlink()
        except OSError:
            report.kept += 1
            report.kept_bytes += size
            continue
        total -= size
        report.deleted += 1
        report.freed_bytes += size
    for folder, _, _ in sorted(os.walk(out, followlinks=False), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            if Path(folder) != out and now - os.lstat(folder).st_mtime > MIN_AGE_S:
                os.rmdir(folder)  # only succeeds when empty
    if report.deleted:
        logger.info("output sweep: deleted %d files (%.1f MB) from %s", report.deleted, report.freed_bytes / 1e6, out)
    return report


def maybe_sweep(min_interval_s: float = 60.0) -> SweepReport | None:
    """`sweep_outputs()` unless one ran in the last `min_interval_s` seconds (or another is running)."""
    global _last_sweep
    if not _sweep_lock.acquire(blocking=False):
        return None
    try:
        if time.monotonic() - _last_sweep < min_interval_s:
            return None
        _last_sweep = time.monotonic()
        return sweep_outputs()
    finally:
        _sweep_lock.release()
