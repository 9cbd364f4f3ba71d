"""The MCP adapter of research-mcp: tool registration, resources, transports and the CLI."""
