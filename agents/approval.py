"""Which tool calls need a human's approval: those that may write outside the output folder.

A tool whose MCP annotations say it is read-only never needs approval. Any other tool needs it when
one of its arguments is a filesystem path (by the parameter's name or the value's shape) that lies
outside the output folder. Bundled samples (`sample://` URIs, or their files by path) are read-only data
and never count. Relative
paths are taken from the server's working folder, as the server itself resolves them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents.connection import ToolInfo

PATH_NAME = re.compile(r"(path|file|dir|folder|dest|output|out$|^out_|save|target_uri|uri$)", re.IGNORECASE)
SAMPLE_SCHEME = "sample://"


def _looks_like_path(value: str) -> bool:
    v = value.strip()
    if not v or "\n" in v or len(v) > 4096:
        return False
    return v.startswith(("/", "~", "./", "../", "file://")) or bool(re.match(r"^[A-Za-z]:[\\/]", v))


def path_arguments(info: ToolInfo, args: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every `(argument, value)` of a call that names a filesystem path."""
    props = info.input_schema.get("properties", {}) if info.input_schema else {}
    for name, value in args.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, str) or v.startswith(SAMPLE_SCHEME) or ("://" in v and not v.startswith("file://")):
                continue
            described = str(props.get(name, {}).get("format", "")) == "path"
            if described or _looks_like_path(v) or (PATH_NAME.search(name) and ("/" in v or "." in v)):
                yield name, v


def _resolve(value: str, cwd: Path) -> Path:
    text = value.removeprefix("file://")
    p = Path(text).expanduser()
    if not p.is_absolute():
        p = cwd / p
    return p.resolve()


def approval_reason(info: ToolInfo | None, args: dict[str, Any], output_dir: Path, cwd: Path) -> str | None:
    """Why this call needs approval, or None when it may run unattended."""
    if info is None:
        return "the tool is unknown to this session, so what it writes cannot be judged"
    if info.read_only:
        return None
    from tools.paths import SAMPLE_DIR

    out = output_dir.expanduser().resolve()
    for name, value in path_arguments(info, args):
        p = _resolve(value, cwd)
        if not p.is_relative_to(out) and not p.is_relative_to(SAMPLE_DIR):
            return f"{info.name} may write, and its argument {name}={value!r} lies outside the output folder {out}"
    return None
