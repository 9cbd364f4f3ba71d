"""Endpoints a caller names: the server's credentials go only to the endpoint the server was configured with.

A tool argument that is a URL (an OpenAI-compatible base URL, say) is the caller's choice, not the
operator's. Such a URL gets no server key, and is refused unless its prefix is listed in
`RESEARCH_MCP_ALLOWED_ENDPOINTS` (a JSON list of base-URL prefixes). Only http and https are accepted.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from tools.errors import AccessDenied, InvalidInput
from tools.settings import get_settings

SETTING = "RESEARCH_MCP_ALLOWED_ENDPOINTS"
SCHEMES = ("http", "https")
MAX_URL_CHARS = 2048


def normalise(url: str) -> str:
    """`url` with a lower-case scheme and host, the default port dropped and no trailing slash.

    Raises `InvalidInput` for anything that is not an absolute http(s) URL.
    """
    text = str(url).strip()
    if not text or len(text) > MAX_URL_CHARS or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise InvalidInput(f"{text[:80]!r} is not a usable endpoint URL.",
                           hint="Give an absolute http(s) base URL, e.g. http://127.0.0.1:8080/v1.")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise InvalidInput(f"Endpoint {text[:80]!r} uses the scheme {scheme or '(none)'!r}; only http and https "
                           "are accepted.", hint="Give an absolute http(s) base URL, e.g. http://127.0.0.1:8080/v1.")
    if not parts.hostname:
        raise InvalidInput(f"Endpoint {text[:80]!r} names no host.",
                           hint="Give an absolute http(s) base URL, e.g. http://127.0.0.1:8080/v1.")
    if parts.username or parts.password:
        raise InvalidInput("An endpoint URL may not carry a user name or password.",
                           hint="Drop the user:password@ part; the server sends no credentials to caller URLs.")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidInput(f"Endpoint {text[:80]!r} has an invalid port.", hint="Use a port from 1 to 65535.") from exc
    if port is not None and port != (443 if scheme == "https" else 80):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))


def _within(url: str, prefix: str) -> bool:
    """Whether `url` is `prefix` or lies below it (a path boundary, never a partial host or segment)."""
    if url == prefix:
        return True
    return url.startswith(prefix) and url[len(prefix)] in "/?"


def check_caller_endpoint(url: str) -> str:
    """The normalised `url` when the operator allows callers to name it; `AccessDenied` otherwise.

    Allowed: the configured base URL itself, and URLs at or below a prefix in RESEARCH_MCP_ALLOWED_ENDPOINTS.
    """
    norm = normalise(url)
    allowed = [c] if (c := configured_base_url()) else []
    for prefix in get_settings().allowed_endpoints:
        try:
            allowed.append(normalise(prefix))
        except InvalidInput:
            continue
    if not any(_within(norm, p) for p in allowed):
        raise AccessDenied(
            f"The endpoint {norm} is not one the server allows callers to name.",
            hint=f"Leave the endpoint out to use the server's configured model, or ask the operator to add its "
            f"prefix to {SETTING} (a JSON list, e.g. [\"{norm}\"]).",
        )
    return norm


def configured_base_url() -> str | None:
    """The normalised base URL the server was configured with (`OPENAI_BASE_URL`), if any."""
    base = get_settings().llm.base_url
    if not base:
        return None
    try:
        return normalise(base)
    except InvalidInput:
        return None


def key_for(url: str) -> str | None:
    """The server's API key when `url` is the configured base URL itself; None for every other URL."""
    s = get_settings().llm
    if s.api_key is None:
        return None
    try:
        norm = normalise(url)
    except InvalidInput:
        return None
    configured = configured_base_url()
    if configured is None or norm != configured:
        return None
    return s.api_key.get_secret_value()
