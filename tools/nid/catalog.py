"""The NID family's MCP tools."""

from tools.nid.api import (
    nid_blind_filter,
    nid_dataset_inference,
    nid_detect,
    nid_dp_audit,
    nid_generate,
    nid_score,
    nid_train_model,
)
from tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    ToolSpec(nid_detect, title="Detect natural identifiers"),
    ToolSpec(nid_generate, title="Generate same-format identifiers (GIDs)"),
    ToolSpec(nid_blind_filter, title="Blind filter: can characters tell NIDs from GIDs?"),
    ToolSpec(nid_score, title="Membership scores of NIDs and GIDs", read_only=False, idempotent=True),
    ToolSpec(nid_dp_audit, title="One-run DP audit (eps lower bound)"),
    ToolSpec(nid_dataset_inference, title="Dataset inference with NIDs", read_only=False),
    ToolSpec(nid_train_model, title="Train a small byte-level LM (optionally DP-SGD)", read_only=False,
             idempotent=False),
]
