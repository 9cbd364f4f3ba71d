"""Streamable HTTP transport: bearer-token check and DNS-rebinding protection around the SDK's app."""

from __future__ import annotations

import hmac
import ipaddress
import json

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from tools.errors import NotConfigured

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
# The MCP Inspector release whose CLI sends --header and runs on Node 20 (0.16 and later declare Node >= 22.7.5,
# so a bare `npx @modelcontextprotocol/inspector` on Node 20 gets 0.15.0, which has no --header).
INSPECTOR = "@modelcontextprotocol/inspector@0.21.2"


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


MIN_TOKEN_CHARS = 32


def check_token(token: str) -> None:
    """Refuse a bearer token too short to resist guessing."""
    if len(token) < MIN_TOKEN_CHARS:
        raise NotConfigured(
            f"RESEARCH_MCP_TOKEN is {len(token)} characters long; at least {MIN_TOKEN_CHARS} are required.",
            hint="Make one with `openssl rand -hex 24` (48 hex characters) and give the same value to the clients.",
        )


class BearerAuth:
    """ASGI middleware: every HTTP request must carry exactly one `Authorization: Bearer <token>` header.

    The scheme name is case-insensitive (RFC 7235 section 2.1); the token is compared in constant time.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
            if len(given) > 1:
                await _refuse(send, 400, "invalid_request", "Send one Authorization header, not several.")
                return
            scheme, _, credentials = (given[0] if given else b"").strip().partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), self._expected):
                await _refuse(send, 401, "unauthorized", "Send Authorization: Bearer <token> with the token set "
                              "in RESEARCH_MCP_TOKEN on the server.")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, error: str, description: str) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="research-mcp"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def security_settings(host: str, port: int, extra_hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection: only this server's own Host names (and `extra_hosts`) are accepted."""
    hosts = {"127.0.0.1:*", "localhost:*", "[::1]:*"} if is_loopback(host) or host in ("0.0.0.0", "::") else set()
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        hosts |= {host, f"{host}:{port}", f"{host}:*"}
    for h in extra_hosts:
        hosts |= {h, f"{h}:*"}
    origins = {f"http://{h.removesuffix(':*')}:*" for h in hosts if h.endswith(":*")}
    origins |= {f"https://{h.removesuffix(':*')}:*" for h in hosts if h.endswith(":*")}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=sorted(hosts), allowed_origins=sorted(origins)
    )


def http_app(server: MCPServer, host: str, port: int, token: str | None, extra_hosts: list[str],
             stateless: bool = False) -> ASGIApp:
    """The ASGI app serving MCP at `/mcp`; a token is required unless the host is loopback.

    `stateless`: no session is kept between requests, so any of several server processes can answer any
    request (what `--workers N` needs); server-to-client requests such as sampling are then unavailable.
    """
    if token is None and not is_loopback(host):
        raise NotConfigured(
            f"Refusing to serve on {host} without a token: anyone who can reach it could call the tools.",
            hint="Set RESEARCH_MCP_TOKEN to a long random string (clients send it as a bearer token), "
            "or bind to 127.0.0.1.",
        )
    if token is not None:
        check_token(token)
    app = server.streamable_http_app(host=host, transport_security=security_settings(host, port, extra_hosts),
                                     stateless_http=stateless)
    return BearerAuth(app, token) if token else app


def app_from_environment() -> ASGIApp:
    """The stateless app built from the settings: the factory each `--workers` server process calls."""
    from server.app import build_server
    from tools.settings import get_settings

    settings = get_settings()
    token = settings.token.get_secret_value() if settings.token else None
    return http_app(build_server(), settings.host, settings.port, token, settings.allowed_hosts, stateless=True)


def client_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to `host`."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}/mcp" if ":" in host else f"http://{host}:{port}/mcp"


def startup_lines(host: str, port: int, token: bool) -> list[str]:
    """What `serve --http` prints: its URL, the header clients send, an MCP Inspector command listing the tools."""
    url = client_url(host, port)
    header = "Authorization: Bearer $RESEARCH_MCP_TOKEN"
    lines = [f"research-mcp: MCP over streamable HTTP at {url}"]
    if token:
        lines.append(f"  clients send the header: {header}  (the value of RESEARCH_MCP_TOKEN)")
    inspector = f"npx -y {INSPECTOR} --cli {url} --transport http"
    inspector += f' --header "{header}"' if token else ""
    lines += ["  list the tools with the MCP Inspector (Node 20 or later):", f"    {inspector} --method tools/list"]
    return lines


def serve_http(server: MCPServer, host: str, port: int, token: str | None, extra_hosts: list[str],
               workers: int = 1) -> None:
    """Run the streamable HTTP server until interrupted; `workers` > 1 runs that many stateless server
    processes on the one port and hands their batch jobs to one shared Dask cluster."""
    import uvicorn

    # Keep-alive outlives a load balancer's usual 60 s idle timeout, so the balancer, not the server, closes
    # an idle connection (no request lost on a connection the server just closed); a worker busy with a
    # burst of calls on a loaded machine gets 30 s, not 5, to answer the supervisor's health check.
    options = {"host": host, "port": port, "log_level": "warning", "lifespan": "on", "timeout_keep_alive": 75}
    app = http_app(server, host, port, token, extra_hosts, stateless=workers > 1)
    import sys

    print("\n".join(startup_lines(host, port, token is not None)), file=sys.stderr, flush=True)
    if workers <= 1:
        uvicorn.run(app, **options)
        return
    import os

    from tools.execution import dask_settings, start_local_cluster

    os.environ["RESEARCH_MCP_HOST"], os.environ["RESEARCH_MCP_PORT"] = host, str(port)
    if dask_settings().scheduler is None and dask_settings().mode != "inline":
        os.environ["RESEARCH_MCP_DASK_SCHEDULER"] = start_local_cluster()
    uvicorn.run("server.http:app_from_environment", factory=True, workers=workers, timeout_worker_healthcheck=30,
                **options)
