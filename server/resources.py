"""The bundled sample data, listed as MCP resources `sample://<family>/<file>`."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from mcp.server.mcpserver.resources import FileResource

from tools.paths import SAMPLE_DIR, SAMPLE_SCHEME

TEXT_SUFFIXES = {".txt", ".md", ".json", ".jsonl", ".csv", ".smi", ".prompt", ".sdf", ".graphml", ".gml"}


def sample_files() -> list[Path]:
    """Every bundled sample file, sorted."""
    if not SAMPLE_DIR.is_dir():
        return []
    return sorted(p for p in SAMPLE_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def sample_resources() -> list[FileResource]:
    """One `FileResource` per bundled sample file; tools accept the same URI as a path."""
    out = []
    for path in sample_files():
        rel = path.relative_to(SAMPLE_DIR).as_posix()
        text = path.suffix.lower() in TEXT_SUFFIXES
        mime = mimetypes.guess_type(path.name)[0] or ("text/plain" if text else "application/octet-stream")
        if path.suffix.lower() == ".jsonl":
            mime = "application/jsonl"
        out.append(
            FileResource(
                uri=f"{SAMPLE_SCHEME}{rel}",
                name=rel,
                description=f"Bundled sample ({path.stat().st_size:,} bytes). Pass this URI as a path to any tool.",
                mime_type=mime,
                path=path,
                encoding="utf-8" if text else None,
            )
        )
    return out
