"""The NID family's MCP tools."""

from tools.nid.audit_tools import nid_dataset_inference, nid_dp_audit
from tools.nid.corpus_scan import nid_corpus_scan
from tools.nid.finetune_tool import nid_finetune
from tools.nid.identifier_tools import nid_blind_filter, nid_detect, nid_generate
from tools.nid.score_tool import nid_score
from tools.nid.train_tools import nid_train_model
from tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    ToolSpec(nid_detect, title="Detect natural identifiers"),
    ToolSpec(nid_generate, title="Generate same-format identifiers (GIDs)"),
    ToolSpec(nid_blind_filter, title="Blind filter of NIDs vs GIDs", heavy=True),
    ToolSpec(nid_score, title="Membership scores of NIDs and GIDs", read_only=False, idempotent=True, heavy=True,
             open_world=True),
    ToolSpec(nid_dp_audit, title="One-run DP audit (eps lower bound)"),
    ToolSpec(nid_dataset_inference, title="Dataset inference with NIDs", read_only=False, heavy=True),
    ToolSpec(nid_train_model, title="Train a small byte-level LM (optionally DP-SGD)", read_only=False,
             idempotent=False, heavy=True),
    ToolSpec(nid_finetune, title="LoRA fine-tune of Gemma 3 270M", read_only=False,
             idempotent=False, heavy=True),
    ToolSpec(nid_corpus_scan, title="Scan a corpus for NIDs (Dask)", read_only=False,
             heavy=True),
]
