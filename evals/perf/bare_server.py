"""The baseline of the MCP rows: a bare `mcp` SDK server (MCPServer) that registers `graph_solve` with its
public signature (no progress reporting) and none of research-mcp's wrapping, served on stdio.

    python -m evals.perf.bare_server
"""

from __future__ import annotations

from mcp.server import MCPServer

from tools.graph import catalog


def graph_solve(
    task: catalog.TaskArg,
    graph: catalog.GraphArg = None,
    text: catalog.TextArg = None,
    text_format: catalog.TextFormatArg = None,
    path: catalog.PathArg = None,
    directed: catalog.DirectedArg = False,
    source: catalog.SourceArg = None,
    target: catalog.TargetArg = None,
    node: catalog.NodeArg = None,
    draw: bool = True,
) -> catalog.Solved:
    """Solve a graph task exactly and return the answer with a witness."""
    return catalog.graph_solve(task, graph, text, text_format, path, directed, source, target, node, draw)


def build() -> MCPServer:
    """A server with the one tool, registered the way the SDK's own examples do."""
    server = MCPServer(name="bare", log_level="WARNING")
    server.add_tool(graph_solve)
    return server


if __name__ == "__main__":
    build().run("stdio")
