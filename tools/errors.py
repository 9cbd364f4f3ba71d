"""The one error family of research-mcp.

Every anticipated failure (bad input, a bound exceeded, a missing file, no LLM endpoint) is raised as a
`ResearchError` subclass whose message says what is wrong and how to fix it. The MCP layer turns these
into error results the client's model can read; anything else is a bug and is reported without a
traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ResearchError(Exception):
    """Base class: a failure the caller can fix. The message must say how."""

    kind = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message} {hint}".strip() if hint else message)


class InvalidInput(ResearchError, ValueError):
    """An argument is malformed or out of its domain (an invalid SMILES, an unknown band)."""

    kind = "invalid_input"


class LimitExceeded(ResearchError, ValueError):
    """An input is past a configured bound (graph size, text length, raster pixels, batch size)."""

    kind = "limit_exceeded"

    def __init__(self, what: str, value: float, limit: float, setting: str, hint: str | None = None) -> None:
        super().__init__(
            f"{what} is {value:g}, over the limit of {limit:g}.",
            hint=hint or f"Reduce it, or raise the bound with the environment variable {setting}.",
        )
        self.value = value
        self.limit = limit
        self.setting = setting


class NotFound(ResearchError, LookupError):
    """A named thing (file, index, model, tool) does not exist."""

    kind = "not_found"


class AccessDenied(ResearchError, PermissionError):
    """A path lies outside the configured roots."""

    kind = "access_denied"


class NotConfigured(ResearchError, RuntimeError):
    """A capability needs configuration that is missing (an LLM endpoint, a model checkpoint)."""

    kind = "not_configured"


class UpstreamError(ResearchError, RuntimeError):
    """An external service (an LLM endpoint) failed after retries."""

    kind = "upstream_error"


class Busy(ResearchError, RuntimeError):
    """The server is at capacity for this kind of work; the same call may succeed when retried later."""

    kind = "busy"


class Cancelled(ResearchError):
    """The caller cancelled a long-running operation; partial work was discarded or saved as stated."""

    kind = "cancelled"


def unknown_name(what: str, name: str, choices: Iterable[str], *, aliases: Iterable[str] = (),
                 listed_by: str | None = None) -> NotFound:
    """A `NotFound` for an unknown name that suggests the closest known names (and `aliases`); a long list is
    counted, and `listed_by` names the tool that lists it."""
    options = sorted(set(choices))
    other = sorted(set(aliases) - set(options))
    pool = options + other
    close = difflib.get_close_matches(name, pool, n=5, cutoff=0.5)
    if not close:
        close = [o for o in pool if name.lower() in o.lower()][:5]
    hint = f"Did you mean {', '.join(repr(c) for c in close)}?" if close else None
    listing = ", ".join(options) if len(options) <= 30 else f"{len(options)} names"
    if listed_by:
        listing += f", listed by the tool {listed_by}"
    if other:
        listing += f" (and the aliases {', '.join(other)})"
    return NotFound(f"Unknown {what} {name!r}. Known: {listing}.", hint=hint)
