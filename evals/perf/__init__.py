"""One performance benchmark: every ratio (MCP latency, start-up, tools/list, D&C, family rows) side by side."""
