"""LangGraph agents over research-mcp's tools, reached through MCP like any other client.

The bridge from MCP to LangChain tools is langchain's own adapter, `langchain.mcp.MCPAdapter`
(the `langchain[mcp]` extra, built on the fastmcp client). It was checked with mcp 2.3 here over
stdio (a `research-mcp serve` subprocess) and streamable HTTP (URL plus bearer header): one session
stays open for a whole run (the server process is spawned once and every tool call reuses it); each
MCP tool becomes a `StructuredTool` with the tool's own JSON input schema; a tool's structured result
arrives as the message artifact and its MCP annotations (`readOnlyHint`...) as tool metadata; an
error result reaches the model as a failed tool message instead of ending the run; an elicitation
request becomes a LangGraph interrupt. That covers everything the agents need, so no bridge of our
own is written (`langchain-mcp-adapters` 0.3 cannot be used: it requires mcp < 2).

Modules: `connection` (server targets and the MCP session), `model` (the OpenAI-compatible chat
model), `approval` (which tool calls need a human's approval), `trace` (the JSON record of a run),
`react` (the ReAct agent), `selection` (the compact tool catalogue and the tools bound per model call),
`toolcalls` (tool calls written as text), `tooluse` (the agent middleware that binds, reads, retries and
stops), `runner` (durable runs: checkpoints, streaming, approval, resume),
`workflows` (one explicit StateGraph per tool family), `cli` (`research-mcp agent ...`).
"""
