"""Graph-reasoning evals: a generated benchmark on any OpenAI-compatible model, the factor optimizer, MCP overhead."""
