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


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps({"error": "unauthorized", "error_description": "Send Authorization: Bearer <token>"
                                   " with the token set in RESEARCH_MCP_TOKEN on the server."}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="research-mcp"'),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


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


def http_app(server: MCPServer, host: str, port: int, token: str | None, extra_hosts: list[str]) -> ASGIApp:
    """The ASGI app serving MCP at `/mcp`; a token is required unless the host is loopback."""
    if token is None and not is_loopback(host):
        raise NotConfigured(
            f"Refusing to serve on {host} without a token: anyone who can reach it could call the tools.",
            hint="Set RESEARCH_MCP_TOKEN to a long random string (clients send it as a bearer token), "
            "or bind to 127.0.0.1.",
        )
    app = server.streamable_http_app(host=host, transport_security=security_settings(host, port, extra_hosts))
    return BearerAuth(app, token) if token else app


def serve_http(server: MCPServer, host: str, port: int, token: str | None, extra_hosts: list[str]) -> None:
    """Run the streamable HTTP server until interrupted."""
    import uvicorn

    app = http_app(server, host, port, token, extra_hosts)
    uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
