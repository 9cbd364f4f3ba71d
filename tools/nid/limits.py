"""Bounds of the NID family, set through `RESEARCH_MCP_NID__<NAME>`."""

from pydantic import BaseModel, Field

from tools.limits import register_limits


@register_limits("nid")
class NIDLimits(BaseModel):
    max_text_chars: int = Field(5_000_000, description="Longest text nid_detect scans.")
    max_candidates: int = Field(1024, description="Most candidates (the NID and its GIDs) per identifier.")
    max_nids: int = Field(5000, description="Most NIDs one nid_score, nid_blind_filter or audit call handles.")
    max_scored_contexts: int = Field(
        200_000, description="Most contexts (NIDs x candidates) one nid_score call scores."
    )
    max_train_examples: int = Field(20_000, description="Most training texts nid_train_model accepts.")
    max_train_epochs: int = Field(500, description="Most epochs nid_train_model runs.")
    max_model_dim: int = Field(512, description="Largest d_model of a trained byte-level LM.")
    max_model_layers: int = Field(8, description="Most transformer layers of a trained byte-level LM.")
    torch_threads: int = Field(1, description="CPU threads torch and the tree classifiers use in NID tools.")
