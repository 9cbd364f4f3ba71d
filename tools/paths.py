"""Where tools may read and write: the configured roots, the bundled samples, the output folder.

Inputs are given as a path inside a root or as a `sample://<family>/<file>` URI; anything else is
refused. Outputs go under the output folder, never elsewhere.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from tools.errors import AccessDenied, NotFound
from tools.settings import get_settings

SAMPLE_DIR = Path(__file__).resolve().parent / "sample_data"
SAMPLE_SCHEME = "sample://"


def output_dir() -> Path:
    """The output folder, created on first use."""
    out = get_settings().output_dir.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    return out


def allowed_roots() -> list[Path]:
    """Every folder an input may come from: the roots, the samples and the output folder."""
    s = get_settings()
    return [p.expanduser().resolve() for p in s.roots] + [SAMPLE_DIR, s.output_dir.expanduser().resolve()]


def sample_path(relative: str) -> Path:
    """The bundled sample file or folder `relative` (e.g. 'eo/landsat8'), which must exist."""
    p = (SAMPLE_DIR / relative).resolve()
    if not p.is_relative_to(SAMPLE_DIR) or not p.exists():
        raise NotFound(
            f"No bundled sample {relative!r}.", hint="List the resources (sample://...) to see what ships."
        )
    return p


def resolve_input(path: str | Path, *, must_exist: bool = True) -> Path:
    """Resolve a user path or `sample://` URI and check that it lies inside an allowed root."""
    text = str(path).strip()
    if not text:
        raise NotFound("An empty path was given.", hint="Pass a file path inside the roots or a sample:// URI.")
    if text.startswith(SAMPLE_SCHEME):
        return sample_path(text[len(SAMPLE_SCHEME) :])
    p = Path(text).expanduser()
    if not p.is_absolute():
        p = Path.cwd() / p
    p = p.resolve()
    roots = allowed_roots()
    if not any(p.is_relative_to(r) for r in roots):
        raise AccessDenied(
            f"{text!r} is outside the allowed folders ({', '.join(str(r) for r in roots)}).",
            hint="Move the file into a root, or add its folder to RESEARCH_MCP_ROOTS (a JSON list of paths).",
        )
    if must_exist and not p.exists():
        raise NotFound(f"{text!r} does not exist.", hint="Check the path; relative paths start at the server's folder.")
    return p


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def output_path(name: str, suffix: str = "") -> Path:
    """A fresh file path under the output folder; `name` is sanitised and made unique."""
    stem = _SAFE.sub("_", name).strip("._") or "output"
    return output_dir() / f"{stem}-{uuid.uuid4().hex[:8]}{suffix}"
