"""Where a longctx tool's text comes from (inline, a path in the roots, or a sample:// URI), with bounds."""

from __future__ import annotations

from tools.errors import InvalidInput, LimitExceeded
from tools.paths import resolve_input
from tools.settings import get_settings

_SETTING = "RESEARCH_MCP_LONGCTX__MAX_TEXT_CHARS"


def load_text(text: str | None, path: str | None) -> str:
    """The text given inline or read from `path`; errors for none, both, empty, binary or too long."""
    limit = get_settings().longctx.max_text_chars
    if text is not None and path:
        raise InvalidInput("Both text and path were given.", hint="Pass the text inline or a path, not both.")
    if text is None and not path:
        raise InvalidInput(
            "No text was given.",
            hint="Pass text='...' inline, or path= a file inside the roots or a sample:// URI "
            "(e.g. sample://longctx/alice.txt).",
        )
    if path:
        p = resolve_input(path)
        if p.is_dir():
            raise InvalidInput(f"{path!r} is a folder, not a text file.", hint="Pass the path of one UTF-8 text file.")
        size = p.stat().st_size
        if size > 4 * limit:
            raise LimitExceeded(f"The file {path!r} (bytes)", size, 4 * limit, _SETTING)
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{path!r} is not UTF-8 text (byte {exc.start} cannot be decoded).",
                hint="Convert the file to UTF-8 plain text (e.g. extract the text of a PDF first).",
            ) from exc
    assert text is not None
    if not text.strip():
        raise InvalidInput("The text is empty.", hint="Pass a non-empty text or a file that has text in it.")
    if len(text) > limit:
        raise LimitExceeded("The text length (characters)", len(text), limit, _SETTING)
    return text
