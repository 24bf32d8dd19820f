"""MCP transports over one ``Memory``: stdio and streamable HTTP."""

from cuedrecall.server.mcp import build_server, serve_http, serve_stdio

__all__ = ["build_server", "serve_http", "serve_stdio"]
