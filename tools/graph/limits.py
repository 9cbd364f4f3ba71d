"""Bounds of the graph family, set through `RESEARCH_MCP_GRAPH__<NAME>`."""

from pydantic import BaseModel, Field

from tools.limits import register_limits


@register_limits("graph")
class GraphLimits(BaseModel):
    max_nodes: int = Field(2000, description="Largest graph (nodes) any graph tool accepts.")
    max_edges: int = Field(20000, description="Largest graph (edges) any graph tool accepts.")
    max_nodes_np_hard: int = Field(
        40, description="Largest graph for exact search on NP-hard tasks (clique, colouring, Hamiltonian...)."
    )
    max_benchmark_items: int = Field(5000, description="Most items one graph_benchmark call generates.")
    max_nodes_max_cut: int = Field(
        20, description="Largest graph for the exact maximum cut (it enumerates 2^(n-1) splits)."
    )
    max_search_steps: int = Field(
        300_000, description="Most backtracking steps of one exact search (Hamiltonian, colouring)."
    )
    max_text_chars: int = Field(2_000_000, description="Longest serialized graph text a parser reads.")
    max_inline_chars: int = Field(
        20_000, description="Longest serialization or prompt returned inline; longer ones are written to a file."
    )
    max_samples: int = Field(20, description="Most self-consistency samples per question.")
