"""Explicit LangGraph StateGraphs, one per tool family, calling the server's tools through MCP."""
