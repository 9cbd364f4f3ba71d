"""research-mcp's research methods as plain typed Python functions, one sub-package a family."""
